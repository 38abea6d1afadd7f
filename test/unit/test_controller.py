"""ComputedTorqueController without DDS: every decision the node delegates to it.

Expected efforts come from Pinocchio (``PinocchioArm`` of test_control_law) on the same
URDF with the same armature; effort limits are read from the URDF with ElementTree. Each
bad input that test_computed_torque_node sends over DDS is sent here too, straight into
``update`` / ``set_trajectory`` / the constructor.
"""
import math

import numpy as np
import pytest
from references import (
    BAD_STATES, expected_effort as expected, KP, KD, PinocchioArm, PUMA_ARMATURE, PUMA_JOINTS,
    PUMA_LIMITS, PUMA_URDF, Q0, QD0, SET_Q, SET_QD, SET_QDD, UR5E_URDF, urdf_joint_values)

from ne_dynamics_ros.control import (
    Command, ComputedTorqueController, ControllerSettings, ControlMode, NoCommand, SkipReason)
from ne_dynamics_ros.control import state_loss
from ne_dynamics_ros.control.controller import DEFAULT_SETTINGS, STAMP_TOLERANCE_NS
from ne_dynamics_ros.control.laws import ControlParameterError
from ne_dynamics_ros.control.reference.trajectory import TrajectoryError, TrajectoryPoint
from ne_dynamics_ros.errors import ModelError, URDFError

MS = 1_000_000          # one millisecond in ns
S = 1_000_000_000       # one second in ns


@pytest.fixture(scope='module')
def puma_ref():
    return PinocchioArm(PUMA_URDF, PUMA_JOINTS, PUMA_ARMATURE)


def make(**settings):
    options = {k: settings.pop(k) for k in ('joints', 'effort_limits') if k in settings}
    values = dict({'kp': KP, 'kd': KD, 'state_timeout': 5.0}, **settings)
    return ComputedTorqueController.from_urdf(str(PUMA_URDF), armature=PUMA_ARMATURE,
                                              settings=values, **options)


def set_point(c, now_ns, q=SET_Q, qd=SET_QD, qdd=SET_QDD, names=PUMA_JOINTS):
    """Stream one set-point (one point at time_from_start 0), as servoing tools do."""
    return c.set_trajectory(names, [TrajectoryPoint(0.0, q, qd, qdd)], 0, now_ns)


def check_command(out, limits=PUMA_LIMITS):
    assert isinstance(out, Command), out
    assert np.all(np.isfinite(out.effort))
    assert np.all(np.abs(out.effort) <= limits + 1e-12)
    return out


# ---- configuration -----------------------------------------------------------------------

def test_defaults_and_settings_round_trip():
    c = ComputedTorqueController.from_urdf(str(PUMA_URDF))
    assert c.joints == PUMA_JOINTS and c.n == 6
    np.testing.assert_array_equal(c.effort_limits, PUMA_LIMITS)
    assert c.settings.mode is ControlMode.COMPUTED_TORQUE
    np.testing.assert_array_equal(c.settings.kp, np.full(6, DEFAULT_SETTINGS['kp']))
    again = ControllerSettings.from_values(c.settings.as_values(), 6)
    assert again.as_values() == c.settings.as_values()


@pytest.mark.parametrize('kwargs, error, match', [
    ({'urdf': '<robot name="x"><link name="a"/>'}, URDFError, 'malformed URDF XML'),
    ({'urdf': '/nonexistent/arm.urdf'}, ModelError, "not found: '/nonexistent/arm.urdf'"),
    ({'settings': {'kp': [1.0, 2.0]}}, ControlParameterError, 'kp'),
    ({'joints': ['joint_1', 'joint_2']}, ControlParameterError, 'joints'),
    ({'joints': [1, 2, 3, 4, 5, 6]}, ControlParameterError, 'joints'),
    ({'armature': [0.1] * 5}, ModelError, 'armature'),
    ({'convention': 'euler'}, ControlParameterError, 'convention'),
    ({'tip_link': 'no_such_link'}, URDFError, 'no_such_link'),
    ({'effort_limits': [0.0] * 6}, ControlParameterError, 'effort_limits'),
    ({'effort_limits': [1.0] * 5}, ControlParameterError, 'effort_limits'),
    ({'settings': {'mode': 5}}, ControlParameterError, 'mode'),
    ({'settings': {'mode': 'position'}}, ControlParameterError, 'mode'),
    ({'settings': {'kd': -1.0}}, ControlParameterError, 'kd'),
    ({'settings': {'kp': 'high'}}, ControlParameterError, 'number'),
    ({'settings': {'kp': True}}, ControlParameterError, 'number'),
    ({'settings': {'gravity': [0.0, 9.81]}}, ControlParameterError, 'gravity'),
    ({'settings': {'state_timeout': 0.0}}, ControlParameterError, 'state_timeout'),
    ({'settings': {'state_timeout': [0.1, 0.2]}}, ControlParameterError, 'single number'),
    ({'settings': {'velocity_filter_cutoff': -1.0}}, ControlParameterError, 'cutoff'),
    ({'settings': {'friction_compensation': 'yes'}}, ControlParameterError, 'friction'),
    ({'settings': {'kq': 1.0}}, ControlParameterError, 'unknown'),
])
def test_bad_configuration_is_refused(kwargs, error, match):
    args = dict({'urdf': str(PUMA_URDF)}, **kwargs)
    with pytest.raises(error, match=match):
        ComputedTorqueController.from_urdf(**args)


def test_settings_are_checked_without_a_model():
    """The node checks run-time parameters before the robot description arrives."""
    settings = ControllerSettings.from_values({'kp': [1.0, 2.0, 3.0]})
    assert settings.kp.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ControlParameterError, match='mode'):
        ControllerSettings.from_values({'mode': 'position'})


def test_integer_gains_as_ros2_param_set_gives_them(puma_ref):
    c = make(kp=[10, 20, 30, 40, 50, 60], kd=3)
    np.testing.assert_array_equal(c.settings.kp, [10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
    np.testing.assert_array_equal(c.settings.kd, np.full(6, 3.0))


# ---- the three laws, command order, clamping ---------------------------------------------

@pytest.mark.parametrize('mode', ['computed_torque', 'feedforward', 'gravity_compensation'])
def test_effort_matches_pinocchio_in_every_mode(puma_ref, mode):
    c = make(mode=mode)
    check_command(c.update(0, PUMA_JOINTS, Q0, QD0))
    set_point(c, 0)
    for k, scale in enumerate((1.0, -0.5), start=1):
        q, qd = Q0 + scale * 0.01, QD0 * scale
        out = check_command(c.update(k * 10 * MS, PUMA_JOINTS, q, qd))
        raw, want = expected(puma_ref, mode, q, qd, SET_Q, SET_QD, SET_QDD)
        assert np.all(np.abs(raw) < PUMA_LIMITS), 'test state should not saturate'
        np.testing.assert_allclose(out.effort, want, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(out.position_error, SET_Q - q, atol=1e-12)
        np.testing.assert_allclose(out.velocity_error, SET_QD - qd, atol=1e-12)
        np.testing.assert_allclose(out.desired.q, SET_Q)
        np.testing.assert_allclose(out.desired.qd, SET_QD)
        np.testing.assert_allclose(out.desired.qdd, SET_QDD)


def test_ur5e_feedforward_in_dh(puma_ref):
    names = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
             'wrist_2_joint', 'wrist_3_joint']
    limits = urdf_joint_values(UR5E_URDF, names, 'limit', 'effort', math.inf)
    armature = [0.1, 0.2, 0.3, 0.04, 0.05, 0.06]
    c = ComputedTorqueController.from_urdf(
        UR5E_URDF.read_text(), convention='dh', armature=armature,
        settings={'mode': 'feedforward', 'kp': 50.0, 'kd': 5.0})
    ref = PinocchioArm(UR5E_URDF, names, armature)
    q = np.array([0.3, -1.2, 1.0, -0.5, 0.4, 0.1])
    check_command(c.update(0, names, q, np.zeros(6)), limits)
    set_point(c, 0, q + 0.05, 0.1 * np.ones(6), np.ones(6), names=names)
    out = check_command(c.update(MS, names, q, 0.2 * np.ones(6)), limits)
    _, want = expected(ref, 'feedforward', q, 0.2 * np.ones(6), q + 0.05, 0.1 * np.ones(6),
                       np.ones(6), 50.0, 5.0, limits)
    np.testing.assert_allclose(out.effort, want, rtol=1e-9, atol=1e-9)


def test_shuffled_state_extra_joints_and_command_order(puma_ref):
    command_order = ['joint_6', 'joint_5', 'joint_4', 'joint_1', 'joint_2', 'joint_3']
    cmd = [PUMA_JOINTS.index(j) for j in command_order]
    c = make(joints=command_order)
    assert c.joints == command_order
    names = ['gripper_left', 'joint_3', 'joint_1', 'joint_6', 'joint_2', 'joint_5',
             'joint_4', 'gripper_right']
    to_msg = [names.index(j) for j in PUMA_JOINTS]

    def in_msg_order(values, extra=(0.7, -0.7)):
        out = np.empty(len(names))
        out[to_msg] = values
        out[[0, 7]] = extra
        return out

    check_command(c.update(0, names, in_msg_order(Q0), in_msg_order(QD0)), PUMA_LIMITS[cmd])
    set_point(c, 0, SET_Q[::-1], SET_QD[::-1], SET_QDD[::-1], names=PUMA_JOINTS[::-1])
    out = check_command(c.update(MS, names, in_msg_order(Q0), in_msg_order(QD0),
                                 in_msg_order(np.ones(6), (math.nan, math.nan))),
                        PUMA_LIMITS[cmd])
    _, want = expected(puma_ref, 'computed_torque', Q0, QD0, SET_Q, SET_QD, SET_QDD)
    np.testing.assert_allclose(out.effort, want[cmd], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out.position_error, (SET_Q - Q0)[cmd], atol=1e-12)
    np.testing.assert_allclose(out.desired.q, SET_Q[cmd])


def test_efforts_are_clamped_to_the_limits(puma_ref):
    c = make(kp=1e4, kd=200.0)
    c.update(0, PUMA_JOINTS, Q0, np.zeros(6))
    far = Q0 + np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    set_point(c, 0, far, np.zeros(6), np.zeros(6))
    out = check_command(c.update(MS, PUMA_JOINTS, Q0, np.zeros(6)))
    raw, want = expected(puma_ref, 'computed_torque', Q0, np.zeros(6), far, 0 * far, 0 * far,
                         1e4, 200.0)
    assert np.all(np.abs(raw) > PUMA_LIMITS)
    np.testing.assert_allclose(out.effort, want, rtol=1e-12)
    np.testing.assert_allclose(np.abs(out.effort), PUMA_LIMITS)


def test_effort_limits_override_the_urdf():
    limits = np.array([5.0, 6.0, 7.0, 1.0, 1.0, 1.0])
    c = make(effort_limits=limits.tolist())
    out = check_command(c.update(0, PUMA_JOINTS, Q0 + 0.5, np.ones(6)), limits)
    assert np.any(np.isclose(np.abs(out.effort), limits))


def test_an_overflowing_law_commands_nothing():
    """Absurd gains overflow to inf: the NaN/inf guard drops the state, never a full-limit
    command."""
    c = make(kp=1e308)
    c.update(0, PUMA_JOINTS, Q0, np.zeros(6))
    set_point(c, 0, Q0 + 1e10, np.zeros(6), np.zeros(6))
    out = c.update(MS, PUMA_JOINTS, Q0, np.zeros(6))
    assert isinstance(out, NoCommand) and out.reason is SkipReason.NO_VALID_EFFORT
    assert 'NaN or inf' in out.message or 'non-finite' in out.message
    assert c.data.dropped_joint_states == 1


def test_friction_compensation_adds_the_urdf_friction():
    """The PUMA URDF carries G^2 B and G tau_C per joint (damping, friction)."""
    damping = urdf_joint_values(PUMA_URDF, PUMA_JOINTS, 'dynamics', 'damping', 0.0)
    coulomb = urdf_joint_values(PUMA_URDF, PUMA_JOINTS, 'dynamics', 'friction', 0.0)
    assert np.all(damping > 0) and np.all(coulomb > 0)
    with_friction = make(mode='gravity_compensation', friction_compensation=True)
    without = make(mode='gravity_compensation')
    qd = np.array([1.0, -1.0, 2.0, -2.0, 0.5, -0.005])
    a = with_friction.update(0, PUMA_JOINTS, Q0, qd).effort
    b = without.update(0, PUMA_JOINTS, Q0, qd).effort
    assert np.all(np.abs(a) < PUMA_LIMITS), 'test state should not saturate'
    np.testing.assert_allclose(a - b, damping * qd + coulomb * np.tanh(qd / 0.01), atol=1e-9)


@pytest.mark.parametrize('mode', ['computed_torque', 'feedforward', 'gravity_compensation'])
def test_hardware_that_compensates_gravity_gets_no_gravity(puma_ref, mode):
    """UR direct torque control adds g(q) itself: the command leaves it out in every mode.

    Pinocchio's g at the state the law evaluates (q, or q_d in feedforward) is the whole
    difference; the friction model is left out even when friction_compensation is on.
    """
    options = {'mode': mode, 'friction_compensation': True}
    full = ComputedTorqueController.from_urdf(
        str(PUMA_URDF), armature=PUMA_ARMATURE, settings=dict({'kp': KP, 'kd': KD},
                                                              **options))
    hardware = ComputedTorqueController.from_urdf(
        str(PUMA_URDF), armature=PUMA_ARMATURE, settings=dict({'kp': KP, 'kd': KD},
                                                              **options),
        hardware_compensates_gravity=True, hardware_compensates_friction=True)
    qd = QD0 * 0.5
    for c in (full, hardware):
        check_command(c.update(0, PUMA_JOINTS, Q0, qd))
        set_point(c, 0)
    q = Q0 + 0.01
    a = check_command(full.update(10 * MS, PUMA_JOINTS, q, qd)).effort
    b = check_command(hardware.update(10 * MS, PUMA_JOINTS, q, qd)).effort
    assert np.all(np.abs(a) < PUMA_LIMITS), 'test state should not saturate'
    at = SET_Q if mode == 'feedforward' else q
    m = full.model        # at the desired velocity: the reference's own v_s, 0.003 rad/s
    friction = (m.friction_torques(qd) if mode == 'gravity_compensation' else
                m.damping * SET_QD + m.friction * np.tanh(SET_QD / 0.003))
    gravity = puma_ref.rnea(at, np.zeros(6), np.zeros(6))
    np.testing.assert_allclose(a - b, gravity + friction, rtol=1e-9, atol=1e-9)
    if mode == 'gravity_compensation':
        np.testing.assert_array_equal(b, 0.0)
    with pytest.raises(ControlParameterError, match='hardware_compensates_gravity'):
        ComputedTorqueController.from_urdf(str(PUMA_URDF), hardware_compensates_gravity='yes')


# ---- holding, trajectories ----------------------------------------------------------------

def test_holds_the_first_measured_position(puma_ref):
    c = make()
    out = check_command(c.update(0, PUMA_JOINTS, Q0, QD0))
    _, want = expected(puma_ref, 'computed_torque', Q0, QD0, Q0, 0 * Q0, 0 * Q0)
    np.testing.assert_allclose(out.effort, want, rtol=1e-9, atol=1e-9)
    out = check_command(c.update(10 * MS, PUMA_JOINTS, Q0 + 0.01, QD0))
    np.testing.assert_allclose(out.desired.q, Q0)
    np.testing.assert_allclose(out.position_error, -0.01, atol=1e-12)


def test_trajectory_is_interpolated_held_and_replaced():
    c = make()
    c.update(0, PUMA_JOINTS, Q0, np.zeros(6))
    target = Q0 + 0.1
    c.set_trajectory(PUMA_JOINTS, [TrajectoryPoint(0.0, Q0), TrajectoryPoint(0.3, target)],
                     0, 0)
    slope = (target - Q0) / 0.3
    for t_ms in (50, 150, 299):
        out = check_command(c.update(t_ms * MS, PUMA_JOINTS, Q0, np.zeros(6)))
        np.testing.assert_allclose(out.desired.q, Q0 + slope * t_ms * 1e-3, atol=1e-12)
        np.testing.assert_allclose(out.desired.qd, slope, rtol=1e-9)
    out = check_command(c.update(400 * MS, PUMA_JOINTS, Q0, np.zeros(6)))
    np.testing.assert_allclose(out.desired.q, target)
    np.testing.assert_allclose(out.desired.qd, 0.0)
    set_point(c, 400 * MS)
    out = check_command(c.update(410 * MS, PUMA_JOINTS, Q0, np.zeros(6)))
    np.testing.assert_allclose(out.desired.q, SET_Q)


def test_stamped_trajectory_starts_at_its_stamp():
    c = make()
    c.update(10 * S, PUMA_JOINTS, Q0, np.zeros(6))
    goal = Q0 + 0.2
    c.set_trajectory(PUMA_JOINTS, [TrajectoryPoint(1.0, goal)], 11 * S, 10 * S)
    # before the stamped start, the reference moves linearly from the hold to point 0,
    # reached at 11 s + 1 s
    out = check_command(c.update(11 * S, PUMA_JOINTS, Q0, np.zeros(6)))
    np.testing.assert_allclose(out.desired.q, Q0 + 0.2 * 0.5, atol=1e-12)
    out = check_command(c.update(12 * S, PUMA_JOINTS, Q0, np.zeros(6)))
    np.testing.assert_allclose(out.desired.q, goal)


def test_sampled_at_the_stamp_when_it_is_on_our_clock():
    c = make()
    c.update(0, PUMA_JOINTS, Q0, np.zeros(6))
    c.set_trajectory(PUMA_JOINTS, [TrajectoryPoint(0.0, Q0), TrajectoryPoint(1.0, Q0 + 1.0)],
                     0, 0)
    # stamp 0.2 s, received at 0.3 s: within tolerance, sampled at the stamp
    out = check_command(c.update(300 * MS, PUMA_JOINTS, Q0, np.zeros(6), stamp_ns=200 * MS))
    np.testing.assert_allclose(out.desired.q, Q0 + 0.2, atol=1e-12)
    # a stamp further away than the tolerance (another clock): sampled on receipt
    far = 300 * MS + STAMP_TOLERANCE_NS + 400 * MS + 1
    out = check_command(c.update(400 * MS, PUMA_JOINTS, Q0, np.zeros(6), stamp_ns=far))
    np.testing.assert_allclose(out.desired.q, Q0 + 0.4, atol=1e-12)
    # unstamped: on receipt
    out = check_command(c.update(500 * MS, PUMA_JOINTS, Q0, np.zeros(6), stamp_ns=0))
    np.testing.assert_allclose(out.desired.q, Q0 + 0.5, atol=1e-12)


BAD_TRAJECTORIES = {
    'non-increasing time': (PUMA_JOINTS, [(0.5, Q0), (0.5, Q0 + 0.1)], 0),
    'decreasing time': (PUMA_JOINTS, [(0.5, Q0), (0.2, Q0 + 0.1)], 0),
    'unknown joint': (PUMA_JOINTS[:5] + ['elbow'], [(0.0, Q0)], 0),
    'missing joint': (PUMA_JOINTS[:5], [(0.0, Q0[:5])], 0),
    'short positions': (PUMA_JOINTS, [(0.0, Q0[:5])], 0),
    'short velocities': (PUMA_JOINTS, [(0.0, Q0, [0.0] * 4)], 0),
    'NaN position': (PUMA_JOINTS, [(0.0, [math.nan] * 6)], 0),
    'no points': (PUMA_JOINTS, [], 0),
    'ends in the past': (PUMA_JOINTS, [(0.1, Q0)], 1 * S),
}


def test_bad_trajectories_are_rejected_and_the_old_one_kept():
    c = make()
    c.update(10 * S, PUMA_JOINTS, Q0, np.zeros(6))
    set_point(c, 10 * S)
    kept = c.trajectory
    for name, (names, points, stamp) in BAD_TRAJECTORIES.items():
        with pytest.raises(TrajectoryError):
            c.set_trajectory(names, [TrajectoryPoint(*p) for p in points], stamp, 10 * S)
        assert c.trajectory is kept, name
    assert c.rejected_trajectories == len(BAD_TRAJECTORIES)
    out = check_command(c.update(10 * S + MS, PUMA_JOINTS, Q0, np.zeros(6)))
    np.testing.assert_allclose(out.desired.q, SET_Q)


def test_a_trajectory_before_the_first_state_waits_for_it():
    """Sent before any state (or right after activation): checked at once, kept, and
    installed on the first valid state, starting from it; one that cannot start then (a
    stamped trajectory already over) is dropped and counted."""
    c = make()
    with pytest.raises(TrajectoryError, match='NaN'):               # still checked at once
        c.set_trajectory(PUMA_JOINTS, [TrajectoryPoint(0.5, [math.nan] * 6)], 0, 0)
    assert c.rejected_trajectories == 1
    set_point(c, 0)                                                  # kept for the state
    assert c.rejected_trajectories == 1 and c.trajectory is None
    out = check_command(c.update(MS, PUMA_JOINTS, Q0, np.zeros(6)))
    np.testing.assert_allclose(out.desired.q, SET_Q)                 # followed at once
    # a move of 1 s from the first state measured
    c = make()
    c.set_trajectory(PUMA_JOINTS, [TrajectoryPoint(1.0, SET_Q)], 0, 0)
    first = check_command(c.update(MS, PUMA_JOINTS, Q0, np.zeros(6)))
    np.testing.assert_allclose(first.desired.q, Q0, atol=1e-9)
    np.testing.assert_allclose(c.trajectory.sample(1.0 + 1e-3).q, SET_Q, atol=1e-12)
    # stamped to end before the first state arrives: dropped then
    c = make()
    c.set_trajectory(PUMA_JOINTS, [TrajectoryPoint(0.1, SET_Q)], 1, 0)
    out = check_command(c.update(S, PUMA_JOINTS, Q0, np.zeros(6)))
    np.testing.assert_allclose(out.desired.q, Q0)
    assert c.rejected_trajectories == 1


def test_leaving_gravity_compensation_holds_the_current_position():
    c = make(mode='gravity_compensation')
    c.update(0, PUMA_JOINTS, Q0, np.zeros(6))
    moved = Q0 + 0.3                        # moved by hand while floating
    c.update(10 * MS, PUMA_JOINTS, moved, np.zeros(6))
    c.reconfigure(mode='computed_torque')
    out = check_command(c.update(20 * MS, PUMA_JOINTS, moved, np.zeros(6)))
    np.testing.assert_allclose(out.desired.q, moved)
    np.testing.assert_allclose(out.position_error, 0.0, atol=1e-12)


# ---- bad states, velocity estimation ----------------------------------------------------

def test_bad_states_are_dropped_and_counted(puma_ref):
    c = make()
    check_command(c.update(0, PUMA_JOINTS, Q0, QD0))
    for i, (name, (names, q, qd, effort)) in enumerate(BAD_STATES.items()):
        out = c.update((i + 1) * MS, names, q, qd, effort)
        assert isinstance(out, NoCommand), name
        assert out.reason is SkipReason.INVALID_STATE, name
        assert c.data.dropped_joint_states == i + 1, name
        good = check_command(c.update((i + 1) * MS, PUMA_JOINTS, Q0, QD0))
        _, want = expected(puma_ref, 'computed_torque', Q0, QD0, Q0, 0 * Q0, 0 * Q0)
        np.testing.assert_allclose(good.effort, want, rtol=1e-9, atol=1e-9)
    out = c.update(100 * MS, ['gripper'], [0.1], [0.0])
    assert isinstance(out, NoCommand) and out.reason is SkipReason.NOT_CONTROLLED
    assert c.data.dropped_joint_states == len(BAD_STATES)


def test_states_with_many_names_are_answered_or_dropped_by_their_size(puma_ref):
    """Up to MAX_STATE_JOINTS names the chain joints are found wherever they are; a name
    given twice among thousands is found; more names than the bound: dropped unread."""
    from ne_dynamics_ros.control.controller import MAX_STATE_JOINTS
    c = make()
    strangers = [f'stranger_{i}' for i in range(MAX_STATE_JOINTS - 6)]
    names = strangers[:5000] + PUMA_JOINTS[::-1] + strangers[5000:]
    q = [0.0] * 5000 + list(Q0[::-1]) + [0.0] * (len(strangers) - 5000)
    qd = [0.0] * 5000 + list(QD0[::-1]) + [0.0] * (len(strangers) - 5000)
    good = check_command(c.update(0, names, q, qd))
    _, want = expected(puma_ref, 'computed_torque', Q0, QD0, Q0, 0 * Q0, 0 * Q0)
    np.testing.assert_allclose(good.effort, want, rtol=1e-9, atol=1e-9)
    twice = names[:-1] + ['stranger_17']
    out = c.update(MS, twice, q, qd)
    assert isinstance(out, NoCommand) and out.reason is SkipReason.INVALID_STATE
    assert out.message == "joint 'stranger_17' appears twice"
    out = c.update(2 * MS, names + ['one_more'], q + [0.0], qd + [0.0])
    assert isinstance(out, NoCommand) and out.reason is SkipReason.INVALID_STATE
    assert f'{MAX_STATE_JOINTS + 1} joint names, more than MAX_STATE_JOINTS' in out.message
    assert c.data.dropped_joint_states == 2


def test_missing_velocity_is_estimated_by_filtered_differences(puma_ref):
    cutoff = 50.0
    c = make(velocity_filter_cutoff=cutoff)
    v = np.array([0.2, -0.1, 0.3, 0.0, 0.5, -0.4])
    dt = 0.01
    alpha = dt / (dt + 1.0 / (2.0 * math.pi * cutoff))
    estimate = np.zeros(6)
    for k in range(4):
        q = Q0 + v * k * dt
        stamp = 10 * S + k * 10 * MS
        out = check_command(c.update(stamp, PUMA_JOINTS, q, (), stamp_ns=stamp))
        if k > 0:
            estimate = estimate + alpha * (v - estimate)
        np.testing.assert_allclose(out.velocity_error, -estimate, atol=1e-9)
        _, want = expected(puma_ref, 'computed_torque', q, estimate, Q0, 0 * q, 0 * q)
        np.testing.assert_allclose(out.effort, want, rtol=1e-9, atol=1e-9)
    # joint_state_broadcaster publishes NaN velocities for a missing velocity interface
    q = Q0 + v * 4 * dt
    estimate = estimate + alpha * (v - estimate)
    out = check_command(c.update(10 * S + 40 * MS, PUMA_JOINTS, q, [math.nan] * 6,
                                 stamp_ns=10 * S + 40 * MS))
    np.testing.assert_allclose(out.velocity_error, -estimate, atol=1e-9)


def test_a_new_cutoff_restarts_the_estimator():
    c = make(velocity_filter_cutoff=math.inf)
    c.update(0, PUMA_JOINTS, Q0, (), stamp_ns=S)
    out = check_command(c.update(10 * MS, PUMA_JOINTS, Q0 + 0.01, (), stamp_ns=S + 10 * MS))
    np.testing.assert_allclose(out.velocity_error, -1.0, atol=1e-9)   # raw difference
    c.reconfigure(velocity_filter_cutoff=10.0)
    out = check_command(c.update(20 * MS, PUMA_JOINTS, Q0 + 0.02, (), stamp_ns=S + 20 * MS))
    np.testing.assert_allclose(out.velocity_error, 0.0, atol=1e-12)   # first sample again


def test_a_restart_hands_the_estimator_on_and_an_activation_starts_afresh():
    """A new run within an activation (here: leaving gravity compensation, which holds the
    next state) keeps what the run knows of the arm, the estimator's history; a new
    activation starts it afresh."""
    c = make(velocity_filter_cutoff=math.inf)
    c.update(0, PUMA_JOINTS, Q0, (), stamp_ns=S)
    out = check_command(c.update(10 * MS, PUMA_JOINTS, Q0 + 0.01, (), stamp_ns=S + 10 * MS))
    np.testing.assert_allclose(out.velocity_error, -1.0, atol=1e-9)
    c.reconfigure(mode='gravity_compensation')
    c.reconfigure(mode='computed_torque')
    assert c.trajectory is None                     # restarted: the next state is held
    out = check_command(c.update(20 * MS, PUMA_JOINTS, Q0 + 0.02, (), stamp_ns=S + 20 * MS))
    np.testing.assert_allclose(c.trajectory.sample(0.0).q, Q0 + 0.02, atol=1e-12)
    np.testing.assert_allclose(out.velocity_error, -1.0, atol=1e-9)   # history kept
    c.deactivate()
    c.activate()
    out = check_command(c.update(30 * MS, PUMA_JOINTS, Q0 + 0.03, (), stamp_ns=S + 30 * MS))
    np.testing.assert_allclose(out.velocity_error, 0.0, atol=1e-12)   # first sample again


# ---- state timeout ------------------------------------------------------------------------

def test_state_timeout_zero_effort_then_resume():
    c = make(state_timeout=0.3, state_loss_policy='zero')
    assert c.check_timeout(100 * S) is None          # nothing before the first state
    out = check_command(c.update(0, PUMA_JOINTS, Q0, QD0, steady_ns=S))
    assert np.any(out.effort != 0.0) and not out.resumed
    assert c.check_timeout(S + 299 * MS) is None
    timeout = c.check_timeout(S + 301 * MS)
    assert timeout.started and timeout.silence == pytest.approx(0.301)
    np.testing.assert_array_equal(timeout.effort, np.zeros(6))
    again = c.check_timeout(S + 400 * MS)
    assert not again.started and np.all(again.effort == 0.0)
    assert c.timed_out
    with pytest.raises(TrajectoryError, match='state timeout'):
        set_point(c, 400 * MS)
    q_new = Q0 - 0.05
    out = check_command(c.update(500 * MS, PUMA_JOINTS, q_new, np.zeros(6),
                                 steady_ns=S + 500 * MS))
    assert out.resumed and not c.timed_out
    np.testing.assert_allclose(out.desired.q, q_new)
    np.testing.assert_allclose(out.position_error, 0.0, atol=1e-12)
    assert c.check_timeout(S + 700 * MS) is None


@pytest.mark.parametrize('policy', ['hold_gravity', 'hold_last'])
def test_state_loss_holds_for_state_loss_hold_then_zero(puma_ref, policy):
    """After the timeout: Pinocchio's g(q) at the last measured q (hold_gravity) or the
    last command (hold_last), in the command order, until state_timeout +
    state_loss_hold; then zeros; the goal aborted saying so; states back: hold there."""
    command_order = ['joint_6', 'joint_5', 'joint_4', 'joint_1', 'joint_2', 'joint_3']
    cmd = [PUMA_JOINTS.index(j) for j in command_order]
    c = make(joints=command_order, state_timeout=0.3, state_loss_policy=policy,
             state_loss_hold=0.5)
    c.update(0, PUMA_JOINTS, Q0, QD0, steady_ns=S)
    set_point(c, 0)
    last = check_command(c.update(MS, PUMA_JOINTS, Q0 + 0.01, QD0, steady_ns=S + MS),
                         PUMA_LIMITS[cmd])
    want = (puma_ref.rnea(Q0 + 0.01, np.zeros(6), np.zeros(6))[cmd]
            if policy == 'hold_gravity' else last.effort)
    assert np.abs(want).max() > 1.0
    for at, holding in ((S + 302 * MS, True), (S + 800 * MS, True), (S + 802 * MS, False),
                        (S + 5 * S, False)):
        timeout = c.check_timeout(at)
        assert timeout.holding is holding and timeout.started is (at == S + 302 * MS)
        assert timeout.hold_ended is (at == S + 802 * MS)          # said once
        np.testing.assert_allclose(timeout.effort, want if holding else np.zeros(6),
                                   rtol=1e-9, atol=1e-9)
    text = c.timeout_text(c.check_timeout(S + 5 * S)._replace(holding=True))
    assert ('gravity' in text) is (policy == 'hold_gravity') and '0.5 s' in text
    assert 'zero effort until states return' in state_loss.loss_text(c.settings, False)
    q_new = Q0 - 0.05
    out = check_command(c.update(6 * S, PUMA_JOINTS, q_new, np.zeros(6), steady_ns=7 * S),
                        PUMA_LIMITS[cmd])
    assert out.resumed
    np.testing.assert_allclose(out.desired.q, q_new[cmd])


def test_state_loss_hold_zero_or_no_command_yet_gives_zeros():
    c = make(state_timeout=0.1, state_loss_hold=0.0)
    c.update(0, PUMA_JOINTS, Q0, QD0, steady_ns=0)
    timeout = c.check_timeout(200 * MS)
    assert not timeout.holding and np.all(timeout.effort == 0.0)
    c = make(state_timeout=0.1)
    c.update(0, PUMA_JOINTS, [math.nan] * 6, QD0, steady_ns=0)   # dropped: no command
    assert c.check_timeout(200 * MS) is None
    for bad in ({'state_loss_policy': 'brake'}, {'state_loss_hold': -1.0},
                {'state_loss_hold': math.nan}, {'state_loss_hold': math.inf}):
        with pytest.raises(ControlParameterError):
            c.reconfigure(**bad)


def test_dropped_states_do_not_keep_the_controller_alive():
    c = make(state_timeout=0.1)
    c.update(0, PUMA_JOINTS, Q0, QD0, steady_ns=0)
    c.update(50 * MS, PUMA_JOINTS, [math.nan] * 6, QD0, steady_ns=50 * MS)
    assert c.check_timeout(150 * MS) is not None


def test_steady_clock_defaults_to_now():
    c = make(state_timeout=0.1)
    c.update(S, PUMA_JOINTS, Q0, QD0)
    assert c.check_timeout(S + 99 * MS) is None
    assert c.check_timeout(S + 101 * MS) is not None


# ---- reconfiguration -------------------------------------------------------------------------

def test_reconfigure_and_refusals_change_nothing(puma_ref):
    c = make()
    c.update(0, PUMA_JOINTS, Q0, QD0)
    set_point(c, 0)

    def check(mode, kp, kd):
        out = check_command(c.update(MS, PUMA_JOINTS, Q0, QD0))
        _, want = expected(puma_ref, mode, Q0, QD0, SET_Q, SET_QD, SET_QDD, kp, kd)
        np.testing.assert_allclose(out.effort, want, rtol=1e-9, atol=1e-9)

    kp = [10, 20, 30, 40, 50, 60]
    c.reconfigure(kp=kp, kd=3.5)
    check('computed_torque', np.array(kp, dtype=float), 3.5)
    c.reconfigure(mode='feedforward')
    check('feedforward', np.array(kp, dtype=float), 3.5)
    refusals = {'kp': ([1.0, 2.0], 'one value or 6'), 'kd': (-1.0, '>= 0'),
                'mode': ('position', 'not one of'), 'gravity': ([0.0, 9.81], 'gravity'),
                'state_timeout': (0.0, 'state_timeout')}
    for name, (value, reason) in refusals.items():
        with pytest.raises(ControlParameterError, match=reason):
            c.reconfigure(**{name: value})
    with pytest.raises(ControlParameterError):      # all or nothing
        c.reconfigure(kd=1.0, kp=[1.0, 2.0])
    check('feedforward', np.array(kp, dtype=float), 3.5)
    assert c.validate(kd=1.0).kd.tolist() == [1.0] * 6
    check('feedforward', np.array(kp, dtype=float), 3.5)      # validate applies nothing
    c.reconfigure(mode='gravity_compensation')
    check('gravity_compensation', 0.0, 0.0)


# ---- dynamics backend ------------------------------------------------------------------------

def test_generated_and_recursive_backends_agree(puma_ref):
    from ne_dynamics_ros.codegen import CompiledDynamics
    generated = make()
    recursive = ComputedTorqueController.from_urdf(
        str(PUMA_URDF), armature=PUMA_ARMATURE, settings={'kp': KP, 'kd': KD},
        dynamics_backend='recursive')
    assert isinstance(generated.dynamics, CompiledDynamics)
    assert recursive.dynamics is recursive.model
    for mode in ('computed_torque', 'feedforward', 'gravity_compensation'):
        for c in (generated, recursive):
            c.reconfigure(mode=mode)
        a = check_command(generated.update(0, PUMA_JOINTS, Q0, QD0)).effort
        b = check_command(recursive.update(0, PUMA_JOINTS, Q0, QD0)).effort
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        _, want = expected(puma_ref, mode, Q0, QD0, Q0, 0 * Q0, 0 * Q0)
        np.testing.assert_allclose(a, want, rtol=1e-9, atol=1e-9)
    # another gravity falls back to the recursion, still right
    generated.reconfigure(mode='gravity_compensation', gravity=[0.0, 9.81, 0.0])
    out = check_command(generated.update(0, PUMA_JOINTS, Q0, QD0)).effort
    np.testing.assert_allclose(out, np.clip(puma_ref.rnea(Q0, 0 * Q0, 0 * Q0, [0, 9.81, 0]),
                                            -PUMA_LIMITS, PUMA_LIMITS), rtol=1e-9, atol=1e-9)
    with pytest.raises(ControlParameterError, match='dynamics_backend'):
        ComputedTorqueController.from_urdf(str(PUMA_URDF), dynamics_backend='fast')


def test_absurd_positions_do_not_poison_the_velocity_estimate(puma_ref):
    """Two states at +-1.7e308 without velocities, then valid ones: answered again."""
    c = make()
    assert isinstance(c.update(0, PUMA_JOINTS, Q0), Command)
    for k, value in enumerate((1.7e308, -1.7e308), start=1):
        out = c.update(k * MS, PUMA_JOINTS, np.full(6, value))
        assert isinstance(out, NoCommand) and 'not a measurement' in out.message
    answered = [c.update(k * MS, PUMA_JOINTS, Q0 + 1e-4 * k) for k in range(3, 10)]
    assert all(isinstance(out, Command) for out in answered[1:]), answered
    # a jump the arm cannot make in 1 ms: dropped, and the estimate starts afresh
    out = c.update(10 * MS, PUMA_JOINTS, Q0 + 0.1)       # 100 rad/s; limits 1.5-5.7 rad/s
    assert isinstance(out, NoCommand) and 'beyond 10 x its limit' in out.message
    assert isinstance(c.update(11 * MS, PUMA_JOINTS, Q0 + 1e-3), Command)
    out = c.update(20 * MS, PUMA_JOINTS, Q0, velocities=np.full(6, 1e6))
    assert isinstance(out, NoCommand) and 'velocity of joint_1 is 1e+06' in out.message


def test_positions_beyond_the_joint_limits_by_more_than_the_margin_are_dropped():
    """config/puma560.urdf joint_3: [-225, 45] deg; margin 0.2 rad by default."""
    c = make()
    upper = math.radians(45.0)
    q = np.array(Q0, dtype=float)
    q[2] = upper + 0.19                              # inside the margin: a state
    assert isinstance(c.update(0, PUMA_JOINTS, q), Command)
    q[2] = upper + 0.21
    out = c.update(MS, PUMA_JOINTS, q)
    assert isinstance(out, NoCommand) and out.reason is SkipReason.INVALID_STATE
    assert 'joint_3' in out.message and 'position_limit_margin 0.2' in out.message
    assert c.data.dropped_joint_states == 1
    c.reconfigure(position_limit_margin=math.inf)    # no check
    assert isinstance(c.update(2 * MS, PUMA_JOINTS, q), Command)
    for bad in (-1.0, math.nan, 'wide', [0.1, 0.2]):
        with pytest.raises(ControlParameterError, match='position_limit_margin'):
            c.reconfigure(position_limit_margin=bad)


def test_oversized_trajectories_are_rejected_with_short_messages():
    c = make()
    assert isinstance(c.update(0, PUMA_JOINTS, Q0), Command)
    names = PUMA_JOINTS + [f'stranger_{i}' for i in range(30000)]
    point = TrajectoryPoint(0.5, [0.0] * len(names))
    with pytest.raises(TrajectoryError) as info:
        c.set_trajectory(names, [point], 0, MS)
    assert 'unknown joints' in str(info.value) and '30000 in all' in str(info.value)
    assert len(str(info.value)) < 1000
    from ne_dynamics_ros.control.reference.trajectory import MAX_POINTS
    many = [TrajectoryPoint(0.001 * (k + 1), Q0) for k in range(MAX_POINTS + 1)]
    with pytest.raises(TrajectoryError, match=f'more than {MAX_POINTS}'):
        c.set_trajectory(PUMA_JOINTS, many, 0, MS)
    assert c.rejected_trajectories == 2


def test_a_trajectory_whose_interpolation_overflows_is_refused_whole():
    c = make()
    assert isinstance(c.update(0, PUMA_JOINTS, Q0), Command)
    points = [TrajectoryPoint(1e-200, Q0), TrajectoryPoint(2e-200, Q0 + 1e150),
              TrajectoryPoint(1.0, Q0)]
    with pytest.raises(TrajectoryError, match='point 0 -> 1: the interpolation is not finite'):
        c.set_trajectory(PUMA_JOINTS, points, 0, MS)
    out = c.update(2 * MS, PUMA_JOINTS, Q0)                       # the hold stays in force
    assert isinstance(out, Command) and np.all(np.isfinite(out.effort))
    np.testing.assert_allclose(out.desired.q, Q0)


def test_a_trajectory_prepared_before_a_resume_is_refused():
    """prepare_trajectory runs off the control path; a reference reset meanwhile wins."""
    c = make(state_timeout=0.1)
    assert isinstance(c.update(0, PUMA_JOINTS, Q0, steady_ns=0), Command)
    goal = TrajectoryPoint(1.0, Q0 + 0.1)
    prepared = c.prepare_trajectory(PUMA_JOINTS, [goal], 0, MS)
    assert c.check_timeout(200 * MS) is not None                    # silence: timed out
    assert isinstance(c.update(201 * MS, PUMA_JOINTS, Q0 + 0.05, steady_ns=201 * MS), Command)
    with pytest.raises(TrajectoryError, match='while the trajectory was prepared'):
        c.install_trajectory(prepared)
    assert c.rejected_trajectories == 1
    np.testing.assert_allclose(c.trajectory.sample(0.3).q, Q0 + 0.05)   # still holding
    fresh = c.prepare_trajectory(PUMA_JOINTS, [goal], 0, 202 * MS)
    assert c.install_trajectory(fresh) is c.trajectory


# ---- integral action ----------------------------------------------------------------------

def run_held(c, q, steps, start_ns=0, period_ns=10 * MS):
    """Feed ``steps`` states at q (at rest) every period; return the efforts (steps, 6)."""
    return np.array([check_command(c.update(start_ns + k * period_ns, PUMA_JOINTS, q,
                                            np.zeros(6))).effort for k in range(steps)])


def test_integral_action_adds_ki_times_the_integral_of_the_error_up_to_its_bound():
    """A constant error e for t seconds adds ki e t to the command (rectangle rule over the
    states' times), until ki e t reaches integral_limit, where it stays."""
    ki, bound = np.full(6, 300.0), np.full(6, 2.0)
    with_i = make(ki=ki.tolist(), integral_limit=bound.tolist())
    without = make()
    for c in (with_i, without):
        check_command(c.update(0, PUMA_JOINTS, Q0, np.zeros(6)))   # holds Q0 from here
    q = Q0 - 0.01                                                  # error +0.01 on each
    a = run_held(with_i, q, 40, 10 * MS)
    b = run_held(without, q, 40, 10 * MS)
    elapsed = 0.01 * np.arange(1, 41)          # the first state after the hold integrates 10 ms
    expected = np.minimum(ki[None, :] * 0.01 * elapsed[:, None], bound)
    np.testing.assert_allclose(a - b, expected, rtol=1e-9, atol=1e-12)
    b2 = run_held(without, q, 200, 410 * MS)
    a2 = run_held(with_i, q, 200, 410 * MS)
    elapsed = 0.41 + 0.01 * np.arange(200)      # ki e t reaches the bound at t = 0.67 s
    expected = np.minimum(ki[None, :] * 0.01 * elapsed[:, None], bound)
    np.testing.assert_allclose(a2 - b2, expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a2[-1] - b2[-1], bound, atol=1e-12)


def test_the_integral_is_frozen_while_the_command_saturates():
    """Anti-windup: a large error saturating every joint for 2 s stores nothing; when the
    arm reaches the reference the command is the law's without integral."""
    limits = np.full(6, 1.0)
    c = make(ki=50.0, effort_limits=limits.tolist())
    plain = make(effort_limits=limits.tolist())
    for controller in (c, plain):
        check_command(controller.update(0, PUMA_JOINTS, Q0, np.zeros(6)), limits)
    far = Q0 - 0.5
    saturated = np.array([check_command(c.update(k * 10 * MS, PUMA_JOINTS, far, np.zeros(6)),
                                        limits).effort for k in range(1, 201)])
    assert np.all(np.abs(saturated) == limits)
    arrived = check_command(c.update(2010 * MS, PUMA_JOINTS, Q0, np.zeros(6)), limits).effort
    reference = check_command(plain.update(2010 * MS, PUMA_JOINTS, Q0, np.zeros(6)),
                              limits).effort
    np.testing.assert_allclose(arrived, reference, atol=1e-12)


def test_the_integral_restarts_with_the_reference():
    """A new trajectory, a state timeout's hold: the integral starts again from zero."""
    c = make(ki=20.0)
    plain = make()
    for controller in (c, plain):
        check_command(controller.update(0, PUMA_JOINTS, Q0, np.zeros(6)))
    run_held(c, Q0 - 0.02, 50, 10 * MS)
    run_held(plain, Q0 - 0.02, 50, 10 * MS)
    for controller in (c, plain):
        set_point(controller, 510 * MS)
    a = check_command(c.update(510 * MS, PUMA_JOINTS, Q0, np.zeros(6))).effort
    b = check_command(plain.update(510 * MS, PUMA_JOINTS, Q0, np.zeros(6))).effort
    np.testing.assert_allclose(a, b, atol=1e-12)          # nothing stored, dt = 0
    for controller in (c, plain):
        run_held(controller, Q0 - 0.02, 50, 520 * MS)
        # silence: a timeout, then the next state restarts the reference with a hold
        assert controller.check_timeout(10 * S) is not None
    a = check_command(c.update(11 * S, PUMA_JOINTS, Q0, np.zeros(6))).effort
    b = check_command(plain.update(11 * S, PUMA_JOINTS, Q0, np.zeros(6))).effort
    np.testing.assert_allclose(a, b, atol=1e-12)


def test_ki_zero_gives_lees_law_exactly():
    """ki = 0 (the default) and any integral_limit: the same commands bit for bit."""
    default = make()
    explicit = make(ki=0.0, integral_limit=1.0)
    for k in range(20):
        q = Q0 + 0.001 * k
        a = check_command(default.update(k * 10 * MS, PUMA_JOINTS, q, QD0)).effort
        b = check_command(explicit.update(k * 10 * MS, PUMA_JOINTS, q, QD0)).effort
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize('settings, match', [
    ({'ki': -1.0}, 'ki must be finite and >= 0'),
    ({'ki': math.nan}, 'ki must be finite'),
    ({'integral_limit': 0.0}, 'integral_limit must be > 0'),
    ({'ki': [1.0, 2.0]}, 'ki needs 1 or 6 values'),
])
def test_bad_integral_settings_are_refused(settings, match):
    with pytest.raises(ControlParameterError, match=match):
        make(**settings)


# ---- lifecycle ---------------------------------------------------------------------------

def test_the_loose_update_form_and_the_sample_give_the_same_command():
    from ne_dynamics_ros.control import JointStateSample
    a, b = make(), make()
    for k in range(3):
        q = np.asarray(Q0) + 0.01 * k
        loose = a.update(k * MS, PUMA_JOINTS, q, QD0, stamp_ns=k * MS)
        sample = b.update(k * MS, JointStateSample(PUMA_JOINTS, q, QD0, stamp_ns=k * MS))
        np.testing.assert_array_equal(loose.effort, sample.effort)


def test_deactivate_sends_zero_once_then_commands_nothing_until_activated(puma_ref):
    """Inactive: states answered NoCommand(INACTIVE) and trajectories refused, no state
    timeout; activate(q) holds q (the error is q - measured); activate() holds the next
    position measured."""
    from ne_dynamics_ros.control import JointStateSample
    c = make()
    check_command(c.update(0, JointStateSample(PUMA_JOINTS, Q0, QD0)))
    zero = c.deactivate()
    np.testing.assert_array_equal(zero, np.zeros(6))
    assert not c.active
    for k in range(1, 4):
        out = c.update(k * MS, JointStateSample(PUMA_JOINTS, Q0, QD0))
        assert isinstance(out, NoCommand) and out.reason is SkipReason.INACTIVE
    with pytest.raises(TrajectoryError, match='inactive'):
        set_point(c, 4 * MS)
    assert c.check_timeout(100 * S) is None           # silence while inactive is no timeout
    held = np.asarray(Q0) + 0.05
    c.activate(held, now_ns=5 * MS)
    out = check_command(c.update(6 * MS, JointStateSample(PUMA_JOINTS, Q0, QD0)))
    np.testing.assert_allclose(out.position_error, held - np.asarray(Q0), atol=1e-12)
    # the law toward the held position: computed torque with q_d = held, at rest
    q, qd = np.asarray(Q0), np.asarray(QD0)
    qdd_cmd = KD * (0.0 - qd) + KP * (held - q)
    np.testing.assert_allclose(out.effort, np.clip(puma_ref.rnea(q, qd, qdd_cmd),
                                                   -PUMA_LIMITS, PUMA_LIMITS), rtol=1e-9,
                               atol=1e-9)
    set_point(c, 7 * MS)                               # active again: trajectories taken
    c.deactivate()
    c.activate()
    moved = np.asarray(Q0) - 0.1
    out = check_command(c.update(8 * MS, JointStateSample(PUMA_JOINTS, moved, QD0)))
    np.testing.assert_allclose(out.position_error, 0.0, atol=1e-12)


def test_activation_holds_the_last_state_seen_inactive_while_it_is_fresh():
    """As a ros2_control controller holds its state interfaces on activation: a trajectory
    sent right after activate(now_ns) starts from the last valid state seen while
    inactive; a state older than state_timeout, or an invalid one, is not held (the next
    one is, and a trajectory before it is refused)."""
    from ne_dynamics_ros.control import JointStateSample
    c = make(state_timeout=0.1)
    check_command(c.update(0, JointStateSample(PUMA_JOINTS, Q0, QD0)))
    c.deactivate()
    seen = np.asarray(Q0) + 0.02
    c.update(10 * MS, JointStateSample(PUMA_JOINTS, seen, QD0))
    c.activate(now_ns=60 * MS)
    np.testing.assert_allclose(c.reference_at(60 * MS).q, seen, atol=1e-12)
    start = c.prepare_trajectory(PUMA_JOINTS, [TrajectoryPoint(1.0, SET_Q, SET_QD, SET_QDD)],
                                 0, 61 * MS).trajectory
    np.testing.assert_allclose(start.sample((61 - 0) * 1e-3).q, seen, atol=1e-9)
    for stale in ((200 * MS, Q0, 311 * MS),                        # 111 ms old
                  (400 * MS, [math.nan] * 6, 401 * MS),              # not a position
                  (500 * MS, np.asarray(Q0) + 9.0, 501 * MS)):       # beyond the limits
        c.deactivate()
        seen_ns, q, now_ns = stale
        c.update(seen_ns, JointStateSample(PUMA_JOINTS, q, QD0))
        c.activate(now_ns=now_ns)
        assert c.reference_at(now_ns) is None and c.trajectory is None
        moved = np.asarray(Q0) - 0.1
        out = check_command(c.update(now_ns + MS, JointStateSample(PUMA_JOINTS, moved, QD0)))
        np.testing.assert_allclose(out.position_error, 0.0, atol=1e-12)     # holds it


def test_configure_applies_settings_inactive_and_refuses_bad_ones():
    from ne_dynamics_ros.control import JointStateSample
    c = make()
    c.update(0, JointStateSample(PUMA_JOINTS, Q0, QD0))
    settings = c.configure({'kp': 50.0, 'mode': 'feedforward'})
    assert not c.active and settings.mode is ControlMode.FEEDFORWARD
    np.testing.assert_array_equal(c.settings.kp, np.full(6, 50.0))
    with pytest.raises(ControlParameterError, match='kp'):
        c.configure({'kp': -1.0})
    np.testing.assert_array_equal(c.settings.kp, np.full(6, 50.0))
    c.activate()
    assert isinstance(c.update(MS, JointStateSample(PUMA_JOINTS, Q0, QD0)), Command)


# ---- delay_compensation ---------------------------------------------------------------------

def _moving(delay):
    c = make(delay_compensation=delay)
    c.update(0, PUMA_JOINTS, Q0, np.zeros(6), stamp_ns=0)
    c.set_trajectory(PUMA_JOINTS, [TrajectoryPoint(0.0, Q0), TrajectoryPoint(1.0, Q0 + 0.3)],
                     0, 0)
    return c


@pytest.mark.parametrize('delay', [0.004, 0.012])
def test_delay_compensation_acts_on_the_reference_and_the_state_at_t_plus_the_delay(
        puma_ref, delay):
    t, step = 400 * MS, int(round(delay * S))
    # the reference at t and at t + T, as the plain controller samples it
    plain = _moving(0.0)
    now = check_command(plain.update(t, PUMA_JOINTS, Q0, np.zeros(6), stamp_ns=t)).desired
    later = check_command(plain.update(t + step, PUMA_JOINTS, Q0, np.zeros(6),
                                       stamp_ns=t + step)).desired
    assert np.max(np.abs(np.asarray(later.q) - now.q)) > 1e-4     # it moves over T
    c = _moving(delay)
    # on the reference at t: the command is the model's effort on the reference at t + T
    out = check_command(c.update(t, PUMA_JOINTS, now.q, now.qd, stamp_ns=t))
    np.testing.assert_allclose(out.effort, puma_ref.rnea(later.q, later.qd, later.qdd),
                               atol=1e-9)
    # the published reference and error stay those of the state's instant
    np.testing.assert_allclose(out.desired.q, now.q, atol=1e-12)
    np.testing.assert_allclose(out.position_error, 0.0, atol=1e-12)
    # off the reference: the error carried forward at its present rate
    e, ed = 0.01 * np.arange(1, 7) / 6, -0.05 * np.ones(6)
    q, qd = np.asarray(now.q) - e, np.asarray(now.qd) - ed
    out = check_command(c.update(t + MS, PUMA_JOINTS, q, qd, stamp_ns=t))
    q_hat, qd_hat = np.asarray(later.q) - (e + delay * ed), np.asarray(later.qd) - ed
    raw, clamped = expected(puma_ref, 'computed_torque', q_hat, qd_hat, later.q, later.qd,
                            later.qdd)
    np.testing.assert_allclose(out.effort, clamped, atol=1e-9)
    np.testing.assert_allclose(out.position_error, e, atol=1e-12)


@pytest.mark.parametrize('value', [-0.001, 0.2, math.nan, math.inf, 'soon'])
def test_delay_compensation_out_of_range_is_refused_by_name(value):
    with pytest.raises(ControlParameterError, match='delay_compensation'):
        make(delay_compensation=value)


# ---- repeated measurements ------------------------------------------------------------------

def test_a_moving_state_repeated_under_a_newer_stamp_keeps_its_own_instant():
    # what joint_state_broadcaster publishes when the hardware read no new state: the
    # last measurement, stamped with the new cycle
    c = _moving(0.0)
    t = 400 * MS
    first = check_command(c.update(t, PUMA_JOINTS, Q0 + 0.05, QD0, stamp_ns=t))
    again = check_command(c.update(t + 2 * MS, PUMA_JOINTS, Q0 + 0.05, QD0,
                                   stamp_ns=t + 2 * MS))
    np.testing.assert_array_equal(again.desired.q, first.desired.q)
    np.testing.assert_array_equal(again.position_error, first.position_error)
    np.testing.assert_array_equal(again.effort, first.effort)
    assert c.data.repeats.repeated == 1
    # the reference moves over 2 ms: a state taken as new shows a different error
    fresh = _moving(0.0)
    fresh.update(t, PUMA_JOINTS, Q0 + 0.05, QD0, stamp_ns=t)
    other = check_command(fresh.update(t + 2 * MS, PUMA_JOINTS, Q0 + 0.05 + 1e-9, QD0,
                                       stamp_ns=t + 2 * MS))
    assert np.max(np.abs(np.asarray(other.desired.q) - first.desired.q)) > 1e-5
    assert fresh.data.repeats.repeated == 0


@pytest.mark.parametrize('case', ['at rest', 'old', 'unstamped', 'no velocities'])
def test_identical_states_that_are_no_repeat_take_their_own_stamp(case):
    c = _moving(0.0)
    t = 400 * MS
    qd = np.zeros(6) if case == 'at rest' else () if case == 'no velocities' else QD0
    later = t + (30 * MS if case == 'old' else 2 * MS)
    stamps = (0, 0) if case == 'unstamped' else (t, later)
    first = check_command(c.update(t, PUMA_JOINTS, Q0, qd, stamp_ns=stamps[0]))
    again = check_command(c.update(later, PUMA_JOINTS, Q0, qd, stamp_ns=stamps[1]))
    assert c.data.repeats.repeated == 0
    assert np.max(np.abs(np.asarray(again.desired.q) - first.desired.q)) > 1e-5


def test_the_command_says_which_joints_sit_at_their_limit_in_the_command_order():
    """Command.at_limit: the joints whose command is at its effort limit, in the command
    order (the effort controller's joints, here reversed), as the node reports them."""
    limits = np.array([500.0, 5.0, 500.0, 500.0, 500.0, 500.0])     # the shoulder: 5 N*m
    c = ComputedTorqueController.from_urdf(PUMA_URDF, joints=PUMA_JOINTS[::-1],
                                           effort_limits=limits,
                                           settings={'kp': 100.0, 'kd': 20.0})
    q = np.array([0.3, -0.6, 0.4, 0.1, 0.2, 0.0])
    out = c.update(0, PUMA_JOINTS, q, np.zeros(6))
    effort = np.array(out.effort_values)
    at_limit_now = (np.abs(effort) >= limits[::-1]).tolist()
    # the shoulder holds its gravity (far over 5 N*m): at its limit, listed fifth
    assert out.at_limit == at_limit_now == [False, False, False, False, True, False]
    assert out.report is None and not out.contact_in_force and not c.goal_ends_waiting


def _quintic(start, goal, duration, t):
    """Rest-to-rest quintic (closed form): q, qd, qdd at ``t`` s of ``duration``."""
    s = min(max(t / duration, 0.0), 1.0)
    q = start + (10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5) * (goal - start)
    qd = (30 * s ** 2 - 60 * s ** 3 + 30 * s ** 4) / duration * (goal - start)
    qdd = (60 * s - 180 * s ** 2 + 120 * s ** 3) / duration ** 2 * (goal - start)
    return q, qd, qdd


def _quintic_points(start, goal, duration, count=11):
    return [TrajectoryPoint(t, *(v.tolist() for v in _quintic(start, goal, duration, t)))
            for t in np.linspace(0.0, duration, count)]


def test_a_zero_stamp_starts_when_installed_not_when_received():
    """joint_trajectory_controller starts a trajectory with header.stamp 0 at the first
    cycle that samples it, from the reference then: one prepared at its receipt (10 ms)
    and made the reference at 40 ms starts at 40 ms (it began 30 ms in before: a
    reference 3e-6 rad ahead of the arm on this 0.1 rad quintic, 3.6e-5 rad through
    controller_manager); a stamped one keeps its stamp; without a time, its receipt."""
    goal = np.asarray(Q0) + 0.1
    for now_ns, start_ns in ((40 * MS, 40 * MS), (None, 10 * MS)):
        c = make()
        assert isinstance(c.update(0, PUMA_JOINTS, Q0), Command)
        prepared = c.prepare_trajectory(PUMA_JOINTS, _quintic_points(Q0, goal, 1.0), 0,
                                        10 * MS)
        c.install_trajectory(prepared, now_ns=now_ns)
        for t in (0.0, 0.05, 0.3, 0.7, 1.0, 1.2):
            expected_q, expected_qd, expected_qdd = _quintic(np.asarray(Q0), goal, 1.0, t)
            reference = c.reference_at(start_ns + int(t * S))
            np.testing.assert_allclose(reference.q, expected_q, atol=1e-9)
            np.testing.assert_allclose(reference.qd, expected_qd, atol=1e-8)
            np.testing.assert_allclose(reference.qdd, expected_qdd, atol=1e-6)
    c = make()
    assert isinstance(c.update(0, PUMA_JOINTS, Q0), Command)
    prepared = c.prepare_trajectory(PUMA_JOINTS, _quintic_points(Q0, goal, 1.0), 20 * MS,
                                    10 * MS)
    c.install_trajectory(prepared, now_ns=40 * MS)
    np.testing.assert_allclose(c.reference_at(520 * MS).q,
                               _quintic(np.asarray(Q0), goal, 1.0, 0.5)[0], atol=1e-9)


def test_a_zero_stamp_installed_mid_motion_continues_from_the_reference_then():
    """Replacing a moving reference: the new trajectory (first waypoint 0.5 s ahead)
    starts from the old reference at its install, 30 ms after its receipt (a quintic
    from its position, velocity and acceleration then), so the reference does not jump
    there, and it reaches its waypoints at install + their time."""
    c = make()
    assert isinstance(c.update(0, PUMA_JOINTS, Q0), Command)
    moving = np.asarray(Q0) + 0.2
    c.set_trajectory(PUMA_JOINTS, _quintic_points(Q0, moving, 1.0), 0, 0)
    before = c.reference_at(430 * MS)
    target = np.asarray(Q0) - 0.1
    zeros = [0.0] * len(PUMA_JOINTS)
    prepared = c.prepare_trajectory(PUMA_JOINTS, [TrajectoryPoint(0.5, target.tolist(), zeros,
                                                                  zeros)], 0, 400 * MS)
    c.install_trajectory(prepared, now_ns=430 * MS)
    after = c.reference_at(430 * MS)
    np.testing.assert_allclose(after.q, before.q, atol=1e-12)
    np.testing.assert_allclose(after.qd, before.qd, atol=1e-12)
    assert np.abs(before.qd).max() > 0.1                      # it was moving
    np.testing.assert_allclose(c.reference_at(930 * MS).q, target, atol=1e-12)


def test_a_zero_stamp_moved_from_a_reference_replaced_meanwhile_starts_from_the_new_one():
    """The zero-stamp trajectory is moved to its install instant outside the controller's
    lock, from the reference then; if another trajectory became the reference meanwhile,
    it is moved again from that one (the reference at install does not jump)."""
    from ne_dynamics_ros.control.references import restarted
    c = make()
    assert isinstance(c.update(0, PUMA_JOINTS, Q0), Command)
    goal = np.asarray(Q0) + 0.1
    zeros = [0.0] * len(PUMA_JOINTS)
    points = [TrajectoryPoint(1.0, goal.tolist(), zeros, zeros)]
    prepared = c.prepare_trajectory(PUMA_JOINTS, points, 0, 10 * MS)
    stale = c.data.runs.current.trajectory
    now = c.data.runs.seconds(40 * MS)
    moved = (stale, restarted(prepared.trajectory, now, stale.sample(now)))
    c.set_trajectory(PUMA_JOINTS, _quintic_points(Q0, np.asarray(Q0) - 0.2, 0.3), 0, 0)
    before = c.reference_at(40 * MS)
    assert np.abs(before.qd).max() > 0.1                  # the new reference moves then
    with c.data.runs.lock:
        c.data.references.install(c.data.runs.current, prepared, None, None, now, moved)
    after = c.reference_at(40 * MS)
    np.testing.assert_allclose(after.q, before.q, atol=1e-12)
    np.testing.assert_allclose(after.qd, before.qd, atol=1e-12)
    np.testing.assert_allclose(c.reference_at(1040 * MS).q, goal, atol=1e-12)
    # with the reference unchanged, the trajectory moved outside the lock is the one used
    c = make()
    assert isinstance(c.update(0, PUMA_JOINTS, Q0), Command)
    prepared = c.prepare_trajectory(PUMA_JOINTS, points, 0, 10 * MS)
    reference = c.data.runs.current.trajectory
    moved = (reference, restarted(prepared.trajectory, now, reference.sample(now)))
    with c.data.runs.lock:
        assert c.data.references.install(c.data.runs.current, prepared, None, None, now,
                                         moved) is moved[1]
