"""Mode ``gravity_compensation``: ``tau = G(q) = RNEA(q, 0, 0)``, the arm floats (no ROS).

The reference is ignored. With ``friction_compensation`` the drive friction at the
*measured* velocity is added (there is no reference motion: an arm moved by hand feels
lighter); with ``hardware_compensates_gravity`` the command is zero (plus friction).
Leaving the mode holds the position measured then: the arm may have been moved by hand.

Units: q in rad (m), tau in N·m (N); gravity (3,) m/s² in the chain's base frame.
"""
import numpy as np

from ne_dynamics_ros.control.laws.base import JointLaw, NO_GRAVITY


def gravity_compensation(model, q, gravity):
    """``tau = G(q) = RNEA(q, 0, 0)``; q (n,), gravity (3,); returns (n,) tau."""
    return model.gravity_torques(q, gravity=gravity)


class GravityCompensationLaw(JointLaw):
    """``tau = g(q)`` (and friction at the measured velocity): the arm floats."""

    name = 'gravity_compensation'
    summary = 'tau = G(q)'
    integrates = False
    friction_at_reference = False
    holds_on_exit = True

    @classmethod
    def torque(cls, model, gains, gravity, q, qd, q_d, qd_d, qdd_d):
        """:func:`gravity_compensation`; zeros where the hardware compensates gravity."""
        if gravity is NO_GRAVITY:
            return np.zeros(len(q))
        return gravity_compensation(model, q, gravity)


__all__ = ['gravity_compensation', 'GravityCompensationLaw']
