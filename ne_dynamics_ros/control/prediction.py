"""The timing of the measurements: prediction across the loop's delay, repeated states.

Pure module (no ROS).
"""
import math
from collections import deque

import numpy as np


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


def predict_with_model(sample_values, t, delay, period, q, qd, sent, accelerations):
    """Return the state and reference a command computed at ``t`` acts on ``delay`` s later.

    The model's prediction across the loop's delay (Smith's 1957 predictor with the
    arm's model as the plant). A command computed for a state stamped ``t_j`` acts from
    ``t_j + T - P/2`` to ``t_j + T + P/2`` (``T = delay``: the middle of its hold,
    ``P = period``: one cycle, the time each command is held). The commands already sent
    (``sent``) therefore drive the arm from ``t`` to ``t + T - P/2``, where the new one
    takes over: the state is carried there piece by piece by the model's forward
    dynamics under the command each piece had in force, ``qdd = M(q)^-1 (u - C(q, qd)
    qd - g(q) - friction(qd))`` (Euler steps of at most ``P/2``, exact in the
    acceleration of each step's start), then over the last ``P/2`` with the reference
    (:func:`predict_across_delay`: the new command is the one being computed). The
    reference is sampled at ``t + T``.

    Args:
        sample_values: ``sample_values(t) -> (q_d, qd_d, qdd_d)`` of the reference, lists
            (n,) in rad, rad/s, rad/s² (m, m/s, m/s²).
        t: the state's instant, s on the controller's clock.
        delay: ``T``, s, > 0.
        period: ``P``, s, > 0: the loop's cycle (the states' spacing).
        q, qd: the measured state at ``t``, (n,) each.
        sent: ``(t_j, u_j)`` of the last commands sent, oldest first (``u_j``: (n,)
            N·m or N, as the law sent it); the oldest stands for any earlier one.
        accelerations: ``accelerations(q, qd, u) -> qdd`` (n,), the model's forward
            dynamics with the gravity and friction the hardware leaves to the command
            (:meth:`~ne_dynamics_ros.dynamics.model.RobotModel.forward_dynamics`); one
            with a ``with_mass_at(q)`` (:class:`ForwardDynamics`) is used with the mass
            matrix of the measured ``q`` over the whole delay.

    Returns:
        ``(q, qd, (q_d, qd_d, qdd_d))`` at ``t + T``: lists (n,).
    """
    takeover = t + delay - 0.5 * period
    if not sent or takeover <= t:
        return predict_across_delay(sample_values, t, delay, q, qd,
                                    sample_values(t)[:2])
    starts = [t_j + delay - 0.5 * period for t_j, _ in sent]
    q, qd = list(q), list(qd)
    if hasattr(accelerations, 'with_mass_at'):
        accelerations = accelerations.with_mass_at(q)
    now, longest = t, 0.5 * period
    while now < takeover - 1e-12:
        acting = 0
        for j, begin in enumerate(starts):
            if begin <= now + 1e-12:
                acting = j
        following = [b for b in starts if b > now + 1e-12]
        end = min([takeover] + following)
        h = min(end - now, longest)
        qdd = accelerations(q, qd, sent[acting][1])
        q = [x + h * v + 0.5 * h * h * a for x, v, a in zip(q, qd, qdd)]
        qd = [v + h * a for v, a in zip(qd, qdd)]
        now += h
    return predict_across_delay(sample_values, takeover, t + delay - takeover, q, qd,
                                sample_values(takeover)[:2])


#: A silence between two commands after which none of the earlier is in flight, s.
IN_FLIGHT = 0.25


class ForwardDynamics:
    """Joint accelerations of a law's model: ``qdd = M(q)^-1 (u - b(q, qd))``.

    ``b(q, qd) = C(q, qd) qd + g(q) + friction(qd)`` with the gravity and friction the law
    commands (:meth:`SentCommands.accelerations`). Called as ``f(q, qd, u)`` (lists of n
    floats in rad, rad/s, N·m; a list of n rad/s² out). :meth:`with_mass_at` gives the
    same with ``M`` computed once, at the measured ``q``: over a loop's delay of a few
    milliseconds the arm moves by ``qd T``, a milliradian, and ``M`` by as little, while
    ``M`` costs n + 1 inverse-dynamics runs and the bias one (:func:`predict_with_model`
    took a third of the node's time with ``M`` at every step).
    """

    def __init__(self, context):
        self._dynamics = context.dynamics
        # a tuple: the generated program recognises its own gravity by identity then
        self._gravity = tuple(float(g) for g in context.gains.law_gravity)
        self._model = context.model
        self._with_friction = context.gains.compensates_friction
        self._run = getattr(self._dynamics, 'rnea_values', None)

    def _bias(self, q, qd):
        zero = [0.0] * len(q)
        bias = None if self._run is None else self._run(list(q), list(qd), zero,
                                                        self._gravity)
        if bias is None or not math.isfinite(sum(bias)):
            bias = self._dynamics.rnea(np.asarray(q, dtype=float), np.asarray(qd, dtype=float),
                                       np.zeros(len(q)), np.asarray(self._gravity))
        bias = np.asarray(bias, dtype=float)
        if self._with_friction:
            bias = bias + self._model.friction_torques(qd)
        return bias

    def _mass(self, q):
        from ne_dynamics_ros.control.laws.base import mass_matrix_at
        return mass_matrix_at(self._dynamics, list(q))

    def __call__(self, q, qd, effort):
        """Return ``M(q)^-1 (u - b(q, qd))`` (n floats)."""
        return np.linalg.solve(self._mass(q), np.asarray(effort, dtype=float)
                               - self._bias(q, qd)).tolist()

    def with_mass_at(self, q):
        """Return ``f(q, qd, u)`` with ``M`` held at ``q`` (the bias at each call's state)."""
        inverse = np.linalg.inv(self._mass(q))

        def accelerations(q, qd, effort):
            return (inverse @ (np.asarray(effort, dtype=float) - self._bias(q, qd))).tolist()
        return accelerations


class SentCommands:
    """The last commands sent and their states' instants: what is in flight in the loop.

    :func:`predict_with_model` integrates the arm under them; :meth:`period` is the loop's
    cycle as the states' spacing shows it (the median of the last spacings). After a
    silence of :data:`IN_FLIGHT` (a deactivation, a state timeout) they are forgotten.
    """

    def __init__(self, keep: int = 8):
        self.commands = deque(maxlen=keep)      # (t s, effort list), oldest first

    def add(self, t: float, effort, repeated: bool = False):
        """Record the command ``effort`` (n floats) computed for the state at ``t`` (s).

        A repeated measurement (``repeated``) or one not newer than the last is not.
        """
        if repeated or (self.commands and t <= self.commands[-1][0]):
            return
        if self.commands and t - self.commands[-1][0] > IN_FLIGHT:
            self.commands.clear()
        self.commands.append((t, effort))

    def predicted(self, settings, context, sample_values, t, q, qd, reference):
        """Return ``(q, qd, reference)`` a law acts on for the state at ``t``.

        ``settings.delay_compensation`` 0: the state and ``reference`` as they are;
        ``delay_prediction: model`` with a known cycle: :func:`predict_with_model` under
        the commands in flight; otherwise :func:`predict_across_delay`. ``reference``:
        ``(q_d, qd_d, qdd_d)`` at ``t``.
        """
        delay = settings.delay_compensation
        if not delay:
            return q, qd, reference
        period = self.period()
        if settings.delay_prediction == 'model' and period:
            return predict_with_model(sample_values, t, delay, period, q, qd, self.commands,
                                      self.accelerations(context))
        return predict_across_delay(sample_values, t, delay, q, qd, reference[:2])

    @staticmethod
    def accelerations(context):
        """Return the forward dynamics of a law's model (a :class:`ForwardDynamics`).

        ``qdd = M(q)^-1 (u - C(q, qd) qd - g(q) - friction(qd))``: the plant the law
        itself assumes, with the gravity its model uses (none where the hardware
        compensates it) and the drive friction of ``context.model`` only where the law
        compensates it (``friction_compensation``, not done by the hardware). A law that
        leaves friction out treats it as a disturbance, and so does its prediction:
        measured through controller_manager on the PUMA 560 (its URDF's friction in the
        model, none on the simulated arm, Lee et al.'s law without it), predicting with the
        friction the law does not command kept the arm 0.2-0.9 mrad off at rest and 4.3
        mrad off during 0.3 rad moves, against 1e-7 rad and 0.15-0.8 mrad with no
        prediction at all. ``context``: a :class:`~ne_dynamics_ros.control.laws.base.
        LawContext`.
        """
        return ForwardDynamics(context)

    def period(self) -> float:
        """Return the states' spacing, s (median of the last ones; 0.0 with fewer than 3)."""
        if len(self.commands) < 3:
            return 0.0
        times = [c[0] for c in self.commands]
        spacing = sorted(b - a for a, b in zip(times, times[1:]))
        return spacing[len(spacing) // 2]


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


__all__ = ['ForwardDynamics', 'IN_FLIGHT', 'MAX_REPEAT_AGE_NS', 'predict_across_delay',
           'predict_with_model', 'RepeatedStates', 'SentCommands']
