"""Mode ``computed_torque``: the Newton-Euler computed-torque law (no ROS).

Lee, Chung, Mudge & Turney (1982), eqs 4.1 and 4.4::

    qdd_cmd = qdd_d + Kd (qd_d - qd) + Kp (q_d - q)                 (4.4)
    tau     = RNEA(q, qd, qdd_cmd) = D(q) qdd_cmd + H(q, qd) + G(q)  (4.1)

The PD terms act as accelerations, so ``kp`` is in 1/s² and ``kd`` in 1/s; with the exact
model the error obeys ``e'' + Kd e' + Kp e = 0`` (eq 4.3). Lee et al. use Kp = 100,
Kd = 2 sqrt(Kp) = 20 on each joint of the PUMA (§5). With ``friction_compensation`` the
drive friction at the *desired* velocity is added (:func:`~.base.reference_friction`):
dry friction is compensated from the moment the reference starts to move, not once the
feedback has pushed the arm through stiction. With ``hardware_compensates_gravity`` the
recursion runs with zero gravity (``tau = D qdd_cmd + H``).

Units: q in rad (m), qd in rad/s, qdd in rad/s², tau in N·m (N); gravity (3,) m/s² in
the chain's base frame.
"""
import math

import numpy as np

from ne_dynamics_ros.control.laws.base import clamp, JointLaw
from ne_dynamics_ros.dynamics.model import finite_efforts


def computed_torque(model, q, qd, q_d, qd_d, qdd_d, kp, kd, gravity):
    """Computed-torque law, Lee et al. (1982), eqs 4.1, 4.4.

    ``tau = RNEA(q, qd, qdd_d + kd*(qd_d - qd) + kp*(q_d - q))``, i.e.
    ``D(q)[qdd_d + Kd e' + Kp e] + H(q, qd) + G(q)`` with diagonal gains.
    All arguments (n,) arrays except ``gravity`` (3,); returns (n,) tau (not clamped).
    """
    qdd_cmd = qdd_d + kd * (qd_d - qd) + kp * (q_d - q)
    return model.rnea(q, qd, qdd_cmd, gravity=gravity)


class ComputedTorqueLaw(JointLaw):
    """Computed torque on the run's reference (module docstring)."""

    name = 'computed_torque'
    summary = ('tau = RNEA(q, qd, qdd_d + kd*(qd_d - qd) + kp*(q_d - q)), Lee et al. 1982 '
               'eqs 4.1, 4.4')
    acceleration_gains = True

    @classmethod
    def torque(cls, model, gains, gravity, q, qd, q_d, qd_d, qdd_d):
        """:func:`computed_torque` with the gains in force."""
        return computed_torque(model, q, qd, q_d, qd_d, qdd_d, gains.kp, gains.kd, gravity)

    @classmethod
    def fast_values(cls, model, gains, gravity, q, qd, q_d, qd_d, qdd_d, extra):
        """Return the clamped computed torque on plain floats, or None (the checked path).

        The same operations in the same order as :func:`computed_torque` then the clamp,
        so the same numbers, without a NumPy call per operation on six-element vectors:
        ``model.rnea_values`` is a generated program's single call
        (:class:`~ne_dynamics_ros.codegen.CompiledDynamics`). None when there is no such
        program, the friction is compensated, or the program cannot run on these
        arguments (another gravity, lengths or types it does not take).

        Raises:
            ne_dynamics_ros.errors.StateError: a non-finite result: the inputs (or the
                commanded acceleration) hold NaN/inf, named as the checked path names
                them, or the program overflowed.
        """
        if gains.compensates_friction or not hasattr(model, 'rnea_values'):
            return None
        kp, kd, limits = gains.gain_values
        qdd_cmd = [a + d * (b - c) + p * (e - f) for a, d, b, c, p, e, f in zip(
            qdd_d, kd, qd_d, qd, kp, q_d, q)]
        tau = model.rnea_values(q, qd, qdd_cmd, gravity)
        if tau is None:
            return None
        if extra is not None:
            tau = [t + x for t, x in zip(tau, extra)]
        if not math.isfinite(sum(tau)):
            model.checked_states(q=q, qd=qd, qdd=qdd_cmd)     # names a non-finite input
            finite_efforts(np.array(tau), 'rnea')               # or says it overflowed
        return clamp(tau, limits)


__all__ = ['computed_torque', 'ComputedTorqueLaw']
