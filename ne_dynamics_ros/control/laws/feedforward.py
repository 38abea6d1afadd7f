"""Mode ``feedforward``: the inverse dynamics of the reference plus a joint PD (no ROS).

``tau = RNEA(q_d, qd_d, qdd_d) + Kp (q_d - q) + Kd (qd_d - qd)``: here ``kp`` is in
N·m/rad and ``kd`` in N·m·s/rad; with ``kp = kd = 0`` it is pure feedforward. Friction
(``friction_compensation``) at the desired velocity; with
``hardware_compensates_gravity`` the reference's inverse dynamics leave g out
(``D(q_d) qdd_d + H(q_d, qd_d)``).

Units: q in rad (m), qd in rad/s, qdd in rad/s², tau in N·m (N).
"""
from ne_dynamics_ros.control.laws.base import JointLaw


def feedforward_pd(model, q, qd, q_d, qd_d, qdd_d, kp, kd, gravity):
    """Inverse dynamics of the reference plus joint PD.

    ``tau = RNEA(q_d, qd_d, qdd_d) + kp*(q_d - q) + kd*(qd_d - qd)``; all (n,) arrays but
    ``gravity`` (3,), m/s²; returns (n,) tau (not clamped).
    """
    return model.rnea(q_d, qd_d, qdd_d, gravity=gravity) + kp * (q_d - q) + kd * (qd_d - qd)


class FeedforwardLaw(JointLaw):
    """Feedforward plus PD on the run's reference (module docstring)."""

    name = 'feedforward'
    summary = 'tau = RNEA(q_d, qd_d, qdd_d) + kp*e + kd*de'

    @classmethod
    def torque(cls, model, gains, gravity, q, qd, q_d, qd_d, qdd_d):
        """:func:`feedforward_pd` with the gains in force."""
        return feedforward_pd(model, q, qd, q_d, qd_d, qdd_d, gains.kp, gains.kd, gravity)


__all__ = ['feedforward_pd', 'FeedforwardLaw']
