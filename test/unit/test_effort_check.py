"""Trajectories checked against the effort limits, and Hollerbach's time scaling.

References: Pinocchio's inverse dynamics for the effort a trajectory needs; for the
stretch, a brute-force search over stretches of the trajectory itself (each stretched
trajectory interpolated anew and its inverse dynamics evaluated, not the closed form's
quadratics); for ``scale``, the UR5e on the Pinocchio plant following the stretched goal.
"""
import numpy as np
import pytest
from references import UR5E_URDF
from hypothesis import given, HealthCheck, settings, strategies as st
from random_urdf import PinocchioReference, random_chains

from ne_dynamics_ros.control import ComputedTorqueController
from ne_dynamics_ros.control.reference.effort_check import (check_trajectory, effort_terms,
                                                            InfeasibleTrajectory, smallest_stretch,
                                                            stretched)
from ne_dynamics_ros.control.laws import ControlParameterError
from ne_dynamics_ros.control.settings import ControllerSettings
from ne_dynamics_ros.control.reference.trajectory import (DesiredState, trajectory_from_points,
                                                          TrajectoryPoint)
from ne_dynamics_ros.dynamics.model import load_model
from ne_dynamics_ros.simulation.closed_loop import run_lockstep, TrajectoryMessage
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm

GRAVITY = np.array([0.0, 0.0, -9.81])
UR5E_HOME = np.radians([0.0, -90.0, 90.0, -90.0, -90.0, 0.0])


def random_trajectory(rng, n, points=3, kinds=('p', 'pv', 'pva'), moving=True):
    """A trajectory of ``points`` waypoints of mixed fields, from a (moving) state."""
    pts = []
    for k in range(points):
        kind = kinds[rng.integers(len(kinds))]
        fields = [rng.normal(0, 0.5, n)]
        if 'v' in kind:
            fields.append(rng.normal(0, 0.5, n))
        if 'a' in kind:
            fields.append(rng.normal(0, 1.0, n))
        pts.append(TrajectoryPoint(0.3 + 0.4 * k, *fields))
    before = DesiredState(rng.normal(0, 0.5, n), rng.normal(0, 0.3, n) * moving,
                          rng.normal(0, 0.3, n) * moving)
    names = [f'j{i}' for i in range(n)]
    return trajectory_from_points(names, pts, names, None, 5.0, before)


def test_sampling_a_batch_is_sampling_each_time():
    rng = np.random.default_rng(4)
    for _ in range(20):
        tr = random_trajectory(rng, 3, points=int(rng.integers(1, 5)))
        t = np.sort(rng.uniform(4.8, tr.end_time + 0.5, 300))
        many = np.hstack(tr.sample_many(t))
        one = np.array([np.concatenate(tr.sample(x)) for x in t])
        np.testing.assert_allclose(many, one, rtol=1e-12, atol=1e-12)


def test_the_terms_add_up_to_pinocchios_inverse_dynamics_and_friction():
    damping, friction = np.array([6, 6, 4, 1, 1, 1.0]), np.array([2.5, 2.5, 1.5, .4, .4, .4])
    model = load_model(str(UR5E_URDF), armature=[0.1] * 6, damping=damping,
                       friction=friction)
    pin = PinocchioReference(UR5E_URDF.read_text(), model.joint_names, 'tool0',
                             armature=[0.1] * 6)
    rng = np.random.default_rng(2)
    q, qd, qdd = (rng.normal(0, s, (40, 6)) for s in (1.0, 1.0, 3.0))
    a, b, d = effort_terms(model, q, qd, qdd, GRAVITY, coulomb_velocity=0.003)
    for k in range(len(q)):
        np.testing.assert_allclose(a[k], pin.rnea(q[k], qd[k], qdd[k], gravity=(0, 0, 0)),
                                   atol=1e-9)
        np.testing.assert_allclose(d[k] - friction * np.tanh(qd[k] / 0.003),
                                   pin.rnea(q[k], 0 * q[k], 0 * q[k], GRAVITY), atol=1e-9)
    np.testing.assert_allclose(b, damping * qd)
    _, _, no_gravity = effort_terms(model, q, 0 * qd, qdd, GRAVITY, friction=False,
                                    with_gravity=False)
    assert not no_gravity.any()


def brute_force_stretch(model, trajectory, times, limits, grid=1000, tol=1e-10):
    """The smallest stretch found by trying stretches: a grid in 1/c, then bisection.

    Every stretch tried is a trajectory of its own (:func:`stretched`, interpolated anew)
    and its own inverse dynamics; the grid's are tried a few at a time, their samples in
    one batched RNEA call (row by row the efforts one call per stretch gives).
    """
    t0 = trajectory.time_before

    def fit_all(stretches):
        states = [stretched(trajectory, c).sample_many(t0 + c * (times - t0))
                  for c in stretches]
        q, qd, qdd = (np.concatenate(rows) for rows in zip(*states))
        tau = model.rnea(q, qd, qdd, gravity=GRAVITY) + model.damping * qd
        inside = np.abs(tau) <= limits * (1 + 1e-12)
        return [bool(np.all(part)) for part in np.split(inside, len(stretches))]

    def fits(c):
        return fit_all([c])[0]

    if fits(1.0):
        return 1.0
    u = np.linspace(1.0, 1e-3, grid)
    first, k, size = None, 1, 1
    while first is None and k < grid:                 # the first grid point that fits
        batch = range(k, min(k + size, grid))
        first = next((j for j, ok in zip(batch, fit_all([1.0 / u[j] for j in batch])) if ok),
                     None)
        k, size = batch.stop, min(2 * size, 64)
    if first is None:
        return np.inf
    hi, lo = u[first - 1], u[first]                    # hi does not fit, lo does
    while hi - lo > tol:
        mid = 0.5 * (hi + lo)
        hi, lo = (hi, mid) if fits(1.0 / mid) else (mid, lo)
    return 1.0 / lo


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(robot=random_chains(max_joints=5), seed=st.integers(0, 2**32 - 1),
       convention=st.sampled_from(['mdh', 'dh']), share=st.floats(0.3, 0.95))
def test_the_stretch_is_the_smallest_a_brute_force_search_finds(robot, seed, convention,
                                                                share):
    rng = np.random.default_rng(seed)
    n = len(robot['joints'])
    model = load_model(robot['xml'], tip_link=robot['tip'], convention=convention,
                       damping=rng.uniform(0, 3, n), friction=np.zeros(n))
    names = model.joint_names
    trajectory = random_trajectory(rng, n, points=int(rng.integers(1, 4)), moving=False)
    trajectory = trajectory_from_points(names, [TrajectoryPoint(t, p, v, a) for t, p, v, a in zip(
        trajectory.times, trajectory.positions * 2.0, trajectory.velocities * 4.0,
        trajectory.accelerations * 8.0)], names, None, 5.0, trajectory.state_before)
    rate = 100.0
    need = check_trajectory(model, trajectory, names, np.full(n, np.inf), rate, GRAVITY,
                            coulomb_velocity=0.003)
    times = 5.0 + np.arange(need.samples) / rate
    times[-1] = min(times[-1], trajectory.end_time)
    a, b, d = effort_terms(model, *trajectory.sample_many(times), GRAVITY)
    limits = np.abs(a + b + d).max(axis=0) * share + 1e-3
    c = smallest_stretch(a, b, d, limits)
    if np.any(np.abs(d) > limits):
        assert c == np.inf                  # could not stop on the path: never stretched
        return
    expected = brute_force_stretch(model, trajectory, times, limits)
    if np.isinf(expected):
        assert np.isinf(c) or c > 1e3
    else:
        assert c == pytest.approx(expected, rel=1e-6, abs=1e-6)


def test_a_stretch_that_is_not_monotone_is_still_the_smallest():
    """Viscous friction against inertia: fits as sent, not twice as slow (Hollerbach's
    u-quadratic dips below -limit between), so the smallest stretch is 1, not the
    stretch past the dip; with a larger inertial term, the first stretch past it."""
    a, b, d = np.array([[5.0]]), np.array([[-5.0]]), np.array([[0.0]])
    assert smallest_stretch(a, b, d, [1.0]) == 1.0
    # 6u^2 - 5u + 0.5 = 1 at u = 0.9257: over the limit at u = 1, fits below
    c = smallest_stretch(a + 1.0, b, d + 0.5, [1.0])
    assert c == pytest.approx(1 / ((5 + np.sqrt(25 + 12)) / 12), rel=1e-12)
    assert smallest_stretch(a, b, d + 1.2, [1.0]) == np.inf     # d alone over the limit
    assert smallest_stretch(np.array([[4.0]]), np.zeros((1, 1)), np.zeros((1, 1)),
                            [1.0]) == pytest.approx(2.0)         # 4 / c**2 = 1


def shoulder_goal(seconds=0.25, move=1.2):
    """The issue's goal: shoulder_lift 1.2 rad in 0.25 s from home, one quintic point."""
    target = UR5E_HOME.copy()
    target[1] += move
    return [TrajectoryPoint(seconds, target, np.zeros(6), np.zeros(6))]


def ur5e_controller(**values):
    return ComputedTorqueController.from_urdf(
        str(UR5E_URDF), armature=[0.1] * 6,
        settings=dict({'kp': 2500.0, 'kd': 100.0, 'effort_check_rate': 500.0}, **values))


def test_a_goal_needing_twice_the_shoulders_torque_is_refused_with_the_numbers():
    c = ur5e_controller()
    names = c.model.joint_names
    c.update(0, names, UR5E_HOME, np.zeros(6), steady_ns=0)
    with pytest.raises(InfeasibleTrajectory) as refused:
        c.set_trajectory(names, shoulder_goal(), 0, 2_000_000)
    text = str(refused.value)
    assert 'shoulder_lift_joint needs' in text and 'limit of 135 N*m' in text, text
    needed = float(text.split('needs ')[1].split(' N*m')[0])
    assert abs(needed) > 135.0
    assert c.rejected_trajectories == 1
    assert c.trajectory.end_time == 0.0                        # still holding, nothing moved


def test_scale_plays_the_goal_slower_with_no_command_clamped_and_the_goal_met():
    rate, limit = 500.0, 150.0
    c = ur5e_controller(infeasible_trajectory='scale', effort_margin=0.1)
    names = c.model.joint_names
    needed = check_trajectory(c.model, trajectory_from_points(
        names, shoulder_goal(), names, None, 0.0, DesiredState(UR5E_HOME, np.zeros(6),
                                                               np.zeros(6))),
        names, c.effort_limits, rate, GRAVITY)
    assert 1.9 < needed.peak_ratio < 3.5, needed        # about twice the 150 N*m
    arm = SimulatedArm(str(UR5E_URDF), armature=[0.1] * 6)
    arm.reset(UR5E_HOME)
    run = run_lockstep(c, arm, 2.0, rate=rate,
                       trajectory=TrajectoryMessage(names, shoulder_goal(), 0))
    stretch = c.trajectory.times[-1] / 0.25
    assert stretch > 1.3
    assert np.abs(run.effort).max(axis=0)[1] < limit          # no command at the clamp
    assert np.all(np.abs(run.effort) < c.effort_limits)
    np.testing.assert_allclose(run.q[-1], shoulder_goal()[0].positions, atol=1e-3)
    # the stretch is the smallest: the feed-forward peak reaches the limit less the margin
    after = check_trajectory(c.model, c.trajectory, names, c.effort_limits * 0.9, rate,
                             GRAVITY)
    assert 1.0 - 2e-3 < after.peak_ratio < 1.0 + 1e-6, after


def test_gravity_alone_over_a_limit_is_refused_even_with_scale():
    c = ur5e_controller(infeasible_trajectory='scale')
    names = c.model.joint_names
    c.update(0, names, UR5E_HOME, np.zeros(6), steady_ns=0)
    weak = ComputedTorqueController.from_urdf(
        str(UR5E_URDF), settings={'infeasible_trajectory': 'scale'},
        effort_limits=[150, 20, 150, 28, 28, 28])          # shoulder_lift holds < g
    weak.update(0, names, UR5E_HOME, np.zeros(6), steady_ns=0)
    level = UR5E_HOME + np.radians([0, 90, -90, 0, 0, 0])      # forearm stretched out
    with pytest.raises(InfeasibleTrajectory, match='at any speed'):
        weak.set_trajectory(names, [TrajectoryPoint(3.0, level, np.zeros(6),
                                                    np.zeros(6))], 0, 2_000_000)


def test_a_check_rate_of_zero_takes_the_goal_as_sent():
    c = ur5e_controller(effort_check_rate=0.0)
    names = c.model.joint_names
    c.update(0, names, UR5E_HOME, np.zeros(6), steady_ns=0)
    c.set_trajectory(names, shoulder_goal(), 0, 2_000_000)
    assert c.trajectory.times[-1] == 0.25


@pytest.mark.parametrize('name,value', [
    ('effort_margin', float('nan')), ('effort_margin', -0.1), ('effort_margin', 1.0),
    ('effort_check_rate', -1.0), ('effort_check_rate', float('inf')),
    ('infeasible_trajectory', 'maybe')])
def test_hostile_settings_are_refused_with_their_name(name, value):
    with pytest.raises(ControlParameterError, match=name):
        ControllerSettings.from_values({name: value}, 6)


def test_effort_limits_of_zero_are_refused():
    with pytest.raises(ControlParameterError, match='effort_limits'):
        ComputedTorqueController.from_urdf(str(UR5E_URDF),
                                           effort_limits=[150, 150, 150, 0, 28, 28])
