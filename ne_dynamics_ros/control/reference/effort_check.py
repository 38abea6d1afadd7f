"""Trajectories checked against the drives' effort limits, and stretched in time to fit.

Pure module (NumPy only). MoveIt plans against velocity and acceleration limits only; a
trajectory whose accelerations need more torque than the drives have would be accepted,
saturate and fail mid-move. Here, before a trajectory becomes the reference, the effort it
needs is worked out along it *as it will be interpolated* (the way in from the reference in
force included), sampled at the control rate, batched through the model's recursive
Newton–Euler inverse dynamics:

    tau(t) = M(q) q̈ + C(q, q̇) q̇ + armature q̈   +   Fv q̇   +   g(q) + Fc tanh(q̇ / v_s)
           = a(t)                                  +   b(t)   +   d(t)

(``M(q)q̈ + C(q,q̇)q̇ + g(q) = tau`` at the reference, as the computed-torque command is
when tracking is exact; friction with the model's viscous ``Fv`` and Coulomb ``Fc``
values, left out where the hardware compensates it, as gravity is), and compared with
``effort_limits * (1 - effort_margin)``: the margin is left for the feedback.

**Dynamic time scaling** (J. M. Hollerbach, "Dynamic scaling of manipulator
trajectories", ASME J. Dyn. Sys. Meas. Control 106(1), 102–106, 1984): played ``c`` times
slower, ``q_c(t) = q(t / c)``, the same path has ``q̇ / c`` and ``q̈ / c²``, so with
``u = 1 / c``

    tau_c = a u² + b u + d                                    (Hollerbach, eq. 11)

at every sample, the Coulomb term held at its sign, which a stretch does not change (as
Hollerbach's model of friction). :func:`smallest_stretch` finds the smallest uniform
stretch ``c >= 1`` with every sample of every joint within its limit in closed form: each
(sample, joint) is over its limit on at most two open intervals of ``u`` (the roots of two
quadratics), and the answer is the largest ``u`` in ``(0, 1]`` that no interval covers
(one sort of the intervals). When ``d`` alone, the effort the arm needs at rest on the
path, exceeds a limit, no stretch helps. The ROS message's times are scaled by ``c``, its
velocities divided by ``c`` and its accelerations by ``c²``; the segment polynomials of
joint_trajectory_controller's interpolation then give exactly ``q(t / c)``.
"""
from typing import NamedTuple, Optional, Sequence

import numpy as np

from ne_dynamics_ros.dynamics.friction import drive_friction
from ne_dynamics_ros.errors import StateError
from ne_dynamics_ros.control.reference.trajectory import (prepare_waypoints, PreparedWaypoints,
                                                          Trajectory, TrajectoryError,
                                                          WaypointArrays)

#: Samples per batch of inverse dynamics: bounds the memory of a long trajectory's check.
BATCH = 20_000


class InfeasibleTrajectory(TrajectoryError):
    """A trajectory needs more effort than the drives have (the message says where)."""


class EffortViolation(NamedTuple):
    """Where a trajectory needs the most effort beyond a drive's limit (the largest ratio).

    ``joint``: its name; ``time_from_start``: s after the trajectory's start;
    ``effort``: the effort needed there, N·m (N); ``limit``: the limit it was checked
    against (the effort limit less the margin), N·m (N).
    """

    joint: str
    time_from_start: float
    effort: float
    limit: float

    def text(self) -> str:
        """Return the violation as a sentence for a log or a goal's result."""
        return (f'{self.joint} needs {self.effort:.4g} N*m at {self.time_from_start:.3f} s '
                f'from the start, over its limit of {self.limit:.4g} N*m (effort limit '
                f'less effort_margin)')


class EffortCheck(NamedTuple):
    """The result of :func:`check_trajectory`.

    ``violation``: the sample furthest over its limit, as a share of it (None: the
    trajectory fits as it is);
    ``stretch``: the smallest uniform stretch ``c >= 1`` that makes it fit (1.0 when it
    fits, ``inf`` when no stretch does: gravity and Coulomb friction alone exceed a
    limit); ``samples``: how many samples were checked; ``peak_ratio``: the largest
    ``|tau| / limit`` over them.
    """

    violation: Optional[EffortViolation]
    stretch: float
    samples: int
    peak_ratio: float


def effort_terms(model, q, qd, qdd, gravity, friction=True, with_gravity=True,
                 coulomb_velocity=0.003):
    """Split the effort needed along a reference into Hollerbach's three terms.

    Args:
        model: a :class:`~ne_dynamics_ros.dynamics.model.RobotModel` (batched ``rnea``).
        q, qd, qdd: (N, n) reference positions (rad | m), velocities, accelerations.
        gravity: (3,) m/s² in the base link frame.
        friction: include the model's ``damping`` (Fv) and ``friction`` (Fc).
        with_gravity: include g(q) (False where the hardware compensates gravity).
        coulomb_velocity: v_s of ``Fc tanh(q̇ / v_s)`` at the reference, rad/s (m/s), > 0
            (the controller's, as :func:`~ne_dynamics_ros.control.laws.base.reference_friction`).

    Returns:
        ``(a, b, d)``, each (N, n) N·m (N): ``a = M q̈ + C q̇ + armature q̈`` (scales as
        ``1/c²``), ``b = Fv q̇`` (``1/c``), ``d = g(q) + Fc tanh(q̇ / v_s) + offset``
        (constant).

    Raises:
        ne_dynamics_ros.errors.StateError: non-finite or mis-shaped states.
    """
    # a as rnea with gravity less g(q) (RNEA is linear in gravity): a generated program
    # (CompiledDynamics) runs for its own gravity only, and a zero gravity would fall back
    # to the recursion (a 1 000-point goal's check spent most of its time there)
    g = model.gravity_torques(q, gravity=gravity)
    a = model.rnea(q, qd, qdd, gravity=gravity) - g
    d = g if with_gravity else np.zeros_like(a)
    if friction:
        b = model.damping * qd
        d = d + drive_friction(qd, 0.0, model.friction, coulomb_velocity,
                               model.friction_offset)
    else:
        b = np.zeros_like(a)
    return a, b, d


def effort_total(model, q, qd, qdd, gravity, friction=True, with_gravity=True,
                 coulomb_velocity=0.003):
    """Return the effort needed along a reference, (N, n) N·m (N).

    ``a + b + d`` of :func:`effort_terms` from one batched RNEA (that takes two: the
    terms apart); arguments and errors as there.
    """
    tau = model.rnea(q, qd, qdd, gravity=gravity)
    if not with_gravity:
        tau = tau - model.gravity_torques(q, gravity=gravity)
    if friction:
        tau = tau + model.damping * qd + drive_friction(
            qd, 0.0, model.friction, coulomb_velocity, model.friction_offset)
    return tau


def _over_intervals(a, b, e):
    """Open intervals of u where ``a u² + b u + e > 0``: (lo, hi) arrays, up to two each.

    Element-wise over equal-shape arrays; absent intervals come back empty (lo = hi = 0).
    """
    a, b, e = (np.ravel(x) for x in (a, b, e))
    inf = np.inf
    lo1, hi1 = np.zeros_like(a), np.zeros_like(a)
    lo2, hi2 = np.zeros_like(a), np.zeros_like(a)
    with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
        disc = b * b - 4.0 * a * e
        root = np.sqrt(np.maximum(disc, 0.0))
        # the numerically stable pair of roots (Numerical Recipes 5.6)
        half = -0.5 * (b + np.where(b >= 0.0, root, -root))
        r1 = half / a
        r2 = np.where(half == 0.0, r1, e / half)
        r_lo, r_hi = np.minimum(r1, r2), np.maximum(r1, r2)
    real = disc >= 0.0
    up, down, flat = a > 0.0, a < 0.0, a == 0.0
    # a > 0: outside the roots (everywhere without real roots)
    m = up & real
    lo1[m], hi1[m], lo2[m], hi2[m] = -inf, r_lo[m], r_hi[m], inf
    m = up & ~real
    lo1[m], hi1[m] = -inf, inf
    # a < 0: between the roots (nowhere without real roots)
    m = down & real
    lo1[m], hi1[m] = r_lo[m], r_hi[m]
    # a = 0: a line
    with np.errstate(divide='ignore', invalid='ignore'):
        cross = -e / b
    m = flat & (b > 0.0)
    lo1[m], hi1[m] = cross[m], inf
    m = flat & (b < 0.0)
    lo1[m], hi1[m] = -inf, cross[m]
    m = flat & (b == 0.0) & (e > 0.0)
    lo1[m], hi1[m] = -inf, inf
    return np.concatenate([lo1, lo2]), np.concatenate([hi1, hi2])


def smallest_stretch(a, b, d, limits) -> float:
    """Return the smallest ``c >= 1`` with ``|a/c² + b/c + d| <= limits`` everywhere.

    Hollerbach's time scaling in closed form (module docstring): per (sample, joint) the
    roots of ``a u² + b u + d = ±limit`` in ``u = 1/c``, then the largest ``u`` in
    ``(0, 1]`` outside every open interval where a sample is over its limit.

    Args:
        a, b, d: (N, n) N·m (N), from :func:`effort_terms`.
        limits: (n,) > 0, N·m (N); ``inf`` for a joint without a limit.

    Returns:
        ``c`` (1.0 when the trajectory fits as it is); ``inf`` when some ``|d|`` is over
        its limit (the arm could not stop there: a cancel or a state loss would hold it
        at rest; no stretch is looked for, even where a speed would make ``a`` and ``b``
        cancel it), or no stretch makes it fit.
    """
    limits = np.broadcast_to(np.asarray(limits, dtype=float), np.shape(a))
    finite = np.isfinite(limits)
    a, b, d, limits = (np.asarray(x, dtype=float)[finite] for x in (a, b, d, limits))
    if a.size == 0:
        return 1.0
    if np.any(np.abs(d) > limits):
        return float('inf')      # the arm could not even stop there (Hollerbach: reject)
    lo_up, hi_up = _over_intervals(a, b, d - limits)         # tau > limit
    lo_dn, hi_dn = _over_intervals(-a, -b, -d - limits)      # tau < -limit
    lo = np.concatenate([lo_up, lo_dn])
    hi = np.concatenate([hi_up, hi_dn])
    keep = (hi > lo) & (hi > 0.0) & (lo < 1.0)
    lo, hi = lo[keep], hi[keep]
    if lo.size == 0:
        return 1.0
    order = np.argsort(lo, kind='stable')
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    # components of the union of open intervals start where an interval begins at or
    # after the end of all before it; the last one decides whether u = 1 is covered
    starts = np.flatnonzero(np.concatenate([[True], lo[1:] >= reach[:-1]]))
    start = lo[starts[-1]]
    if reach[-1] <= 1.0:
        return 1.0
    if start <= 0.0:
        return float('inf')
    return float(1.0 / start)


def check_trajectory(model, trajectory: Trajectory, joint_names: Sequence[str], limits,
                     rate: float, gravity, friction=True, with_gravity=True,
                     coulomb_velocity=0.003, start: Optional[float] = None) -> EffortCheck:
    """Check the effort a trajectory needs, as it will be interpolated, against ``limits``.

    Args:
        model: the controller's model (its ``rnea``, ``gravity_torques``, friction).
        trajectory: the :class:`~ne_dynamics_ros.control.reference.trajectory.Trajectory` to check
            (chain order), from ``start`` (default its ``time_before``, the receipt) to
            its last waypoint.
        joint_names: (n,) the chain's joint names (for the violation's text).
        limits: (n,) N·m (N) each effort may reach (the limit less the margin), > 0.
        rate: samples per second (the control rate), > 0.
        gravity, friction, with_gravity, coulomb_velocity: as :func:`effort_terms`.

    Returns:
        :class:`EffortCheck`: the worst violation, the smallest stretch that removes them
        all (Hollerbach), the number of samples and the peak ``|tau| / limit``.
    """
    limits = np.asarray(limits, dtype=float)
    t0 = trajectory.time_before if start is None else float(start)
    t1 = max(trajectory.end_time, t0)
    count = int(np.floor((t1 - t0) * rate)) + 1
    times = t0 + np.arange(count) / rate
    if times[-1] < t1:
        times = np.append(times, t1)
    violation, stretch, peak = None, 1.0, 0.0
    for first in range(0, times.size, BATCH):
        chunk = times[first:first + BATCH]
        states = trajectory.sample_many(chunk)
        tau = effort_total(model, *states, gravity, friction, with_gravity, coulomb_velocity)
        with np.errstate(divide='ignore', invalid='ignore'):
            ratio = np.abs(tau) / limits
        k, j = np.unravel_index(np.argmax(np.nan_to_num(ratio, nan=np.inf)), ratio.shape)
        if ratio[k, j] > max(peak, 1.0):
            violation = EffortViolation(joint_names[j], float(chunk[k] - trajectory.start_time),
                                        float(tau[k, j]), float(limits[j]))
        peak = max(peak, float(ratio[k, j]))
        if peak > 1.0:          # the terms apart only for the stretch (a second RNEA pass)
            stretch = max(stretch, smallest_stretch(*effort_terms(
                model, *states, gravity, friction, with_gravity, coulomb_velocity), limits))
    return EffortCheck(violation, stretch, int(times.size), peak)


def stretched(trajectory: Trajectory, c: float) -> Trajectory:
    """Return ``trajectory`` played ``c`` times slower: times × c, q̇ / c, q̈ / c².

    The reference it starts from (``state_before``) and its start time stay; every
    ``time_from_start`` (the way in from the reference included) is stretched.

    Raises:
        TrajectoryError: ``c`` is not a finite number >= 1.
    """
    if not (np.isfinite(c) and c >= 1.0):
        raise TrajectoryError(f'a stretch must be a finite number >= 1, got {c!r}')
    return Trajectory(trajectory.start_time, trajectory.times * c, trajectory.positions,
                      trajectory.velocities / c, trajectory.accelerations / c ** 2,
                      trajectory.time_before, trajectory.state_before,
                      trajectory.has_velocities, trajectory.has_accelerations)


def stretched_waypoints(prepared: PreparedWaypoints, joint_names, c: float) -> PreparedWaypoints:
    """:func:`stretched` for waypoints not yet made a trajectory (chain order)."""
    w = prepared.waypoints
    return prepare_waypoints(joint_names, WaypointArrays(
        w.times * c, w.positions, w.velocities / c, w.accelerations / c ** 2,
        w.has_velocities, w.has_accelerations), joint_names)


def fit_to_limits(model, trajectory: Trajectory, joint_names: Sequence[str], effort_limits,
                  settings, with_gravity=True, with_friction=True):
    """Apply ``infeasible_trajectory`` to a trajectory: ``(trajectory, stretch)`` or raise.

    Args:
        model: the controller's model.
        trajectory: the trajectory about to become the reference (chain order).
        joint_names: (n,) the chain's joints.
        effort_limits: (n,) N·m (N), > 0 (inf: unlimited).
        settings: the controller's settings (``effort_check_rate``, ``effort_margin``,
            ``infeasible_trajectory``, ``gravity``, ``coulomb_velocity``).
        with_gravity, with_friction: False where the hardware compensates them (then
            the command does not carry them either).

    Returns:
        ``(trajectory, 1.0)`` when it fits (or ``effort_check_rate`` is 0); with
        ``scale``, ``(stretched trajectory, c)`` for the smallest ``c`` that fits.

    Raises:
        InfeasibleTrajectory: over a limit with ``reject``; with ``scale``, when no
            stretch fits (gravity and dry friction alone exceed a limit); an effort
            along it that overflows.
    """
    rate = float(settings.effort_check_rate)
    if rate == 0.0:
        return trajectory, 1.0
    limits = np.asarray(effort_limits, dtype=float) * (1.0 - settings.effort_margin)
    try:
        check = check_trajectory(model, trajectory, joint_names, limits, rate,
                                 settings.gravity, with_friction, with_gravity,
                                 settings.coulomb_velocity)
    except StateError as err:
        raise InfeasibleTrajectory(f'the effort along this trajectory is not finite: '
                                   f'{err}') from None
    if check.violation is None:
        return trajectory, 1.0
    c = check.stretch
    if not np.isfinite(c):
        raise InfeasibleTrajectory(
            f'the effort limits cannot hold this trajectory at any speed: '
            f'{check.violation.text()}, and gravity and dry friction alone exceed a limit '
            f'along its path')
    if settings.infeasible_trajectory == 'reject':
        raise InfeasibleTrajectory(
            f'{check.violation.text()}; infeasible_trajectory is reject (played {c:.4g}x '
            f'slower it would fit: set infeasible_trajectory to scale, or slow it down)')
    # the stretched trajectory is sampled at the control rate on its own clock, between
    # the points the stretch was found on: check it again (the peak between samples can
    # be a little over) and stretch the rest of the way
    slow = stretched(trajectory, c)
    for _ in range(3):
        again = check_trajectory(model, slow, joint_names, limits, rate, settings.gravity,
                                 with_friction, with_gravity, settings.coulomb_velocity)
        if again.violation is None or not np.isfinite(again.stretch):
            break
        c *= again.stretch
        slow = stretched(trajectory, c)
    return slow, c


__all__ = ['BATCH', 'check_trajectory', 'EffortCheck', 'effort_terms', 'EffortViolation',
           'fit_to_limits', 'InfeasibleTrajectory', 'smallest_stretch', 'stretched',
           'stretched_waypoints']
