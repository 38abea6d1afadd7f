"""The integral action of the joint laws (``ki``, ``integral_limit``), with anti-windup.

Pure module (lists of floats, chain order). ``tau_i = ki * integral(q_d - q) dt``,
bounded by ``integral_limit``, is added to a law's effort before the limits
(:attr:`~ne_dynamics_ros.control.laws.base.Law.integrates`); the integral stops growing
on a joint whose command saturates in the direction its error pushes.

Units: the integral in rad·s (m·s), ki in N·m/(rad·s) (N/(m·s)), torques in N·m (N).
"""


def integral_step(integral, integral_time, error, now, ki, bound):
    """Advance the integral of the error to ``now``; return it and its torque, bounded.

    ``integral += error * dt`` (rectangle rule over the time since ``integral_time``, 0
    when it is None: the first state after a reset); the torque ``ki * integral`` is
    bounded by ``bound`` (``integral_limit``), and so is the integral behind it (it
    cannot wind up past it).

    Args:
        integral: (n,) list, rad*s (m*s). integral_time: s, or None.
        error: (n,) list ``q_d - q``, rad (m). now: s.
        ki: (n,) list, N*m/(rad*s) (N/(m*s)). bound: (n,) list, N*m (N).

    Returns:
        ``(integral, torque)``: two (n,) lists, rad*s and N*m (N).
    """
    dt = 0.0 if integral_time is None else max(0.0, now - integral_time)
    advanced, torque = [], []
    for value, e, k, b in zip(integral, error, ki, bound):
        value += e * dt
        t = k * value
        if t > b or t < -b:
            t = b if t > 0 else -b
            value = t / k
        advanced.append(value)
        torque.append(t)
    return advanced, torque


def anti_windup(advanced, previous, tau, error, effort_limits):
    """Keep the advanced integral, but on joints whose command saturates; return it.

    A joint whose command ``tau`` sits at its limit in the direction its error pushes
    keeps its ``previous`` integral (frozen). All (n,) lists; ``advanced`` is changed in
    place.
    """
    for i, (t, limit, e) in enumerate(zip(tau, effort_limits, error)):
        if (t >= limit and e > 0.0) or (t <= -limit and e < 0.0):
            advanced[i] = previous[i]
    return advanced


__all__ = ['anti_windup', 'integral_step']
