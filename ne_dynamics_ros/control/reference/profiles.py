"""Point-to-point joint profiles: positions, velocities and accelerations at given times.

Every joint moves from ``start`` to ``goal`` in the same ``duration`` ``T``, along a
normalised shape ``s(tau)``, ``tau = t / T``::

    q(t) = q0 + (q1 - q0) s(tau),   q'(t) = (q1 - q0) s'(tau) / T,
    q''(t) = (q1 - q0) s''(tau) / T^2

Up to and including ``t = 0`` a profile rests at ``start``; from ``t = T`` on it rests at
``goal`` (zero velocity and acceleration at both end points).

``quintic``
    ``s = 10 tau^3 - 15 tau^4 + 6 tau^5``: zero velocity and acceleration at both ends,
    the usual minimum-jerk point-to-point motion (used for the PUMA experiment of Lee et
    al. 1982, §5, whose paper gives only the end points).
``trapezoidal``
    The profile of Sasaki (1990), §4, Fig. 6: the travel time is cut into thirds with
    constant acceleration ``+a``, zero, ``-a`` (so the *velocity* is a trapezoid),
    ``a = 9 dq / (2 T^2)``; region I ``q = a t^2 / 2``, region II ``q = a T (6t - T) / 18``,
    region III ``q = -a (t - T)^2 / 2 + 2 a T^2 / 9`` (offsets from ``q0``). Velocity is
    continuous, acceleration jumps at 0, T/3, 2T/3 and T.

All functions are vectorised: ``t`` of shape ``(N,)`` gives arrays of shape ``(N, n)``
for ``n`` joints; a scalar ``t`` gives ``(n,)``.
"""
import math

import numpy as np


def _prepare(t, start, goal, duration):
    start = np.atleast_1d(np.asarray(start, dtype=float))
    goal = np.atleast_1d(np.asarray(goal, dtype=float))
    if start.shape != goal.shape or start.ndim != 1:
        raise ValueError(f'start and goal must be 1-D and equally long, got shapes '
                         f'{start.shape} and {goal.shape}')
    if not (np.all(np.isfinite(start)) and np.all(np.isfinite(goal))):
        raise ValueError('start and goal must be finite')
    if not (np.isfinite(duration) and duration > 0):
        raise ValueError(f'duration must be a finite time > 0 s, got {duration}')
    t = np.asarray(t, dtype=float)
    return t, start, goal, float(duration)


def _scale(t, start, goal, duration, shape):
    """Apply a normalised shape function ``shape(tau) -> (s, s', s'')`` per joint."""
    t, start, goal, duration = _prepare(t, start, goal, duration)
    scalar = t.ndim == 0
    tau = np.clip(np.atleast_1d(t) / duration, 0.0, 1.0)
    s, ds, dds = shape(tau)
    # At rest at both end points, t = 0 included: where the acceleration jumps there
    # (Sasaki's profile), the rest value is the one a sampled trajectory must carry, or
    # a spline through the points would start moving before t = 0.
    moving = (np.atleast_1d(t) > 0) & (np.atleast_1d(t) < duration)
    ds = np.where(moving, ds, 0.0)
    dds = np.where(moving, dds, 0.0)
    delta = goal - start
    q = start + np.outer(s, delta)
    qd = np.outer(ds, delta) / duration
    qdd = np.outer(dds, delta) / duration ** 2
    if scalar:
        return q[0], qd[0], qdd[0]
    return q, qd, qdd


def _quintic_shape(tau):
    s = tau ** 3 * (10.0 - 15.0 * tau + 6.0 * tau ** 2)
    ds = 30.0 * tau ** 2 * (1.0 - tau) ** 2
    dds = 60.0 * tau * (1.0 - tau) * (1.0 - 2.0 * tau)
    return s, ds, dds


def _trapezoidal_shape(tau):
    # Sasaki (1990), §4, with T = 1 and a = 9/2 (so that s(1) = 2 a / 9 = 1).
    a = 4.5
    region_1 = tau <= 1.0 / 3.0
    region_3 = tau >= 2.0 / 3.0
    s = np.where(region_1, 0.5 * a * tau ** 2,
                 np.where(region_3, -0.5 * a * (tau - 1.0) ** 2 + 2.0 * a / 9.0,
                          a * (6.0 * tau - 1.0) / 18.0))
    ds = np.where(region_1, a * tau, np.where(region_3, -a * (tau - 1.0), a / 3.0))
    dds = np.where(region_1, a, np.where(region_3, -a, 0.0))
    return s, ds, dds


def quintic(t, start, goal, duration):
    """Quintic (minimum-jerk) profile: ``(q, q', q'')`` at times ``t`` (s).

    Zero velocity and acceleration at ``t = 0`` and ``t = duration``; peak velocity
    ``1.875 dq / T`` at ``T/2``, peak acceleration ``5.77 dq / T^2``.
    """
    return _scale(t, start, goal, duration, _quintic_shape)


def trapezoidal(t, start, goal, duration):
    """Trapezoidal-velocity profile of Sasaki (1990), §4: ``(q, q', q'')`` at ``t``.

    Acceleration ``+a`` on ``[0, T/3)``, ``0`` on ``[T/3, 2T/3)``, ``-a`` on
    ``[2T/3, T]`` with ``a = 9 (goal - start) / (2 T^2)``.
    """
    return _scale(t, start, goal, duration, _trapezoidal_shape)


PROFILES = {'quintic': quintic, 'trapezoidal': trapezoidal}


def evaluate(profile, t, start, goal, duration):
    """Evaluate the profile named ``profile`` (a key of :data:`PROFILES`)."""
    try:
        function = PROFILES[profile]
    except KeyError:
        raise ValueError(f'unknown profile {profile!r}; choose one of {sorted(PROFILES)}') \
            from None
    return function(t, start, goal, duration)


def sample_times(duration, sample_period):
    """Return the times ``0, dt, 2 dt, ...`` up to and including ``duration`` (s).

    A duration that is not a multiple of ``sample_period`` still ends exactly at it.

    Raises:
        ValueError: ``sample_period`` is not a finite time > 0.
    """
    if not (math.isfinite(sample_period) and sample_period > 0):
        raise ValueError(f'sample_period must be > 0 s, got {sample_period}')
    count = math.floor(duration / sample_period + 1e-9)
    times = np.arange(count + 1) * sample_period
    if duration - times[-1] > 1e-9:
        times = np.append(times, duration)
    return times


def sample_profile(profile, start, goal, duration, sample_period=0.01):
    """Sample a profile as trajectory waypoints every ``sample_period`` seconds.

    Returns:
        ``(times, q, qd, qdd)``: ``times`` (m,) in s from the start of the motion (from 0
        up to and including ``duration``), and (m, n) positions (rad or m), velocities,
        accelerations. Waypoints that carry all three are joined by quintic splines,
        which reproduce a quintic profile exactly between them.

    Raises:
        ValueError: unknown profile, ``duration`` not > 0, mismatched ``start``/``goal``,
            bad ``sample_period``.
    """
    if not (math.isfinite(duration) and duration > 0):
        raise ValueError(f'duration must be > 0 s, got {duration}')
    times = sample_times(duration, sample_period)
    q, qd, qdd = evaluate(profile, times, start, goal, duration)
    return times, q, qd, qdd


def _check_cycles(cycles, dwell):
    if isinstance(cycles, bool) or not isinstance(cycles, (int, np.integer)) or cycles < 1:
        raise ValueError(f'cycles must be a whole number >= 1, got {cycles!r}')
    if not (math.isfinite(dwell) and dwell >= 0):
        raise ValueError(f'dwell must be a finite time >= 0 s, got {dwell}')


def evaluate_cycles(profile, t, start, goal, duration, cycles, dwell):
    """Evaluate :func:`sample_cycles`' motion at times ``t`` (s): ``(q, q', q'')``.

    ``t`` (N,) gives (N, n) arrays. Before 0 the motion rests at ``start``, between the
    moves at their end, after the last move back at ``start``.

    Raises:
        ValueError: as :func:`sample_cycles`.
    """
    _check_cycles(cycles, dwell)
    t = np.atleast_1d(np.asarray(t, dtype=float))
    period = 2.0 * (duration + dwell)
    phase = np.where(t < cycles * period, np.mod(np.maximum(t, 0.0), period), 0.0)
    forward = evaluate(profile, np.minimum(phase, duration), start, goal, duration)
    back = evaluate(profile, phase - duration - dwell, goal, start, duration)
    going = (phase <= duration + dwell)[:, None]
    return tuple(np.where(going, f, b) for f, b in zip(forward, back))


def sample_cycles(profile, start, goal, duration, cycles, dwell, sample_period=0.01):
    """Sample ``cycles`` round trips ``start -> goal -> start`` with a rest at each end.

    A pick-and-place cycle (issue 31): the move to ``goal`` starts at ``t = 0``, rests
    ``dwell`` s at ``goal`` (the load released), moves back, rests ``dwell`` s at
    ``start`` (the next load picked); the period is ``2 (duration + dwell)``. The rests
    carry no waypoints: between the last point of a move and the first of the next, both
    at rest at the same position, the controller's quintic spline holds still.

    Returns:
        ``(times, q, qd, qdd)`` as :func:`sample_profile`, from 0 to the end of the last
        move back, ``2 cycles - 1`` rests in between.

    Raises:
        ValueError: as :func:`sample_profile`; ``cycles`` not a whole number >= 1,
            ``dwell`` not a finite time >= 0.
    """
    _check_cycles(cycles, dwell)
    times, q, qd, qdd = sample_profile(profile, start, goal, duration, sample_period)
    back = sample_profile(profile, goal, start, duration, sample_period)[1:]
    period = 2.0 * (duration + dwell)
    parts = []
    for c in range(int(cycles)):
        for offset, (bq, bqd, bqdd) in ((c * period, (q, qd, qdd)),
                                        (c * period + duration + dwell, back)):
            # a zero dwell joins two moves at one instant: keep one point there
            first = 1 if parts and dwell == 0 else 0
            parts.append((times[first:] + offset, bq[first:], bqd[first:], bqdd[first:]))
    return tuple(np.concatenate(values) for values in zip(*parts))
