"""The drives' Coulomb friction learned from the momentum observer while joints slide.

Pure module (NumPy only). A model's Coulomb friction ``Fc`` is identified once; the arm's
drifts (temperature, wear, another arm of the same type) by a factor that may be 0.5 or 2.
A law that compensates dry friction with the identified ``Fc`` then either leaves the
drives stuck (too little) or pushes them past their goal (too much: the compensation
adds energy). What the arm's friction is, the momentum observer (De Luca & Mattone 2005)
tells while a joint slides and nothing touches the arm: its residual is then ``r = tau_ext
+ f_model(qd) - f(qd)`` with ``tau_ext = 0``, and for ``|qd|`` well above ``v_s`` (the
tanh of :func:`~ne_dynamics_ros.dynamics.friction.drive_friction` is 1 within 1e-4) the
Coulomb level the joint shows is::

    Fc_measured = Fc - r sign(qd)

:class:`CoulombEstimate` holds a factor ``s`` per joint (1 until learned) and moves it
toward ``Fc_measured / Fc`` at ``rate`` (1/s, a first-order filter over the observer's
own lag of ``1 / contact.observer_gain``) on every state where the joint slides and no
contact is held: a push (over ``contact.threshold``) teaches nothing. ``s`` is kept in
:data:`SCALE_RANGE`. This is the adaptive Coulomb compensation of Friedland & Park (1992)
with the observer's residual as the error signal; unlike an integral of the position
error it never acts against a push while the joint rests (the estimate changes only
while the joint slides), so the compliance a law asks for stays what it asked.

Viscous friction and the offset are the model's: a viscous error shows in ``r`` as a
velocity-proportional part that the factor averages over the velocities seen.
"""
import numpy as np

#: the factor's bounds: the drives' Coulomb friction taken within a quarter and four
#: times the identified one
SCALE_RANGE = (0.25, 4.0)
#: a joint slides when ``|qd|`` is above this many ``v_s`` (tanh(5) = 0.9999) ...
SLIDING_SCALES = 5.0
#: ... and above this velocity, rad/s (m/s): a velocity scale identified near 0 would
#: count noise at rest as sliding
SLIDING_VELOCITY = 0.01


class CoulombEstimate:
    """The factor ``s`` (n,) on the model's Coulomb friction, learned (module docstring).

    Kept by the controller across runs and modes (a contact's hold, a new target, a new
    mode keep it): it is the arm's, not a run's.

    Args:
        coulomb: (n,) the model's ``Fc``, N·m (N); a joint with ``Fc = 0`` learns nothing.
        velocity_scale: (n,) the model's ``v_s``, rad/s (m/s).

    Attributes:
        scale: (n,) ``s``, 1 until learned.
    """

    def __init__(self, coulomb, velocity_scale):
        self._coulomb = np.asarray(coulomb, dtype=float).copy()
        self._sliding = np.maximum(SLIDING_SCALES * np.asarray(velocity_scale, dtype=float),
                                   SLIDING_VELOCITY)
        self.scale = np.ones(self._coulomb.shape)
        self._values = self._coulomb.tolist()

    def reset(self):
        """Forget what was learned (``s = 1``)."""
        self.scale[:] = 1.0
        self._values = self._coulomb.tolist()

    @property
    def coulomb(self) -> list:
        """``s Fc``: the Coulomb friction the arm shows (n floats), N·m (N)."""
        return self._values

    def update(self, qd, r, dt: float, rate: float, in_contact: bool) -> bool:
        """Learn from one state; return whether ``s`` changed.

        Args:
            qd: (n,) measured velocities, rad/s (m/s).
            r: (n,) the observer's residual at this state, N·m (N), or None (no observer).
            dt: the time since the last state, s (<= 0: nothing learned).
            rate: how fast ``s`` follows the measurement, 1/s (0: never).
            in_contact: a contact is held (the residual holds a push: nothing learned).
        """
        if r is None or in_contact or dt <= 0.0 or rate <= 0.0:
            return False
        qd = np.asarray(qd, dtype=float)
        sliding = (np.abs(qd) > self._sliding) & (self._coulomb > 0.0)
        if not sliding.any():
            return False
        coulomb = self._coulomb[sliding]
        measured = 1.0 - np.asarray(r, dtype=float)[sliding] * np.sign(qd[sliding]) / coulomb
        scale = self.scale[sliding]
        scale += min(1.0, rate * dt) * (measured - scale)
        self.scale[sliding] = np.clip(scale, *SCALE_RANGE)
        self._values = (self._coulomb * self.scale).tolist()
        return True


__all__ = ['CoulombEstimate', 'SCALE_RANGE']
