"""Mode ``hand_guiding``: the operator moves the arm by its flange (no ROS).

An admittance (Whitney 1977's damping control, with a virtual mass) on top of the
computed-torque law: the wrench the operator applies at the tip sets the speed of a
reference the arm tracks::

    Md v' + D v = F_dead(F)              (the virtual mass-damper, base frame axes)
    qd_r = J^+ v,   q_r += qd_r dt,   qdd_r = (qd_r - qd_r,prev) / dt
    tau = M(q) (qdd_r + kd (qd_r - qd) + kp (q_r - q)) + C(q, qd) qd + g(q) + tau_f(qd_r)
          - J^T F

* ``v`` (6,): the tip's reference twist (m/s, then rad/s about the base frame's axes);
  ``D = diag(hand_guiding.damping)`` (N·s/m, N·m·s/rad), ``Md =
  diag(hand_guiding.mass)`` (kg, kg·m²). A steady push F moves the tip at ``F / D``; let
  go, the tip stops within ``|v| Md / D`` (the virtual mass's time constant). Integrated
  semi-implicitly (``v = (v + dt F / Md) / (1 + dt D / Md)``): stable at any rate.
  Unset, both are sized for the arm (:func:`sized_admittance`): D from its effort and
  velocity limits (the push it can just hold moves the tip as fast as its joints allow),
  Md from the gains (the time constant ``Md / D = 1 / kd``, the tracking loop's
  velocity gain).
* ``F_dead``: a dead band against the sensor's noise, on the force's and the moment's
  norms, ``hand_guiding.dead_band`` (N, N·m): nothing within it, exact from twice it on,
  linear in between (so a push above twice the band moves the tip at exactly F / D).
* ``J^+``: the pseudo-inverse of the tip's geometric Jacobian (singular values under
  :data:`SINGULAR` of the largest left out: no speed blows up near a singularity); the
  reference stays within each joint's URDF range: a joint that would leave it is held at
  its limit (its share of ``v`` is lost, not turned into another joint's). The effort is
  the computed-torque law's with the node's ``kp``, ``kd`` (Lee, Chung, Mudge & Turney
  1982, eqs 4.1, 4.4) on the reference (q_r, qd_r, qdd_r), the
  model's friction at the reference's velocity where ``friction_compensation`` asks for
  it, with the load the model carries (declared), within the effort limits. The push
  itself, which acts on the arm as ``J^T F``, is taken out (``- J^T F``, F before the
  dead band): the arm moves as the virtual mass-damper says, the tracking loop does not
  give way to the push (by ``Lambda^-1 F / kp``) and spring back when it is let go.
* The wrench, ``hand_guiding.wrench``: ``sensor``: a flange force-torque sensor on
  ``~/flange_wrench``, tared at the start of each run, the tool's weight and inertia taken
  out (:mod:`~ne_dynamics_ros.control.laws.flange_sensor`: its frame, conventions and
  ``ft_sensor.*`` parameters); silent, it reads as no push (the arm held). ``estimate``: the
  momentum observer's external effort (De Luca & Mattone 2005) mapped to the tip's wrench
  through ``J^T``'s pseudo-inverse, as ``~/external_wrench``: every effort the model
  does not explain (a drive's friction it holds wrong) is read as a push.

Units: q in rad (m for prismatic joints), qd in rad/s, efforts in N·m (N); wrenches in N,
N·m; the base link frame.
"""
import functools

import numpy as np

from ne_dynamics_ros.control.config.parameter_checks import checked_one_of, is_unset, numbers
from ne_dynamics_ros.control.config.spec import ParameterSpec
from ne_dynamics_ros.control.laws.flange_sensor import (FLANGE_WRENCH, FlangeSensor,
                                                        PARAMETERS as SENSOR_PARAMETERS)
from ne_dynamics_ros.control.laws.base import Law, LoadedDynamics
from ne_dynamics_ros.control.laws.computed_torque import ComputedTorqueLaw
from ne_dynamics_ros.dynamics.kinematics import chain_kinematics
from ne_dynamics_ros.errors import ControlParameterError

#: Singular values of J under this fraction of the largest are left out of its inverse.
SINGULAR = 0.02
#: The longest step the admittance integrates over, s (a silence is no longer push).
MAX_STEP = 0.05


def _checked_axes(size, unit):
    """Return a check of ``size`` finite values >= 0 (one value: all of them)."""
    def check(value, n, name):
        values = numbers(value, name)
        if values.size not in (1, size) or not np.all(np.isfinite(values) & (values >= 0)):
            raise ControlParameterError(f'{name} must be one or {size} finite values >= 0 '
                                        f'({unit}), got {values.tolist()}')
        return np.broadcast_to(values, (size,)).copy()
    return check


def _checked_positive_six(value, n, name):
    """Check six values > 0 (one value: all of them); unset (None or empty): None."""
    if is_unset(value):
        return None
    values = _checked_axes(6, 'x, y, z, then about them')(value, n, name)
    if np.any(values <= 0):
        raise ControlParameterError(f'{name} must be > 0 on every axis, got {values.tolist()}')
    return values


def sized_admittance(model, effort_limits, kd, damping=None):
    """Return ``(mass, damping)``, (6,) each: hand guiding's admittance sized for the arm.

    Per axis of the base frame (x, y, z, then about them), over the workspace
    (:func:`~.gains.workspace_configurations`, :data:`~.gains.CONFIGURATIONS` positions
    within the joint limits; ``J`` the tip's geometric Jacobian):

    * ``D_i = F_i / v_i`` (N·s/m, N·m·s/rad). ``F_i = min_j effort_limit_j / max_q
      |J_ji(q)|`` is the largest force (moment) along the axis the arm holds anywhere with
      every joint within its effort limit (the effort-limit bound of
      :func:`~.gains.recommended_stiffness`); ``v_i`` the median over the workspace of the
      tip speed along the axis the joints allow, ``min_j velocity_limit_j / |(J⁺ e_i)_j|``.
      The push the arm can just hold moves the tip as fast as its joints allow where it
      typically is; a hand's push, a fraction of it. UR5e (URDF limits): 159 N·s/m and
      8.6-9.2 N·m·s/rad: 10 N moves the tip at 63 mm/s, 40 N at ISO 10218-1's
      hand-guiding (reduced) speed of 250 mm/s.
    * ``Md_i = D_i / min(kd)`` (kg, kg·m²): the time constant ``Md / D`` is ``1 / kd``
      of the tracking loop's velocity gain (``kd = 2 ω`` of the gain rule for the rate,
      :func:`~.gains.recommended_gains`; Lee et al. 1982 eq 4.4): the reference's speed
      settles in the time the loop takes to remove a velocity error, and a released tip
      stops within ``|v| / kd``. With ``1 / ω`` (twice as long) the MuJoCo UR5e with
      doubled drive friction went on 2.1 mm after a 10 N push was let go
      (``benchmarks/bench_hand_guiding.py``, 2026-12-07).

    Args:
        model: the arm's model (its velocity limits, the tip's Jacobian).
        effort_limits: (n,) the limits in force, N·m (N); kd: (n,) 1/s.
        damping: None (sized as above), or the one set, (6,): only the mass is sized.

    Raises:
        ModelError: the damping sized, and an axis no joint with finite limits moves, or
            kd not > 0 (then set ``hand_guiding.damping`` and ``hand_guiding.mass``).
    """
    from ne_dynamics_ros.errors import ModelError
    kd_min = float(np.min(kd))
    if damping is not None:
        damping = np.broadcast_to(np.asarray(damping, dtype=float), (6,)).copy()
        return damping / kd_min, damping
    if not kd_min > 0.0:
        raise ModelError(f'hand guiding\'s virtual mass is sized on kd > 0, got {kd_min}: '
                         'set hand_guiding.damping and hand_guiding.mass')
    limits = tuple(np.asarray(effort_limits, dtype=float).reshape(-1).tolist())
    damping = _sized_damping(model, limits).copy()
    return damping / kd_min, damping


@functools.lru_cache(maxsize=1)
def _sized_damping(model, limits):
    """Return D (6,) of :func:`sized_admittance` for the last (model, effort limits) asked.

    The workspace is sampled once per model and limits, not once per run (the model itself
    is held, so a freed model's id cannot be mistaken for it).

    Raises:
        ModelError: an axis no joint with finite effort and velocity limits moves.
    """
    from ne_dynamics_ros.control.laws.gains import CONFIGURATIONS, workspace_configurations
    from ne_dynamics_ros.errors import ModelError
    limits = np.asarray(limits, dtype=float)
    kinematics = chain_kinematics(model)
    velocity = np.asarray(model.velocity_limits, dtype=float)
    J = np.array([kinematics.jacobian(q)
                  for q in workspace_configurations(model, CONFIGURATIONS)])
    with np.errstate(divide='ignore', invalid='ignore'):
        speeds = np.min(velocity[None, :, None] / np.abs(
            np.linalg.pinv(J, rcond=SINGULAR)), axis=1)          # (C, 6)
        force = np.min(limits[None, :] / np.abs(J).max(axis=0), axis=1)
    damping = force / np.median(speeds, axis=0)
    if not np.all(np.isfinite(damping) & (damping > 0.0)):
        raise ModelError('hand guiding\'s damping cannot be sized for this arm (an axis '
                         'no joint with finite effort and velocity limits moves): set '
                         'hand_guiding.damping and hand_guiding.mass')
    return damping


def twist_reference(q_ref, qd_ref, twist, jacobian, dt, lower=None, upper=None):
    """Return the joint reference ``(q_r, qd_r, qdd_r)``, (n,) each, one step ``dt`` on.

    ``qd_r = J^+ v`` for the tip's twist ``v`` (6,) (``jacobian`` (6, n); singular values
    under :data:`SINGULAR` of the largest left out), ``q_r = q_ref + qd_r dt``, ``qdd_r =
    (qd_r - qd_ref) / dt`` (zeros for ``dt`` 0). With ``lower``, ``upper`` (n,) a joint
    that would leave its range is held where it is (its ``qd_r`` zero): its share of
    ``v`` is lost, not turned into another joint's. The admittances' common step
    (:class:`HandGuidingLaw`, :mod:`.sensed_impedance`).
    """
    qd = np.linalg.pinv(jacobian, rcond=SINGULAR) @ twist
    q = q_ref + dt * qd
    if lower is not None:
        held = ((q < lower) & (qd < 0)) | ((q > upper) & (qd > 0))
        qd[held] = 0.0
        q[held] = q_ref[held]
    return q, qd, (qd - qd_ref) / dt if dt > 0.0 else np.zeros_like(q)


def dead_band(x, band):
    """Return ``x`` (3,) shrunk by its norm's dead band ``band`` (>= 0).

    Zero within ``band``, ``x`` itself from ``2 band`` on, linear in the norm between.
    """
    size = float(np.linalg.norm(x))
    if size <= band:
        return np.zeros(3)
    if size >= 2.0 * band:
        return np.asarray(x, dtype=float)
    return np.asarray(x, dtype=float) * (2.0 * (size - band) / size)


class HandGuidingLaw(Law):
    """Hand guiding: an admittance on the measured wrench (module docstring); per run."""

    name = 'hand_guiding'
    summary = ('the tip moved by the operator\'s wrench at the flange (a force-torque sensor '
               'on ~/flange_wrench, or the observer\'s estimate): Md v\' + D v = F, tracked '
               'by computed torque; trajectories refused')
    parameters = (
        ParameterSpec('hand_guiding.damping', 'double_array', None,
                      'hand_guiding mode: the virtual damping D of the tip along x, y, z then '
                      'about them (base frame): a steady push F moves the tip at F / D. Unset '
                      '(default): sized for the arm, the force (moment) it holds at its effort '
                      'limits over the tip speed its velocity limits allow (UR5e: 159 N*s/m, '
                      '9 N*m*s/rad), said on /diagnostics.',
                      unit='N*s/m, N*m*s/rad', constraints='> 0, one or six values',
                      runtime=True, check=_checked_positive_six),
        ParameterSpec('hand_guiding.mass', 'double_array', None,
                      'hand_guiding mode: the virtual mass Md of the tip (then inertia about '
                      'x, y, z): let go, the tip stops within its speed times Md / D. Unset '
                      '(default): D / kd (the smallest of the node\'s kd), said on '
                      '/diagnostics.',
                      unit='kg, kg*m^2', constraints='> 0, one or six values', runtime=True,
                      check=_checked_positive_six),
        ParameterSpec('hand_guiding.dead_band', 'double_array', [2.0, 0.2],
                      'hand_guiding mode: the force and moment norms under which the wrench '
                      'moves nothing (exact from twice these on).', unit='N, N*m',
                      constraints='two values >= 0', runtime=True,
                      check=_checked_axes(2, 'N, then N*m')),
        ParameterSpec('hand_guiding.wrench', 'string', 'sensor',
                      'hand_guiding mode: where the wrench comes from: sensor (~/flange_wrench, '
                      'a flange force-torque sensor) or estimate (the momentum observer\'s '
                      'external effort through J^T).', runtime=True,
                      check=checked_one_of(('sensor', 'estimate'))),
        *SENSOR_PARAMETERS,
    )
    topics = (FLANGE_WRENCH,)
    follows_trajectory = False
    refusal = ('mode hand_guiding follows the operator\'s hand: trajectories and goals are '
               'refused (set mode to a joint-space mode to follow them)')
    carries_load = True
    integrates = False
    holds_on_exit = True
    acceleration_gains = True
    needs_external_effort = True
    reacts_to_contact = False

    @classmethod
    def apply_settings(cls, context):
        """Size the admittance where it is unset when the settings change, not at a state."""
        if context.settings.hand_guiding_damping is None:
            sized_admittance(context.model, context.gains.effort_limits, context.gains.kd)

    def __init__(self, context):
        super().__init__(context)
        settings, model = context.settings, context.model
        self.kinematics = chain_kinematics(model)
        damping, mass = settings.hand_guiding_damping, settings.hand_guiding_mass
        #: what was sized for the arm (unset), not set: ``{'damping': bool, 'mass': bool}``
        self.sized = {'damping': damping is None, 'mass': mass is None}
        if damping is None or mass is None:
            sized_mass, sized_damping = sized_admittance(
                model, context.gains.effort_limits, context.gains.kd, damping)
            damping = sized_damping if damping is None else damping
            mass = sized_mass if mass is None else mass
        #: the virtual damping D and mass Md in force, (6,) each
        self.damping = np.asarray(damping, dtype=float)
        self.mass = np.asarray(mass, dtype=float)
        self._band = np.asarray(settings.hand_guiding_dead_band, dtype=float)
        self._source = settings.hand_guiding_wrench
        self._lower = np.asarray(model.lower_limits, dtype=float)
        self._upper = np.asarray(model.upper_limits, dtype=float)
        self._loaded = LoadedDynamics()
        #: the reference (q_r, qd_r) and the tip's reference twist v (6,); None before
        #: the run's first state
        self.q_ref = self.qd_ref = None
        self.twist = np.zeros(6)
        self._acceleration = np.zeros(3)        # the tip's reference acceleration, m/s²
        self._time = None
        #: the wrench that moved the reference at the last state, (6,) base frame
        self.wrench = np.zeros(6)
        #: the flange sensor's readings (``hand_guiding.wrench: sensor``)
        self.sensor = FlangeSensor(settings, model, context.gains.gravity)

    # ---- the sensor ----------------------------------------------------------------------

    def take(self, key, value):
        """Take a reading of the flange sensor (``flange_wrench``: a WrenchInput).

        Raises:
            LawInputError: another key, another frame, or not 3 + 3 finite values.
        """
        if key != 'flange_wrench':
            return super().take(key, value)
        self.sensor.take(value)

    def _wrench(self, step, t, T, J):
        if self._source == 'sensor':
            return self.sensor.wrench(t, T[:3, :3], self._acceleration)
        if step.external is None:
            return self.wrench
        return np.linalg.pinv(J.T, rcond=SINGULAR) @ np.asarray(step.external, dtype=float)

    # ---- the law -------------------------------------------------------------------------

    def effort(self, step):
        """Return the n clamped efforts of one state (module docstring)."""
        q = np.asarray(step.q, dtype=float)
        t = step.t
        T, J = self.kinematics.pose_and_jacobian(q)
        if self.q_ref is None:
            self.q_ref, self.qd_ref, self._time = q.copy(), np.zeros_like(q), t
        dt = min(max(t - self._time, 0.0), MAX_STEP)
        self._time = t
        wrench = self._wrench(step, t, T, J)
        self.wrench = np.concatenate([dead_band(wrench[:3], self._band[0]),
                                      dead_band(wrench[3:], self._band[1])])
        if dt > 0.0:
            twist = (self.twist + dt * self.wrench / self.mass) / (
                1.0 + dt * self.damping / self.mass)
            self._acceleration = (twist[:3] - self.twist[:3]) / dt
            self.twist = twist
        q_next, qd_ref, qdd_ref = twist_reference(self.q_ref, self.qd_ref, self.twist, J, dt,
                                                  self._lower, self._upper)
        self.q_ref, self.qd_ref = q_next, qd_ref
        # the push itself acts on the arm too: taken out, or the tracking loop would give
        # way to it by Lambda^-1 F / kp and spring back when let go (12-17 mm at kp 400)
        return ComputedTorqueLaw.joint_effort(
            self._loaded.of(self.context), self.context.gains, step.q, step.qd,
            q_next.tolist(), qd_ref.tolist(), qdd_ref.tolist(), (-(J.T @ wrench)).tolist())

    def facts(self):
        """Return the admittance, the wrench's source and the push (``/diagnostics``)."""
        def said(values, key, how):
            return ' '.join(f'{v:.4g}' for v in values) + (
                f' (sized for the arm: {how})' if self.sized[key] else ' (set)')
        facts = {'hand guiding damping [N*s/m, N*m*s/rad]': said(
                     self.damping, 'damping', 'held force over allowed speed'),
                 'hand guiding mass [kg, kg*m^2]': said(self.mass, 'mass', 'D / kd'),
                 'hand guiding wrench': self._source,
                 'hand guiding push [N, N*m]': ' '.join(f'{v:.2f}' for v in self.wrench)}
        if self._source == 'sensor':
            facts.update(self.sensor.facts())
        return facts

    @property
    def bias(self):
        """The flange sensor's bias, (6,) in its frame, or None until tared."""
        return self.sensor.bias


__all__ = ['dead_band', 'HandGuidingLaw', 'MAX_STEP', 'SINGULAR', 'sized_admittance',
           'twist_reference']
