"""Trajectory goals as joint_trajectory_controller (JTC) judges them, without ROS.

What ``control_msgs/action/FollowJointTrajectory`` asks of a controller, in the terms of
ros-controls/ros2_controllers' JTC (jazzy: ``doc/userdoc.rst``,
``include/joint_trajectory_controller/tolerances.hpp``, the goal checks and ``update`` of
``src/joint_trajectory_controller.cpp``):

* :func:`check_goal`: the reasons a goal is *rejected* before it is accepted (not
  active, joints, empty, times, sizes, non-finite values, positions beyond the limits, a
  ``multi_dof_trajectory``, a non-zero final velocity);
* :class:`SegmentTolerances`, :func:`default_tolerances`, :func:`goal_tolerances`: the
  tolerances of a goal, the parameters' defaults overridden by the goal's
  ``path_tolerance`` / ``goal_tolerance`` / ``goal_time_tolerance`` with
  ``control_msgs/JointTolerance``'s semantics (0: keep the default, -1: no limit);
* :class:`GoalMonitor`: judges each control cycle of an active goal: path tolerances
  while the trajectory runs (``PATH_TOLERANCE_VIOLATED``), goal tolerances after its last
  point (``SUCCESSFUL``, or ``GOAL_TOLERANCE_VIOLATED`` once ``goal_time_tolerance`` has
  passed; 0 waits indefinitely, as JTC).

A tolerance of 0 is not checked, as in JTC. Errors are ``desired - measured`` (rad,
rad/s, rad/s^2; m for prismatic joints). The acceleration error is checked only when
one is given: ``joint_states`` carries no acceleration, so the node passes none, as JTC
does without an acceleration state interface.
"""
from dataclasses import dataclass
import enum
import math
from typing import NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ne_dynamics_ros.control.reference.trajectory import (check_waypoints, TrajectoryError,
                                                          WaypointArrays)

#: JointTolerance's "erase" value: no limit on that quantity.
ERASE = -1.0


class ResultCode(enum.IntEnum):
    """``control_msgs/action/FollowJointTrajectory`` result ``error_code`` values."""

    SUCCESSFUL = 0
    INVALID_GOAL = -1
    INVALID_JOINTS = -2
    OLD_HEADER_TIMESTAMP = -3
    PATH_TOLERANCE_VIOLATED = -4
    GOAL_TOLERANCE_VIOLATED = -5


class GoalStatus(str, enum.Enum):
    """How a goal ended (the action's terminal states)."""

    SUCCEEDED = 'succeeded'
    ABORTED = 'aborted'
    CANCELED = 'canceled'


class GoalEnd(NamedTuple):
    """The end of a goal: its id, terminal status, result code and error string."""

    goal_id: str
    status: GoalStatus
    error_code: int
    error_string: str


@dataclass(frozen=True)
class SegmentTolerances:
    """Tolerances of one goal, chain order (JTC's ``SegmentTolerances``).

    Attributes:
        state: (n, 3) path tolerances while the trajectory runs: position (rad or m),
            velocity (rad/s), acceleration (rad/s^2); 0 = not checked.
        goal: (n, 3) the same after the last point.
        goal_time: s after the last point's time within which the goal tolerances must
            be met; 0 = wait indefinitely.
    """

    state: np.ndarray
    goal: np.ndarray
    goal_time: float


def default_tolerances(trajectory: Sequence[float], goal: Sequence[float],
                       stopped_velocity_tolerance: float,
                       goal_time: float) -> SegmentTolerances:
    """Return JTC's default tolerances from its parameters (``constraints.*``), chain order.

    Args:
        trajectory: (n,) ``constraints.<joint>.trajectory``: path position tolerance.
        goal: (n,) ``constraints.<joint>.goal``: goal position tolerance.
        stopped_velocity_tolerance: ``constraints.stopped_velocity_tolerance``, rad/s:
            the goal velocity tolerance of every joint.
        goal_time: ``constraints.goal_time``, s.

    Raises:
        ValueError: a negative or non-finite value (naming it).
    """
    trajectory = np.asarray(trajectory, dtype=float)
    goal = np.asarray(goal, dtype=float)
    for name, values in (('trajectory', trajectory), ('goal', goal),
                         ('stopped_velocity_tolerance', [stopped_velocity_tolerance]),
                         ('goal_time', [goal_time])):
        values = np.asarray(values, dtype=float)
        if not (np.all(np.isfinite(values)) and np.all(values >= 0.0)):
            raise ValueError(f'constraints {name} must be finite and >= 0, got '
                             f'{values.tolist()}')
    n = trajectory.size
    state = np.zeros((n, 3))
    state[:, 0] = trajectory
    at_goal = np.zeros((n, 3))
    at_goal[:, 0] = goal
    at_goal[:, 1] = stopped_velocity_tolerance
    return SegmentTolerances(state, at_goal, float(goal_time))


def resolve_tolerance(default: float, given: float) -> float:
    """One value of a ``JointTolerance``: > 0 replaces, 0 keeps ``default``, -1 erases.

    Raises:
        ValueError: any other negative value, or one that is not finite.
    """
    if not math.isfinite(given):
        raise ValueError(f'tolerance {given} is not finite')
    if given > 0.0:
        return given
    if abs(given - ERASE) < np.finfo(np.float32).eps:
        return 0.0
    if given < 0.0:
        raise ValueError(f'tolerance {given} is negative (only -1, no limit, is allowed)')
    return default


def goal_tolerances(defaults: SegmentTolerances, chain: Sequence[str],
                    path_tolerance: Sequence[Tuple[str, float, float, float]],
                    goal_tolerance: Sequence[Tuple[str, float, float, float]],
                    goal_time_tolerance: float) -> Tuple[SegmentTolerances, str]:
    """Return the tolerances of a goal: the defaults overridden by what the goal gives.

    ``path_tolerance`` / ``goal_tolerance``: ``(name, position, velocity, acceleration)``
    per joint named (``control_msgs/JointTolerance``); ``goal_time_tolerance`` in s.

    Returns ``(tolerances, problem)``: as JTC, a goal that names a joint not in ``chain``
    or gives an illegal value gets the defaults whole, and ``problem`` says why ('' when
    the goal's values were taken).
    """
    index = {name: i for i, name in enumerate(chain)}
    state, goal = defaults.state.copy(), defaults.goal.copy()
    try:
        goal_time = resolve_tolerance(defaults.goal_time, float(goal_time_tolerance))
    except ValueError as err:
        return defaults, f'goal_time_tolerance: {err}; using the default tolerances'
    for which, given, target, base in (('path_tolerance', path_tolerance, state,
                                        defaults.state),
                                       ('goal_tolerance', goal_tolerance, goal,
                                        defaults.goal)):
        for name, *values in given:
            i = index.get(name)
            if i is None:
                return defaults, (f'joint {name[:80]!r} in {which} is not a controlled joint; '
                                  'using the default tolerances')
            for k, (quantity, value) in enumerate(zip(('position', 'velocity',
                                                       'acceleration'), values)):
                try:
                    target[i, k] = resolve_tolerance(base[i, k], float(value))
                except ValueError as err:
                    return defaults, (f'joint {name!r} {which} {quantity}: {err}; using the '
                                      'default tolerances')
    return SegmentTolerances(state, goal, goal_time), ''


def tolerance_violation(tolerances: np.ndarray, position_error: Sequence[float],
                        velocity_error: Sequence[float],
                        acceleration_error: Optional[Sequence[float]] = None,
                        joints: Optional[Sequence[str]] = None) -> Optional[str]:
    """Return what breaks (n, 3) ``tolerances`` (first joint), or None if all are met.

    JTC's ``check_state_tolerance_per_joint`` for every joint: a quantity is checked when
    its tolerance is > 0; the acceleration only when ``acceleration_error`` is given.
    """
    for i, (limits, e_q, e_qd) in enumerate(zip(tolerances.tolist(), position_error,
                                                velocity_error)):
        tol_q, tol_qd, tol_qdd = limits
        e_qdd = 0.0 if acceleration_error is None else acceleration_error[i]
        for quantity, error, tol in (('position', e_q, tol_q), ('velocity', e_qd, tol_qd),
                                     ('acceleration', e_qdd, tol_qdd)):
            if tol > 0.0 and not abs(error) <= tol:       # NaN breaks it too
                name = joints[i] if joints is not None else f'joint {i}'
                return f'{name} {quantity} error {error:.6g} beyond its tolerance {tol:.6g}'
    return None


class GoalMonitor:
    """Judge an accepted goal on each control cycle (JTC's ``update``).

    Args:
        goal_id: the action goal's id (text).
        tolerances: its :class:`SegmentTolerances`, chain order.
        end_time: the trajectory's last point, s on the controller's clock.
        joints: names for the messages (chain order).
        note: added to the success message (e.g. that the goal was played slower).
    """

    def __init__(self, goal_id: str, tolerances: SegmentTolerances, end_time: float,
                 joints: Sequence[str], note: str = ''):
        self.goal_id = goal_id
        self.note = note
        self.tolerances = tolerances
        self.end_time = float(end_time)
        self.joints = list(joints)
        self._first = True

    def check(self, t: float, position_error, velocity_error,
              acceleration_error=None) -> Optional[Tuple[int, str]]:
        """Judge one cycle at time ``t`` (s); ``(error_code, error_string)`` or None.

        Before the last point (and on the first sample, which may be after it): path
        tolerances, ``PATH_TOLERANCE_VIOLATED`` when broken. After it: goal tolerances,
        ``SUCCESSFUL`` when met, ``GOAL_TOLERANCE_VIOLATED`` when still not met more than
        ``goal_time`` after the last point (never with ``goal_time`` 0).
        """
        first, self._first = self._first, False
        before_last = t < self.end_time
        if before_last or first:
            broken = tolerance_violation(self.tolerances.state, position_error,
                                         velocity_error, acceleration_error, self.joints)
            if broken is not None:
                return (ResultCode.PATH_TOLERANCE_VIOLATED,
                        f'Aborted due to path tolerance violation: {broken}')
        if before_last:
            return None
        broken = tolerance_violation(self.tolerances.goal, position_error, velocity_error,
                                     acceleration_error, self.joints)
        if broken is None:
            return ResultCode.SUCCESSFUL, 'Goal successfully reached!' + self.note
        late = t - self.end_time
        if self.tolerances.goal_time != 0.0 and late > self.tolerances.goal_time:
            return (ResultCode.GOAL_TOLERANCE_VIOLATED,
                    f'Aborted due to goal_time_tolerance exceeding by {late:.6f} seconds: '
                    f'{broken}')
        return None


class GoalOptions(NamedTuple):
    """What a goal may be (JTC's parameters of the same names)."""

    allow_partial_joints_goal: bool = False
    allow_nonzero_velocity_at_trajectory_end: bool = False


def _limit_problem(checked, given, chain, lower, upper) -> str:
    """Say which point leaves its joint's position limits first ('' if none)."""
    index = [chain.index(name) for name in given]
    low = np.asarray(lower, dtype=float)[index]
    high = np.asarray(upper, dtype=float)[index]
    with np.errstate(invalid='ignore'):
        outside = (checked.positions < low) | (checked.positions > high)
    if not outside.any():
        return ''
    point, joint = np.argwhere(outside)[0]
    value = checked.positions[point, joint]
    return (f'point {point}: {given[joint]} position {value:.6g} is beyond its limits '
            f'[{low[joint]:.6g}, {high[joint]:.6g}]')


def _end_problem(checked, given, options) -> str:
    """Say which joint still moves at the last point, where it may not ('' if none)."""
    if options.allow_nonzero_velocity_at_trajectory_end or not checked.has_velocities[-1]:
        return ''
    end = checked.velocities[-1]
    moving = np.flatnonzero(end != 0.0)
    if not moving.size:
        return ''
    j = int(moving[0])
    return (f'the last point gives {given[j]} velocity {end[j]:.6g}, not zero '
            '(allow_nonzero_velocity_at_trajectory_end is false)')


def check_goal(joint_names: Sequence[str], waypoints: WaypointArrays,
               chain: Sequence[str], lower: Sequence[float], upper: Sequence[float],
               options: GoalOptions = GoalOptions(), multi_dof_points: int = 0,
               multi_dof_joints: int = 0, stamp: Optional[float] = None,
               now: Optional[float] = None
               ) -> Tuple[Optional[ResultCode], str, Optional[WaypointArrays]]:
    """Decide whether a ``FollowJointTrajectory`` goal is accepted; no clock, no state.

    Args:
        joint_names: the goal trajectory's ``joint_names``.
        waypoints: its points as :class:`WaypointArrays`, columns in ``joint_names``
            order (``has_velocities`` / ``has_accelerations`` per point).
        chain: the controlled joints, chain order.
        lower, upper: (n,) position limits, chain order (rad or m; +-inf for none).
        options: :class:`GoalOptions`.
        multi_dof_points, multi_dof_joints: sizes of the goal's ``multi_dof_trajectory``
            (this controller drives no multi-DOF joint: anything there is refused).
        stamp, now: the goal's ``header.stamp`` and the time now, s on one clock (a zero
            stamp means "start on receipt"); None: not checked.

    Returns:
        ``(None, '', waypoints)`` with the waypoints of the given joints in chain order
        (only the given joints when a partial goal is allowed: see :func:`given_joints`)
        for an acceptable goal; ``(code, reason, None)`` otherwise, ``code``
        ``INVALID_JOINTS`` for joint names, ``OLD_HEADER_TIMESTAMP`` for a trajectory
        that ends before ``now``, ``INVALID_GOAL`` for the rest.
    """
    if multi_dof_points or multi_dof_joints:
        return (ResultCode.INVALID_GOAL, 'multi_dof_trajectory is not empty: this controller '
                'drives no multi-DOF joint', None)
    names = list(joint_names)
    chain = list(chain)
    problem = _joint_problem(names, chain, options.allow_partial_joints_goal)
    if problem:
        return ResultCode.INVALID_JOINTS, problem, None
    given = given_joints(names, chain)
    try:
        checked = check_waypoints(names, waypoints, given)
    except TrajectoryError as err:
        return ResultCode.INVALID_GOAL, str(err), None
    if stamp is not None and now is not None and stamp > 0.0 \
            and stamp + float(checked.times[-1]) < now:
        return (ResultCode.OLD_HEADER_TIMESTAMP,
                f'the trajectory ends {now - stamp - float(checked.times[-1]):.3f} s in the '
                'past (header.stamp + last time_from_start < now)', None)
    problem = _limit_problem(checked, given, chain, lower, upper) or _end_problem(
        checked, given, options)
    if problem:
        return ResultCode.INVALID_GOAL, problem, None
    return None, '', checked


def _joint_problem(names, chain, partial):
    """Say what is wrong with a goal's joint names ('' if nothing), linear in the names."""
    if not names:
        return 'the trajectory has no joint_names'
    seen, duplicates = set(), []
    for name in names:
        if name in seen:
            duplicates.append(name)
        seen.add(name)
    if duplicates:
        return f'joint {duplicates[0][:80]!r} appears twice in joint_names'
    known = set(chain)
    unknown = [name for name in names if name not in known]
    if unknown:
        return (f'{len(unknown)} unknown joints, e.g. {unknown[0][:80]!r}; this controller '
                f'drives {chain}')
    missing = [name for name in chain if name not in seen]
    if missing and not partial:
        return (f'joints {missing} missing (allow_partial_joints_goal is false: every '
                'controlled joint must be given)')
    return ''


def given_joints(joint_names: Sequence[str], chain: Sequence[str]) -> list:
    """Return the chain joints that ``joint_names`` names, in chain order."""
    present = set(joint_names)
    return [name for name in chain if name in present]


def fill_partial(waypoints: WaypointArrays, given: Sequence[str], chain: Sequence[str],
                 hold: Sequence[float]) -> WaypointArrays:
    """Complete the waypoints of a partial goal: the joints not given hold ``hold``.

    As JTC: a joint a goal leaves out keeps the position of the reference in force at
    receipt (rad or m), at zero velocity and acceleration. ``waypoints`` hold the
    ``given`` joints' columns in chain order; returns (m, n) columns of every chain joint.
    """
    m = len(waypoints.times)
    n = len(chain)
    column = {name: k for k, name in enumerate(given)}
    positions = np.repeat(np.asarray(hold, dtype=float)[None, :], m, axis=0)
    velocities = np.zeros((m, n))
    accelerations = np.zeros((m, n))
    for j, name in enumerate(chain):
        k = column.get(name)
        if k is not None:
            positions[:, j] = waypoints.positions[:, k]
            velocities[:, j] = waypoints.velocities[:, k]
            accelerations[:, j] = waypoints.accelerations[:, k]
    return WaypointArrays(waypoints.times, positions, velocities, accelerations,
                          waypoints.has_velocities, waypoints.has_accelerations)


__all__ = ['check_goal', 'default_tolerances', 'ERASE', 'fill_partial', 'given_joints',
           'GoalEnd', 'GoalMonitor', 'GoalOptions', 'GoalStatus', 'goal_tolerances',
           'resolve_tolerance', 'ResultCode', 'SegmentTolerances', 'tolerance_violation']
