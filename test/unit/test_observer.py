"""The momentum observer and contact detection, on both simulated plants.

References: a known constant external joint torque added to the Pinocchio plant's input
(the observer must find it, to 1 %); a 40 N push at a point of the UR5e's forearm in
MuJoCo (``mj_applyFT`` into ``qfrc_applied``, whose joint efforts are the true external
torque); free motions, which must raise no contact; Pinocchio's g(q) and friction for
what ``comply`` commands.
"""
import math

import numpy as np
import pytest
from references import PUMA560_URDF, UR5E_URDF
from random_urdf import PinocchioReference

from ne_dynamics_ros.control.laws import InertiaInput, LawInputError
from ne_dynamics_ros.control import ComputedTorqueController
from ne_dynamics_ros.control.reference.goals import default_tolerances, GoalStatus
from ne_dynamics_ros.control.laws import ComplyLaw
from ne_dynamics_ros.control.laws import ControlParameterError
from ne_dynamics_ros.control.sensing.observer import ContactDetector, MomentumObserver
from ne_dynamics_ros.control.settings import ControllerSettings
from ne_dynamics_ros.control.reference.trajectory import TrajectoryPoint
from ne_dynamics_ros.identification.recording import JointRecording
from ne_dynamics_ros.identification.thresholds import (contact_thresholds, observed_effort,
                                                       transients)
from ne_dynamics_ros.simulation.closed_loop import run_lockstep, TrajectoryMessage
from ne_dynamics_ros.simulation.mujoco_arm import MujocoArm
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm

RATE, DT = 500.0, 1.0 / 500.0
UR5E_POSE = np.radians([0.0, -60.0, 70.0, -90.0, -90.0, 0.0])
DAMPING, FRICTION = [6.0, 6.0, 4.0, 1.0, 1.0, 1.0], [2.5, 2.5, 1.5, 0.4, 0.4, 0.4]


def run(c, arm, seconds, external=None, push=None, goal=None, start=0.0):
    """Drive ``arm`` with ``c`` at RATE for ``seconds`` from ``start`` s; return t, r,
    true, commands.

    ``external(t)``: an effort (n,) added to the plant's input (a known external joint
    torque); ``push(t)``: (link, point, force) or None, for MuJoCo; ``goal``: points sent
    after the first state.
    """
    names = c.model.joint_names
    ts, rs, true, outs = [], [], [], []
    for k in range(int(round(seconds * RATE))):
        t = start + k * DT
        ns = round(t * 1e9)
        out = c.update(ns, names, arm.position, arm.velocity, steady_ns=ns)
        if k == 0 and goal is not None:
            c.set_trajectory(names, goal, 0, ns)
        tau = np.asarray(out.effort)
        extra = np.zeros(len(names)) if external is None else external(t)
        if push is not None:
            arm.push(*(push(t) or (None,)))
        arm.step(tau + extra, DT)
        ts.append(t)
        rs.append(out.external_effort_values)
        true.append(arm.external_effort.copy() if push is not None else extra)
        outs.append(out)
    return np.array(ts), np.array(rs), np.array(true), outs


@pytest.mark.parametrize('urdf,tip', [(UR5E_URDF, 'tool0'), (PUMA560_URDF, 'flange')])
def test_a_constant_external_torque_is_found_exactly_on_the_pinocchio_plant(urdf, tip):
    """No friction, the model the plant's: after the observer's lag, r is the external
    torque within 1 %, while the arm moves along a quintic (so M, C, g all change)."""
    arm = SimulatedArm(str(urdf), armature=[0.1] * 6, integration_rate=2000.0)
    start = np.full(6, 0.2)
    arm.reset(start)
    c = ComputedTorqueController.from_urdf(str(urdf), tip_link=tip, armature=[0.1] * 6,
                                           damping=[0.0] * 6, friction=[0.0] * 6,
                                           settings={'kp': 400.0, 'kd': 40.0})
    tau_ext = np.array([4.0, -6.0, 3.0, 1.0, -0.5, 0.3])
    goal = [TrajectoryPoint(2.0, start + 0.6, np.zeros(6), np.zeros(6))]
    t, r, true, _ = run(c, arm, 2.0, external=lambda t: tau_ext * (t >= 0.5), goal=goal)
    settled = t >= 0.7                       # 0.2 s = 12 time constants of K_O = 60
    np.testing.assert_allclose(r[settled], true[settled], rtol=0.01, atol=1e-3)
    assert np.abs(r[t < 0.5]).max() < 0.01   # and nothing before it (motion alone)


def mujoco_push(reaction='ignore', threshold=None):
    arm = MujocoArm(str(UR5E_URDF), armature=[0.1] * 6, damping=DAMPING, friction=FRICTION)
    arm.reset(UR5E_POSE)
    settings = {'kp': 400.0, 'kd': 40.0, 'contact.reaction': reaction}
    if threshold is not None:
        settings['contact.threshold'] = threshold
    c = ComputedTorqueController.from_urdf(str(UR5E_URDF), armature=[0.1] * 6,
                                           damping=DAMPING, friction=FRICTION,
                                           settings=settings)
    push = lambda t: ('forearm_link', (0.0, 0.0, 0.0), (40.0, 0.0, 0.0)) \
        if 1.0 <= t < 2.5 else None  # noqa: E731
    return c, arm, run(c, arm, 3.0, push=push)


def test_a_push_at_the_forearm_is_estimated_within_the_issues_bounds_on_mujoco():
    """|r - tau_ext| <= 10 % |tau_ext| + the joint's Coulomb friction at steady state; 90 %
    reached within 50 ms where |tau_ext| > 4 Coulomb; contact within 50 ms; none before."""
    c, arm, (t, r, true, outs) = mujoco_push(threshold=[6.0, 6.0, 4.0, 1.5, 1.5, 1.5])
    steady = (t > 2.2) & (t < 2.5)
    tau = true[steady].mean(axis=0)
    assert abs(tau[1]) > 10.0, tau                     # shoulder_lift carries the push
    bound = 0.1 * np.abs(tau) + np.array(FRICTION)
    assert np.all(np.abs(r[steady] - true[steady]).max(axis=0) <= bound), (r[steady][-1], tau)
    for j in np.flatnonzero(np.abs(tau) > 4 * np.array(FRICTION)):
        reached = t[(t >= 1.0) & (np.abs(r[:, j]) >= 0.9 * abs(tau[j]))]
        assert reached.size and reached[0] - 1.0 <= 0.05, (j, reached[:1])
    contacts = [(ti, o.contact) for ti, o in zip(t, outs) if o.contact is not None]
    assert contacts and 1.0 <= contacts[0][0] <= 1.05, contacts
    assert contacts[0][1].joint == 'shoulder_lift_joint'


def test_an_unread_observer_is_skipped_and_restarts_when_read_again():
    """external_effort_wanted False and no contact threshold: no r (the node's default
    while nobody subscribes to ~/external_effort); wanted again, r starts from that
    state and finds the known external torque as a freshly started observer does."""
    arm = SimulatedArm(str(UR5E_URDF), armature=[0.1] * 6, integration_rate=2000.0)
    arm.reset(UR5E_POSE)
    c = ComputedTorqueController.from_urdf(str(UR5E_URDF), armature=[0.1] * 6,
                                           damping=[0.0] * 6, friction=[0.0] * 6,
                                           settings={'kp': 400.0, 'kd': 40.0})
    assert c.external_effort_wanted
    c.external_effort_wanted = False
    tau_ext = np.array([4.0, -6.0, 3.0, 1.0, -0.5, 0.3])
    _, r, _, _ = run(c, arm, 0.2, external=lambda t: tau_ext)
    assert all(v is None for v in r)
    c.external_effort_wanted = True
    t, r, true, _ = run(c, arm, 0.4, external=lambda t: tau_ext, start=0.2)
    assert np.all(r[0] == 0.0)                       # restarted at the first state read
    settled = t >= 0.4                               # 12 time constants of K_O = 60
    np.testing.assert_allclose(r[settled], true[settled], rtol=0.01, atol=1e-3)
    # a contact threshold runs it whatever the flag says
    c.external_effort_wanted = False
    c.reconfigure(**{'contact.threshold': [100.0] * 6})
    _, r, _, _ = run(c, arm, 0.02, external=lambda t: tau_ext, start=0.6)
    assert all(v is not None for v in r)


def test_free_motion_on_mujoco_raises_no_contact():
    """The same arm, dry friction on, a fast move out and back: r stays under the
    thresholds the push test detects with (no false contact)."""
    arm = MujocoArm(str(UR5E_URDF), armature=[0.1] * 6, damping=DAMPING, friction=FRICTION)
    arm.reset(UR5E_POSE)
    c = ComputedTorqueController.from_urdf(
        str(UR5E_URDF), armature=[0.1] * 6, damping=DAMPING, friction=FRICTION,
        settings={'kp': 400.0, 'kd': 40.0, 'friction_compensation': True,
                  'contact.threshold': [6.0, 6.0, 4.0, 1.5, 1.5, 1.5]})
    away = UR5E_POSE + np.array([1.0, -0.5, 0.8, 1.0, -1.0, 1.5])
    goal = [TrajectoryPoint(1.5, away, np.zeros(6), np.zeros(6)),
            TrajectoryPoint(3.0, UR5E_POSE, np.zeros(6), np.zeros(6))]
    t, r, _, outs = run(c, arm, 3.5, goal=goal)
    assert not any(o.contact for o in outs), np.abs(r).max(axis=0)
    assert c.contacts == 0


def test_a_stuck_joint_whose_friction_is_above_the_models_is_said_to_be_maybe_stiction():
    """MuJoCo's UR5e with wrist 1's dry friction twice the model's (0.8 against 0.4 N·m),
    its threshold 0.5 N·m: a goal that starts wrist 1 from rest is stopped by a contact
    found while the joint sticks, within 4x its Coulomb friction, and the contact says
    that it may be the drive's friction; a 40 N push at the forearm (far above the
    shoulder's friction) carries no such words."""
    plant_friction = list(FRICTION)
    plant_friction[3] = 0.8
    arm = MujocoArm(str(UR5E_URDF), armature=[0.1] * 6, damping=DAMPING,
                    friction=plant_friction)
    arm.reset(UR5E_POSE)
    c = ComputedTorqueController.from_urdf(
        str(UR5E_URDF), armature=[0.1] * 6, damping=DAMPING, friction=FRICTION,
        settings={'kp': 400.0, 'kd': 40.0, 'friction_compensation': True,
                  'contact.threshold': [6.0, 6.0, 4.0, 0.5, 1.5, 1.5]})
    goal = [TrajectoryPoint(1.5, UR5E_POSE + np.array([0.0, 0.0, 0.0, 0.3, 0.0, 0.0]),
                            np.zeros(6), np.zeros(6))]
    _, r, _, outs = run(c, arm, 1.0, goal=goal)
    contacts = [o.contact for o in outs if o.contact is not None]
    assert contacts and contacts[0].joint == 'wrist_1_joint', np.abs(r).max(axis=0)
    assert contacts[0].friction == pytest.approx(0.4, rel=1e-6)
    assert 'friction is above the model' in contacts[0].text()
    pushed = ComputedTorqueController.from_urdf(
        str(UR5E_URDF), armature=[0.1] * 6, damping=DAMPING, friction=FRICTION,
        settings={'kp': 400.0, 'kd': 40.0, 'contact.reaction': 'ignore',
                  'contact.threshold': [6.0, 6.0, 4.0, 1.5, 1.5, 1.5]})
    arm = MujocoArm(str(UR5E_URDF), armature=[0.1] * 6, damping=DAMPING, friction=FRICTION)
    arm.reset(UR5E_POSE)
    _, _, _, outs = run(pushed, arm, 1.0, push=lambda t: (
        'forearm_link', (0.0, 0.0, 0.0), (40.0, 0.0, 0.0)) if t >= 0.5 else None)
    contacts = [o.contact for o in outs if o.contact is not None]
    assert contacts and contacts[0].friction == 0.0
    assert 'friction' not in contacts[0].text()


def test_hold_aborts_the_goal_and_holds_where_the_contact_was():
    arm = SimulatedArm(str(UR5E_URDF), armature=[0.1] * 6)
    arm.reset(UR5E_POSE)
    c = ComputedTorqueController.from_urdf(
        str(UR5E_URDF), armature=[0.1] * 6, damping=[0.0] * 6, friction=[0.0] * 6,
        settings={'kp': 400.0, 'kd': 40.0, 'contact.threshold': [3.0] * 6})
    names = c.model.joint_names
    c.update(0, names, UR5E_POSE, np.zeros(6), steady_ns=0)
    c.install_trajectory(c.prepare_trajectory(
        names, [TrajectoryPoint(2.0, UR5E_POSE + 0.5, np.zeros(6), np.zeros(6))], 0, 0),
        goal_id='goal-1', tolerances=default_tolerances([0.0] * 6, [0.0] * 6, 0.01, 0.0))
    tau_ext = np.array([0.0, -10.0, 0.0, 0.0, 0.0, 0.0])
    arm.step(np.asarray(c.update(0, names, arm.position, arm.velocity, steady_ns=0).effort),
             DT)
    contact_q, ends = None, []
    for k in range(1, int(1.5 * RATE)):
        ns = round(k * DT * 1e9)
        out = c.update(ns, names, arm.position, arm.velocity, steady_ns=ns)
        taken = c.take_goal_ends()       # the one way a goal's end leaves the controller
        ends += taken
        if out.contact is not None:
            contact_q = arm.position.copy()
            assert taken and out.contact_in_force    # ended by the state that found it
        arm.step(np.asarray(out.effort) + tau_ext * (k * DT >= 0.5), DT)
    assert contact_q is not None
    assert [e.status for e in ends] == [GoalStatus.ABORTED]
    assert 'contact on shoulder_lift_joint' in ends[0].error_string
    np.testing.assert_allclose(c.trajectory.positions[-1], contact_q)   # held there
    assert c.trajectory.end_time < 1.0                   # the goal's trajectory is gone


def test_comply_commands_gravity_and_friction_only():
    c = ComputedTorqueController.from_urdf(
        str(UR5E_URDF), armature=[0.1] * 6, damping=DAMPING, friction=FRICTION,
        settings={'kp': 400.0, 'kd': 40.0, 'contact.threshold': [5.0] * 6,
                  'contact.reaction': 'comply', 'contact.debounce': 1})
    names = c.model.joint_names
    q, qd = UR5E_POSE, np.full(6, 0.05)
    c.update(0, names, q, qd, steady_ns=0)
    c.update(2_000_000, names, q, qd, steady_ns=2_000_000)
    # an unexplained 20 N*m on shoulder_lift: the velocity jumps without the command
    out = c.update(4_000_000, names, q, qd + [0, 0.5, 0, 0, 0, 0], steady_ns=4_000_000)
    assert out.contact is not None
    pin = PinocchioReference(UR5E_URDF.read_text(), names, 'tool0', armature=[0.1] * 6)
    qd_now = qd + [0, 0.5, 0, 0, 0, 0]
    expected = pin.rnea(q, 0 * q, 0 * q) + np.array(DAMPING) * qd_now + \
        np.array(FRICTION) * np.tanh(qd_now / c.model.coulomb_velocity)
    np.testing.assert_allclose(out.effort_values, expected, atol=1e-9)
    later = c.update(6_000_000, names, q + 0.3, qd_now, steady_ns=6_000_000)
    np.testing.assert_allclose(later.effort_values, pin.rnea(q + 0.3, 0 * q, 0 * q)
                               + np.array(DAMPING) * qd_now + np.array(FRICTION)
                               * np.tanh(qd_now / c.model.coulomb_velocity), atol=1e-9)
    # a new trajectory ends the compliance: the arm is driven again
    c.set_trajectory(names, [TrajectoryPoint(1.0, q, np.zeros(6), np.zeros(6))], 0,
                     6_000_000)
    assert not isinstance(c.law, ComplyLaw)


def test_the_detector_debounces_and_releases_with_hysteresis():
    d = ContactDetector(['a', 'b'], [2.0, math.inf], 3)
    assert [d.update(k, [2.5, 100.0]) for k in range(2)] == [None, None]
    contact = d.update(2, [-2.5, 100.0])
    assert contact is not None and contact.joint == 'a' and contact.effort == -2.5
    assert d.update(3, [5.0, 0]) is None                   # the same contact, not again
    for k in range(3):
        assert d.update(4 + k, [1.7, 0]) is None           # under 2 but not under 80 %
    assert d.contact is not None
    for k in range(3):
        d.update(7 + k, [1.5, 0])                          # 3 states under 1.6: released
    assert d.contact is None
    assert [d.update(10 + k, [2.1, 0]) is not None for k in range(3)] == [False, False, True]
    off = ContactDetector(['a'], [], 1)
    assert not off.enabled and off.update(0, [1e9]) is None


def test_a_floor_raises_both_levels_for_one_state_and_leaves_the_release_alone():
    """Joint a: h = 0.5, a floor of 1.6 (4x a Coulomb friction of 0.4): 1.2 held is no
    contact while the floor is given, on either level; 1.7 is, with the floor as its
    threshold; without the floor 1.2 is a contact after the debounce; the release is
    judged on the configured h (80 % of 0.5)."""
    d = ContactDetector(['a', 'b'], [0.5, 2.0], 3, band=[0.4, 0.0], sustained_time=0.2)
    t = 0.0
    for _ in range(500):
        t += DT
        assert d.update(t, [1.2, 0.0], floor=[1.6, 0.0]) is None
    found = [d.update(t + k * DT, [1.7, 0.0], floor=[1.6, 0.0]) for k in range(1, 4)]
    assert found[:2] == [None, None] and found[2].joint == 'a'
    assert found[2].threshold == 1.6
    for k in range(4, 7):
        d.update(t + k * DT, [0.45, 0.0], floor=[1.6, 0.0])
    assert d.contact is not None                           # 0.45 > 0.8 x 0.5: held
    d.clear()
    found = [d.update(k * DT, [1.2, 0.0]) for k in range(1, 4)]
    assert found[2] is not None and found[2].threshold == 0.5


def test_the_second_level_flags_a_held_push_below_the_threshold_never_the_friction_band():
    """Joint a (no friction, h = 2): 1.8 N*m held crosses the filtered level 0.6 h at
    t = 0.2 ln 3 s (first order: 1.8 (1 - e^{-t/0.2}) = 1.2); a 50 ms spike of 1.9 does
    not (it reaches 1.9 (1 - e^{-0.25}) = 0.42). Joint b (Coulomb band 0.9 of h = 1): its
    level is 0.9 + 0.6 x 0.1 = 0.96, so a stuck joint's residual at its band, held for
    ever, is never a contact. After the push ends no second contact starts."""
    d = ContactDetector(['a', 'b'], [2.0, 1.0], 3, band=[0.0, 0.9], sustained_time=0.2,
                        sustained_level=0.6)
    assert d.level == pytest.approx([1.2, 0.96])
    t = 0.0
    for _ in range(25):                                    # 50 ms spike, under h
        t += DT
        assert d.update(t, [1.9, 0.95]) is None
    for _ in range(1500):                                  # the band held 3 s
        t += DT
        assert d.update(t, [0.0, 0.95]) is None
    start, found = t, []
    for _ in range(500):                                   # 1.8 held 1 s
        t += DT
        contact = d.update(t, [1.8, 0.95])
        if contact is not None:
            found.append((t - start, contact))
    assert len(found) == 1
    when, contact = found[0]
    assert contact.sustained and contact.joint == 'a' and contact.threshold == 1.2
    assert 0.2 * math.log(3.0) <= when <= 0.2 * math.log(3.0) + DT
    assert 'sustained' in contact.text()
    for _ in range(1000):                                  # released: no second contact
        t += DT
        assert d.update(t, [0.0, 0.0]) is None
    assert d.contact is None
    off = ContactDetector(['a'], [2.0], 3, sustained_time=0.0)
    assert all(off.update(k * DT, [1.8]) is None for k in range(1, 1000))


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_the_offline_count_is_the_detectors_on_clean_pushes(seed):
    """identify's count of contacts over a recording (vectorised, irregular steps) and the
    node's detector (state by state) agree on pushes held 0.1-1 s at 0.5-1.5 of the
    threshold on random joints, with the friction band in both."""
    from ne_dynamics_ros.identification.validation import count_contacts
    rng = np.random.default_rng(seed)
    threshold, band = np.array([2.0, 1.0, 0.5]), np.array([0.5, 0.0, 0.2])
    t = np.cumsum(rng.uniform(0.0015, 0.0025, 20000))
    r = rng.normal(0.0, 0.02, (t.size, 3))
    for start in np.arange(1.0, t[-1] - 2.0, 2.5):
        on = (t >= start) & (t < start + rng.uniform(0.1, 1.0))
        j = rng.integers(3)
        r[on, j] += rng.uniform(0.5, 1.5) * threshold[j] * rng.choice([-1, 1])
    d = ContactDetector(['a', 'b', 'c'], threshold, 3, band=band, sustained_time=0.2,
                        sustained_level=0.6)
    streamed = sum(d.update(tk, rk.tolist()) is not None for tk, rk in zip(t, r))
    counted, _ = count_contacts(r, threshold, 3, t=t, band=band, sustained_time=0.2,
                                sustained_level=0.6)
    assert counted == streamed and streamed > 3


def test_the_observer_restarts_after_a_gap_and_takes_any_gain():
    obs = MomentumObserver(1, 60.0)
    tau = lambda qdd: [2.0]  # noqa: E731 - a model that always needs 2 N*m
    assert obs.update(0.0, [0.0], tau, [0.0], None) == [0.0]
    r = obs.update(0.002, [0.0], tau, [0.0], [0.0])
    assert r[0] == pytest.approx(2.0 * (1 - math.exp(-60 * 0.002)))
    assert obs.update(0.5, [0.0], tau, [0.0], [0.0]) == [0.0]      # a 0.5 s gap
    obs.set_gain([1e6])                                            # stable at any K_O dt
    assert obs.update(0.502, [0.0], tau, [0.0], [0.0])[0] == pytest.approx(2.0)


def test_in_adaptive_mode_the_learned_load_is_no_contact():
    """2 kg at the flange the model lacks: computed torque's observer reads its weight as
    an external torque; adaptive mode's learns the load and its r decays."""
    results = {}
    for mode in ('computed_torque', 'adaptive'):
        arm = SimulatedArm(str(PUMA560_URDF), armature=[0.1] * 6, payload_mass=2.0)
        start = np.array([0.0, 0.4, -0.6, 0.0, 0.3, 0.0])
        arm.reset(start)
        c = ComputedTorqueController.from_urdf(
            str(PUMA560_URDF), tip_link='flange', armature=[0.1] * 6, damping=[0.0] * 6,
            friction=[0.0] * 6,
            settings={'mode': mode, 'kp': 400.0, 'kd': 40.0, 'adaptation_lambda': 20.0})
        t, r, _, _ = run(c, arm, 1.5)
        results[mode] = np.abs(r[t > 1.3]).max(axis=0)
    assert results['computed_torque'][1] > 3.0, results
    assert np.all(results['adaptive'] < 0.1 * results['computed_torque'].max()), results


@pytest.mark.parametrize('name,value', [
    ('contact.threshold', [float('nan')] * 6), ('contact.threshold', [-1.0] * 6),
    ('contact.threshold', [0.0] * 6), ('contact.threshold', [1.0, 2.0]),
    ('contact.debounce', 0), ('contact.debounce', 1.5), ('contact.reaction', 'stop'),
    ('contact.observer_gain', 0.0), ('contact.observer_gain', float('inf')),
    ('contact.sustained_time', -0.1), ('contact.sustained_time', float('nan')),
    ('contact.sustained_level', 1.0), ('contact.sustained_level', -0.1)])
def test_hostile_contact_settings_are_refused_with_their_name(name, value):
    with pytest.raises(ControlParameterError, match=name.replace('.', r'\.')):
        ControllerSettings.from_values({name: value}, 6)


def test_identify_sets_thresholds_from_the_observer_over_the_recording():
    """The observer run offline over a recording (what ``identify`` does) gives the r the
    controller computed online; the thresholds are twice the 99.9th percentile of its |r|
    away from transients + Coulomb (never over the old rule, twice the largest |r|)."""
    arm = MujocoArm(str(UR5E_URDF), armature=[0.1] * 6, damping=DAMPING, friction=FRICTION)
    arm.reset(UR5E_POSE)
    c = ComputedTorqueController.from_urdf(
        str(UR5E_URDF), armature=[0.1] * 6, damping=DAMPING, friction=FRICTION,
        settings={'kp': 400.0, 'kd': 40.0, 'friction_compensation': True})
    away = UR5E_POSE + np.array([0.8, -0.4, 0.6, 0.8, -0.8, 1.0])
    run = run_lockstep(c, arm, 2.0, rate=RATE, trajectory=TrajectoryMessage(
        c.model.joint_names, [TrajectoryPoint(1.2, away, np.zeros(6), np.zeros(6))], 0))
    # as sim_arm_node publishes them: each state with the effort of the step ending at it
    recorded = np.vstack([np.zeros((1, 6)), run.effort[:-1]])
    offline = observed_effort(c.model, run.t, run.q, run.qd, recorded)
    np.testing.assert_allclose(offline, run.external_effort, atol=1e-9)
    recording = JointRecording(tuple(run.joint_names), run.t, run.q, run.qd, recorded,
                               'test')
    thresholds = contact_thresholds(c.model, recording).values
    kept = ~transients(run.t, run.qd, offline).any
    quantile = [np.percentile(np.abs(offline[kept[:, j], j]), 99.9) for j in range(6)]
    np.testing.assert_allclose(thresholds, 2 * np.array(quantile) + FRICTION, rtol=1e-3)
    assert np.all(thresholds <= 2 * np.abs(offline).max(axis=0) + FRICTION + 1e-3)
    assert thresholds[1] < 10.0               # the 40 N push (14.6 N*m) stays detectable


def test_a_declared_payload_is_the_estimate_and_no_contact():
    """Adaptive mode: a 2 kg load declared as it is picked (a gripper closing) becomes the
    estimate at once; the observer then reads a tenth of what it reads of the same pick
    undeclared, as external effort while the law learns it."""
    start = np.array([0.0, 0.4, -0.6, 0.0, 0.3, 0.0])
    peaks = {}
    for declared in (False, True):
        arm = SimulatedArm(str(PUMA560_URDF), armature=[0.1] * 6)
        arm.reset(start)
        c = ComputedTorqueController.from_urdf(
            str(PUMA560_URDF), tip_link='flange', armature=[0.1] * 6, damping=[0.0] * 6,
            friction=[0.0] * 6, settings={'mode': 'adaptive', 'kp': 400.0, 'kd': 40.0})
        names = c.model.joint_names
        r = []
        for k in range(int(0.6 * RATE)):
            ns = round(k * DT * 1e9)
            out = c.update(ns, names, arm.position, arm.velocity, steady_ns=ns)
            if k == int(0.2 * RATE):
                arm.set_payload(2.0, (0.0, 0.0, 0.05))
                if declared:
                    c.take_input('declared_payload', InertiaInput(
                        2.0, (0.0, 0.0, 0.05), (0.001, 0, 0, 0.001, 0, 0.001)))
            arm.step(np.asarray(out.effort), DT)
            r.append(out.external_effort_values)
        peaks[declared] = np.abs(np.array(r)[int(0.2 * RATE):]).max()
        if declared:
            mass, com, inertia = c.payload_estimate
            assert mass == pytest.approx(2.0, rel=0.02)
            np.testing.assert_allclose(com, [0.0, 0.0, 0.05], atol=2e-3)
    # what is left is the law's own correction after the one command without the load
    assert peaks[True] < 0.15 * peaks[False], peaks
    assert peaks[False] > 2.0, peaks


def test_a_declared_payload_needs_adaptive_mode_and_a_load():
    c = ComputedTorqueController.from_urdf(str(UR5E_URDF))
    with pytest.raises(LawInputError,
                       match=r'modes that carry a load \(adaptive, cartesian_impedance'):
        c.take_input('declared_payload', InertiaInput(1.0))
    c.reconfigure(mode='adaptive')
    with pytest.raises(LawInputError, match='declared load'):
        c.take_input('declared_payload', InertiaInput(float('nan')))
    with pytest.raises(LawInputError, match='declared load'):
        c.take_input('declared_payload', InertiaInput(-1.0))
    c.take_input('declared_payload',
                 InertiaInput(1.5, (0.01, 0.0, 0.02), (2e-3, 0.0, 0.0, 2e-3, 0.0, 1e-3)))
    mass, com, inertia = c.payload_estimate
    assert mass == pytest.approx(1.5)
    np.testing.assert_allclose(com, [0.01, 0.0, 0.02], atol=1e-12)
    np.testing.assert_allclose(inertia, [2e-3, 0.0, 0.0, 2e-3, 0.0, 1e-3], atol=1e-12)
