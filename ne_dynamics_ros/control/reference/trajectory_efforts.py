"""Inverse-dynamics efforts on a trajectory's points, dense enough for JTC to interpolate.

Pure module (NumPy only). joint_trajectory_controller (JTC) with an ``effort`` command
interface commands ``u = PID(q_d - q, qd_d - qd) + effort_d`` in controller_manager's
own cycle, ``effort_d`` interpolated *linearly* between the trajectory's points
(ros2_controllers 4.42.1, #1200). Filled with the model's

    tau(t) = M(q) q̈ + C(q, q̇) q̇ + g(q) + armature q̈ + Fv q̇ + Fc tanh(q̇ / v_s)

(the computed-torque feed-forward of Lee, Chung, Mudge and Turney 1982, eq. 4.1, with the
drives' friction and armature; :func:`ne_dynamics_ros.control.reference.effort_check.effort_terms`)
at each point, the effort JTC applies between two points is the chord of ``tau`` there,
off by up to ``h² max|τ''| / 8`` over an interval of length ``h``. :func:`feedforward_points`
therefore samples the trajectory where that chord stays within ``tolerance`` of the
model's effort on every joint: it starts from the waypoints and a grid of ``max_step``
and halves every interval whose chord is off by more than ``tolerance`` at any of
:data:`CHECKS` interior instants, down to ``min_step`` (the control period: JTC cannot
use finer points). Each point carries the trajectory's own ``q, q̇, q̈`` there, so that JTC's
quintic between two points is the trajectory's own polynomial (a quintic is fixed by the
positions, velocities and accelerations at its ends): densifying changes the efforts, not
the motion. Where a waypoint gives no accelerations (JTC's cubic segments) or no
velocities (straight ones), the acceleration (or velocity) jumps there and a point at the
waypoint carries the outgoing segment's: JTC's quintic over the interval just before it
then bends slightly off the original (3e-7 rad seen on a 1.5 s PUMA move with a cubic
waypoint). Trajectories from MoveIt give all three.
"""
from typing import NamedTuple

import numpy as np

from ne_dynamics_ros.control.reference.effort_check import (check_trajectory, effort_terms,
                                                            InfeasibleTrajectory)
from ne_dynamics_ros.control.reference.trajectory import (DesiredState, Trajectory,
                                                          TrajectoryError, TrajectoryPoint,
                                                          trajectory_from_points)

#: Interior instants of each interval at which the chord is compared with the model.
CHECKS = (0.2, 0.4, 0.5, 0.6, 0.8)
#: Halvings at most: ``max_step / 2**MAX_HALVINGS`` below any useful control period.
MAX_HALVINGS = 20
#: Points at most in one feed-forward trajectory (JTC's goal message stays bounded).
MAX_POINTS = 200_000
#: Where each point's effort is taken, in controller periods from the point's own time.
#: JTC samples ``effort_d`` one period ahead of its cycle (``command_next_`` at
#: ``traj_time_ + update_period_``, ros2_controllers 4.42.1) and the hardware holds the
#: command written in that cycle for one period, whose middle is half a period ahead: a
#: point carrying the model's effort half a period before its own time makes the effort
#: JTC applies the model's at the middle of the period it acts over (a zero-order hold's
#: best constant to first order). Measured offline (the UR5e on Pinocchio, 500 Hz, JTC's
#: update emulated, 0.3 rad quintics, effort tolerance 0.001 N·m): worst error 3.7e-5 rad
#: at 0, 1.9e-6 at -0.5, 3.7e-5 at -1 period.
EFFORT_OFFSET_PERIODS = -0.5


class FeedforwardPoints(NamedTuple):
    """A trajectory's feed-forward points, in the chain's joint order.

    ``times``: (N,) s from the trajectory's start (its ``time_from_start``); ``q, qd,
    qdd``: (N, n) the trajectory there (rad, rad/s, rad/s²; m for a prismatic joint);
    ``effort``: (N, n) the model's effort there, N·m (N); ``interpolation_error``: (n,)
    N·m (N), the largest gap found between the efforts' linear interpolation and the
    model's effort (at :data:`CHECKS` of every interval).
    """

    times: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    effort: np.ndarray
    interpolation_error: np.ndarray


def _effort(model, trajectory, t, gravity, friction, with_gravity, coulomb_velocity,
            offset=0.0):
    """Return the trajectory at ``t`` (absolute, s) and the model's effort at ``t + offset``.

    The effort's instant is kept within the trajectory (before its start the arm rests
    where it starts; after its end, where it ends).
    """
    state = trajectory.sample_many(t)
    at = state
    if offset:
        at = trajectory.sample_many(np.clip(t + offset, trajectory.start_time,
                                            trajectory.start_time + trajectory.times[-1]))
    a, b, d = effort_terms(model, at.q, at.qd, at.qdd, gravity, friction,
                           with_gravity, coulomb_velocity)
    return state, a + b + d


def _chord_errors(model, trajectory, t, tau, args):
    """(m - 1, n) largest gap between the chords of ``tau`` over ``t`` and the model."""
    h = np.diff(t)
    s = np.array(CHECKS)
    inner = (t[:-1, None] + h[:, None] * s).ravel()
    _, exact = _effort(model, trajectory, inner, *args)
    exact = exact.reshape(len(h), len(s), -1)
    chord = tau[:-1, None, :] + s[None, :, None] * (tau[1:] - tau[:-1])[:, None, :]
    return np.max(np.abs(exact - chord), axis=1)


#: Grid instants this close to a waypoint's are the waypoint's, s (a message carries ns).
SAME_INSTANT = 1e-9


def _with_waypoints(grid, times):
    """Return the grid and the waypoints' times, sorted, without near-duplicates.

    A grid instant within :data:`SAME_INSTANT` of a waypoint's (``0.1 * 12`` against a
    waypoint at ``1.2``) would reach the controller as a second point at the same
    nanosecond, and joint_trajectory_controller rejects times that do not increase.
    """
    times = np.asarray(times, dtype=float)
    after = np.searchsorted(times, grid)              # the first waypoint at or after
    before = times[np.maximum(after - 1, 0)]
    following = times[np.minimum(after, times.size - 1)]
    gap = np.minimum(np.abs(grid - before), np.abs(grid - following))
    return np.union1d(grid[gap > SAME_INSTANT], times)


def _checked_settings(tolerance, min_step, max_step, n):
    """Return ``tolerance`` as (n,); raise ValueError on a bad setting (see the caller)."""
    tolerance = np.broadcast_to(np.asarray(tolerance, dtype=float), (n,)) \
        if np.ndim(tolerance) == 0 else np.asarray(tolerance, dtype=float)
    if tolerance.shape != (n,) or not np.all(np.isfinite(tolerance)) or \
            np.any(tolerance <= 0):
        raise ValueError(f'tolerance must be finite and > 0, a scalar or ({n},): '
                         f'{tolerance.tolist()}')
    for label, value in (('min_step', min_step), ('max_step', max_step)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f'{label} must be finite and > 0 s: {value!r}')
    if max_step < min_step:
        raise ValueError(f'max_step {max_step} s is shorter than min_step {min_step} s')
    return tolerance


def _halved(model, trajectory, t, tolerance, min_step, args):
    """Halve the intervals of ``t`` whose chord is off; return ``(t, state, tau, errors)``.

    ``t``: s from the trajectory's start (:func:`feedforward_points`'s loop).
    """
    start = trajectory.start_time
    for _ in range(MAX_HALVINGS):
        state, tau = _effort(model, trajectory, start + t, *args)
        errors = _chord_errors(model, trajectory, start + t, tau, args)
        split = np.any(errors > tolerance, axis=1) & (np.diff(t) >= 2.0 * min_step)
        if not split.any():
            return t, state, tau, errors
        middles = 0.5 * (t[:-1] + t[1:])[split]
        if t.size + middles.size > MAX_POINTS:
            raise TrajectoryError(
                f'the feed-forward would need more than {MAX_POINTS} points '
                f'(tolerance {tolerance.tolist()} N·m, min_step {min_step} s)')
        t = np.union1d(t, middles)
    state, tau = _effort(model, trajectory, start + t, *args)
    return t, state, tau, _chord_errors(model, trajectory, start + t, tau, args)


def feedforward_points(model, trajectory: Trajectory, gravity, tolerance, min_step,
                       max_step=0.1, friction=True, with_gravity=True,
                       coulomb_velocity=0.003, offset=0.0) -> FeedforwardPoints:
    """Sample ``trajectory`` where JTC's linear interpolation of the model's efforts holds.

    With ``offset`` the effort on a point at ``t`` is the model's at ``t + offset``
    (the last point's stays the model's at the end, which JTC holds after it): see
    :data:`EFFORT_OFFSET_PERIODS` for why the relay sets it to half a period earlier.

    Args:
        model: a :class:`~ne_dynamics_ros.dynamics.model.RobotModel` (its inertias,
            ``armature``, ``damping`` (Fv) and ``friction`` (Fc)).
        trajectory: the reference, chain order (:func:`~ne_dynamics_ros.control.reference.
            trajectory.trajectory_from_points`); sampled from its start to its last waypoint.
        gravity: (3,) m/s² in the base link frame.
        tolerance: largest gap allowed between the interpolated and the model's effort,
            N·m (N), > 0: a scalar or (n,) per joint.
        min_step: shortest interval, s, > 0 (the controller's period): where the chord is
            still off over it, the point count stops growing there and the gap found is
            reported.
        max_step: longest interval, s, ``>= min_step``.
        friction, with_gravity, coulomb_velocity: as
            :func:`~ne_dynamics_ros.control.reference.effort_check.effort_terms` (leave out
            what the drives compensate themselves).
        offset: s, the instant of each point's effort relative to the point's own
            (negative: earlier); finite.

    Returns:
        :class:`FeedforwardPoints`; ``times`` start at 0 and include every waypoint's.

    Raises:
        ValueError: ``tolerance``, ``min_step`` or ``max_step`` not finite and positive,
            ``max_step < min_step``, a ``tolerance`` of the wrong length, or ``offset``
            not finite.
        ne_dynamics_ros.control.reference.trajectory.TrajectoryError: more than :data:`MAX_POINTS`
            points would be needed.
    """
    n = trajectory.positions.shape[1]
    tolerance = _checked_settings(tolerance, min_step, max_step, n)
    if not np.isfinite(offset):
        raise ValueError(f'offset must be finite, s: {offset!r}')
    args = (gravity, friction, with_gravity, coulomb_velocity, float(offset))
    start, duration = trajectory.start_time, float(trajectory.times[-1])
    count = max(1, int(np.ceil(duration / max_step)))
    t = _with_waypoints(np.linspace(0.0, duration, count + 1), trajectory.times)
    if t.size < 2:                       # one point at its start: nothing to interpolate
        state, tau = _effort(model, trajectory, start + t, *args)
        return FeedforwardPoints(t, state.q, state.qd, state.qdd, tau, np.zeros(n))
    t, state, tau, errors = _halved(model, trajectory, t, tolerance, min_step, args)
    if offset:
        tau[-1] = _effort(model, trajectory, start + t[-1:], *args[:-1])[1][0]
    return FeedforwardPoints(t, state.q, state.qd, state.qdd, tau, errors.max(axis=0))


class FeedforwardSettings(NamedTuple):
    """How :func:`feedforward_goal` fills a goal (the relay's parameters).

    ``gravity``: (3,) m/s², base frame; ``tolerance``: N·m (N), scalar or (n,), > 0;
    ``rate``: the controller's update rate, Hz (``min_step = 1 / rate``, and the rate the
    effort limits are checked at); ``effort_limits``: (n,) N·m (N), chain order (inf:
    none); ``effort_margin``: the share of each limit kept free, in [0, 1);
    ``with_gravity``, ``friction``: False where the drives compensate them;
    ``coulomb_velocity``: v_s of ``Fc tanh(q̇ / v_s)``, rad/s (m/s); ``max_step``: s;
    ``effort_offset``: periods (``1 / rate``), where each point's effort is taken from its
    own time (:data:`EFFORT_OFFSET_PERIODS` for JTC).
    """

    gravity: np.ndarray
    tolerance: object
    rate: float
    effort_limits: np.ndarray
    effort_margin: float = 0.05
    with_gravity: bool = True
    friction: bool = True
    coulomb_velocity: float = 0.003
    max_step: float = 0.1
    effort_offset: float = EFFORT_OFFSET_PERIODS


def checked_goal(model, joint_names, points, state, settings: FeedforwardSettings,
                 receipt_time=0.0) -> Trajectory:
    """Return a trajectory message as the reference it makes, or refuse it (chain order).

    The first half of :func:`feedforward_goal`: what decides whether a goal is accepted.
    The trajectory starts from the arm's ``state`` (JTC's semantics for a first point
    later than ``time_from_start`` 0: from where the arm is) and is checked against the
    effort limits at ``settings.rate`` as it will be interpolated (the node's own check:
    :func:`~ne_dynamics_ros.control.reference.effort_check.check_trajectory`). Arguments and errors
    as :func:`feedforward_goal`'s.
    """
    chain = list(model.joint_names)
    q, qd = (np.asarray(v, dtype=float).reshape(-1) for v in state)
    before = DesiredState(q, qd, np.zeros_like(q))
    trajectory = trajectory_from_points(joint_names, points, chain, None, receipt_time,
                                        before)
    limits = np.asarray(settings.effort_limits, dtype=float) * (1.0 - settings.effort_margin)
    check = check_trajectory(model, trajectory, chain, limits, settings.rate,
                             settings.gravity, settings.friction, settings.with_gravity,
                             settings.coulomb_velocity)
    if check.violation is not None:
        raise InfeasibleTrajectory(check.violation.text())
    return trajectory


def goal_points(model, trajectory: Trajectory,
                settings: FeedforwardSettings) -> FeedforwardPoints:
    """Return the feed-forward points of a :func:`checked_goal` trajectory.

    The second half of :func:`feedforward_goal`: :func:`feedforward_points` with
    ``min_step = 1 / settings.rate``. ``times`` start at 0: the instant the controller
    starts the trajectory.

    Raises:
        TrajectoryError: it would need more than :data:`MAX_POINTS` points.
    """
    return feedforward_points(model, trajectory, settings.gravity, settings.tolerance,
                              1.0 / settings.rate, settings.max_step, settings.friction,
                              settings.with_gravity, settings.coulomb_velocity,
                              settings.effort_offset / settings.rate)


def feedforward_goal(model, joint_names, points, state, settings: FeedforwardSettings,
                     receipt_time=0.0) -> FeedforwardPoints:
    """Return a trajectory message's feed-forward points, or refuse it (chain order).

    :func:`checked_goal` then :func:`goal_points`: the trajectory starts from the arm's
    ``state`` (JTC's semantics for a first point later than ``time_from_start`` 0: from
    where the arm is), is checked against the effort limits at ``settings.rate`` as it
    will be interpolated (the node's own check:
    :func:`~ne_dynamics_ros.control.reference.effort_check.check_trajectory`) and sampled by
    :func:`feedforward_points` with ``min_step = 1 / rate``. ``times`` start at 0: the
    instant the controller starts the trajectory.

    Args:
        model: the arm's :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        joint_names: the message's joints, any order (each chain joint once).
        points: its waypoints (:class:`~ne_dynamics_ros.control.reference.trajectory.
            TrajectoryPoint` sequence or ``WaypointArrays``), columns in ``joint_names``.
        state: ``(q, qd)``, (n,) each, the arm's measured state, chain order.
        settings: :class:`FeedforwardSettings`.
        receipt_time: s, the clock the trajectory's times count from (any origin).

    Raises:
        TrajectoryError: the message is malformed (as
            :func:`~ne_dynamics_ros.control.reference.trajectory.trajectory_from_points` says), or
            would need more than :data:`MAX_POINTS` points.
        InfeasibleTrajectory: it needs more effort than a limit allows (less the margin):
            the message names the joint, the instant and the effort.
    """
    return goal_points(model, checked_goal(model, joint_names, points, state, settings,
                                           receipt_time), settings)


def hold_effort(model, q, settings: FeedforwardSettings):
    """Return the (n,) effort that holds the arm still at ``q`` (rad): g(q), N·m (N).

    Zero where the drives compensate gravity (``settings.with_gravity`` False). Friction
    holds nothing at rest and is left out.
    """
    q = np.asarray(q, dtype=float).reshape(-1)
    if not settings.with_gravity:
        return np.zeros_like(q)
    return np.asarray(model.gravity_torques(q, settings.gravity), dtype=float)


#: The joint speed under which a hold starts at rest (rad/s or m/s): no stop to run.
STOP_SPEED = 1e-3
#: The largest deceleration of a stop, rad/s² (m/s²), and its shortest duration, s.
STOP_ACCELERATION = 3.0
MIN_STOP = 0.05


def stop_waypoints(q, qd):
    """Return the waypoints of a smooth stop from ``(q, qd)``, or None when at rest.

    ``q``, ``qd``: (n,) the measured state (rad, rad/s; m, m/s). Two
    :class:`~ne_dynamics_ros.control.reference.trajectory.TrajectoryPoint` (chain order): now, with
    ``qd`` and no acceleration, and ``T`` later at rest at ``q + qd T / 2`` with no
    acceleration; joined by a quintic they decelerate each joint by at most
    ``1.5 |qd| / T``, with ``T = max(MIN_STOP, 1.5 max|qd| / STOP_ACCELERATION)``. A hold
    at ``q`` itself would stop the arm within a cycle or two and let the controller's PID
    pull it back from where it overshot (measured through JTC on the UR5e after a
    cancel at 0.2 rad/s: 5.5-8.7 mrad of motion 0.3 s after the cancel).
    """
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    speed = float(np.max(np.abs(qd))) if qd.size else 0.0
    if not speed > STOP_SPEED:
        return None
    duration = max(MIN_STOP, 1.5 * speed / STOP_ACCELERATION)
    zero = np.zeros_like(q)
    return [TrajectoryPoint(0.0, q.tolist(), qd.tolist(), zero.tolist()),
            TrajectoryPoint(duration, (q + 0.5 * duration * qd).tolist(), zero.tolist(),
                            zero.tolist())]


__all__ = ['CHECKS', 'checked_goal', 'EFFORT_OFFSET_PERIODS', 'feedforward_goal',
           'feedforward_points', 'FeedforwardPoints', 'FeedforwardSettings', 'goal_points',
           'hold_effort', 'MAX_HALVINGS', 'MAX_POINTS', 'MIN_STOP', 'STOP_ACCELERATION',
           'STOP_SPEED', 'stop_waypoints']
