"""Mode ``joint_impedance``: gravity-compensated joint impedance on the model (no ROS).

The PD with gravity compensation of Takegaki & Arimoto (1981), its damping sized by the
arm's own inertia, following the run's reference (trajectories and goals, as computed
torque), with the reference's own dynamics fed forward::

    tau = K (q_d - q) + D (qd_d - qd) + g(q) + tau_f(qd_d)    (+ the load carried)
          + M(q) qdd_d + C(q, qd_d) qd_d                       (joint_impedance.feedforward)
    D_ii = 2 zeta sqrt(K_ii M_ii(q))

* ``K = diag(joint_impedance.stiffness)``, N·m/rad (N/m), by default sized for the arm
  as the gains are (:func:`sized_stiffness`: ``kp_i M_ii,min``); ``zeta =
  joint_impedance.damping_ratio``: each joint damped as a mass-spring of its own inertia
  ``M_ii(q)`` (the model's, its armature included) and stiffness, critically for zeta = 1
  (the diagonal case of the factorisation design of Albu-Schäffer, Ott, Frese & Hirzinger
  2003). ``M_ii`` is computed again once a joint moved :data:`INERTIA_TOLERANCE` from where
  it was last computed: a fraction of a percent of D, for a cost of one recursion per
  state, as computed torque's.
* ``g(q)`` is the model's gravity (zero where the hardware compensates it), with the load
  the adaptive part holds (learned in mode ``adaptive`` or declared on
  ``~/declared_payload``); ``tau_f`` the drive friction at the desired velocity
  (``friction_compensation``), as the joint-space modes add it.
* The feed-forward (``joint_impedance.feedforward``, default on) is the reference's
  inertia and velocity forces, the terms the "PD+" law of Paden & Panja (1988) adds to the
  PD with gravity; here with the velocity product at the reference, ``C(q, qd_d) qd_d``,
  so that it and g(q) are one recursion ``RNEA(q, qd_d, qdd_d)`` (the price of gravity
  alone). At rest (``qd_d = qdd_d = 0``) it is zero: the held arm and a push on it are the
  PD's. Off, the joints lag a moving reference by about ``M_ii qdd_d / K_ii`` (measured on
  the identified UR5e: 2.4x computed torque's worst error, against 1.0x with it on;
  ``benchmarks/bench_joint_impedance.py``).
* A force at the tip of the arm at rest moves it by ``J K^-1 J^T F`` (the compliance asked
  for). A set point is held with zero error on the exact model (Takegaki & Arimoto 1981:
  asymptotically stable for any K, D > 0). The integral action (``ki``) is off in this
  mode: it would wind up against a steady push until the arm stood stiff (measured: a 20 N
  push on the identified UR5e moved the tip 5-18 % of ``J K^-1 J^T F`` with the ``ki``
  that ``ne-dynamics identify`` writes).

Units: q in rad (m for prismatic joints), qd in rad/s, qdd in rad/s², efforts in N·m (N).
"""
import functools
import math

import numpy as np

from ne_dynamics_ros.control.config.parameter_checks import (checked_flag, checked_gains,
                                                             checked_positive, is_unset)
from ne_dynamics_ros.control.config.spec import ParameterSpec
from ne_dynamics_ros.control.laws.base import (clamp, Law, LoadedDynamics, mass_matrix_at,
                                               NO_GRAVITY, reference_friction)
from ne_dynamics_ros.control.laws.gains import lightest_inertia

#: M_ii is computed again once a joint moved this far from where it last was, rad (m).
INERTIA_TOLERANCE = 0.05


def _checked_stiffness(value, n, name):
    """Check a stiffness: unset (None or empty: sized for the arm), or gains >= 0."""
    return None if is_unset(value) else checked_gains(value, n, name)


def sized_stiffness(model, kp) -> np.ndarray:
    """Return K (n,) = ``kp_i min M_ii`` over the workspace, N·m/rad (N/m).

    ``kp``: (n,) the acceleration gains, 1/s² (the rule's for the rate:
    :func:`~.gains.recommended_gains`); ``M_ii`` the model's inertia (its armature
    included) at :data:`~.gains.CONFIGURATIONS` configurations within the joint limits:
    each joint as stiff as computed torque makes it where it is lightest, so that its
    natural frequency ``sqrt(K / M_ii(q))`` stays within ``sqrt(kp)`` (which the rule keeps
    within the rate's bound) wherever the arm is (``hold_controller``'s gains, the same).
    """
    return _sized_stiffness(model, tuple(np.asarray(kp, dtype=float).tolist())).copy()


@functools.lru_cache(maxsize=1)
def _sized_stiffness(model, kp):
    """Return K of :func:`sized_stiffness` for the last (model, kp) asked.

    The workspace's inertia is sampled once per model and gains, not once per run (the
    model itself is held, so a freed model's id cannot be mistaken for it).
    """
    return np.asarray(kp, dtype=float) * lightest_inertia(model)


class JointImpedanceLaw(Law):
    """Joint impedance with gravity compensation (module docstring); one object per run."""

    name = 'joint_impedance'
    #: Its rows of the node's parameter table (:mod:`ne_dynamics_ros.control.parameters`).
    parameters = (
        ParameterSpec('joint_impedance.stiffness', 'double_array', None,
                      'joint_impedance mode: the stiffness K of each joint, one value or one per '
                      'joint (chain order): tau = K (q_d - q) + D (qd_d - qd) + g(q); a force F '
                      'at the tip moves it by J K^-1 J^T F. Unset (default): sized for the arm '
                      'as the gains are, K_i = kp_i M_ii,min (the node\'s kp, which ne-dynamics '
                      'gains sizes for the rate, times the joint\'s least inertia over the '
                      'workspace: sqrt(K / M_ii) within sqrt(kp) everywhere), said on '
                      '/diagnostics. Keep sqrt(K / M_ii) within rate / 10 rad/s on the joint of '
                      'least inertia.',
                      unit='N*m/rad', constraints='>= 0', runtime=True, check=_checked_stiffness),
        ParameterSpec('joint_impedance.damping_ratio', 'double', 1.0,
                      'joint_impedance mode: zeta of D = 2 zeta sqrt(K M_ii(q)), each joint '
                      'damped with its own inertia (1: critically).', constraints='> 0',
                      runtime=True, check=checked_positive),
        ParameterSpec('joint_impedance.feedforward', 'bool', True,
                      'joint_impedance mode: add the reference\'s inertia and velocity forces '
                      'M(q) qdd_d + C(q, qd_d) qd_d (one recursion at (q, qd_d, qdd_d) in place '
                      'of the gravity\'s), so the joints follow a moving reference without '
                      'lagging it by M_ii qdd_d / K; at rest nothing changes. false: the PD with '
                      'gravity alone (Takegaki & Arimoto 1981).', runtime=True,
                      check=checked_flag),
    )
    summary = ('tau = K (q_d - q) + D (qd_d - qd) + g(q) + M(q) qdd_d + C(q, qd_d) qd_d, '
               'K = joint_impedance.stiffness, D = 2 zeta sqrt(K M_ii(q)); the compliance '
               'J K^-1 J^T at the tip; Takegaki & Arimoto 1981, Paden & Panja 1988')
    carries_load = True
    #: no integral action (``ki``): it would cancel a steady push, and the compliance
    #: would not be the K asked for
    integrates = False

    def __init__(self, context):
        super().__init__(context)
        n = context.model.n
        settings = context.settings
        stiffness = settings.joint_impedance_stiffness
        #: the stiffness is the arm's, sized from its model and the gains (not set)
        self.sized = stiffness is None
        if self.sized:
            stiffness = sized_stiffness(context.model, context.gains.kp)
        self._k = np.broadcast_to(np.asarray(stiffness, dtype=float), (n,)).tolist()
        #: the stiffness in force per joint, N·m/rad (N/m): set, or sized for the arm
        self.stiffness = np.array(self._k)
        self._zeta = float(settings.joint_impedance_damping_ratio)
        self._feedforward = bool(settings.joint_impedance_feedforward)
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

    def _model_forces(self, dynamics, q, qd_d, qdd_d):
        """Return g(q) (+ M(q) qdd_d + C(q, qd_d) qd_d with the feed-forward), n floats.

        The law's model and load; the gravity left out where the hardware compensates it.
        """
        gains, zero = self.context.gains, self._zeros
        if not self._feedforward:
            qd_d, qdd_d = zero, zero
        if gains.hardware_compensates_gravity:
            if not self._feedforward:
                return zero
            return dynamics.rnea(np.asarray(q, dtype=float), np.asarray(qd_d, dtype=float),
                                 np.asarray(qdd_d, dtype=float), gravity=NO_GRAVITY).tolist()
        load = self.context.load_law
        if load is not None:
            return load.values(q, qd_d, q, qd_d, qdd_d)[0]
        run = getattr(dynamics, 'rnea_values', None)
        tau = None if run is None else run(q, qd_d, qdd_d, gains.gravity)
        if tau is None:
            tau = dynamics.rnea(np.asarray(q, dtype=float), np.asarray(qd_d, dtype=float),
                                np.asarray(qdd_d, dtype=float), gravity=gains.gravity).tolist()
        return tau

    def facts(self):
        """Return the stiffness in force and where it came from (``/diagnostics``)."""
        return {'joint impedance stiffness [N*m/rad]': ' '.join(f'{k:.4g}' for k in self._k)
                + (' (sized for the arm: kp M_ii,min)' if self.sized else ' (set)')}

    def effort(self, step):
        """Return the n clamped efforts of one state (module docstring)."""
        q, qd = step.q, step.qd
        q_d, qd_d, qdd_d = step.reference
        dynamics = self._dynamics()
        damping = self._damping_at(dynamics, q)
        tau = [g + k * (a - b) + d * (c - e) for g, k, a, b, d, c, e in zip(
            self._model_forces(dynamics, q, qd_d, qdd_d), self._k, q_d, q, damping, qd_d,
            qd)]
        gains = self.context.gains
        if gains.compensates_friction:
            friction = reference_friction(self.context.model, list(qd_d),
                                          gains.coulomb_velocity)
            tau = [t + f for t, f in zip(tau, friction)]
        return clamp(tau, gains.limit_values)


__all__ = ['INERTIA_TOLERANCE', 'JointImpedanceLaw', 'sized_stiffness']
