"""The controller's contact supervision: the momentum observer on every state, contacts.

Pure module (no ROS). :class:`ContactMode` feeds the
:class:`~ne_dynamics_ros.control.observer.MomentumObserver` and the
:class:`~ne_dynamics_ros.control.observer.ContactDetector` of the run (its
:class:`~ne_dynamics_ros.control.sensing.Sensing`), on each valid state, from the model
the control law uses: its generated recursion
(or, in adaptive mode, Slotine & Li's law with the load it learned), gravity and friction
left out where the hardware compensates them (as the command leaves them out), and the
last command (clamped) as the effort that acted since the previous state. What a contact
does (``contact.reaction``) is the controller's: it ends the goal and restarts the run;
:meth:`ContactMode.comply_effort` is what ``comply`` commands.
"""
import dataclasses
import math
from typing import List, Optional, Tuple

import numpy as np

from ne_dynamics_ros.control.laws import compute_effort_values, ControlMode
from ne_dynamics_ros.control.observer import Contact


class ContactMode:
    """How the observer and detector of a run are fed; the contacts counted.

    Chain order throughout.

    Args:
        model: the controller's :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        dynamics: what the law calls for the recursion (the model or its generated
            program, with ``rnea_values``).
    """

    def __init__(self, model, dynamics):
        self.model = model
        self.dynamics = dynamics
        #: the generated recursion's list-in list-out call, or None (the model's rnea)
        self._rnea_values = getattr(dynamics, 'rnea_values', None)
        self.reaction = 'hold'
        #: contacts detected since configured
        self.contacts = 0
        self._zeros = [0.0] * model.n
        self._comply_law = None
        #: compute r while contact detection is off too (somebody reads it: scripts,
        #: run_lockstep); False skips the observer then, and it restarts when wanted again
        self.reading = True

    def apply(self, settings, control_law):
        """Take ``contact.reaction`` and the controller's law configuration.

        The run's observer and detector take their settings in
        :meth:`~ne_dynamics_ros.control.sensing.Sensing.configure`.
        """
        self.reaction = settings.contact_reaction
        self._law = control_law
        self._comply_law = dataclasses.replace(
            control_law, mode=ControlMode.GRAVITY_COMPENSATION, friction_compensation=True)
        self._friction = not control_law.hardware_compensates_friction
        self._friction_values = (self.model.damping.tolist(), self.model.friction.tolist(),
                                 self.model.coulomb_velocity.tolist(),
                                 self.model.friction_offset.tolist())
        self._gravity = ([0.0, 0.0, 0.0] if control_law.hardware_compensates_gravity
                         else control_law.gravity.tolist())

    @staticmethod
    def declared(sensing, adaptive_law):
        """Take a declared load as the model's new truth, with no shift of the past.

        A load declared is one that just arrived (or left): the model before it was
        right for the motion before it, unlike an estimate the law corrects, whose
        change :meth:`observe` applies to the observer's past (``shift``). ``sensing``:
        the run's :class:`~ne_dynamics_ros.control.sensing.Sensing`.
        """
        sensing.estimate = adaptive_law.estimate.tolist()

    def friction_values(self, qd) -> List[float]:
        """Return the model's friction effort at the measured ``qd`` (n floats), or zeros.

        :meth:`~ne_dynamics_ros.dynamics.model.RobotModel.friction_torques` in plain
        floats (a NumPy call per state costs more than the loop): keep the two in step.
        """
        if not self._friction:
            return self._zeros
        damping, coulomb, scales, offsets = self._friction_values
        return [b * v + c * math.tanh(v / vs) + off
                for b, c, v, vs, off in zip(damping, coulomb, qd, scales, offsets)]

    def observe(self, sensing, now: float, q, qd,
                adaptive_law=None) -> Tuple[List[float], Optional[Contact]]:
        """Advance the run's observer to the state ``(q, qd)`` (lists) at ``now`` (s).

        ``sensing``: the run's :class:`~ne_dynamics_ros.control.sensing.Sensing`;
        ``adaptive_law``: the adaptive law in force (its model carries the learned
        load), or None. Returns ``(r, contact)``: r (n floats, N·m / N) and the
        :class:`~ne_dynamics_ros.control.observer.Contact` that starts with this state,
        or None; ``(None, None)`` while contact detection is off and :attr:`reading` is
        False.
        """
        if not (self.reading or sensing.detector.enabled):
            sensing.skipped = True           # nothing reads r: no observer, no cost
            return None, None
        if sensing.skipped:
            sensing.skipped = False
            sensing.restart_observer()       # its past is stale: start from this state
        shift = None
        if adaptive_law is not None:
            inverse_dynamics = self._adaptive_dynamics(adaptive_law, q, qd)
            estimate = adaptive_law.estimate.tolist()
            last, sensing.estimate = sensing.estimate, estimate
            if last is not None and last != estimate:
                now_values = adaptive_law.model_values(q, qd, self._zeros, estimate)
                shift = [a - b for a, b in zip(now_values, adaptive_law.model_values(
                    q, qd, self._zeros, last))]
        else:
            inverse_dynamics = self._model_dynamics(q, qd)
            sensing.estimate = None
        r = sensing.observer.update(now, qd, inverse_dynamics, self.friction_values(qd),
                                    sensing.applied, shift)
        contact = sensing.detector.update(now, r)
        if contact is not None:
            self.contacts += 1
        return r, contact

    @staticmethod
    def _adaptive_dynamics(law, q, qd):
        """Return ``qdd -> M̂ qdd + Ĉ q̇ + ĝ`` of the adaptive law at ``(q, qd)``."""
        return lambda qdd: law.model_values(q, qd, qdd)

    def _model_dynamics(self, q, qd):
        """Return ``qdd -> M qdd + C q̇ + g`` of the law's model at ``(q, qd)``."""
        rnea_values, gravity = self._rnea_values, self._gravity

        def inverse_dynamics(qdd):
            tau = None if rnea_values is None else rnea_values(q, qd, qdd, gravity)
            if tau is None:
                tau = self.model.rnea(np.array(q), np.array(qd), np.array(qdd),
                                      gravity=np.array(gravity)).tolist()
            return tau
        return inverse_dynamics

    def comply_effort(self, q, qd, adaptive_law=None) -> List[float]:
        """Return what ``comply`` commands (n floats, clamped).

        Gravity (the learned load's too) and friction at the measured velocity, nothing
        else.
        """
        if adaptive_law is not None:
            tau = adaptive_law.values(q, self._zeros, q, self._zeros, self._zeros)[0]
            tau = [a + f for a, f in zip(tau, self.friction_values(qd))]
            limits = self._law.gain_values[2]
            return [-h if t < -h else h if t > h else t for t, h in zip(tau, limits)]
        return compute_effort_values(self.dynamics, self._comply_law, q, qd, q, qd,
                                     self._zeros)


__all__ = ['ContactMode']
