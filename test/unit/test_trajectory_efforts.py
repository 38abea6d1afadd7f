"""Inverse-dynamics efforts on a trajectory's points for JTC (reference/trajectory_efforts.py).

References: Pinocchio's inverse dynamics (RNEA with the drives' armature) for the effort
at every point, on the PUMA 560 and on random arms (hypothesis), and a 2 kHz sweep of the
model's effort against the linear interpolation of the points' efforts (what
joint_trajectory_controller applies between points) for the bound; the motion itself
through a new trajectory built from the points (JTC's quintic between them), against the
original.
"""
from hypothesis import given, HealthCheck, settings, strategies as st
import numpy as np
import pytest
from random_urdf import PinocchioReference, random_chains
from references import GRAVITY, PinocchioArm, PUMA560_URDF, PUMA_ARMATURE, PUMA_JOINTS

from ne_dynamics_ros.control.reference.effort_check import InfeasibleTrajectory
from ne_dynamics_ros.control.reference.trajectory_efforts import (
    CHECKS, EFFORT_OFFSET_PERIODS, feedforward_goal, feedforward_points, FeedforwardSettings,
    hold_effort, MIN_STOP, STOP_ACCELERATION, STOP_SPEED, stop_waypoints)
from ne_dynamics_ros.control.reference.trajectory import (DesiredState, trajectory_from_points,
                                                          TrajectoryError, TrajectoryPoint)
from ne_dynamics_ros.dynamics.model import load_model

Q0 = np.array([0.1, -0.3, 0.4, 0.2, -0.5, 0.3])


@pytest.fixture(scope='module')
def puma():
    return load_model(str(PUMA560_URDF), tip_link='flange', armature=PUMA_ARMATURE)


@pytest.fixture(scope='module')
def pinocchio():
    return PinocchioArm(PUMA560_URDF, PUMA_JOINTS, PUMA_ARMATURE)


def move(kind='pva', duration=1.5, amplitude=0.6):
    """A rest-to-rest move through a middle waypoint, with the fields of ``kind``."""
    mid = Q0 + 0.5 * amplitude
    fields = {'p': ((), ()), 'pv': ([0.4] * 6, ()), 'pva': ([0.4] * 6, [0.0] * 6)}[kind]
    zeros = [0.0] * 6
    points = [TrajectoryPoint(0.0, Q0.tolist(), zeros, zeros),
              TrajectoryPoint(duration / 2, mid.tolist(), *fields),
              TrajectoryPoint(duration, (Q0 + amplitude).tolist(), zeros, zeros)]
    zeros = np.zeros(6)
    return trajectory_from_points(PUMA_JOINTS, points, PUMA_JOINTS, 10.0, 10.0,
                                  DesiredState(Q0, zeros, zeros))


def interpolated(points, t):
    return np.stack([np.interp(t, points.times, points.effort[:, j]) for j in range(6)],
                    axis=1)


@pytest.mark.parametrize('kind', ['p', 'pv', 'pva'])
def test_each_points_effort_is_the_arms_inverse_dynamics(puma, pinocchio, kind):
    trajectory = move(kind)
    points = feedforward_points(puma, trajectory, GRAVITY, tolerance=0.05, min_step=0.002,
                                friction=False)
    assert points.times[0] == 0.0 and np.all(np.diff(points.times) > 0)
    assert set(trajectory.times) <= set(points.times)          # every waypoint kept
    for q, qd, qdd, effort in zip(points.q, points.qd, points.qdd, points.effort):
        np.testing.assert_allclose(effort, pinocchio.rnea(q, qd, qdd), atol=1e-9)


def test_friction_adds_the_drives_viscous_and_coulomb_terms(pinocchio):
    damping, coulomb = np.linspace(1.0, 2.0, 6), np.linspace(0.5, 1.5, 6)
    model = load_model(str(PUMA560_URDF), tip_link='flange', armature=PUMA_ARMATURE,
                       damping=damping, friction=coulomb)
    points = feedforward_points(model, move(), GRAVITY, tolerance=0.05, min_step=0.002,
                                coulomb_velocity=0.01)
    for q, qd, qdd, effort in zip(points.q, points.qd, points.qdd, points.effort):
        expected = pinocchio.rnea(q, qd, qdd) + damping * qd + coulomb * np.tanh(qd / 0.01)
        np.testing.assert_allclose(effort, expected, atol=1e-9)


@pytest.mark.parametrize('tolerance', [0.5, 0.05, 0.01])
def test_the_linear_interpolation_stays_within_the_tolerance(puma, tolerance):
    trajectory = move()
    # without Coulomb friction: its tanh(q̇ / v_s) is a step as the arm stops, which no
    # chord follows (below)
    points = feedforward_points(puma, trajectory, GRAVITY, tolerance=tolerance,
                                min_step=0.0005, friction=False)
    t = np.arange(0.0, points.times[-1], 0.0005)
    state = trajectory.sample_many(trajectory.start_time + t)
    exact = sum(puma_terms(puma, state, friction=False))
    gap = np.abs(interpolated(points, t) - exact).max(axis=0)
    # the sweep is not the points' own checks, so it may find a little more
    assert np.all(gap <= 1.1 * tolerance), (gap, tolerance)
    assert np.all(points.interpolation_error <= tolerance)
    # and no denser than it needs: a tenth of the tolerance would take more points
    finer = feedforward_points(puma, trajectory, GRAVITY, tolerance=tolerance / 10,
                               min_step=0.0005, friction=False)
    assert len(finer.times) > len(points.times)


def puma_terms(model, state, friction=True):
    from ne_dynamics_ros.control.reference.effort_check import effort_terms
    return effort_terms(model, state.q, state.qd, state.qdd, GRAVITY, friction)


def test_min_step_stops_the_halving_and_the_gap_is_reported(puma):
    points = feedforward_points(puma, move(duration=0.6), GRAVITY, tolerance=1e-6,
                                min_step=0.01, max_step=0.1)
    assert np.diff(points.times).min() >= 0.005 - 1e-12
    assert np.any(points.interpolation_error > 1e-6)


def test_coulomb_frictions_step_as_the_arm_stops_is_reported_not_hidden():
    model = load_model(str(PUMA560_URDF), tip_link='flange', armature=PUMA_ARMATURE,
                       friction=np.full(6, 2.0))
    trajectory = move()
    points = feedforward_points(model, trajectory, GRAVITY, tolerance=0.01,
                                min_step=0.002)
    t = np.arange(0.0, points.times[-1], 0.0005)
    exact = sum(puma_terms(model, trajectory.sample_many(trajectory.start_time + t)))
    gap = np.abs(interpolated(points, t) - exact).max(axis=0)
    # the step is within one control period of the stop: the report says how far off
    assert np.all(points.interpolation_error > 0.01)
    assert np.all(gap <= 1.1 * points.interpolation_error), (gap, points.interpolation_error)


def test_the_points_reproduce_the_motion(puma):
    """JTC's quintic between the new points is the trajectory's own polynomial."""
    trajectory = move('pva')
    points = feedforward_points(puma, trajectory, GRAVITY, tolerance=0.05, min_step=0.002)
    again = trajectory_from_points(
        PUMA_JOINTS, [TrajectoryPoint(t, q, qd, qdd) for t, q, qd, qdd in
                      zip(points.times, points.q, points.qd, points.qdd)],
        PUMA_JOINTS, 10.0, 10.0, trajectory.state_before)
    t = 10.0 + np.linspace(0.0, points.times[-1], 997)
    for a, b in zip(again.sample_many(t), trajectory.sample_many(t)):
        np.testing.assert_allclose(a, b, atol=1e-9)


@pytest.mark.parametrize('kind', ['p', 'pv'])
def test_waypoints_without_accelerations_are_sampled_as_the_trajectory_moves(puma, kind):
    """Without velocities a segment is straight, without accelerations a cubic (as JTC
    interpolates them): each point carries the trajectory's state there."""
    trajectory = move(kind)
    points = feedforward_points(puma, trajectory, GRAVITY, tolerance=0.05, min_step=0.002)
    state = trajectory.sample_many(trajectory.start_time + points.times)
    for a, b in zip((points.q, points.qd, points.qdd), state):
        np.testing.assert_array_equal(a, b)


def test_a_single_point_is_its_own_feedforward(puma, pinocchio):
    zeros = np.zeros(6)
    trajectory = trajectory_from_points(PUMA_JOINTS, [TrajectoryPoint(0.0, Q0.tolist())],
                                        PUMA_JOINTS, 10.0, 10.0, DesiredState(Q0, zeros, zeros))
    points = feedforward_points(puma, trajectory, GRAVITY, tolerance=0.05, min_step=0.002)
    assert points.times.tolist() == [0.0]
    np.testing.assert_allclose(points.effort[0], pinocchio.rnea(Q0, zeros, zeros), atol=1e-9)


@pytest.mark.parametrize('kwargs, match', [
    ({'tolerance': 0.0}, 'tolerance'), ({'tolerance': -1.0}, 'tolerance'),
    ({'tolerance': np.nan}, 'tolerance'), ({'tolerance': [0.1, 0.1]}, 'tolerance'),
    ({'min_step': 0.0}, 'min_step'), ({'min_step': np.inf}, 'min_step'),
    ({'max_step': -0.1}, 'max_step'), ({'min_step': 0.2, 'max_step': 0.1}, 'shorter')])
def test_bad_settings_are_refused(puma, kwargs, match):
    settings = dict(tolerance=0.05, min_step=0.002, **{})
    settings.update(kwargs)
    with pytest.raises(ValueError, match=match):
        feedforward_points(puma, move(), GRAVITY, **settings)


def test_too_many_points_are_refused(puma, monkeypatch):
    import ne_dynamics_ros.control.reference.trajectory_efforts as feedforward
    monkeypatch.setattr(feedforward, 'MAX_POINTS', 50)
    with pytest.raises(TrajectoryError, match='more than 50 points'):
        feedforward.feedforward_points(puma, move(), GRAVITY, tolerance=1e-4, min_step=1e-4)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(robot=random_chains(max_joints=5), seed=st.integers(0, 2**32 - 1),
       convention=st.sampled_from(['mdh', 'dh']))
def test_random_arms_get_pinocchios_efforts_within_the_tolerance(robot, seed, convention):
    rng = np.random.default_rng(seed)
    n = len(robot['joints'])
    armature = rng.uniform(0.0, 0.2, n)
    model = load_model(robot['xml'], tip_link=robot['tip'], convention=convention,
                       armature=armature)
    names = model.joint_names
    reference = PinocchioReference(robot['xml'], names, robot['tip'], armature=armature,
                                   locked=robot['locked'])
    zeros = np.zeros(n)
    q0 = rng.normal(0.0, 0.5, n)
    points = [TrajectoryPoint(0.0, q0.tolist(), zeros.tolist(), zeros.tolist()),
              TrajectoryPoint(0.6, rng.normal(0.0, 0.5, n).tolist(),
                              rng.normal(0.0, 0.5, n).tolist(), rng.normal(0.0, 1.0, n).tolist()),
              TrajectoryPoint(1.2, rng.normal(0.0, 0.5, n).tolist(), zeros.tolist(),
                              zeros.tolist())]
    trajectory = trajectory_from_points(names, points, names, 5.0, 5.0,
                                        DesiredState(q0, zeros, zeros))
    tolerance = 0.02 * (1.0 + np.abs(model.gravity_torques(q0, gravity=GRAVITY)))
    out = feedforward_points(model, trajectory, GRAVITY, tolerance=tolerance,
                             min_step=0.0005, friction=False)
    for q, qd, qdd, effort in zip(out.q, out.qd, out.qdd, out.effort):
        np.testing.assert_allclose(effort, reference.rnea(q, qd, qdd, gravity=GRAVITY),
                                   atol=1e-8, rtol=1e-9)
    # the contract: JTC's chord between two points stays within the tolerance of
    # Pinocchio's efforts, but where the interval could not be halved above min_step (the
    # gap found is then reported); checked where the module looks (CHECKS)
    worst = np.zeros(n)
    checks = [(k, h, s) for k, h in enumerate(np.diff(out.times)) for s in CHECKS]
    # the trajectory at every check in one call (row by row what one call per time gives)
    states = trajectory.sample_many([trajectory.start_time + out.times[k] + s * h
                                     for k, h, s in checks])
    for (k, h, s), q, qd, qdd in zip(checks, states.q, states.qd, states.qdd):
        exact = reference.rnea(q, qd, qdd, gravity=GRAVITY)
        gap = np.abs(exact - (out.effort[k] + s * (out.effort[k + 1] - out.effort[k])))
        worst = np.maximum(worst, gap)
        assert np.all(gap <= tolerance + 1e-9) or h < 2.0 * 0.0005, (k, h, gap, tolerance)
    assert np.all(worst <= out.interpolation_error + 1e-9)


def settings_for(model, **kwargs):
    """The relay's settings; each point's effort at its own time unless said otherwise."""
    values = dict(gravity=GRAVITY, tolerance=0.05, rate=500.0,
                  effort_limits=np.asarray(model.effort_limits, dtype=float), friction=False,
                  effort_offset=0.0)
    values.update(kwargs)
    return FeedforwardSettings(**values)


def test_a_goal_starts_from_the_arm_and_its_points_are_pinocchios(puma, pinocchio):
    # the first waypoint 0.5 s in: the motion starts where the arm is, as JTC starts it
    q, qd = Q0 - 0.05, np.zeros(6)
    points = feedforward_goal(puma, list(reversed(PUMA_JOINTS)), [
        TrajectoryPoint(0.5, Q0[::-1].tolist(), [0.0] * 6, [0.0] * 6),
        TrajectoryPoint(1.5, (Q0 + 0.3)[::-1].tolist(), [0.0] * 6, [0.0] * 6)],
        (q, qd), settings_for(puma), receipt_time=100.0)
    assert points.times[0] == 0.0 and points.times[-1] == pytest.approx(1.5)
    np.testing.assert_allclose(points.q[0], q, atol=1e-12)
    np.testing.assert_allclose(points.q[-1], Q0 + 0.3, atol=1e-12)
    assert np.min(np.diff(points.times)) >= 1.0 / 500 - 1e-12
    for k in range(0, len(points.times), 7):
        np.testing.assert_allclose(points.effort[k], pinocchio.rnea(
            points.q[k], points.qd[k], points.qdd[k]), atol=1e-9)


def test_grid_instants_a_rounding_away_from_a_waypoint_are_not_second_points(puma):
    # waypoints every 0.05 s as a message carries them (s + ns * 1e-9) against the 0.1 s
    # grid: the same instants, a rounding apart
    times = np.array([int(t) + round((t - int(t)) * 1e9) * 1e-9
                      for t in np.linspace(0.0, 1.5, 31)])
    merged = np.union1d(np.linspace(0.0, 1.5, 16), times)
    assert np.min(np.diff(merged)) < 1e-12             # what a plain union gives
    points = feedforward_goal(puma, PUMA_JOINTS, [
        TrajectoryPoint(float(t), (Q0 + 0.1 * np.sin(t)).tolist()) for t in times[1:]],
        (Q0, np.zeros(6)), settings_for(puma, tolerance=10.0), receipt_time=0.0)
    nanoseconds = np.round(points.times * 1e9).astype(np.int64)
    assert np.all(np.diff(nanoseconds) > 0)
    assert set(times[1:]) <= set(points.times)


def test_a_goal_beyond_the_effort_limits_is_refused_with_the_joint(puma):
    with pytest.raises(InfeasibleTrajectory, match='needs .* N\\*m at .* over its limit'):
        feedforward_goal(puma, PUMA_JOINTS, [
            TrajectoryPoint(0.05, (Q0 + 1.0).tolist(), [0.0] * 6, [0.0] * 6)],
            (Q0, np.zeros(6)), settings_for(puma))
    with pytest.raises(TrajectoryError, match='joint'):
        feedforward_goal(puma, PUMA_JOINTS[:5], [
            TrajectoryPoint(1.0, Q0[:5].tolist())], (Q0, np.zeros(6)), settings_for(puma))


def test_the_hold_effort_is_gravity_or_nothing(puma, pinocchio):
    np.testing.assert_allclose(hold_effort(puma, Q0, settings_for(puma)),
                               pinocchio.rnea(Q0, np.zeros(6), np.zeros(6)), atol=1e-9)
    np.testing.assert_array_equal(
        hold_effort(puma, Q0, settings_for(puma, with_gravity=False)), np.zeros(6))


def test_a_stop_brings_each_joint_to_rest_ahead_without_turning_back(puma, pinocchio):
    qd = np.array([0.3, -0.2, 0.0, 0.5, -0.05, 0.1])
    stop = stop_waypoints(Q0, qd)
    duration = stop[-1].time_from_start
    assert duration == pytest.approx(1.5 * 0.5 / STOP_ACCELERATION)
    points = feedforward_goal(puma, PUMA_JOINTS, stop, (Q0, qd), settings_for(puma))
    np.testing.assert_allclose(points.q[-1], Q0 + 0.5 * duration * qd, atol=1e-12)
    np.testing.assert_allclose(points.qd[-1], 0.0, atol=1e-12)
    assert np.all(points.qd * np.sign(qd) >= -1e-12)        # no joint turns back
    assert np.max(np.abs(points.qdd)) <= STOP_ACCELERATION * (1 + 1e-9)
    for q, v, a, effort in zip(points.q, points.qd, points.qdd, points.effort):
        np.testing.assert_allclose(effort, pinocchio.rnea(q, v, a), atol=1e-8)


def test_an_arm_at_rest_needs_no_stop_and_a_slow_one_a_short_one():
    assert stop_waypoints(Q0, np.zeros(6)) is None
    assert stop_waypoints(Q0, np.full(6, STOP_SPEED / 2)) is None
    assert stop_waypoints(Q0, np.full(6, 0.01))[-1].time_from_start == MIN_STOP


def test_with_an_offset_each_effort_is_pinocchios_that_much_earlier_and_the_end_holds(
        puma, pinocchio):
    trajectory = move('pva')
    offset = -0.001
    points = feedforward_points(puma, trajectory, GRAVITY, tolerance=0.05, min_step=0.002,
                                friction=False, offset=offset)
    start, end = trajectory.start_time, trajectory.start_time + trajectory.times[-1]
    own = trajectory.sample_many(start + points.times)             # the motion's own values
    np.testing.assert_allclose(points.q, own.q, atol=1e-12)
    np.testing.assert_allclose(points.qd, own.qd, atol=1e-12)
    for k in range(len(points.times) - 1):
        at = trajectory.sample_many(np.array([np.clip(start + points.times[k] + offset,
                                                      start, end)]))
        np.testing.assert_allclose(points.effort[k], pinocchio.rnea(
            at.q[0], at.qd[0], at.qdd[0]), atol=1e-9)
    # JTC holds the last point after the end: the arm at rest at the goal, gravity alone
    np.testing.assert_allclose(points.effort[-1], pinocchio.rnea(
        points.q[-1], np.zeros(6), np.zeros(6)), atol=1e-9)
    with pytest.raises(ValueError, match='offset'):
        feedforward_points(puma, trajectory, GRAVITY, tolerance=0.05, min_step=0.002,
                           offset=np.nan)


def _jtc_cycle_error(puma, pinocchio, offset_periods, rate=500.0, substeps=4):
    """The worst error of JTC's effort loop on the Pinocchio PUMA, rad.

    joint_trajectory_controller 4.42.1's update with the effort interface, emulated: at
    each cycle k (t_k = k T) the state read then, ``u = P e + D ė + I ∫e + effort_d``
    with ``e = q_d(t_k) - q``, ``effort_d`` the points' efforts interpolated linearly at
    ``t_k + T`` (``command_next_``), held by the hardware over [t_k, t_k + T]; the arm
    integrated by Pinocchio's ABA (midpoint rule, ``substeps`` a period).
    """
    from ne_dynamics_ros.tools.ros2_control import hold_gains
    period = 1.0 / rate
    gains = hold_gains(puma, rate, delay=period)
    p, d, i = (np.array([gains[j][key] for j in PUMA_JOINTS]) for key in 'pdi')
    start = Q0
    zeros = [0.0] * 6
    goal = TrajectoryPoint(1.0, (Q0 + np.array([0.3, -0.3, 0.3, 0.3, -0.3, 0.3])).tolist(),
                           zeros, zeros)
    settings = settings_for(puma, tolerance=0.001, effort_offset=offset_periods)
    points = feedforward_goal(puma, PUMA_JOINTS, [goal], (start, np.zeros(6)), settings)
    reference = trajectory_from_points(PUMA_JOINTS, [goal], PUMA_JOINTS, None, 0.0,
                                       DesiredState(start, np.zeros(6), np.zeros(6)))
    q, qd, integral, worst, h = start.copy(), np.zeros(6), np.zeros(6), 0.0, period / substeps
    for k in range(int(1.3 * rate)):
        desired = reference.sample_many(np.array([k * period]))
        error, error_rate = desired.q[0] - q, desired.qd[0] - qd
        worst = max(worst, float(np.max(np.abs(error))))
        integral += error * period
        u = p * error + d * error_rate + i * integral + interpolated(
            points, np.array([min((k + 1) * period, points.times[-1])]))[0]
        for _ in range(substeps):
            a = pinocchio.aba(q, qd, u)
            q_mid, qd_mid = q + 0.5 * h * qd, qd + 0.5 * h * a
            q, qd = q + h * qd_mid, qd + h * pinocchio.aba(q_mid, qd_mid, u)
    return worst


def test_efforts_half_a_period_early_take_out_jtcs_one_period_lead(puma, pinocchio):
    # JTC applies the effort one period ahead over the period after its cycle: taken at
    # the point's own time the effort leads the motion by half a period on average, and
    # the PID's error is that lead (3.7e-5 rad measured on the UR5e this way)
    at_the_point = _jtc_cycle_error(puma, pinocchio, 0.0)
    offset = _jtc_cycle_error(puma, pinocchio, EFFORT_OFFSET_PERIODS)
    assert offset < at_the_point / 3.0, (offset, at_the_point)
    assert offset < 5e-6, offset
