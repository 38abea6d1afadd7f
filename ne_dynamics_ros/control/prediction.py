"""Prediction across the loop's delay. Pure module (no ROS)."""


def predict_across_delay(sample_values, t, delay, q, qd, reference_at_t):
    """Return the state and reference a command computed at ``t`` acts on ``delay`` s later.

    For a loop whose command reaches the arm ``T = delay`` after the state was measured:
    the idea of Smith's (1957) predictor without its plant model. The reference is sampled
    at ``t + T`` and the measured state carried to ``t + T`` on the assumption that the
    tracking error keeps its present rate, ``e(t + T) = e(t) + T de/dt(t)``, i.e. that the arm accelerates as
    the reference does over the delay::

        q(t + T)  ~ q(t)  + (q_d(t + T)  - q_d(t))  + T (qd(t) - qd_d(t))
        qd(t + T) ~ qd(t) + (qd_d(t + T) - qd_d(t))

    On the reference (zero error) this is the reference at ``t + T`` exactly, so the
    feed-forward the arm receives belongs to the instant it acts.

    Args:
        sample_values: ``sample_values(t) -> (q_d, qd_d, qdd_d)`` of the reference, lists
            (n,) in rad, rad/s, rad/s² (m, m/s, m/s² for prismatic joints).
        t: the state's instant, s on the controller's clock.
        delay: ``T``, s, >= 0.
        q, qd: the measured state at ``t``, (n,) each.
        reference_at_t: ``(q_d(t), qd_d(t))``, (n,) each.

    Returns:
        ``(q, qd, (q_d, qd_d, qdd_d))`` at ``t + T``: lists (n,).
    """
    q_d0, qd_d0 = reference_at_t
    q_d, qd_d, qdd_d = sample_values(t + delay)
    q_hat = [x + (r1 - r0) + delay * (v - w0)
             for x, r1, r0, v, w0 in zip(q, q_d, q_d0, qd, qd_d0)]
    qd_hat = [v + (w1 - w0) for v, w1, w0 in zip(qd, qd_d, qd_d0)]
    return q_hat, qd_hat, (q_d, qd_d, qdd_d)


__all__ = ['predict_across_delay']
