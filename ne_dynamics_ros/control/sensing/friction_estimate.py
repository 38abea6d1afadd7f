"""The drives' Coulomb friction learned from the momentum observer while joints slide.

Pure module (NumPy only). A model's Coulomb friction ``Fc`` is identified once; the arm's
drifts (temperature, wear, another arm of the same type) by a factor that may be 0.5 or 2.
A law that compensates dry friction with the identified ``Fc`` then either leaves the
drives stuck (too little) or pushes them past their goal (too much: the compensation
adds energy). What the arm's friction is, the momentum observer (De Luca & Mattone 2005)
tells while a joint slides and nothing touches the arm. The observer's friction is the
one learned (``s Fc``: :meth:`~ne_dynamics_ros.control.sensing.contact.ContactSupervisor.
observe`), so its residual is then ``r = tau_ext + f_s(qd) - f(qd)`` with ``tau_ext =
0``, and for ``|qd|`` well above ``v_s`` (the tanh of
:func:`~ne_dynamics_ros.dynamics.friction.drive_friction` is 1 within 1e-4) the Coulomb
level the joint shows is::

    Fc_measured = s Fc - r sign(qd)

(with the model's ``Fc`` in the observer, ``s = 1`` here: the first version; learning
then never took the residual of a sliding joint to zero, and doubled friction kept
sliding joints near their thresholds).

:class:`CoulombEstimate` holds a factor ``s`` per joint (1 until learned) and moves it
toward ``Fc_measured / Fc`` at ``rate`` (1/s, a first-order filter over the observer's
own lag of ``1 / contact.observer_gain``) on every state where the joint slides and no
contact is held: a push (over ``contact.threshold``) teaches nothing. ``s`` is kept in
:data:`SCALE_RANGE`. This is the adaptive Coulomb compensation of Friedland & Park (1992)
with the observer's residual as the error signal; unlike an integral of the position
error it never acts against a push while the joint rests (the estimate changes only
while the joint slides), so the compliance a law asks for stays what it asked.

While a contact is held the factor only ever falls, and only for a joint that shows it is
over-compensated: it keeps turning back. A critically damped impedance under a steady
push does not oscillate; a Coulomb compensation above the drive's friction acts as a
relay in phase with the velocity, a negative friction that keeps a limit cycle going
(measured on the identified UR5e with its drives' friction halved: the tip swung between
32 and 50 mm along a 20 N push and ±7 mm across it at ~1 Hz,
``benchmarks/bench_cartesian.py --identified``). From the :data:`REVERSALS`-th reversal
of a joint's sliding direction within one contact on (a joint may turn back once or twice
as the posture changes under a push or when it is released; a limit cycle turns back
again and again), each reversal halves its factor (:data:`REVERSAL_FACTOR`), down to the
range's lower bound. Lowering the compensation only takes energy out, so a varying push
(a person's) can only make the law more passive; once the contact ends, learning resumes
both ways.

A joint that has not slid yet holds the median factor of the joints that have slid out of
contact for at least one time constant (``1 / rate``): what made the arm's friction drift
(its temperature, its lubricant, another arm of the type) acts on all its drives, and a
joint stuck under a law's pull shows nothing of its own friction until it breaks away.
Measured: the nominal UR5e on a MuJoCo UR5e with every drive's dry friction doubled, 5 cm
Cartesian steps from two poses along x, y and z: the shoulders often never slide, and
with their factor at 1 the drives' stiction held 3 of 6 steps until a contact ended them
(a shoulder stuck under the pull, 3.5-4.0 N·m against a threshold of 2.8); with the
median, 0 of 6. The time constant keeps a joint that slid a few states from setting the
others: a push's first states, before its contact is found, look like a lower friction
(wrist 1 learned 0.91 from a 20 N push at its drive's own friction). Once a joint slides
it learns its own factor. A drive that drifted alone (one worn gear) is not what the
median says; until it slides the median is a guess for it, as 1 was before.

Viscous friction and the offset are the model's: a viscous error shows in ``r`` as a
velocity-proportional part that the factor averages over the velocities seen.
"""
import statistics

import numpy as np

#: the factor's bounds: the drives' Coulomb friction taken within a quarter and four
#: times the identified one
SCALE_RANGE = (0.25, 4.0)
#: a joint slides when ``|qd|`` is above this many ``v_s`` (tanh(5) = 0.9999) ...
SLIDING_SCALES = 5.0
#: ... and above this velocity, rad/s (m/s): a velocity scale identified near 0 would
#: count noise at rest as sliding
SLIDING_VELOCITY = 0.01
#: while a contact is held, a joint's factor is multiplied by this at each reversal of
#: its sliding direction from the :data:`REVERSALS`-th on (module docstring)
REVERSAL_FACTOR = 0.5
#: ... the reversal (within one contact) from which the factor falls
REVERSALS = 3


class CoulombEstimate:
    """The factor ``s`` (n,) on the model's Coulomb friction, learned (module docstring).

    Kept by the controller across runs and modes (a contact's hold, a new target, a new
    mode keep it): it is the arm's, not a run's.

    Args:
        coulomb: (n,) the model's ``Fc``, N·m (N); a joint with ``Fc = 0`` learns nothing.
        velocity_scale: (n,) the model's ``v_s``, rad/s (m/s).

    Attributes:
        scale: (n,) ``s``, 1 until learned (a joint that never slid: the median of
            those learned, module docstring).
        sliding_velocity: (n,) rad/s (m/s): a joint slides (and learns) above it,
            :data:`SLIDING_SCALES` ``v_s`` and at least :data:`SLIDING_VELOCITY`.
    """

    def __init__(self, coulomb, velocity_scale):
        self._coulomb = np.asarray(coulomb, dtype=float).copy()
        self.sliding_velocity = np.maximum(
            SLIDING_SCALES * np.asarray(velocity_scale, dtype=float), SLIDING_VELOCITY)
        self.scale = np.ones(self._coulomb.shape)
        #: each joint's time sliding out of contact since the last reset, s
        self._slid = np.zeros(self._coulomb.shape)
        self._values = self._coulomb.tolist()
        #: while a contact is held: each joint's last sliding direction (0: none yet) and
        #: its reversals; None out of contact
        self._held = None

    def reset(self):
        """Forget what was learned (``s = 1``)."""
        self.scale[:] = 1.0
        self._slid[:] = 0.0
        self._values = self._coulomb.tolist()
        self._held = None

    @property
    def coulomb(self) -> list:
        """``s Fc``: the Coulomb friction the arm shows (n floats), N·m (N)."""
        return self._values

    def update(self, qd, r, dt: float, rate: float, in_contact: bool) -> bool:
        """Learn from one state; return whether ``s`` changed.

        Args:
            qd: (n,) measured velocities, rad/s (m/s).
            r: (n,) the observer's residual at this state, relative to the friction at
                ``s`` (as the contact supervisor computes it), N·m (N), or None.
            dt: the time since the last state, s (<= 0: nothing learned).
            rate: how fast ``s`` follows the measurement, 1/s (0: never).
            in_contact: a contact is held (the residual holds a push): the factor only
                falls, for a joint that keeps turning back (module docstring).
        """
        if r is None or dt <= 0.0 or rate <= 0.0:
            return False
        qd = np.asarray(qd, dtype=float)
        sliding = (np.abs(qd) > self.sliding_velocity) & (self._coulomb > 0.0)
        if in_contact:
            return self._reversed(qd, sliding)
        self._held = None
        if not sliding.any():
            return False
        coulomb = self._coulomb[sliding]
        scale = self.scale[sliding]
        measured = scale - np.asarray(r, dtype=float)[sliding] * np.sign(qd[sliding]) / coulomb
        scale += min(1.0, rate * dt) * (measured - scale)
        self.scale[sliding] = np.clip(scale, *SCALE_RANGE)
        self._slid[sliding] += dt
        self._share(1.0 / rate)
        return True

    def _share(self, settled: float):
        """Give joints not learned yet the median factor of those learned (``settled`` s)."""
        learned = self._slid >= settled
        if learned.any():
            unseen = ~learned & (self._coulomb > 0.0)
            if unseen.any():
                self.scale[unseen] = statistics.median(self.scale[learned].tolist())
        self._values = (self._coulomb * self.scale).tolist()

    def _reversed(self, qd, sliding) -> bool:
        """Halve the factor of joints that keep turning back in a contact; return if any."""
        if self._held is None:
            self._held = (np.zeros(qd.shape), np.zeros(qd.shape, dtype=int))
        direction, count = self._held
        sign = np.sign(qd)
        reversed_ = sliding & (direction != 0.0) & (sign != direction)
        count[reversed_] += 1
        halved = reversed_ & (count >= REVERSALS) & (self.scale > SCALE_RANGE[0])
        if halved.any():
            self.scale[halved] = np.maximum(self.scale[halved] * REVERSAL_FACTOR,
                                            SCALE_RANGE[0])
            self._values = (self._coulomb * self.scale).tolist()
        direction[sliding] = sign[sliding]
        return bool(halved.any())


__all__ = ['CoulombEstimate', 'REVERSAL_FACTOR', 'REVERSALS', 'SCALE_RANGE']
