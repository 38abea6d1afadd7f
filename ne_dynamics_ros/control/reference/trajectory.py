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

The segment polynomials themselves are :mod:`ne_dynamics_ros.control.reference.splines`'s.

A one-point trajectory with ``time_from_start == 0`` therefore needs no special case: it
is sampled as "after the last point" from the moment it is received, i.e. it is a
streaming set-point (how servoing tools send references).

Times are float seconds on one clock (the node uses its ROS clock). Joint values are in
the model's joint coordinates: rad for revolute, m for prismatic joints; velocities and
accelerations in rad/s, rad/s^2 (m/s, m/s^2).
"""
import bisect
from typing import NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from .splines import evaluate_rows, segment_coefficients, segment_rows


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


class WaypointArrays(NamedTuple):
    """The waypoints of a trajectory message as columns, in the message's joint order.

    What :class:`TrajectoryPoint` lists hold, for all points at once (a message of 50 000
    points is a few arrays, not 50 000 objects). ``m`` points, ``k`` values per point.

    ``times``: (m,) ``time_from_start``, s. ``positions``: (m, k), rad or m.
    ``velocities``, ``accelerations``: (m, k), rad/s, rad/s^2 (m/s, m/s^2); rows of points
    that do not give them are zeros. ``has_velocities``, ``has_accelerations``: (m,) bool,
    which points give them. Build it with :func:`waypoint_arrays` from points, or directly
    (the node's CDR reader does).
    """

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    has_velocities: np.ndarray
    has_accelerations: np.ndarray


#: The fields of a waypoint, in the order their faults are named (see _first_fault).
_FIELDS = ('positions', 'velocities', 'accelerations')
#: Rank of each field's faults among a point's faults (see _first_fault).
_FIELD_RANKS = {'positions': 2, 'velocities': 4, 'accelerations': 5}


class _WrongLength(TrajectoryError):
    """A waypoint field of the wrong length: ``point``, ``fields`` (all wrong ones there)."""

    def __init__(self, message, point, fields):
        super().__init__(message)
        self.point = point
        self.fields = fields


def waypoint_arrays(points: Sequence[TrajectoryPoint], k: int) -> WaypointArrays:
    """Return the :class:`WaypointArrays` of ``points``, each giving ``k`` values.

    Args:
        points: the waypoints; ``positions`` of ``k`` values each, ``velocities`` and
            ``accelerations`` of ``k`` values or empty.
        k: the number of joint names of the trajectory.

    Raises:
        TrajectoryError: a point whose positions, velocities or accelerations have another
            length. The fault named is the first a point-by-point check meets (see
            :func:`trajectory_from_points`): an earlier point's NaN or time, say, before a
            later point's length. Values are not checked otherwise (NaN passes).
    """
    try:
        return _waypoint_arrays(points, k)
    except _WrongLength as err:
        j = err.point
        p = points[j]
        values = {f: [float('nan')] * k if f in err.fields else getattr(p, f)
                  for f in _FIELDS}
        stand_in = TrajectoryPoint(p.time_from_start, **values)
        fault = _first_fault(_waypoint_arrays(list(points[:j]) + [stand_in], k), k)
        replaced = {_FIELD_RANKS[f] for f in err.fields}
        if fault is not None and (fault[0] < j or fault[1] not in replaced):
            raise TrajectoryError(fault[2]) from None
        raise TrajectoryError(str(err)) from None


def _waypoint_arrays(points, k):
    """:func:`waypoint_arrays` naming the first wrong length (:class:`_WrongLength`)."""
    m = len(points)
    times = np.array([float(p.time_from_start) for p in points], dtype=float)
    rows = [[getattr(p, field) for p in points] for field in _FIELDS]
    sizes = np.array([[len(row) for row in field_rows] for field_rows in rows],
                     dtype=np.int64).reshape(3, m)
    given = sizes > 0
    given[0] = True                               # positions are never optional
    wrong = given & (sizes != k)
    if wrong.any():
        j = int(np.flatnonzero(wrong.any(axis=0))[0])
        fields = [f for f, bad in zip(_FIELDS, wrong[:, j]) if bad]
        f = _FIELDS.index(fields[0])
        raise _WrongLength(f'point {j} {fields[0]} has {sizes[f, j]} values, expected {k}',
                           j, fields)
    columns = []
    for field_rows, field_given in zip(rows, given):
        values = np.zeros((m, k))
        if field_given.all():
            values[:] = np.array(field_rows, dtype=float).reshape(m, k)
        elif field_given.any():
            values[field_given] = np.array(
                [row for row, g in zip(field_rows, field_given) if g], dtype=float
            ).reshape(-1, k)
        columns.append(values)
    return WaypointArrays(times, *columns, given[1], given[2])


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
    zeros = np.zeros((2, q_a.size))
    coefficients = segment_coefficients(
        np.array([0.0, T]), np.stack([q_a, q_b]),
        np.stack([qd_a, qd_b]) if has_vel else zeros,
        np.stack([qdd_a, qdd_b]) if has_acc else zeros,
        np.full(2, has_vel), np.full(2, has_acc))
    return DesiredState(*(np.array(v) for v in evaluate_rows(segment_rows(coefficients, 0), s)))


def _given_rows(values, given, shape):
    """Return (m, n) ``values`` (zeros where not ``given``; None: none) and (m,) ``given``."""
    if values is None:
        return np.zeros(shape), np.zeros(shape[0], dtype=bool)
    given = np.ones(shape[0], bool) if given is None else np.asarray(given, dtype=bool)
    values = np.asarray(values, dtype=float)
    if not given.all():              # rows of waypoints that do not give them: zeros
        values = np.where(given[:, None], values, 0.0)
    return values, given


class Trajectory:
    """A validated joint trajectory in chain order, sampled like joint_trajectory_controller.

    Build it with :func:`trajectory_from_points` (from message data) or :meth:`hold`.
    Immutable after construction (but for a cache of the last segment's coefficients);
    :meth:`sample` is cheap enough for every control cycle. Construction is a fixed number
    of NumPy operations whatever the number of waypoints.
    """

    def __init__(self, start_time: float, times: np.ndarray, positions: np.ndarray,
                 velocities: Optional[np.ndarray], accelerations: Optional[np.ndarray],
                 time_before: float, state_before: DesiredState,
                 has_velocities: Optional[np.ndarray] = None,
                 has_accelerations: Optional[np.ndarray] = None,
                 coefficients: Optional[np.ndarray] = None):
        """Store already validated data (use :func:`trajectory_from_points` instead).

        Args:
            start_time: absolute time (s) that ``times`` count from.
            times: (m,) strictly increasing ``time_from_start`` values (s), ``times[0] >= 0``.
            positions: (m, n) waypoint positions in chain order.
            velocities, accelerations: (m, n) in chain order, or ``None`` when no waypoint
                gives them.
            time_before: absolute time (s) at which ``state_before`` held (receipt time).
            state_before: the desired state when the trajectory arrived; the reference is
                interpolated from it to the first waypoint.
            has_velocities, has_accelerations: (m,) bool, the waypoints that give them
                (default: all of them when the array is given); other rows are ignored.
            coefficients: the segments' (p, m - 1, n) polynomial coefficients of these
                waypoints when already worked out (:func:`prepare_waypoints`).
        """
        self.start_time = float(start_time)
        self.times = np.asarray(times, dtype=float)
        self.positions = np.asarray(positions, dtype=float)
        #: (m, n) velocities and accelerations (zeros where not given) and (m,) bool masks
        #: of the waypoints that give them
        self.velocities, self.has_velocities = _given_rows(velocities, has_velocities,
                                                           self.positions.shape)
        self.accelerations, self.has_accelerations = _given_rows(
            accelerations, has_accelerations, self.positions.shape)
        self.has_accelerations = self.has_accelerations & self.has_velocities
        self.time_before = float(time_before)
        self.state_before = DesiredState(*(np.array(a, dtype=float) for a in state_before))
        self._abs_times = self.start_time + self.times
        self._abs_list = self._abs_times.tolist()        # for bisect on the hot path
        self.coefficients = coefficients if coefficients is not None else \
            segment_coefficients(self.times, self.positions, self.velocities,
                                 self.accelerations, self.has_velocities,
                                 self.has_accelerations)
        # the way in, from state_before to the first waypoint (when that lies ahead)
        self._first_rows = None
        if self._abs_list[0] > self.time_before:
            self._first_rows = segment_rows(segment_coefficients(
                np.array([self.time_before, self._abs_list[0]]),
                np.stack([self.state_before.q, self.positions[0]]),
                np.stack([self.state_before.qd, self.velocities[0]]),
                np.stack([self.state_before.qdd, self.accelerations[0]]),
                np.array([True, self.has_velocities[0]]),
                np.array([True, self.has_accelerations[0]])), 0)
        self._rows = (None, None)        # (segment, its coefficient rows), the last one used
        self._before = tuple(a.tolist() for a in self.state_before)
        # the last waypoint, held after its time (zeros where it gives no qd, qdd)
        self._last = (self.positions[-1].tolist(), self.velocities[-1].tolist(),
                      self.accelerations[-1].tolist())

    @classmethod
    def hold(cls, q, time: float) -> 'Trajectory':
        """Hold the positions ``q`` (n,) at zero velocity and acceleration from ``time`` (s) on."""
        q = np.array(q, dtype=float)
        zeros = np.zeros_like(q)
        return cls(time, np.zeros(1), q[np.newaxis, :], zeros[np.newaxis, :],
                   zeros[np.newaxis, :], time, DesiredState(q, zeros, zeros))

    @property
    def end_time(self) -> float:
        """Absolute time (s) of the last waypoint; the last point is held after it."""
        return float(self._abs_times[-1])

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
            if i == len(self._abs_list) - 1:
                return tuple(list(v) for v in self._last)
            segment, rows = self._rows
            if segment != i:
                # the segment's polynomial, its coefficients worked out once (__init__)
                rows = segment_rows(self.coefficients, i)
                self._rows = (i, rows)
            s = t - self._abs_list[i]
        return evaluate_rows(rows, s)

    def sample_many(self, t) -> DesiredState:
        """:meth:`sample` at many absolute times ``t`` (N,) at once: (N, n) arrays.

        The same polynomials, evaluated with NumPy over the batch (for checking a whole
        trajectory ahead of time, e.g. against the effort limits).
        """
        t = np.asarray(t, dtype=float).reshape(-1)
        n = self.positions.shape[1]
        out = [np.empty((t.size, n)) for _ in range(3)]
        segment = np.searchsorted(self._abs_times, t, side='right') - 1
        before, way = t < self.time_before, t < self._abs_times[0]
        last = ~way & (segment == len(self.times) - 1)
        inside = ~way & ~last
        way &= ~before
        for mask, values in ((before, self.state_before), (last, self._last)):
            for o, v in zip(out, values):
                o[mask] = v
        if way.any():
            rows = np.array(self._first_rows, dtype=float).T[:, None, :]   # (6, 1, n)
            _evaluate_planes(rows, t[way] - self.time_before, out, way)
        if inside.any():
            k = segment[inside]
            _evaluate_planes(self.coefficients[:, k], t[inside] - self._abs_times[k],
                             out, inside)
        return DesiredState(*out)


def _evaluate_planes(coefficients, s, out, mask):
    """Write q, qd, qdd of (p, K or 1, n) polynomial coefficients at s (K,) into out[mask]."""
    s = s[:, None]
    q = np.zeros((s.size, coefficients.shape[2]))
    qd, qdd = np.zeros_like(q), np.zeros_like(q)
    for j in range(coefficients.shape[0] - 1, -1, -1):          # Horner, highest first
        qdd = qdd * s + 2.0 * qd
        qd = qd * s + q
        q = q * s + coefficients[j]
    out[0][mask], out[1][mask], out[2][mask] = q, qd, qdd


#: Most waypoints accepted in one trajectory (100 s at 1 kHz).
MAX_POINTS = 100_000


def _first(items, count=10):
    """Return at most ``count`` items for a message, saying how many there were."""
    items = list(items)
    return items if len(items) <= count else items[:count] + [f'... {len(items)} in all']


#: Largest acceleration bound the segment polynomials may reach before a trajectory is
#: refused: far beyond any arm, far below double precision overflow.
MAX_INTERPOLATED = 1e100


def _check_interpolation(times, positions, qd, qdd):
    """Refuse a trajectory whose segment polynomials cannot be evaluated finitely.

    A quintic between waypoints ``T`` apart reaches at most about
    ``60 |dq| / T^2 + 36 (|qd_a| + |qd_b|) / T + 9 (|qdd_a| + |qdd_b|)`` in acceleration
    (the cubic and linear cases stay below it); all segments are checked at once.
    ``qd``, ``qdd``: (m, n), zeros where a waypoint does not give them.
    """
    if len(times) < 2:
        return
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


def _first_fault(waypoints: WaypointArrays, n: int):
    """Return ``(point, rank, message)`` of the first fault of the waypoints, or None.

    All points at once; of the faults of one point, the one named is the first in this
    order: its time (not finite, negative, not after the previous point's), its positions
    (length, NaN/inf), accelerations given without velocities, its velocities, its
    accelerations.
    """
    times, positions, velocities, accelerations, has_vel, has_acc = waypoints
    m, k = positions.shape
    faults = []                              # (point, rank in the order above, message)

    def first(mask, rank, message):
        hits = np.flatnonzero(mask)
        if hits.size:
            j = int(hits[0])
            faults.append((j, rank, message(j)))

    first(~(np.isfinite(times) & (times >= 0.0)), 0,
          lambda j: f'point {j}: time_from_start {times[j]} s is negative or not finite')
    with np.errstate(invalid='ignore'):
        first(np.concatenate([[False], ~(times[1:] > times[:-1])]), 1, lambda j: (
            f'point {j}: time_from_start {times[j]} s is not after point {j - 1}\'s '
            f'{times[j - 1]} s (must be strictly increasing)'))
    if k != n:
        first(np.ones(m, dtype=bool), 2,
              lambda j: f'point {j} positions has {k} values, expected {n}')
        first(has_vel, 4, lambda j: f'point {j} velocities has {k} values, expected {n}')
        first(has_acc, 5, lambda j: f'point {j} accelerations has {k} values, expected {n}')
    else:
        first(~np.isfinite(positions).all(axis=1), 2,
              lambda j: f'point {j} positions contains NaN or inf')
        first(has_vel & ~np.isfinite(velocities).all(axis=1), 4,
              lambda j: f'point {j} velocities contains NaN or inf')
        first(has_acc & ~np.isfinite(accelerations).all(axis=1), 5,
              lambda j: f'point {j} accelerations contains NaN or inf')
    first(has_acc & ~has_vel, 3,
          lambda j: f'point {j}: accelerations given without velocities')
    return min(faults) if faults else None


def check_waypoints(joint_names: Sequence[str],
                    points: Union[Sequence[TrajectoryPoint], WaypointArrays],
                    chain_joint_names: Sequence[str]) -> WaypointArrays:
    """Check a trajectory's joints and waypoints; return them in chain order.

    The checks of :func:`trajectory_from_points` that need neither a clock nor the state
    at receipt, in the same order and with the same messages: a fixed number of NumPy
    operations whatever the number of points (given as :class:`WaypointArrays`).

    Returns:
        WaypointArrays: (m, n) columns in ``chain_joint_names`` order.

    Raises:
        TrajectoryError: as :func:`trajectory_from_points`, but for the stamp checks.
    """
    names = list(joint_names)
    chain = list(chain_joint_names)
    m = len(points.times) if isinstance(points, WaypointArrays) else len(points)
    if not names:
        raise TrajectoryError('trajectory has no joint_names')
    if not m:
        raise TrajectoryError('trajectory has no points')
    if m > MAX_POINTS:
        raise TrajectoryError(f'trajectory has {m} points, more than {MAX_POINTS}')
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
    waypoints = points if isinstance(points, WaypointArrays) else waypoint_arrays(points, n)
    fault = _first_fault(waypoints, n)
    if fault is not None:
        raise TrajectoryError(fault[2])
    times, positions, velocities, accelerations, has_vel, has_acc = waypoints
    order = [index[name] for name in chain]
    if order != list(range(n)):
        positions, velocities, accelerations = (positions[:, order], velocities[:, order],
                                                accelerations[:, order])
    return WaypointArrays(times, positions, velocities, accelerations, has_vel, has_acc)


class PreparedWaypoints(NamedTuple):
    """What a trajectory is before it arrives: checked waypoints and their polynomials.

    ``waypoints``: :class:`WaypointArrays` in chain order, rows of points that give no
    velocities/accelerations zero; ``coefficients``: (p, m - 1, n) segment polynomial
    coefficients (see :func:`prepare_waypoints`).
    """

    waypoints: WaypointArrays
    coefficients: np.ndarray


def prepare_waypoints(joint_names: Sequence[str],
                      points: Union[Sequence[TrajectoryPoint], WaypointArrays],
                      chain_joint_names: Sequence[str]) -> PreparedWaypoints:
    """Check a trajectory and work out its segment polynomials, whenever it will start.

    :func:`check_waypoints`, then the check that every segment's interpolation is finite
    and the coefficients of every segment: all of :func:`trajectory_from_points` that
    depends neither on the clock nor on the state at receipt, so that it can be done
    ahead (the node's receiving process does it).

    Raises:
        TrajectoryError: as :func:`trajectory_from_points`, but for the stamp checks.
    """
    times, positions, velocities, accelerations, has_vel, has_acc = check_waypoints(
        joint_names, points, chain_joint_names)
    with np.errstate(invalid='ignore'):
        velocities = np.where(has_vel[:, None], velocities, 0.0)
        accelerations = np.where(has_acc[:, None], accelerations, 0.0)
    _check_interpolation(times, positions, velocities, accelerations)
    coefficients = segment_coefficients(times, positions, velocities, accelerations,
                                        has_vel, has_acc)
    return PreparedWaypoints(WaypointArrays(times, positions, velocities, accelerations,
                                            has_vel, has_acc), coefficients)


def prepared_waypoints(joint_names: Sequence[str],
                       points: Union[Sequence[TrajectoryPoint], WaypointArrays,
                                     PreparedWaypoints],
                       chain_joint_names: Sequence[str]) -> PreparedWaypoints:
    """Return ``points`` as :class:`PreparedWaypoints` of the chain: as given, or prepared.

    Raises:
        TrajectoryError: prepared waypoints of other joints than the chain's (in its
            order), or any reason of :func:`prepare_waypoints`.
    """
    if isinstance(points, PreparedWaypoints):
        if list(joint_names) != list(chain_joint_names):
            raise TrajectoryError(f'prepared waypoints of joints {list(joint_names)}, not '
                                  f'of this chain {list(chain_joint_names)}')
        return points
    return prepare_waypoints(joint_names, points, chain_joint_names)


def trajectory_from_points(joint_names: Sequence[str],
                           points: Union[Sequence[TrajectoryPoint], WaypointArrays,
                                         PreparedWaypoints],
                           chain_joint_names: Sequence[str], start_time: Optional[float],
                           receipt_time: float, state_before: DesiredState) -> Trajectory:
    """Validate trajectory message data and reorder it into chain order.

    Whatever the number of points, a fixed number of NumPy operations (a message of
    50 000 points is checked and interpolated without a Python loop over them, when it
    comes as :class:`WaypointArrays`); none at all over the points when they come as
    :class:`PreparedWaypoints`, prepared ahead for these joints.

    Args:
        joint_names: the trajectory's joint names, any order; must name every joint of
            ``chain_joint_names`` exactly once and no other joint.
        points: the waypoints, columns in ``joint_names`` order: a sequence of
            :class:`TrajectoryPoint` or one :class:`WaypointArrays`; or the
            :class:`PreparedWaypoints` of :func:`prepare_waypoints` (then
            ``joint_names`` must be the chain's, in its order).
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
            non-increasing ``time_from_start``; segments whose interpolation cannot be
            evaluated finitely; a stamped trajectory that ends before ``receipt_time``.
            The whole trajectory is rejected, nothing is partially used.
    """
    prepared = prepared_waypoints(joint_names, points, chain_joint_names)
    times, positions, velocities, accelerations, has_vel, has_acc = prepared.waypoints
    n = len(chain_joint_names)
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
    return Trajectory(start, times, positions, velocities, accelerations,
                      receipt_time, state_before, has_vel, has_acc,
                      coefficients=prepared.coefficients)
