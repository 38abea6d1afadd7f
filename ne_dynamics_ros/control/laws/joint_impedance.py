"""Mode ``joint_impedance``: gravity-compensated joint impedance on the model (no ROS).

The PD with gravity compensation of Takegaki & Arimoto (1981), its damping sized by the
arm's own inertia, following the run's reference (trajectories and goals, as computed
torque)::

    tau = K (q_d - q) + D (qd_d - qd) + g(q) + tau_f(qd_d)    (+ the load carried)
    D_ii = 2 zeta sqrt(K_ii M_ii(q))

* ``K = diag(joint_impedance.stiffness)``, N·m/rad (N/m); ``zeta =
  joint_impedance.damping_ratio``: each joint damped as a mass-spring of its own inertia
  ``M_ii(q)`` (the model's, its armature included) and stiffness, critically for zeta = 1
  (the diagonal case of the factorisation design of Albu-Schäffer, Ott, Frese & Hirzinger
  2003). ``M_ii`` is computed again once a joint moved :data:`INERTIA_TOLERANCE` from where
  it was last computed: a fraction of a percent of D, for a cost of one recursion per
  state (the gravity), as computed torque's.
* ``g(q)`` is the model's gravity (zero where the hardware compensates it), with the load
  the adaptive part holds (learned in mode ``adaptive`` or declared on
  ``~/declared_payload``); ``tau_f`` the drive friction at the desired velocity
  (``friction_compensation``), as the joint-space modes add it.
* Nothing feeds the reference's acceleration forward: the joints lag it by about
  ``M_ii qdd_d / K_ii``, and a force at the tip moves it by ``J K^-1 J^T F`` (the
  compliance asked for). A set point is held with zero error on the exact model
  (Takegaki & Arimoto 1981: asymptotically stable for any K, D > 0). The integral action
  (``ki``) is off in this mode: it would wind up against a steady push until the arm
  stood stiff (measured: a 20 N push on the identified UR5e moved the tip 5-18 % of
  ``J K^-1 J^T F`` with the ``ki`` that ``ne-dynamics identify`` writes).

Units: q in rad (m for prismatic joints), qd in rad/s, efforts in N·m (N).
"""
import math

import numpy as np

from ne_dynamics_ros.control.laws.base import (clamp, Law, LoadedDynamics, mass_matrix_at,
                                               reference_friction)

#: M_ii is computed again once a joint moved this far from where it last was, rad (m).
INERTIA_TOLERANCE = 0.05


class JointImpedanceLaw(Law):
    """Joint impedance with gravity compensation (module docstring); one object per run."""

    name = 'joint_impedance'
    summary = ('tau = K (q_d - q) + D (qd_d - qd) + g(q), K = joint_impedance.stiffness, '
               'D = 2 zeta sqrt(K M_ii(q)); the compliance J K^-1 J^T at the tip; '
               'Takegaki & Arimoto 1981')
    carries_load = True
    #: no integral action (``ki``): it would cancel a steady push, and the compliance
    #: would not be the K asked for
    integrates = False

    def __init__(self, context):
        super().__init__(context)
        n = context.model.n
        settings = context.settings
        self._k = np.broadcast_to(np.asarray(settings.joint_impedance_stiffness, dtype=float),
                                  (n,)).tolist()
        self._zeta = float(settings.joint_impedance_damping_ratio)
        self._zeros = [0.0] * n
        self._loaded = LoadedDynamics()
        #: (dynamics, q where M_ii was computed, D) of the last damping computed
        self._damping = None

    def _dynamics(self):
        """Return the model (or generated program) of M, C and g: the load's when held."""
        return self._loaded.of(self.context)

    def _damping_at(self, dynamics, q):
        """Return D (n floats), from M_ii at ``q`` or where last computed, if near."""
        cached = self._damping
        if (cached is not None and cached[0] is dynamics
                and max(abs(a - b) for a, b in zip(q, cached[1])) <= INERTIA_TOLERANCE):
            return cached[2]
        diagonal = np.diag(mass_matrix_at(dynamics, q)).tolist()
        damping = [2.0 * self._zeta * math.sqrt(max(k * m, 0.0))
                   for k, m in zip(self._k, diagonal)]
        self._damping = (dynamics, list(q), damping)
        return damping

    def _gravity(self, dynamics, q):
        """Return g(q) (n floats) of the law's model and load, zero where compensated."""
        gains, zero = self.context.gains, self._zeros
        if gains.hardware_compensates_gravity:
            return zero
        load = self.context.load_law
        if load is not None:
            return load.values(q, zero, q, zero, zero)[0]
        run = getattr(dynamics, 'rnea_values', None)
        tau = None if run is None else run(q, zero, zero, gains.gravity)
        if tau is None:
            tau = dynamics.gravity_torques(np.asarray(q, dtype=float), gains.gravity).tolist()
        return tau

    def effort(self, step):
        """Return the n clamped efforts of one state (module docstring)."""
        q, qd = step.q, step.qd
        q_d, qd_d, _ = step.reference
        dynamics = self._dynamics()
        damping = self._damping_at(dynamics, q)
        tau = [g + k * (a - b) + d * (c - e) for g, k, a, b, d, c, e in zip(
            self._gravity(dynamics, q), self._k, q_d, q, damping, qd_d, qd)]
        gains = self.context.gains
        if gains.compensates_friction:
            friction = reference_friction(self.context.model, list(qd_d),
                                          gains.coulomb_velocity)
            tau = [t + f for t, f in zip(tau, friction)]
        return clamp(tau, gains.limit_values)


__all__ = ['INERTIA_TOLERANCE', 'JointImpedanceLaw']
