"""What ``contact.reaction: comply`` commands after a contact: gravity and friction (no ROS).

Not a mode: the run a contact starts under ``comply`` takes :class:`ComplyLaw` until a
new reference comes. ``tau = g(q) + tau_f(qd)``: the model's gravity (with the load the
adaptive part holds, where the mode carries one) and the drive friction at the measured
velocity (whatever ``friction_compensation`` says: the arm must yield to a push), with
the hardware's own compensation flags as in every mode. Nothing pulls the arm anywhere.

Units: q in rad (m), qd in rad/s, efforts in N·m (N).
"""
import dataclasses

from ne_dynamics_ros.control.laws.base import clamp, Law
from ne_dynamics_ros.control.laws.gravity import GravityCompensationLaw
from ne_dynamics_ros.dynamics.friction import drive_friction, friction_values


class ComplyLaw(Law):
    """Gravity and friction at the measured velocity only (module docstring)."""

    integrates = False

    def __init__(self, context):
        super().__init__(context)
        model = context.model
        #: the gravity law's gains, with friction at the measured velocity
        self._gains = dataclasses.replace(context.gains, friction_compensation=True)
        self._friction = friction_values(model)
        self._zeros = [0.0] * model.n

    def effort(self, step):
        """Return the n clamped efforts of one state (:class:`~.base.Law`)."""
        context, q, qd, zeros = self.context, step.q, step.qd, self._zeros
        load = context.load_law
        if load is None:
            return GravityCompensationLaw.joint_effort(context.dynamics, self._gains, q, qd,
                                                       q, qd, zeros)
        tau = load.values(q, zeros, q, zeros, zeros)[0]
        if not self._gains.hardware_compensates_friction:
            tau = [a + f for a, f in zip(tau, drive_friction(qd, *self._friction))]
        return clamp(tau, self._gains.limit_values)

    def reconfigured(self, context):
        """Keep the arm complying under new settings (a new trajectory ends it)."""
        return ComplyLaw(context)


__all__ = ['ComplyLaw']
