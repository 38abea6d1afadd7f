"""Mode ``adaptive``: Slotine & Li's adaptive computed torque, and the load it learns.

Pure module (no ROS). :class:`AdaptiveLaw` is the mode's law (one object per run: its
step clock); :class:`LoadEstimate` is what the controller keeps across runs and modes:
the adaptation law the settings make
(:class:`~ne_dynamics_ros.control.laws.slotine_li.PayloadAdaptation` or
:class:`~ne_dynamics_ros.control.laws.slotine_li.BaseAdaptation`) and what it learned or was
declared, which other laws that carry a load (Cartesian impedance, joint impedance) use.

* the gradient update ``p̂ += dt Γ Yᵀ s`` (Slotine & Li, IJRR 6(3), 1987), frozen while
  any joint's command sits at its effort limit, on the first state of a run (a hold, a
  resume: no dt), on a non-finite step; while the controller is inactive no state comes;
* with ``composite_adaptation``, the prediction error of the measured efforts too
  (Slotine & Li, "Composite adaptive control of robot manipulators", Automatica 25(4),
  1989): ``p̂ += dt Γ (Yᵀ s + R W_fᵀ (y_f - W_f p̂))``, with ``y = τ_measured - F(q̇) -
  τ_fixed(q, q̇, q̈)`` the part of the measured effort the adapted parameters explain,
  ``W`` its regressor at the measured state (the generated ``rows``; q̈ the difference of
  successive rates), both through the same first-order filter at ``composite_cutoff`` so
  that ``y_f = W_f p`` holds for constant p. F is the model's drive friction at the
  measured rate (Fv q̇ + Fc tanh(q̇ / v_s)), which a measured joint torque includes.

Units: q in rad (m), qd in rad/s, efforts in N·m (N); the load in kg, m, kg·m².
"""
import math

import numpy as np

from ne_dynamics_ros.control.config.parameter_checks import (checked_flag, checked_gains,
                                                             checked_non_negative, checked_one_of,
                                                             checked_positive, checked_text)
from ne_dynamics_ros.control.config.spec import ParameterSpec
from ne_dynamics_ros.control.laws.slotine_li import (adaptation_gains, BaseAdaptation,
                                                     load_inertia_ratio,
                                                     LOAD_INERTIA_RATIO_WARNING, PayloadAdaptation)
from ne_dynamics_ros.control.laws.base import (clamp, Law, LawInputError, LawTopic,
                                               reference_friction)
from ne_dynamics_ros.errors import ControlParameterError, ModelError


class _Composite:
    """The filtered prediction error of one run (reset with it)."""

    def __init__(self):
        self.previous = None        # (t, qd) of the last state
        self.W = self.y = None      # filtered regressor (n, m) and efforts (n,)

    def power(self, law, rows, t, qd_list, q, efforts, friction, cutoff, weight):
        """Return ``R W_fᵀ (y_f - W_f p̂)`` (m,) after this state, or None (no dt yet)."""
        qd = np.asarray(qd_list, dtype=float)
        previous, self.previous = self.previous, (t, qd)
        if previous is None or not t > previous[0]:
            return None
        dt = t - previous[0]
        qdd = (qd - previous[1]) / dt
        tau_fixed, W = rows(q, qd_list, qdd.tolist())
        W = np.asarray(W, dtype=float)
        y = np.asarray(efforts, dtype=float) - friction - np.asarray(tau_fixed, dtype=float)
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(y))):
            return None
        if self.W is None:
            self.W, self.y = W, y
        else:
            alpha = 1.0 - math.exp(-2.0 * math.pi * cutoff * dt)
            self.W = self.W + alpha * (W - self.W)
            self.y = self.y + alpha * (y - self.y)
        return weight * (self.W.T @ (self.y - self.W @ law.estimate))


class LoadEstimate:
    """The adaptation law and the load it holds, for one arm (module docstring).

    Args:
        model: the arm's :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        link: the load's link (``adaptation_link``; None: the tip link), checked.

    Raises:
        ModelError: ``link`` is neither the tip link nor a joint's child link.
    """

    def __init__(self, model, link=None):
        from ne_dynamics_ros.control.laws.slotine_li import link_frame
        link_frame(model, link)                   # checked now, whatever the mode
        self.model = model
        self.link = link
        self.law = None
        self._composite = _Composite()
        self._composite_settings = (False, 0.0, 1.0)
        #: Warnings about the settings for this arm (:meth:`caveats`), by their bounds.
        self._caveats = {}

    @staticmethod
    def gains(settings):
        """Return Λ, K (n,): ``adaptation_lambda`` and kd - Λ, or kd/2 both.

        Raises:
            ControlParameterError: no Λ > 0 on some joint.
        """
        lam = np.asarray(settings.adaptation_lambda, dtype=float)
        kd = np.asarray(settings.kd, dtype=float)
        if not np.any(lam):
            lam = kd / 2.0
        if np.any(lam <= 0):
            raise ControlParameterError('adaptive mode needs kd > 0 or adaptation_lambda > 0 '
                                        f'on every joint, got kd {kd.tolist()}')
        return lam, np.maximum(kd - lam, 0.0)

    @classmethod
    def check(cls, settings):
        """Raise ControlParameterError if ``settings`` cannot make an adaptive law."""
        cls.gains(settings)
        try:
            adaptation_gains(settings.adaptation_gain, settings.adaptation_length)
        except ValueError as err:
            raise ControlParameterError(str(err)) from None

    def apply(self, settings, gravity):
        """Build the law for ``settings``, or give it the new gains (the estimate is kept).

        A new law when there was none, the kind (``adaptation``) changed, or the
        gravity did (the generated step is written for one); a payload estimate carries
        over to a new payload law.
        """
        lam, k = self.gains(settings)
        gamma = adaptation_gains(settings.adaptation_gain, settings.adaptation_length)
        gravity = tuple(float(g) for g in gravity)
        kind = PayloadAdaptation if settings.adaptation == 'payload' else BaseAdaptation
        previous = self.law
        if type(previous) is not kind or previous.gravity != gravity:
            if kind is PayloadAdaptation:
                self.law = PayloadAdaptation(self.model, lam, k, gamma, self.link,
                                             settings.payload_mass_max, gravity,
                                             radius=settings.payload_radius)
                if type(previous) is PayloadAdaptation:
                    self.law.estimate = previous.estimate
            else:
                self.law = BaseAdaptation(self.model, lam, k, gamma, gravity)
        else:
            self.law.set_gains(lam, k, gamma, settings.payload_mass_max,
                               settings.payload_radius if kind is PayloadAdaptation else None)
        self._composite_settings = (settings.composite_adaptation, settings.composite_weight,
                                    settings.composite_cutoff)

    def caveats(self, settings):
        """Return warnings (strings) about adaptive ``settings`` on this arm, maybe none.

        A joint whose own inertia is below what the bounded load may add about its axis
        by more than :data:`~ne_dynamics_ros.control.laws.slotine_li.LOAD_INERTIA_RATIO_WARNING`
        (:func:`~ne_dynamics_ros.control.laws.slotine_li.load_inertia_ratio`); computed once per
        ``payload_mass_max``, ``payload_radius``.
        """
        if settings.adaptation != 'payload':
            return []
        key = (float(settings.payload_mass_max), float(settings.payload_radius))
        if key not in self._caveats:
            ratio = load_inertia_ratio(self.model, self.link, *key)
            self._caveats[key] = [
                f'adaptive mode: a load of up to {key[0]:g} kg within {key[1]:g} m of the '
                f'load link may add {r:.0f}x {name}\'s own inertia about its axis; while the '
                'estimate is wrong that joint\'s feedback scales with it and can go '
                'unstable: give its drive\'s rotor inertia (armature), or lower '
                'payload_mass_max or payload_radius'
                for name, r in zip(self.model.joint_names, ratio)
                if r > LOAD_INERTIA_RATIO_WARNING]
        return list(self._caveats[key])

    def reset(self):
        """Forget what the law learned."""
        if self.law is not None:
            self.law.reset()

    def effort(self, run, now, state, reference, efforts, gains, extra):
        """Return the clamped command for one state as a list, after adapting.

        As the module docstring says.

        Args:
            run: the run's :class:`AdaptiveLaw` (its
                ``adaptation_time``, s: None on the run's first state).
            now: the controller's clock, s. state: (q, qd) lists; reference: (q_d, qd_d,
                qdd_d) lists, chain order.
            efforts: the measured efforts in chain order, or None.
            gains: the :class:`~ne_dynamics_ros.control.laws.base.JointGains` in force.
            extra: n efforts added before the limits (the integral action), or None.

        Raises:
            NonFiniteEffortError: the effort is not finite (nothing adapted).
        """
        law = self.law
        q, qd = state
        tau, power = law.values(q, qd, *reference)
        if gains.compensates_friction:
            friction = reference_friction(self.model, reference[1], gains.coulomb_velocity)
            tau = [a + b for a, b in zip(tau, friction)]
        if extra is not None:
            tau = [a + b for a, b in zip(tau, extra)]
        clamped = clamp(tau, gains.limit_values)
        first = run.adaptation_time is None
        dt = 0.0 if first else now - run.adaptation_time
        run.adaptation_time = now
        if first:
            self._composite = _Composite()
        composite, weight, cutoff = self._composite_settings
        if composite and efforts is not None:
            extra_power = self._composite.power(
                law, law.rows, now, qd, q, efforts,
                reference_friction(self.model, qd, gains.coulomb_velocity),
                cutoff, weight)
            if extra_power is not None:
                power = [a + b for a, b in zip(power, extra_power.tolist())]
        if clamped == tau:                 # frozen while any joint's command saturates
            law.adapt(power, dt)
        return clamped

    def declare_payload(self, mass, com, inertia) -> bool:
        """Set the payload law's estimate to a declared load; False without that law."""
        if not isinstance(self.law, PayloadAdaptation):
            return False
        self.law.declare(mass, com, inertia)
        return True

    def declare(self, context, mass, com, inertia, modes=''):
        """Take a declared load in the law of ``context`` (a :class:`~.base.LawContext`).

        A law that carries a load, with ``adaptation: payload``: the estimate becomes the
        load at once (the payload law is built first if no adaptive law was set yet).
        ``mass`` kg, ``com`` (3,) m and ``inertia`` (6,) kg·m² about the centre of mass,
        in the load link's frame; ``modes``: the modes that carry a load, for the message.

        Raises:
            ControlParameterError: the law carries no load, ``adaptation`` is not
                ``payload``, or the values are not a load (the message says which).
        """
        settings = context.settings
        carries = context.law_class.carries_load
        if carries and self.law is None and settings.adaptation == 'payload':
            self.apply(settings, context.gains.law_gravity)
        try:
            taken = carries and self.declare_payload(mass, com, inertia)
        except ModelError as err:
            raise ControlParameterError(str(err)) from None
        if not taken:
            raise ControlParameterError(
                f'a declared payload is taken in the modes that carry a load ({modes}) with '
                f'adaptation: payload (mode is {settings.mode.value}, adaptation '
                f'{settings.adaptation})')

    @property
    def payload_estimate(self):
        """The learned load in ``adaptation_link``'s frame, or None (no payload law).

        ``(mass kg, centre of mass (3,) m, inertia (6,) kg·m² about the centre of mass:
        ixx, ixy, ixz, iyy, iyz, izz)``.
        """
        law = self.law
        if not isinstance(law, PayloadAdaptation):
            return None
        return inertial_of(law.estimate)


class LoadReport:
    """The load an adaptive law holds at one state, for ``~/payload`` (made when read).

    ``estimate``: a copy of the law's parameters at that state.
    """

    __slots__ = ('estimate',)

    def __init__(self, estimate):
        self.estimate = estimate

    def facts(self):
        """No lines of its own on ``/diagnostics`` (the node says the payload estimate)."""
        return {}

    def inertial(self):
        """``(mass kg, centre of mass (3,) m, inertia (6,) kg·m²)`` in the load link's frame.

        The inertia is about the centre of mass: ixx, ixy, ixz, iyy, iyz, izz.
        """
        return inertial_of(self.estimate)

    #: the value of ``~/payload`` (an ``inertia`` topic)
    topic_value = inertial


def inertial_of(p):
    """Return ``(mass, com (3,), inertia (6,))`` of a payload law's parameters ``p`` (10,).

    ``p``: XX, XY, XZ, YY, YZ, ZZ, MX, MY, MZ, M (Khalil's order, about the link's
    origin); the inertia returned is about the centre of mass (parallel-axis theorem).
    """
    p = np.asarray(p, dtype=float)
    mass = float(p[9])
    com = p[6:9] / mass if mass > 0 else np.zeros(3)
    J = np.array([[p[0], p[1], p[2]], [p[1], p[3], p[4]], [p[2], p[4], p[5]]])
    Ic = J - mass * ((com @ com) * np.eye(3) - np.outer(com, com))
    return mass, com, Ic[np.triu_indices(3)]


class AdaptiveLaw(Law):
    """Slotine & Li's (1987) adaptive computed torque; its step clock this run's.

    The estimate is the controller's :class:`LoadEstimate` (kept across runs and modes).
    """

    name = 'adaptive'
    #: Its rows of the node's parameter table (:mod:`ne_dynamics_ros.control.parameters`).
    parameters = (
        ParameterSpec('adaptation_lambda', 'double_array', 0.0,
                      'adaptive mode: Lambda of Slotine & Li (q_dot_r = qd_d + Lambda e), one '
                      'value or one per joint; K = kd - Lambda (K_D = K M(q)). 0: Lambda = K = '
                      'kd/2, '
                      'the bandwidth of critically damped kp, kd.', unit='1/s',
                      constraints='>= 0', runtime=True, check=checked_gains),
        ParameterSpec('adaptation', 'string', 'payload',
                      'adaptive mode: what is learned. payload: the 10 inertial parameters of a '
                      'rigid load at adaptation_link (kept physical, mass <= payload_mass_max); '
                      'base: every base parameter of the arm, from the model\'s values.',
                      constraints='one of: payload, base', runtime=True,
                      check=checked_one_of(('payload', 'base'))),
        ParameterSpec('composite_adaptation', 'bool', False,
                      'adaptive mode: also adapt from the prediction error of the efforts '
                      '/joint_states carries (Slotine & Li 1989), filtered at composite_cutoff. '
                      'Only where those are the joint torques (a torque sensor, a drive\'s '
                      'calibrated estimate); states without efforts leave it out.',
                      runtime=True, check=checked_flag),
        ParameterSpec('composite_weight', 'double', 1e-2,
                      'adaptive mode: the weight R of the prediction error against the tracking '
                      'error in the composite update.', unit='rad/(N m s)', constraints='>= 0',
                      runtime=True, check=checked_non_negative),
        ParameterSpec('composite_cutoff', 'double', 20.0,
                      'adaptive mode: cutoff of the first-order filter applied alike to the '
                      'measured efforts and their regressor.', unit='Hz', constraints='> 0',
                      runtime=True, check=checked_positive),
        ParameterSpec('adaptation_gain', 'double', 300.0,
                      'adaptive mode: gamma of Gamma = gamma diag(L^4 (inertia), L^2 (first '
                      'moments), 1 (mass)); 0: a fixed model.', constraints='>= 0', runtime=True,
                      check=checked_non_negative),
        ParameterSpec('adaptation_length', 'double', 0.1,
                      'adaptive mode: the load size L of Gamma.', unit='m', constraints='> 0',
                      runtime=True, check=checked_positive),
        ParameterSpec('payload_mass_max', 'double', 20.0,
                      'adaptive mode: bound of the estimated load mass.', unit='kg',
                      constraints='>= 0', runtime=True, check=checked_non_negative),
        ParameterSpec('payload_radius', 'double', 0.2,
                      'adaptive mode: the whole load lies within this distance of '
                      'adaptation_link\'s origin; bounds the estimated centre of mass and second '
                      'moments by the estimated mass (a released load takes its inertia with it).',
                      unit='m', constraints='> 0', runtime=True, check=checked_positive),
        ParameterSpec('adaptation_reset', 'bool', False,
                      'adaptive mode: set true to forget the load estimate (each time it is set '
                      'true).', runtime=True, check=checked_flag),
        ParameterSpec('adaptation_link', 'string', '',
                      'adaptive mode: the link the load is fixed to, the tip link or a joint\'s '
                      'child link; empty: the tip link.', check=checked_text),
    )
    summary = ('Slotine & Li: a load at adaptation_link learned on line; kp, kd set its '
               'Lambda = K = kd/2 unless adaptation_lambda is set')
    adapts = True
    carries_load = True
    needs_efforts = True
    acceleration_gains = True
    topics = (
        LawTopic('payload', '~/payload', 'inertia', output=True, rate=50.0,
                 summary='the load an adaptive law learned: mass, centre of mass and inertia '
                         'about it, in adaptation_link\'s frame (at most 50 per second of the '
                         'states\' stamps, for rqt_plot)'),
        LawTopic('declared_payload', '~/declared_payload', 'inertia', every_mode=True,
                 summary='a load declared (a gripper closed on it, or mass 0: let go), in '
                         'adaptation_link\'s frame: taken in the modes that carry a load with '
                         'adaptation: payload'),
    )

    def __init__(self, context):
        super().__init__(context)
        #: when the estimate was last advanced, s; None: not yet in this run
        self.adaptation_time = None

    @classmethod
    def check(cls, settings):
        """Raise ControlParameterError if ``settings`` cannot make an adaptive law."""
        LoadEstimate.check(settings)

    @classmethod
    def apply_settings(cls, context):
        """Build (or re-gain) the adaptation law of the settings; the estimate is kept."""
        context.load.apply(context.settings, context.gains.law_gravity)

    @classmethod
    def caveats(cls, context):
        """Warnings about the adaptive settings on this arm (:meth:`LoadEstimate.caveats`)."""
        return context.load.caveats(context.settings)

    def effort(self, step):
        """Return the n clamped efforts of one state, after adapting."""
        context = self.context
        return context.load.effort(self, step.now, (step.q, step.qd), step.reference,
                                   step.efforts, context.gains, step.extra)

    @classmethod
    def take_shared(cls, controller, key, value):
        """Take a declared load (``declared_payload``: an :class:`~.base.InertiaInput`).

        In a law that adapts the estimate becomes it at once (adaptation goes on from
        it); in the other laws that carry a load their model carries it (e.g. Cartesian
        impedance: the stiffness stays true).

        Raises:
            LawInputError: another key, a mode that carries no load, ``adaptation`` not
                ``payload``, or values that are not a load (the message says which).
        """
        if key != 'declared_payload':
            return super().take_shared(controller, key, value)
        try:
            controller.data.load.declare(controller.context, float(value.mass), value.com,
                                         value.inertia, controller.modes_that('carries_load'))
        except (ControlParameterError, TypeError, ValueError) as err:
            raise LawInputError(f'declared payload not taken: {err}') from None
        controller.data.contact_supervisor.declared(controller.data.runs.current.sensing,
                                                    controller.data.load.law)

    def report(self):
        """``{'payload': LoadReport}`` with a payload law, else nothing."""
        law = self.context.load.law
        if not isinstance(law, PayloadAdaptation):
            return {}
        return {'payload': LoadReport(law.estimate.copy())}


__all__ = ['AdaptiveLaw', 'inertial_of', 'LoadEstimate', 'LoadReport']
