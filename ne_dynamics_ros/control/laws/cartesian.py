"""Cartesian impedance of the tip with a posture in the null space (no ROS).

Mode ``cartesian_impedance`` (:class:`CartesianImpedanceLaw`, one of the laws of
:mod:`~ne_dynamics_ros.control.laws`)::

    tau = J^T (K e + D e') + C(q, qd) qd + g(q) + tau_f(qd) + (I - J^T Jbar^T) tau_0

* ``e`` (6,): the pose error of ``tip_link`` in the base link frame, ``[p_t - p;
  log(R_t R^T)]`` (m, rad: :func:`~ne_dynamics_ros.dynamics.kinematics.pose_error`), ``e'
  = -J qd`` with J the geometric Jacobian of the tip (:mod:`~ne_dynamics_ros.dynamics.
  kinematics`): the damping acts on the tip's velocity alone, so that a target moving at
  ``cartesian.max_speed`` (below) is followed without the tip outrunning it (a damping
  on the target's rate too would overshoot that speed by e^-2, 14 %, when it starts).
* ``K = diag(cartesian.stiffness)`` (N/m for x, y, z, then N·m/rad about x, y, z, base
  frame axes); unset (the default) sized for the arm as the gains are
  (:func:`~.gains.sized_cartesian_stiffness`). ``D`` by the factorisation design of
  Albu-Schäffer, Ott, Frese & Hirzinger (2003): ``D = zeta (Lambda^1/2 K^1/2 + K^1/2
  Lambda^1/2)``, ``zeta = cartesian.damping_ratio``: each direction of the task-space
  inertia ``Lambda`` is damped as a mass-spring of that inertia and stiffness (critically
  for zeta = 1).
* ``Lambda = (J M^-1 J^T)^-1`` (Khatib 1987), ``Jbar = M^-1 J^T Lambda`` the
  dynamically consistent inverse and ``I - J^T Jbar^T`` the projector of torques into the
  null space of the task (Khatib 1987), which is zero for a 6-joint arm away
  from singularities. ``Lambda`` is inverted damped: an eigenvalue w of ``J M^-1 J^T``
  becomes ``w / (w^2 + mu^2)`` with ``mu`` :data:`SINGULAR_DAMPING` of the largest, so
  the law stays finite at a singularity; :attr:`CartesianImpedanceLaw.near_singularity`
  says when that damping acts (the node reports it in ``/diagnostics`` with the
  manipulability, Yoshikawa 1985).
* ``tau_0 = K_n (q_n - q) - D_n qd``: the posture ``q_n`` (``nullspace.posture``; empty:
  the position when the mode was entered), ``K_n = nullspace.stiffness`` (N·m/rad),
  ``D_n = 2 sqrt(K_n M_ii)`` per joint.
* ``C qd + g`` and ``M`` are the model's, with the load the adaptive part holds (learned
  in mode ``adaptive`` or declared on ``~/declared_payload``), ``tau_f`` the model's
  friction (``friction_compensation``) at the measured velocity; while a target is
  approached, and :data:`FRICTION_SETTLE` after it arrived or after a contact ended (the
  tip is pulled back to its target then), and on while the tip still closes in on it
  (by :data:`APPROACH_SPEED`), at the velocity the pull is about to give,
  ``qd + h M^-1 tau_pull`` (h = :data:`FRICTION_HORIZON`): dry friction is compensated
  toward the target from the moment the impedance pulls, as the joint modes compensate it
  at the reference's velocity, so the drives' stiction does not hold the tip short of it
  (released after a 20 N push, a UR5e with its own friction crept to 7.9 mm from its
  target without this, 1.6 mm with it); a push on a tip at rest meets the
  measured-velocity friction only (the compliance stays K). The hardware's own
  compensation flags hold as in every mode.
* The Coulomb level of ``tau_f`` is the arm's, learned: ``s Fc`` with ``s`` per joint
  from the momentum observer while the joint slides and no contact is held
  (:class:`~ne_dynamics_ros.control.sensing.friction_estimate.CoulombEstimate`, at
  ``cartesian.friction_adaptation`` 1/s; 0: the model's ``Fc``); while a contact is held
  it only falls, for a joint that keeps turning back under the push (a compensation
  above the drive's friction drives a limit cycle there). The compensation toward
  the target is only as good as ``Fc``: too little and the drives' stiction holds the tip
  short, too much and it adds energy to a push (an identified UR5e on its plant with the
  drives' friction halved, pushed from rest: the tip swung at ~1 Hz under a 20 N push).
  A joint not learned yet holds the median factor of those learned.

The target: on the first state of a run (entering the mode, activation, a contact's
hold) the target is the tip pose measured: no jump. A new target (:meth:`set_goal`) is
approached at ``cartesian.max_speed`` (m/s along the line, rad/s about the rotation's
axis), not in one step.

Units: q in rad (m for prismatic joints), qd in rad/s, efforts in N·m (N), poses in the
base link frame (m).
"""
import math

import numpy as np

from ne_dynamics_ros.control.config.parameter_checks import (checked_flag, checked_gains,
                                                             checked_non_negative,
                                                             checked_positive, checked_posture,
                                                             checked_six_or_unset,
                                                             checked_speeds)
from ne_dynamics_ros.control.config.spec import ParameterSpec
from ne_dynamics_ros.control.laws.base import (clamp, Law, LawInputError, LawTopic,
                                               LoadedDynamics, mass_matrix_at)
from ne_dynamics_ros.control.laws.gains import sized_cartesian_stiffness
from ne_dynamics_ros.control.laws.flange_sensor import (FLANGE_WRENCH,
                                                        PARAMETERS as SENSOR_PARAMETERS)
from ne_dynamics_ros.control.laws.sensed_impedance import SensedImpedance
from ne_dynamics_ros.dynamics.friction import drive_friction, friction_values
from ne_dynamics_ros.dynamics.kinematics import (chain_kinematics, manipulability,
                                                 pose_error, quaternion_to_matrix,
                                                 rotation_exp)

#: M, its inverse and the task-space inertia are computed again once a joint moved this
#: far from where they were last computed, rad (m): their relative change is ~1e-4.
INERTIA_TOLERANCE = 1e-4
#: ``mu`` of the damped inverse of ``J M^-1 J^T``, relative to its largest eigenvalue.
SINGULAR_DAMPING = 1e-5
#: While a target is approached, friction is compensated at ``qd + h M^-1 tau_pull``: the
#: velocity the law's pull (stiffness, damping, posture) gives within this horizon, s.
#: About the impedance's own time constant (``sqrt(Lambda / K)``: 0.11-0.15 s along x, y,
#: z for the UR5e at 500 N/m), so the compensation follows the pull, not the motion: a
#: stuck shoulder lift (M_ii 3.2-3.5 kg·m² on the UR5e and a UR5, v_s 0.01 rad/s) gets
#: tanh(1) = 0.76 of its Coulomb level under a pull of 0.33 N·m (with 0.02 s: 1.7 N·m),
#: and a compensation above the drives' friction cannot feed a swing the way one in
#: phase with the velocity does. 0.02 s left a UR5 (example-robot-data) on MuJoCo,
#: identified, 2.5 mm short of a 5 cm step after 1.5 s (its shoulder stuck under a
#: 1 N·m pull) and made the nominal UR5e hunt on drives with half its friction (nothing
#: learned), 10.8 mm off; 0.1 s: 1.03 mm and 0.13 mm. Chosen on those two arms and
#: ``bench_cartesian.py --identified``'s plant (0.05 and 0.15 s measured too: 0.15 did
#: as well), judged on the nominal UR5e on MuJoCo with friction x0.35-x2 (steps, pushes,
#: returns).
FRICTION_HORIZON = 0.1
#: ... and for this long after the target reached its goal or a contact ended, s.
FRICTION_SETTLE = 1.0
#: ... counted from the last time the tip came closer to the target than before, by this
#: much per second, m/s: a tip the drives' stiction slows still creeps on and is helped on
#: (chosen on a MuJoCo UR5e with twice its model's dry friction, where the tip crept at
#: 0.5-0.7 mm/s; judged on ``bench_cartesian.py --identified``'s plant)
APPROACH_SPEED = 5e-4
#: ... the tip's distance to the target checked this often, s: from positions, whose
#: noise (1e-5 rad at 1 m: 0.01 mm) is 5x below the progress asked over it
APPROACH_CHECK = 0.1
#: Below this ratio of its smallest to its largest eigenvalue ``J M^-1 J^T`` is reported
#: near singular (the UR5e's ratio in its usual postures: 1e-3 to 1e-2).
NEAR_SINGULAR = 1e-5


class TargetError(LawInputError):
    """A target pose that cannot be taken (the message says why); the last good one stays."""


def target_pose(position, orientation, frame_id: str, base_link: str) -> np.ndarray:
    """Return the (4, 4) pose of a target, checked, in the base link frame.

    Args:
        position: (3,) m. orientation: a quaternion ``(x, y, z, w)`` (ROS order), any
            length > 0 (normalised here).
        frame_id: the frame the pose is given in: empty, or ``base_link``.
        base_link: the chain's base link name.

    Raises:
        TargetError: another frame, a non-finite value or a zero quaternion.
    """
    if frame_id not in ('', base_link):
        raise TargetError(f'a target in frame {frame_id!r}: give it in {base_link!r} (or '
                          'an empty frame_id)')
    p = np.asarray(position, dtype=float).reshape(-1)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise TargetError(f'a target position must be 3 finite values, got {p.tolist()}')
    try:
        R = quaternion_to_matrix(*orientation)
    except (TypeError, ValueError) as err:
        raise TargetError(f'a target orientation that is no rotation: {err}') from None
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


class CartesianImpedanceLaw(Law):
    """The law of mode ``cartesian_impedance`` (module docstring); one object per run.

    Args:
        context: the :class:`~ne_dynamics_ros.control.law.LawContext` in force.
        carried: a law of the same mode whose goal, target and posture this one keeps
            (new settings), or None.

    Attributes:
        goal: (4, 4) the target pose last accepted, base link frame; None before the
            run's first state (it becomes the pose measured then).
        target: (4, 4) the pose the impedance pulls to now: the goal, or on the way to it
            at ``cartesian.max_speed``.
        posture: (n,) ``q_n``, rad (m).
        pose: (4, 4) the tip pose at the last state, or None.
        manipulability: ``sqrt(det(J J^T))`` at the last state (nan before).
        near_singularity: ``J M^-1 J^T`` was near singular at the last state (its
            inverse damped).
        nullspace_effort: (n,) ``(I - J^T Jbar^T) tau_0`` at the last state, N·m (N).
    """

    name = 'cartesian_impedance'
    #: Its rows of the node's parameter table (:mod:`ne_dynamics_ros.control.parameters`).
    parameters = (
        ParameterSpec('cartesian.stiffness', 'double_array', None,
                      'cartesian_impedance mode: stiffness of the tip along x, y, z (N/m), then '
                      'about x, y, z (N*m/rad), base link frame axes; one value or six. Unset '
                      '(default): sized for the arm as the gains are, min(kp) times the '
                      'lightest inertia the tip shows along each axis over the workspace '
                      '(within the effort limits); /diagnostics says which.',
                      unit='N/m, N*m/rad', constraints='>= 0', runtime=True,
                      check=checked_six_or_unset),
        ParameterSpec('cartesian.damping_ratio', 'double', 1.0,
                      'cartesian_impedance mode: damping ratio of each direction of the '
                      'task-space inertia with its stiffness (1: critical).', constraints='> 0',
                      runtime=True, check=checked_positive),
        ParameterSpec('cartesian.max_speed', 'double_array', [0.25, 1.0],
                      'cartesian_impedance mode: a new target is approached at most this fast: '
                      'along the line (m/s), then about the rotation axis (rad/s).',
                      unit='m/s, rad/s', constraints='> 0', runtime=True, check=checked_speeds),
        ParameterSpec('cartesian.friction_adaptation', 'double', 10.0,
                      'cartesian_impedance mode: how fast the drives\' Coulomb friction the '
                      'law compensates follows what the momentum observer shows while a joint '
                      'slides and no contact is held (a factor per joint on the model\'s, '
                      'within 0.25 and 4; in a contact it only falls, halved at each reversal '
                      'of a joint that keeps turning back under the push, from the third); 0: '
                      'the model\'s friction as identified.',
                      unit='1/s', constraints='>= 0', runtime=True, check=checked_non_negative),
        ParameterSpec('cartesian.flange_sensor', 'bool', False,
                      'cartesian_impedance mode: read the flange force-torque sensor '
                      '(~/flange_wrench, ft_sensor.*) and make the impedance a reference the '
                      'arm tracks (an admittance): a push held moves the tip K^-1 F however '
                      'hard the drives stick.', runtime=True, check=checked_flag),
        *SENSOR_PARAMETERS,
        ParameterSpec('nullspace.stiffness', 'double_array', 10.0,
                      'cartesian_impedance mode: stiffness of the posture in the null space of '
                      'the tip task (one value or one per joint), damped critically by the '
                      'diagonal of M(q).', unit='N*m/rad', constraints='>= 0', runtime=True,
                      check=checked_gains),
        ParameterSpec('nullspace.posture', 'double_array', None,
                      'cartesian_impedance mode: the posture the null space pulls to (one '
                      'position per joint); unset: the position when the mode is entered.',
                      unit='rad', constraints='n finite values', runtime=True,
                      check=checked_posture),
    )
    summary = ('the tip held at ~/target_pose by cartesian.stiffness, a posture in the '
               'null space; trajectories refused; Khatib 1987, Albu-Schaeffer et al. 2003')
    follows_trajectory = False
    takes_target = True
    carries_load = True
    integrates = False
    topics = (
        LawTopic('target_pose', '~/target_pose', 'pose',
                 summary='the pose the tip is held at, in the chain\'s base link frame '
                         '(header.frame_id empty or the base link\'s name), approached at '
                         'cartesian.max_speed'),
        LawTopic('current_pose', '~/current_pose', 'pose', output=True,
                 summary='the tip pose measured at each command, base link frame, stamped '
                         'like the state it answers'),
        FLANGE_WRENCH,
    )
    refusal = ('mode cartesian_impedance follows ~/target_pose: trajectories and goals are '
               'refused (set mode to a joint-space mode to follow them)')

    def __init__(self, context, carried=None):
        super().__init__(context)
        settings, model = context.settings, context.model
        self.kinematics = chain_kinematics(model)
        stiffness = settings.cartesian_stiffness
        #: the stiffness is the arm's, sized from its model and the gains (not set)
        self.sized = stiffness is None
        if self.sized:
            stiffness = sized_cartesian_stiffness(model, context.gains.kp,
                                                  context.gains.effort_limits)
        #: (6,) the stiffness in force, N/m then N·m/rad: set, or sized for the arm
        self.stiffness = np.broadcast_to(np.asarray(stiffness, dtype=float), (6,)).copy()
        self._sqrt_k = np.sqrt(self.stiffness)
        self._zeta = float(settings.cartesian_damping_ratio)
        self._speed = np.asarray(settings.cartesian_max_speed, dtype=float)
        self._kn = np.asarray(settings.nullspace_stiffness, dtype=float)
        posture = settings.nullspace_posture
        self._posture_setting = None if posture is None else np.asarray(posture, float)
        self.goal = self.target = self.pose = None
        self.posture = self._posture_setting
        self._time = None
        self.near_singularity = False
        self.nullspace_effort = None
        self._jacobian = None
        self._inverse_inertia = None
        self._cached = None
        self._period = None
        #: the clock until which friction is compensated toward the target (an approach,
        #: or the return after a contact ended)
        self._approaching_until = -math.inf
        #: a contact was held at the last state
        self._in_contact = False
        #: (clock of the last :meth:`_closing_in` check, the tip's closest distance to the
        #: target since the window opened, m)
        self._closing = (-math.inf, math.inf)
        self._loaded = LoadedDynamics()
        n = context.model.n
        self._zeros = [0.0] * n
        #: the configured gravity is the generated program's (0, 0, -9.81)
        self._program_gravity = tuple(float(g) for g in context.gains.gravity) == \
            (0.0, 0.0, -9.81)
        self._friction = friction_values(model)
        self._dt = 0.0
        self._adaptation = float(settings.cartesian_friction_adaptation)
        #: the admittance on the flange sensor (``cartesian.flange_sensor``), else None
        self.sensed = SensedImpedance(context, self.kinematics) \
            if settings.cartesian_flange_sensor else None
        if carried is not None:
            self.goal, self.target, self._time = carried.goal, carried.target, carried._time
            self._approaching_until = carried._approaching_until
            self._closing = carried._closing
            if self.posture is None:
                self.posture = carried.posture

    def reconfigured(self, context):
        """Return the law under new settings; its goal, target, posture and window carried.

        The window in which friction is compensated toward the target ends as it would
        have without the new settings (its end and the tip's closest distance carried).
        """
        return self._sensor_kept(CartesianImpedanceLaw(context, carried=self))

    def restarted(self):
        """Return the law for a new run (a contact's hold): the flange sensor's tare kept.

        A run that starts while a push is held must not tare the push away (measured on
        the identified UR5e: the tip then sprang 38 mm the other way when let go).
        """
        return self._sensor_kept(super().restarted())

    def _sensor_kept(self, law):
        if law.sensed is not None and self.sensed is not None:
            law.sensed.sensor = self.sensed.sensor
        return law

    def take(self, key, value):
        """Take a new target (``target_pose``: a :class:`~.base.PoseInput`).

        Approached at ``cartesian.max_speed``, not jumped to.

        Raises:
            TargetError: another frame than the base link's, a non-finite value or a zero
                quaternion (:func:`target_pose`); the last good target stays.
        """
        if key == 'flange_wrench':              # ignored with cartesian.flange_sensor off
            return None if self.sensed is None else self.sensed.sensor.take(value)
        if key != 'target_pose':
            return super().take(key, value)
        self.set_goal(target_pose(value.position, value.orientation, value.frame_id,
                                  self.context.model.base_link))

    def set_goal(self, pose):
        """Take a new goal pose ((4, 4), base link frame; checked by the caller)."""
        self.goal = np.array(pose, dtype=float)
        if self.target is not None and self.target is not self.goal:
            self.target = self.target.copy()      # the target was the old goal: keep it

    # ---- the model, with the load the adaptive part holds --------------------------------

    def _dynamics(self):
        """Return the model (or generated program) of M, C and g: the load's when held."""
        return self._loaded.of(self.context)

    def _inertia(self, dynamics, q, J):
        """Return ``(M, M^-1, J M^-1, Lambda, Lambda^1/2)`` at ``q`` (a list).

        Computed again once a joint has moved more than :data:`INERTIA_TOLERANCE` from
        where they were last computed (and when the load changes): a pose held costs the
        kinematics and the bias only. With a generated program (Renaud 1987) M is read
        column by column from n + 1 runs of it (``rnea(q, 0, e_j) - rnea(q, 0, 0)``,
        gravity cancels; Walker & Orin 1982, method 1); otherwise the model's batched
        recursion.
        """
        cached = self._cached
        if (cached is not None and cached[0] is dynamics
                and max(abs(a - b) for a, b in zip(q, cached[1])) <= INERTIA_TOLERANCE):
            return cached[2]
        M = mass_matrix_at(dynamics, q)
        Minv = np.linalg.inv(M)
        JMinv = J @ Minv
        self._inverse_inertia = JMinv @ J.T
        values = (M, Minv, JMinv) + self._task_inertia(self._inverse_inertia)
        self._cached = (dynamics, list(q), values)
        return values

    def _bias(self, dynamics, q, qd):
        """Return ``C(q, qd) qd + g(q)`` (n,), gravity as configured (0 if compensated)."""
        gains = self.context.gains
        run = getattr(dynamics, 'rnea_values', None)
        if run is not None and self._program_gravity and \
                not gains.hardware_compensates_gravity:
            bias = run(q, qd, self._zeros)
            if bias is not None and math.isfinite(sum(bias)):
                return np.array(bias)
        gravity = (0.0, 0.0, 0.0) if gains.hardware_compensates_gravity else gains.gravity
        return dynamics.rnea(np.asarray(q, dtype=float), np.asarray(qd, dtype=float),
                             np.zeros(len(q)), gravity)

    # ---- the effort ------------------------------------------------------------------------

    def _advance_target(self, now):
        """Move the target toward the goal, by at most ``cartesian.max_speed`` per second."""
        dt = 0.0 if self._time is None else max(0.0, now - self._time)
        self._time = now
        self._dt = dt
        if dt > 0.0:                         # the control period, smoothed over ~50 states
            self._period = dt if self._period is None else self._period + 0.02 * (
                dt - self._period)
        if self.goal is None or dt == 0.0 or self.target is self.goal:
            return
        self._open_window(now)
        step = pose_error(self.goal, self.target)
        linear, angular = np.linalg.norm(step[:3]), np.linalg.norm(step[3:])
        if linear <= self._speed[0] * dt and angular <= self._speed[1] * dt:
            self.target = self.goal                 # reached: the goal itself from now on
            return
        if linear > self._speed[0] * dt:
            step[:3] *= self._speed[0] * dt / linear
        if angular > self._speed[1] * dt:
            step[3:] *= self._speed[1] * dt / angular
        target = self.target.copy()
        target[:3, 3] += step[:3]
        target[:3, :3] = rotation_exp(step[3:]) @ target[:3, :3]
        self.target = target

    def _task_inertia(self, inverse_inertia):
        """Return ``(Lambda, Lambda^1/2)`` from ``J M^-1 J^T``, damped near a singularity.

        An eigenvalue w becomes ``w / (w^2 + mu^2)``, ``mu`` :data:`SINGULAR_DAMPING` of
        the largest: away from singularities the inverse is exact to ``(mu / w)^2``.
        """
        w, V = np.linalg.eigh(inverse_inertia)
        w = np.maximum(w, 0.0)
        mu = SINGULAR_DAMPING * max(float(w[-1]), 1e-12)
        inverse = w / (w * w + mu * mu)
        self.near_singularity = bool(w[0] < NEAR_SINGULAR * w[-1])
        return (V * inverse) @ V.T, (V * np.sqrt(inverse)) @ V.T

    def effort(self, step):
        """Return the n clamped efforts of one state (module docstring)."""
        q, qd = step.q, step.qd
        T, J = self.kinematics.pose_and_jacobian(q)
        self.pose = T
        if self.target is None:                  # the run's first state: no jump
            self.target = T.copy()
            if self.goal is None:
                self.goal = self.target
            if self.posture is None:
                self.posture = np.array(q, dtype=float)
        self._advance_target(step.now)
        dynamics = self._dynamics()
        M, Minv, JMinv, Lambda, root = self._inertia(dynamics, q, J)
        bias = self._bias(dynamics, q, qd)
        qd_a = np.array(qd, dtype=float)
        self._jacobian = J
        D = self._zeta * (root * self._sqrt_k + self._sqrt_k[:, None] * root)
        error = pose_error(self.target, T)
        force = self.stiffness * error - D @ (J @ qd_a)
        posture_torque = (self._kn * (self.posture - q)
                          - 2.0 * np.sqrt(self._kn * M.diagonal()) * qd_a)
        # (I - J^T Jbar^T) tau_0, Jbar^T = Lambda J M^-1
        self.nullspace_effort = posture_torque - J.T @ (Lambda @ (JMinv @ posture_torque))
        if self.sensed is not None:
            return self.sensed.effort(step, self.target, self._dt, Lambda, D, self.stiffness,
                                      dynamics, self.nullspace_effort)
        pull = J.T @ force + self.nullspace_effort
        tau = pull + bias
        if self._in_contact and not step.in_contact:     # released: pulled back to the target
            self._open_window(step.now)
        else:
            self._closing_in(step.now, math.sqrt(float(error[:3] @ error[:3])))
        self._in_contact = step.in_contact
        gains = self.context.gains
        if gains.compensates_friction:
            tau = tau + self._drive_friction(step, qd_a, Minv @ pull)
        return clamp(tau.tolist(), gains.limit_values)

    def _open_window(self, now):
        """Compensate friction toward the target for FRICTION_SETTLE from ``now`` on."""
        self._approaching_until = now + FRICTION_SETTLE
        self._closing = (now, math.inf)

    def _closing_in(self, now, distance):
        """Keep friction compensated toward the target while the tip still closes in on it.

        Every :data:`APPROACH_CHECK` s: if the window is open and the tip came closer to
        the target than it has been since the window opened, by :data:`APPROACH_SPEED`
        per second since the last check, the window stays open for
        :data:`FRICTION_SETTLE` from now. A tip that creeps on through the drives'
        stiction is helped on; one that swings about the target (a compensation above the
        drives' friction) comes no closer than before and the window closes; it can stay
        open at most for the distance left over :data:`APPROACH_SPEED`. Positions, not the
        measured velocity: a noisy ``qd`` at rest cannot keep it open. A window never opens
        here, so a push on a tip at rest meets the measured-velocity friction.
        """
        checked, closest = self._closing
        if now - checked < APPROACH_CHECK:
            return
        if now < self._approaching_until and \
                closest - distance > APPROACH_SPEED * (now - checked):
            self._approaching_until = now + FRICTION_SETTLE
        self._closing = (now, min(closest, distance))

    def _drive_friction(self, step, qd, acceleration):
        """Return ``tau_f`` (n,): the drive friction, at the arm's learned Coulomb level.

        The controller's
        :class:`~ne_dynamics_ros.control.sensing.friction_estimate.CoulombEstimate` learns from
        this state first (it is learned where it is used: with friction compensation on).
        While a target is approached at ``qd + h acceleration`` (the velocity the pull is
        about to give, h :data:`FRICTION_HORIZON`: dry friction compensated from the
        moment the impedance pulls), else at the measured ``qd``.
        """
        damping, coulomb, velocity_scale, offset = self._friction
        estimate = self.context.friction
        if estimate is not None:
            estimate.update(qd, step.external, self._dt, self._adaptation, step.in_contact)
            coulomb = estimate.coulomb
        velocity = qd
        if step.now < self._approaching_until:
            velocity = qd + FRICTION_HORIZON * acceleration
        return np.array(drive_friction(velocity.tolist(), damping, coulomb, velocity_scale,
                                       offset))

    def breaking_away(self, now):
        """Say whether friction is compensated toward the target now (approach, return)."""
        return now < self._approaching_until

    def report(self):
        """``{'current_pose': CartesianReport}`` of the last state (none before it)."""
        if self.pose is None:
            return {}
        return {'current_pose': CartesianReport(self.pose, self._jacobian,
                                                self.near_singularity, self.stiffness,
                                                self._inverse_inertia, self._period)}

    def stiffness_above_rule(self) -> list:
        """:meth:`CartesianReport.stiffness_above_rule` at the last state ([] before it)."""
        report = self.report().get('current_pose')
        return [] if report is None else report.stiffness_above_rule()

    @property
    def manipulability(self) -> float:
        """``sqrt(det(J J^T))`` at the last state (Yoshikawa 1985); nan before the first."""
        J = self._jacobian
        return math.nan if J is None else manipulability(J)

    def facts(self):
        """Return the stiffness in force and its source, then the last state's report.

        :meth:`CartesianReport.facts` at the last state (none before it).
        """
        facts = {'cartesian stiffness [N/m, N*m/rad]': ' '.join(f'{k:.4g}' for k in self.stiffness)
                 + (' (sized for the arm: min(kp) Lambda_min)' if self.sized else ' (set)')}
        report = self.report().get('current_pose')
        if report is not None:
            facts.update(report.facts())
        return facts


class CartesianReport:
    """What the Cartesian law reports with one command; its facts made when read.

    Attributes:
        pose: (4, 4) the tip pose measured, base link frame (``~/current_pose``).
        jacobian: (6, n) the tip's geometric Jacobian there.
        near_singularity: ``J M^-1 J^T`` was inverted damped.
    """

    __slots__ = ('pose', 'jacobian', 'near_singularity', '_stiffness', '_inverse_inertia',
                 '_period')

    def __init__(self, pose, jacobian, near_singularity, stiffness, inverse_inertia,
                 period):
        self.pose, self.jacobian, self.near_singularity = pose, jacobian, near_singularity
        self._stiffness, self._inverse_inertia, self._period = (stiffness, inverse_inertia,
                                                                period)

    @property
    def manipulability(self) -> float:
        """``sqrt(det(J J^T))`` (Yoshikawa 1985)."""
        return manipulability(self.jacobian)

    def topic_value(self):
        """Return the value of ``~/current_pose``: the (4, 4) tip pose, base link frame."""
        return self.pose

    def stiffness_above_rule(self) -> list:
        """Return the axes whose stiffness is above the sampling rule at the rate seen.

        ``(axis, stiffness, bound)`` for each axis where ``cartesian.stiffness`` exceeds
        :func:`~ne_dynamics_ros.control.laws.gains.stiffness_bound` of the inertia the tip shows
        along it, at the rate the states arrive (``ne-dynamics gains --cartesian`` gives
        the bound over the workspace); [] before two states.
        """
        from ne_dynamics_ros.control.laws.gains import CARTESIAN_AXES, stiffness_bound
        if self._inverse_inertia is None or not self._period:
            return []
        with np.errstate(divide='ignore'):
            bound = stiffness_bound(1.0 / self._inverse_inertia.diagonal(),
                                    1.0 / self._period)
        return [(axis, float(k), float(b))
                for axis, k, b in zip(CARTESIAN_AXES, self._stiffness, bound) if k > b]

    def facts(self):
        """Return the lines for ``/diagnostics``.

        ``manipulability`` (Yoshikawa 1985); ``singularity``: non-empty (a problem: WARN)
        while the task-space inertia is inverted damped near a singularity;
        ``stiffness``: non-empty (WARN) while ``cartesian.stiffness`` is above the
        sampling rule of :mod:`~ne_dynamics_ros.control.laws.gains` at the rate the states
        arrive.
        """
        above = self.stiffness_above_rule()
        return {'manipulability': f'{self.manipulability:.4g}',
                'singularity': ('near a singularity: the task-space inertia is inverted '
                                'damped' if self.near_singularity else ''),
                'stiffness': ('cartesian.stiffness above the sampling rule at this rate: '
                              + ', '.join(f'{a} {k:.4g} > {b:.4g}' for a, k, b in above)
                              if above else '')}


__all__ = ['CartesianImpedanceLaw', 'CartesianReport', 'SINGULAR_DAMPING', 'target_pose',
           'TargetError']
