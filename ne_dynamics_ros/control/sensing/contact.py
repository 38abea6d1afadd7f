"""The controller's contact supervision: the momentum observer on every state, contacts.

Pure module (no ROS). :class:`ContactSupervisor` feeds the
:class:`~ne_dynamics_ros.control.sensing.observer.MomentumObserver` and the
:class:`~ne_dynamics_ros.control.sensing.observer.ContactDetector` of the run (its
:class:`~ne_dynamics_ros.control.sensing.activation.Sensing`), on each valid state, from the model
the control law uses: its generated recursion
(or, in adaptive mode, Slotine & Li's law with the load it learned), gravity and friction
left out where the hardware compensates them (as the command leaves them out), and the
last command (clamped) as the effort that acted since the previous state. What a contact
does is ``contact.reaction``'s (:data:`CONTACT_REACTIONS`): the controller ends the goal
and restarts the run with the law the reaction gives.
"""
import enum
from typing import Dict, List, Optional, Tuple

import numpy as np

from ne_dynamics_ros.control.laws.base import Law
from ne_dynamics_ros.control.laws.comply import ComplyLaw
from ne_dynamics_ros.control.sensing.observer import AT_REST, Contact, STICTION_RANGE
from ne_dynamics_ros.control.sensing.wrench import tip_wrench, TipWrench
from ne_dynamics_ros.dynamics.kinematics import chain_kinematics
from ne_dynamics_ros.dynamics.friction import drive_friction, friction_values


class ContactReaction(str, enum.Enum):
    """What a contact the observer reports does to the run (``contact.reaction``)."""

    #: the goal is aborted and the run restarts holding the position (pose) measured
    HOLD = 'hold'
    #: the goal is aborted and the run restarts with :class:`~.laws.comply.ComplyLaw`
    COMPLY = 'comply'
    #: reported only
    IGNORE = 'ignore'


def _hold(law: Law) -> Law:
    return law.restarted()


def _comply(law: Law) -> Law:
    return ComplyLaw(law.context)


#: ``CONTACT_REACTIONS[reaction](law)``: the law of the run that starts at a contact
#: (None: the run goes on), and the words the node logs with the contact.
CONTACT_REACTIONS: Dict[ContactReaction, tuple] = {
    ContactReaction.HOLD: (_hold, 'goal aborted, trajectory dropped, holding the position '
                                  'measured then; a new goal or trajectory resumes'),
    ContactReaction.COMPLY: (_comply, 'goal aborted, trajectory dropped, gravity and '
                                      'friction compensation only (the arm yields); a new '
                                      'goal or trajectory resumes'),
    ContactReaction.IGNORE: (None, 'reported only (contact.reaction ignore)'),
}


class ContactSupervisor:
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
        #: compute r while contact detection is off too (somebody reads it: scripts,
        #: run_lockstep); False skips the observer then, and it restarts when wanted again
        self.reading = True
        #: map r to the tip's wrench on every state (somebody reads ~/external_wrench)
        self.wrench_wanted = False
        self._kinematics = None

    def apply(self, settings, gains):
        """Take ``contact.reaction`` and the gains in force (gravity, compensation flags).

        The run's observer and detector take their settings in
        :meth:`~ne_dynamics_ros.control.sensing.activation.Sensing.configure`.
        """
        self.reaction = settings.contact_reaction
        self._friction = not gains.hardware_compensates_friction
        self._friction_values = friction_values(self.model)
        self._gravity = ([0.0, 0.0, 0.0] if gains.hardware_compensates_gravity
                         else gains.gravity.tolist())

    @property
    def reaction_text(self) -> str:
        """Say what ``contact.reaction`` does (the node logs it with a contact)."""
        return CONTACT_REACTIONS[ContactReaction(self.reaction)][1]

    def react(self, law: Law) -> Optional[Law]:
        """Return the law of the run a contact starts from ``law``'s, or None (go on)."""
        reaction = CONTACT_REACTIONS[ContactReaction(self.reaction)][0]
        return None if reaction is None else reaction(law)

    def wrench(self, q, r, frame: str) -> TipWrench:
        """Return the tip's external wrench whose joint image is ``r`` at ``q`` (lists).

        :func:`~ne_dynamics_ros.control.sensing.wrench.tip_wrench` with the tip's Jacobian at
        ``q``; ``frame``: ``'tip'`` (the tip link's frame) or ``'base'`` (the base link's).
        """
        if self._kinematics is None:
            self._kinematics = chain_kinematics(self.model)
        T, J = self._kinematics.pose_and_jacobian(q)
        tip = frame == 'tip'
        return tip_wrench(J, r, T[:3, :3] if tip else None)._replace(
            frame_id=self.model.tip_link if tip else self.model.base_link)

    @staticmethod
    def declared(sensing, adaptive_law):
        """Take a declared load as the model's new truth, with no shift of the past.

        A load declared is one that just arrived (or left): the model before it was
        right for the motion before it, unlike an estimate the law corrects, whose
        change :meth:`observe` applies to the observer's past (``shift``). ``sensing``:
        the run's :class:`~ne_dynamics_ros.control.sensing.activation.Sensing`.
        """
        sensing.estimate = adaptive_law.estimate.tolist()

    def friction_values(self, qd, coulomb=None) -> List[float]:
        """Return the model's friction effort at the measured ``qd`` (n floats), or zeros.

        :func:`~ne_dynamics_ros.dynamics.friction.drive_friction` on plain floats, as
        :meth:`~ne_dynamics_ros.dynamics.model.RobotModel.friction_torques` on arrays;
        ``coulomb``: (n,) the Coulomb level to use in place of the model's ``Fc``, or None.
        """
        if not self._friction:
            return self._zeros
        damping, model_coulomb, velocity_scale, offset = self._friction_values
        return drive_friction(qd if isinstance(qd, list) else list(qd), damping,
                              model_coulomb if coulomb is None else coulomb,
                              velocity_scale, offset)

    def _friction_in_force(self, sensing, qd, estimate, shift):
        """Return (friction at ``qd``, shift): at the Coulomb level the arm was learned at.

        ``estimate``: the :class:`~ne_dynamics_ros.control.sensing.friction_estimate.
        CoulombEstimate` of the run's law (``law.context.friction``), or None: the model's
        ``Fc``. A change of it since the previous state is added to ``shift``, as a
        learned load is: ``r`` stays relative to the friction in force.
        """
        coulomb = None if estimate is None else estimate.coulomb
        friction = self.friction_values(qd, coulomb)
        last, sensing.coulomb = sensing.coulomb, coulomb
        # the estimate hands out a new list whenever it changes
        if self._friction and last is not None and coulomb is not None and last is not coulomb:
            change = [a - b for a, b in zip(friction, self.friction_values(qd, last))]
            shift = change if shift is None else [a + b for a, b in zip(shift, change)]
        return friction, shift

    def observe(self, sensing, now: float, q, qd, adaptive_law=None,
                law=None, wanted=False) -> Tuple[List[float], Optional[Contact]]:
        """Advance the run's observer to the state ``(q, qd)`` (lists) at ``now`` (s).

        ``sensing``: the run's :class:`~ne_dynamics_ros.control.sensing.activation.Sensing`;
        ``adaptive_law``: the adaptive law in force (its model carries the learned
        load), or None; ``law``: the run's law, or None: the observer's friction is at
        the Coulomb level learned (``law.context.friction``), and while ``law`` is
        :meth:`~ne_dynamics_ros.control.laws.base.Law.breaking_away`, a joint that does
        not slide yet (``|qd|`` under the friction estimate's sliding velocity, at least
        :data:`~.observer.AT_REST`) is in contact only beyond
        :data:`~.observer.STICTION_RANGE` times its Coulomb friction (the model's): a
        joint the law pulls from rest shows its drive's stiction in ``r`` until it
        breaks away, up to the friction's true level, which an identified model holds
        only approximately (measured: the hidden UR5e with twice the model's friction
        stopped a 5 cm step 32 ms in at wrist 1's 0.46 N·m, threshold 0.43). An
        obstacle the tip meets while a joint stands still is found beyond that range
        then, or once the pull ends. Returns ``(r, contact)``: r (n floats, N·m / N) and the
        :class:`~ne_dynamics_ros.control.sensing.observer.Contact` that starts with this state,
        or None; ``(None, None)`` while contact detection is off and neither
        :attr:`reading` nor ``wanted`` (the law in force reads r) is True.
        """
        if not (self.reading or wanted or sensing.detector.enabled):
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
        estimate = getattr(getattr(law, 'context', None), 'friction', None)
        friction, shift = self._friction_in_force(sensing, qd, estimate, shift)
        r = sensing.observer.update(now, qd, inverse_dynamics, friction, sensing.applied,
                                    shift)
        contact = sensing.detector.update(now, r,
                                          self._breakaway_floor(law, estimate, now, qd))
        if contact is not None:
            self.contacts += 1
            contact = sensing.detector.contact = self._stiction_told(contact, qd)
        return r, contact

    def _breakaway_floor(self, law, estimate, now, qd):
        """Return the detector's floor while ``law`` pulls joints from rest, else None.

        A joint is breaking away until it slides as the friction estimate counts
        sliding (:attr:`~.friction_estimate.CoulombEstimate.sliding_velocity`; without
        an estimate :data:`~.observer.AT_REST`): below that its friction is not learned.
        """
        if law is None or not self._friction or not law.breaking_away(now):
            return None
        rest = ([AT_REST] * len(qd) if estimate is None
                else estimate.sliding_velocity.tolist())
        return [STICTION_RANGE * c if -a < v < a else 0.0
                for c, v, a in zip(self._friction_values[1], qd, rest)]

    def _stiction_told(self, contact: Contact, qd) -> Contact:
        """Return ``contact`` with :attr:`~.observer.Contact.friction` set where it applies.

        The joint at rest (``|qd| <`` :data:`~.observer.AT_REST`) and ``|r|`` within
        :data:`~.observer.STICTION_RANGE` times its Coulomb friction (the model's).
        """
        if not self._friction:
            return contact
        j = self.model.joint_names.index(contact.joint)
        coulomb = self._friction_values[1][j]
        if abs(qd[j]) < AT_REST and 0.0 < abs(contact.effort) <= STICTION_RANGE * coulomb:
            return contact._replace(friction=float(coulomb))
        return contact

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


__all__ = ['CONTACT_REACTIONS', 'ContactReaction', 'ContactSupervisor']
