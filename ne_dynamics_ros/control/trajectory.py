"""Desired joint trajectories: validation and spline interpolation.

Pure module (no ROS import). It reproduces the ``spline`` interpolation of
ros2_controllers' ``joint_trajectory_controller`` (``Trajectory::sample`` and
``interpolate_between_points`` in ``joint_trajectory_controller/src/trajectory.cpp``), so
that a trajectory sent to this package's node is followed along the same reference
``q_d(t)`` that joint_trajectory_controller would produce:

* between two points, the polynomial degree is chosen by the fields *both* points carry:
  positions only -> linear, positions + velocities -> cubic (Hermite), positions +
  velocities + accelerations -> quintic;
* before the first point's time, the reference is interpolated from the desired state the
  controller had when the trajectory arrived (``state_before``) to the first point;
* after the last point, the last point is held (its velocities and accelerations are
  passed on as given, zeros where absent, exactly as joint_trajectory_controller does);
* a zero ``header.stamp`` (``start_time=None`` here) means "start on receipt".

A one-point trajectory with ``time_from_start == 0`` therefore needs no special case: it
is sampled as "after the last point" from the moment it is received, i.e. it is a
streaming set-point (how servoing tools send references).

Times are float seconds on one clock (the node uses its ROS clock). Joint values are in
the model's joint coordinates: rad for revolute, m for prismatic joints; velocities and
accelerations in rad/s, rad/s^2 (m/s, m/s^2).
"""
import bisect
from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np


class TrajectoryError(ValueError):
    """A trajectory is rejected as a whole; the message says which point or joint is wrong."""


class TrajectoryPoint(NamedTuple):
    """One waypoint as it comes in a ``trajectory_msgs/JointTrajectoryPoint``.

    ``positions`` is required (length = number of joint names of the trajectory);
    ``velocities`` and ``accelerations`` are either empty or of the same length.
    ``time_from_start`` is in seconds.
    """

    time_from_start: float
    positions: Sequence[float]
    velocities: Sequence[float] = ()
    accelerations: Sequence[float] = ()


class DesiredState(NamedTuple):
    """The reference at one instant: ``q`` (n,), ``qd`` (n,), ``qdd`` (n,), chain order."""

    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray


def interpolate_segment(t, t_a, state_a, t_b, state_b):
    """Sample the polynomial joining two waypoints at time ``t``.

    Same formulas as joint_trajectory_controller's ``interpolate_between_points``.

    Args:
        t: sample time (s); clamped into ``[t_a, t_b]``, and outside it the result is the
            linear interpolation's end value (as joint_trajectory_controller does).
        t_a, t_b: times of the two waypoints (s), ``t_a <= t_b``.
        state_a, state_b: ``(q, qd, qdd)`` triples of (n,) arrays; ``qd`` or ``qdd`` may be
            ``None`` when the waypoint does not give them.

    Returns:
        DesiredState: the interpolated ``q``, ``qd``, ``qdd``. The degree is quintic when
        both waypoints carry velocities and accelerations, cubic when both carry
        velocities, otherwise linear (then ``qdd`` is zero).
    """
    q_a, qd_a, qdd_a = state_a
    q_b, qd_b, qdd_b = state_b
    q_a = np.asarray(q_a, dtype=float)
    q_b = np.asarray(q_b, dtype=float)
    T = float(t_b - t_a)
    s = float(t - t_a)
    has_vel = qd_a is not None and qd_b is not None
    has_acc = has_vel and qdd_a is not None and qdd_b is not None
    if s < 0.0:
        s, has_vel, has_acc = 0.0, False, False
    if s > T:
        s, has_vel, has_acc = T, False, False
    if T == 0.0:
        # one instant: the first waypoint as given (a linear segment has no slope)
        zeros = np.zeros_like(q_a)
        return DesiredState(q_a.copy(), np.array(qd_a, dtype=float) if has_vel else zeros,
                            np.array(qdd_a, dtype=float) if has_acc else zeros.copy())
    coefficients = _segment_coefficients(
        np.array([0.0, T]), np.stack([q_a, q_b]),
        [qd_a, qd_b] if has_vel else [None, None],
        [qdd_a, qdd_b] if has_acc else [None, None])
    return DesiredState(*(np.array(v) for v in _evaluate(coefficients[0].T.tolist(), s)))


def _evaluate(rows, s):
    """Return lists q, qd, qdd of the polynomials ``sum_j row[j] s**j`` at ``s`` (Horner).

    ``rows``: one sequence of 6 coefficients per joint (a segment's (6, n) coefficients,
    transposed). Plain floats: a joint costs about 30 operations, less than NumPy's call
    overhead for a (3, 6) @ (6, n) product.
    """
    q, qd, qdd = [], [], []
    for c0, c1, c2, c3, c4, c5 in rows:
        q.append(c0 + s * (c1 + s * (c2 + s * (c3 + s * (c4 + s * c5)))))
        qd.append(c1 + s * (2.0 * c2 + s * (3.0 * c3 + s * (4.0 * c4 + s * (5.0 * c5)))))
        qdd.append(2.0 * c2 + s * (6.0 * c3 + s * (12.0 * c4 + s * (20.0 * c5))))
    return q, qd, qdd


def _segment_coefficients(times, positions, velocities, accelerations):
    """Return the (m - 1, 6, n) polynomial coefficients of every segment, all at once.

    Segment k runs from waypoint k to k + 1; ``q(s) = sum_j c[k, j] s**j`` for ``s`` in
    ``[0, T_k]``, with joint_trajectory_controller's ``interpolate_between_points``
    coefficients: quintic where both waypoints give velocities and accelerations, cubic
    where both give velocities, linear otherwise (unused coefficients are zero).
    ``times`` must increase strictly.
    """
    m, n = positions.shape
    coefficients = np.zeros((max(m - 1, 0), 6, n))
    if m < 2:
        return coefficients
    zero = np.zeros(n)
    has_vel = np.array([v is not None for v in velocities])
    has_acc = np.array([a is not None for a in accelerations]) & has_vel
    qd = np.array([zero if v is None else v for v in velocities])
    qdd = np.array([zero if a is None else a for a in accelerations])
    T = np.diff(times)[:, None]
    q_a, q_b, qd_a, qd_b, qdd_a, qdd_b = (positions[:-1], positions[1:], qd[:-1], qd[1:],
                                          qdd[:-1], qdd[1:])
    dq = q_b - q_a
    cubic = (has_vel[:-1] & has_vel[1:])[:, None]
    quintic = (has_acc[:-1] & has_acc[1:])[:, None]
    linear = ~cubic
    cubic = cubic & ~quintic
    with np.errstate(over='ignore', invalid='ignore'):
        coefficients[:, 0] = q_a
        coefficients[:, 1] = np.where(linear, dq / T, qd_a)
        coefficients[:, 2] = np.where(
            quintic, 0.5 * qdd_a,
            np.where(cubic, (3.0 * dq - (2.0 * qd_a + qd_b) * T) / T ** 2, 0.0))
        coefficients[:, 3] = np.where(
            quintic, (20.0 * dq - (8.0 * qd_b + 12.0 * qd_a) * T
                      - (3.0 * qdd_a - qdd_b) * T ** 2) / (2.0 * T ** 3),
            np.where(cubic, (2.0 * (-dq) + (qd_a + qd_b) * T) / T ** 3, 0.0))
        coefficients[:, 4] = np.where(
            quintic, (-30.0 * dq + (14.0 * qd_b + 16.0 * qd_a) * T
                      + (3.0 * qdd_a - 2.0 * qdd_b) * T ** 2) / (2.0 * T ** 4), 0.0)
        coefficients[:, 5] = np.where(
            quintic, (12.0 * dq - 6.0 * (qd_b + qd_a) * T
                      - (qdd_a - qdd_b) * T ** 2) / (2.0 * T ** 5), 0.0)
    return coefficients


class Trajectory:
    """A validated joint trajectory in chain order, sampled like joint_trajectory_controller.

    Build it with :func:`trajectory_from_points` (from message data) or :meth:`hold`.
    Immutable after construction (but for a cache of the last segment's coefficients);
    :meth:`sample` is cheap enough for every control cycle.
    """

    def __init__(self, start_time: float, times: np.ndarray, positions: np.ndarray,
                 velocities: List[Optional[np.ndarray]],
                 accelerations: List[Optional[np.ndarray]],
                 time_before: float, state_before: DesiredState):
        """Store already validated data (use :func:`trajectory_from_points` instead).

        Args:
            start_time: absolute time (s) that ``times`` count from.
            times: (m,) strictly increasing ``time_from_start`` values (s), ``times[0] >= 0``.
            positions: (m, n) waypoint positions in chain order.
            velocities, accelerations: per waypoint an (n,) array or ``None`` (not given).
            time_before: absolute time (s) at which ``state_before`` held (receipt time).
            state_before: the desired state when the trajectory arrived; the reference is
                interpolated from it to the first waypoint.
        """
        self.start_time = float(start_time)
        self.times = np.asarray(times, dtype=float)
        self.positions = np.asarray(positions, dtype=float)
        self.velocities = list(velocities)
        self.accelerations = list(accelerations)
        self.time_before = float(time_before)
        self.state_before = DesiredState(*(np.array(a, dtype=float) for a in state_before))
        self._abs_times = self.start_time + self.times
        self._abs_list = self._abs_times.tolist()        # for bisect on the hot path
        self._coefficients = _segment_coefficients(
            self.times, self.positions, self.velocities, self.accelerations)
        # the way in, from state_before to the first waypoint (when that lies ahead)
        self._first_rows = None
        if self._abs_list[0] > self.time_before:
            self._first_rows = _segment_coefficients(
                np.array([self.time_before, self._abs_list[0]]),
                np.stack([self.state_before.q, self.positions[0]]),
                [self.state_before.qd, self.velocities[0]],
                [self.state_before.qdd, self.accelerations[0]])[0].T.tolist()
        self._rows = (None, None)        # (segment, its coefficient rows), the last one used
        self._before = tuple(a.tolist() for a in self.state_before)

    @classmethod
    def hold(cls, q, time: float) -> 'Trajectory':
        """Hold the positions ``q`` (n,) at zero velocity and acceleration from ``time`` (s) on."""
        q = np.array(q, dtype=float)
        zeros = np.zeros_like(q)
        return cls(time, np.zeros(1), q[np.newaxis, :], [zeros], [zeros], time,
                   DesiredState(q, zeros, zeros))

    @property
    def end_time(self) -> float:
        """Absolute time (s) of the last waypoint; the last point is held after it."""
        return float(self._abs_times[-1])

    def _point_state(self, i):
        return self.positions[i], self.velocities[i], self.accelerations[i]

    def sample(self, t: float) -> DesiredState:
        """Return the reference ``(q_d, qd_d, qdd_d)`` at absolute time ``t`` (s).

        Before ``time_before``: ``state_before``. Before the first waypoint: the polynomial
        from ``state_before`` to it. Between waypoints: their polynomial. After the last:
        the last waypoint (velocities/accelerations as given, zeros where absent).
        (n,) arrays; :meth:`sample_values` gives the same numbers as lists.
        """
        return DesiredState(*(np.array(v, dtype=float) for v in self.sample_values(t)))

    def sample_values(self, t: float) -> Tuple[list, list, list]:
        """:meth:`sample` as three new lists of n floats (the control path's form)."""
        if t < self.time_before:
            return tuple(list(v) for v in self._before)
        if t < self._abs_list[0]:
            rows, s = self._first_rows, t - self.time_before
        else:
            i = bisect.bisect_right(self._abs_list, t) - 1
            if i == len(self.times) - 1:
                q, qd, qdd = self._point_state(i)
                zeros = [0.0] * len(q)
                return (q.tolist(), zeros if qd is None else qd.tolist(),
                        list(zeros) if qdd is None else qdd.tolist())
            segment, rows = self._rows
            if segment != i:
                # the segment's polynomial, its coefficients worked out once (__init__)
                rows = self._coefficients[i].T.tolist()
                self._rows = (i, rows)
            s = t - self._abs_list[i]
        return _evaluate(rows, s)


def _as_finite_vector(values, length, what):
    arr = np.asarray(values, dtype=float)
    if arr.shape != (length,):
        raise TrajectoryError(f'{what} has {arr.size} values, expected {length}')
    if not np.all(np.isfinite(arr)):
        raise TrajectoryError(f'{what} contains NaN or inf')
    return arr


#: Most waypoints accepted in one trajectory (100 s at 1 kHz).
MAX_POINTS = 100_000


def _first(items, count=10):
    """Return at most ``count`` items for a message, saying how many there were."""
    items = list(items)
    return items if len(items) <= count else items[:count] + [f'... {len(items)} in all']


#: Largest acceleration bound the segment polynomials may reach before a trajectory is
#: refused: far beyond any arm, far below double precision overflow.
MAX_INTERPOLATED = 1e100


def _check_interpolation(times, positions, velocities, accelerations):
    """Refuse a trajectory whose segment polynomials cannot be evaluated finitely.

    A quintic between waypoints ``T`` apart reaches at most about
    ``60 |dq| / T^2 + 36 (|qd_a| + |qd_b|) / T + 9 (|qdd_a| + |qdd_b|)`` in acceleration
    (the cubic and linear cases stay below it); all segments are checked at once.
    """
    if len(times) < 2:
        return
    zero = np.zeros(positions.shape[1])
    qd = np.array([zero if v is None else v for v in velocities])
    qdd = np.array([zero if a is None else a for a in accelerations])
    with np.errstate(over='ignore', invalid='ignore', divide='ignore'):
        T = np.diff(times)[:, None]
        bound = (60.0 * np.abs(np.diff(positions, axis=0)) / T ** 2
                 + 36.0 * (np.abs(qd[:-1]) + np.abs(qd[1:])) / T
                 + 9.0 * (np.abs(qdd[:-1]) + np.abs(qdd[1:])))
    bad = ~(bound.max(axis=1) <= MAX_INTERPOLATED)
    if np.any(bad):
        k = int(np.flatnonzero(bad)[0])
        raise TrajectoryError(
            f'point {k} -> {k + 1}: the interpolation is not finite ({T[k, 0]:.3g} s apart '
            f'for a change of up to {np.abs(positions[k + 1] - positions[k]).max():.3g}); '
            'the whole trajectory is refused')


def _well_formed_columns(points, n, order):
    """Return (times, positions, velocities, accelerations) in chain order, all at once.

    The common case, a few NumPy calls for the whole trajectory: every point has n finite
    positions, times start at 0 or later and increase strictly, and velocities
    (accelerations) are given by every point or by none. Returns None otherwise, and
    :func:`_checked_columns` then finds and names the fault (or handles the mix).
    """
    try:
        times = np.array([float(p.time_from_start) for p in points])
        positions = np.array([p.positions for p in points], dtype=float)
        given = [[len(p.velocities) > 0 for p in points],
                 [len(p.accelerations) > 0 for p in points]]
        if any(len(set(flags)) > 1 for flags in given) or given[1][0] and not given[0][0]:
            return None
        velocities = (np.array([p.velocities for p in points], dtype=float)
                      if given[0][0] else None)
        accelerations = (np.array([p.accelerations for p in points], dtype=float)
                         if given[1][0] else None)
    except (TypeError, ValueError):
        return None
    arrays = [a for a in (positions, velocities, accelerations) if a is not None]
    if (any(a.shape != (len(points), n) for a in arrays)
            or not all(np.isfinite(a).all() for a in arrays)
            or not (np.isfinite(times).all() and times[0] >= 0.0)
            or not np.all(np.diff(times) > 0.0)):
        return None
    none = [None] * len(points)
    return (times, positions[:, order],
            none if velocities is None else list(velocities[:, order]),
            none if accelerations is None else list(accelerations[:, order]))


def _checked_columns(points, n, order):
    """Check the points one by one: (times, positions, velocities, accelerations).

    Raises:
        TrajectoryError: naming the first bad point and what is wrong with it.
    """
    times = np.empty(len(points))
    positions = np.empty((len(points), n))
    velocities, accelerations = [], []
    for k, point in enumerate(points):
        t = float(point.time_from_start)
        if not np.isfinite(t) or t < 0.0:
            raise TrajectoryError(f'point {k}: time_from_start {t} s is negative or not finite')
        if k > 0 and t <= times[k - 1]:
            raise TrajectoryError(
                f'point {k}: time_from_start {t} s is not after point {k - 1}\'s '
                f'{times[k - 1]} s (must be strictly increasing)')
        times[k] = t
        positions[k] = _as_finite_vector(point.positions, n, f'point {k} positions')[order]
        has_vel = len(point.velocities) > 0
        has_acc = len(point.accelerations) > 0
        if has_acc and not has_vel:
            raise TrajectoryError(f'point {k}: accelerations given without velocities')
        velocities.append(
            _as_finite_vector(point.velocities, n, f'point {k} velocities')[order]
            if has_vel else None)
        accelerations.append(
            _as_finite_vector(point.accelerations, n, f'point {k} accelerations')[order]
            if has_acc else None)
    return times, positions, velocities, accelerations


def trajectory_from_points(joint_names: Sequence[str], points: Sequence[TrajectoryPoint],
                           chain_joint_names: Sequence[str], start_time: Optional[float],
                           receipt_time: float, state_before: DesiredState) -> Trajectory:
    """Validate trajectory message data and reorder it into chain order.

    Args:
        joint_names: the trajectory's joint names, any order; must name every joint of
            ``chain_joint_names`` exactly once and no other joint.
        points: the waypoints, columns in ``joint_names`` order.
        chain_joint_names: the controlled joints (the model's chain order).
        start_time: ``header.stamp`` in seconds, or ``None`` for a zero stamp, which
            means "start on receipt" (``receipt_time``).
        receipt_time: the time (s, same clock) the trajectory arrived.
        state_before: the desired state at ``receipt_time`` (chain order); the reference
            moves from it to the first waypoint if that lies in the future.

    Returns:
        Trajectory: in chain order.

    Raises:
        TrajectoryError: empty ``joint_names`` or ``points``; duplicate, unknown or missing
            joints; a point whose positions/velocities/accelerations have the wrong length
            or contain NaN/inf, or gives accelerations without velocities; a negative or
            non-increasing ``time_from_start``; a stamped trajectory that ends before
            ``receipt_time``. The whole trajectory is rejected, nothing is partially used.
    """
    names = list(joint_names)
    chain = list(chain_joint_names)
    if not names:
        raise TrajectoryError('trajectory has no joint_names')
    if not points:
        raise TrajectoryError('trajectory has no points')
    if len(points) > MAX_POINTS:
        raise TrajectoryError(f'trajectory has {len(points)} points, more than {MAX_POINTS}')
    # every check below is linear in the names (a message may carry thousands)
    index, duplicates = {}, set()
    for i, name in enumerate(names):
        if name in index:
            duplicates.add(name)
        index[name] = i
    if duplicates:
        raise TrajectoryError(f'duplicate joint names {_first(sorted(duplicates))}')
    chain_set = set(chain)
    unknown = [name for name in names if name not in chain_set]
    if unknown:
        raise TrajectoryError(f'unknown joints {_first(unknown)}; this controller drives '
                              f'{chain}')
    missing = [name for name in chain if name not in index]
    if missing:
        raise TrajectoryError(f'joints {missing} missing; partial trajectories are not '
                              'supported, every controlled joint must be given')
    n = len(chain)
    order = [index[name] for name in chain]
    columns = _well_formed_columns(points, n, order)
    if columns is None:
        # something is wrong: go point by point to say what and where
        columns = _checked_columns(points, n, order)
    times, positions, velocities, accelerations = columns
    if start_time is None:
        start = float(receipt_time)
    elif not np.isfinite(start_time):
        raise TrajectoryError('header stamp is not finite')
    elif start_time + times[-1] < receipt_time:
        raise TrajectoryError(
            f'trajectory ends {receipt_time - start_time - times[-1]:.3f} s in the past '
            '(stamped start time + last time_from_start < now)')
    else:
        start = float(start_time)
    for what, arr in zip(('q', 'qd', 'qdd'), state_before):
        if np.shape(arr) != (n,):
            raise TrajectoryError(
                f'state_before.{what} has shape {np.shape(arr)}, expected ({n},)')
    _check_interpolation(times, positions, velocities, accelerations)
    return Trajectory(start, times, positions, velocities, accelerations,
                      receipt_time, state_before)
