"""The controller's adaptive mode: Slotine & Li's law, its settings, the composite term.

Pure module (no ROS). :class:`AdaptiveMode` is what
:class:`~ne_dynamics_ros.control.controller.ComputedTorqueController` owns for
``mode: adaptive``: it turns the settings into a law
(:class:`~ne_dynamics_ros.control.adaptive.PayloadAdaptation` or
:class:`~ne_dynamics_ros.control.adaptive.BaseAdaptation`), answers a state with the
clamped effort, and adapts:

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
"""
import math

import numpy as np

from ne_dynamics_ros.control.adaptive import (adaptation_gains, BaseAdaptation,
                                              load_inertia_ratio, LOAD_INERTIA_RATIO_WARNING,
                                              PayloadAdaptation)
from ne_dynamics_ros.control.laws import (ControlParameterError, NonFiniteEffortError,
                                          reference_friction)


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


class AdaptiveMode:
    """Adaptive mode for one arm (module docstring); built on first use of the mode.

    Args:
        model: the arm's :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        link: the load's link (``adaptation_link``; None: the tip link), checked.

    Raises:
        ModelError: ``link`` is neither the tip link nor a joint's child link.
    """

    def __init__(self, model, link=None):
        from ne_dynamics_ros.control.adaptive import link_frame
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
        by more than :data:`~ne_dynamics_ros.control.adaptive.LOAD_INERTIA_RATIO_WARNING`
        (:func:`~ne_dynamics_ros.control.adaptive.load_inertia_ratio`); computed once per
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

    def effort(self, run, now, state, reference, efforts, control_law, extra):
        """Return the clamped command for one state as a list, after adapting.

        As the module docstring says.

        Args:
            run: the run's :class:`~ne_dynamics_ros.control.law.AdaptiveLaw` (its
                ``adaptation_time``, s: None on the run's first state).
            now: the controller's clock, s. state: (q, qd) lists; reference: (q_d, qd_d,
                qdd_d) lists, chain order.
            efforts: the measured efforts in chain order, or None.
            control_law: the controller's :class:`~ne_dynamics_ros.control.laws.ControlLawConfig`.
            extra: n efforts added before the limits (the integral action), or None.

        Raises:
            NonFiniteEffortError: the effort is not finite (nothing adapted).
        """
        law = self.law
        q, qd = state
        tau, power = law.values(q, qd, *reference)
        if control_law.friction_compensation and not control_law.hardware_compensates_friction:
            friction = reference_friction(self.model, reference[1], control_law.coulomb_velocity)
            tau = [a + b for a, b in zip(tau, friction)]
        if extra is not None:
            tau = [a + b for a, b in zip(tau, extra)]
        if not math.isfinite(sum(tau)):
            raise NonFiniteEffortError(f'control law produced a non-finite effort {tau}')
        limits = control_law.gain_values[2]
        clamped = [-limit if t < -limit else limit if t > limit else t
                   for t, limit in zip(tau, limits)]
        first = run.adaptation_time is None
        dt = 0.0 if first else now - run.adaptation_time
        run.adaptation_time = now
        if first:
            self._composite = _Composite()
        composite, weight, cutoff = self._composite_settings
        if composite and efforts is not None:
            extra_power = self._composite.power(
                law, law.rows, now, qd, q, efforts,
                reference_friction(self.model, qd, control_law.coulomb_velocity),
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

    @property
    def payload_estimate(self):
        """The learned load in ``adaptation_link``'s frame, or None (no payload law).

        ``(mass kg, centre of mass (3,) m, inertia (6,) kg·m² about the centre of mass:
        ixx, ixy, ixz, iyy, iyz, izz)``.
        """
        law = self.law
        if not isinstance(law, PayloadAdaptation):
            return None
        p = law.estimate.copy()
        mass, com = float(p[9]), law.center_of_mass
        J = np.array([[p[0], p[1], p[2]], [p[1], p[3], p[4]], [p[2], p[4], p[5]]])
        Ic = J - mass * ((com @ com) * np.eye(3) - np.outer(com, com))
        return mass, com, Ic[np.triu_indices(3)]


__all__ = ['AdaptiveMode']
