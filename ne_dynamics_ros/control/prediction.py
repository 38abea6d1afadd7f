"""The timing of the measurements: prediction across the loop's delay, repeated states.

Pure module (no ROS).
"""


def predict_across_delay(sample_values, t, delay, q, qd, reference_at_t):
    """Return the state and reference a command computed at ``t`` acts on ``delay`` s later.

    For a loop whose command reaches the arm ``T = delay`` after the state was measured:
    the idea of Smith's (1957) predictor without its plant model. The reference is sampled
    at ``t + T`` and the measured state carried to ``t + T`` on the assumption that the
    tracking error keeps its present rate, ``e(t + T) = e(t) + T de/dt(t)``, i.e. that
    the arm accelerates as the reference does over the delay::

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


#: A repeat is recognised only this long after the measurement it repeats, ns: longer,
#: identical readings are taken as the arm's own (a slow joint between encoder counts).
MAX_REPEAT_AGE_NS = 20_000_000


class RepeatedStates:
    """Recognise a state that repeats the previous measurement under a newer stamp.

    A hardware interface read more often than its source updates hands the same
    measurement on under the new cycle's stamp: controller_manager's
    joint_state_broadcaster stamps each cycle's read, and topic_based_ros2_control reads
    the newest message it has, old or not. Compared with the reference at the new stamp,
    such a state shows an error of ``qd * (age)`` that the arm does not have, and the
    feedback kicks at it. A moving arm (some reported velocity non-zero) cannot give the
    same positions and velocities, bit for bit, twice: such a state within
    :data:`MAX_REPEAT_AGE_NS` of the measurement it repeats keeps that measurement's stamp.

    Attributes:
        repeated: how many states were recognised as repeats.
    """

    def __init__(self):
        self._last = None           # (positions, velocities, stamp_ns) of the measurement
        self.repeated = 0

    def reset(self):
        """Forget the last measurement (a new run, a timeout)."""
        self._last = None

    def stamp(self, positions, velocities, stamp_ns):
        """Return ``(stamp_ns, repeated)``: the stamp of the measurement this state carries.

        Args:
            positions, velocities: the state as received (any sequences of floats; an
                empty ``velocities``: never a repeat).
            stamp_ns: its ``header.stamp``, ns (0: unstamped, never a repeat).

        Returns:
            ``(the first stamp of the measurement, True)`` for a repeat, else
            ``(stamp_ns, False)``.
        """
        last = self._last
        if (stamp_ns and last is not None and stamp_ns > last[2]
                and stamp_ns - last[2] <= MAX_REPEAT_AGE_NS
                and velocities is not None and len(velocities) == len(last[1]) > 0
                and any(v != 0.0 for v in velocities)
                and len(positions) == len(last[0])
                and all(a == b for a, b in zip(positions, last[0]))
                and all(a == b for a, b in zip(velocities, last[1]))):
            self.repeated += 1
            return last[2], True
        self._last = (list(positions), [] if velocities is None else list(velocities),
                      stamp_ns)
        return stamp_ns, False


__all__ = ['MAX_REPEAT_AGE_NS', 'RepeatedStates', 'predict_across_delay']
