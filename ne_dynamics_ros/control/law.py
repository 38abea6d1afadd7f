"""Control laws as objects: one class per law behind one small protocol (no ROS).

The controller (:class:`~ne_dynamics_ros.control.controller.ComputedTorqueController`)
chooses the law once, when its settings apply, and asks it for the effort of every
state; what a law keeps between states (the Cartesian target, the adaptive law's clock)
lives in the law object, and the law object lives in the controller's run state
(:class:`~ne_dynamics_ros.control.run_state.RunState`): a restart (activation, a timeout's
end, a cancel, a contact's hold) starts a new run with a new law object.

The protocol (:class:`Law`):

``mode``
    the :class:`~ne_dynamics_ros.control.laws.ControlMode` it implements;
``follows_trajectory``
    True: the run's reference (a trajectory, or the hold) is what the law tracks, and
    trajectories and goals are taken; False: they are refused with :attr:`Law.refusal`;
``integrates``
    True: the integral action (``ki``) adds to the law's effort;
``effort(step)``
    the n efforts (chain order, N·m or N) of one :class:`LawStep`, clamped to the effort
    limits and checked finite (:class:`~ne_dynamics_ros.control.laws.NonFiniteEffortError`
    otherwise);
``reconfigured(context)``
    the law under new settings of the same mode: a new object, with what the law
    keeps (the Cartesian target and posture) carried over.

A law is built from a :class:`LawContext`: what is fixed while the controller lives (the
model, its generated program, the adaptive and contact parts) and the settings in force.
:data:`LAWS` maps each mode to its class: adding a law is a module with its class, its
rows in the parameter table (:mod:`~ne_dynamics_ros.control.parameters`) and its line
in :data:`LAWS` (``docs/architecture.md`` shows it with the Cartesian law).

The contact reactions are strategies keyed by :class:`ContactReaction` (:data:`
CONTACT_REACTIONS`): what the run becomes when the momentum observer reports a contact.

Units: q in rad (m for prismatic joints), qd in rad/s, qdd in rad/s², efforts in N·m (N).
"""
import enum
from typing import Callable, Dict

from ne_dynamics_ros.control.cartesian_law import CartesianImpedanceLaw
from ne_dynamics_ros.control.law_base import (  # noqa: F401 - the protocol, with the laws
    clamped, Law, LawContext, LawStep, LOAD_CARRYING_MODES)
from ne_dynamics_ros.control.laws import compute_effort_values, ControlMode


class _JointLaw(Law):
    """A joint-space law of :mod:`~ne_dynamics_ros.control.laws` on the run's reference."""

    def effort(self, step):
        """Return the n clamped efforts of one state (:class:`Law`)."""
        context = self.context
        return compute_effort_values(context.dynamics, context.config, step.q, step.qd,
                                     *step.reference, step.extra)


class ComputedTorqueLaw(_JointLaw):
    """Computed torque: Lee, Chung, Mudge & Turney (1982), eqs 4.1, 4.4.

    :func:`~ne_dynamics_ros.control.laws.computed_torque`, on the run's reference.
    """

    mode = ControlMode.COMPUTED_TORQUE


class FeedforwardLaw(_JointLaw):
    """Inverse dynamics of the reference plus a joint PD.

    :func:`~ne_dynamics_ros.control.laws.feedforward_pd`, on the run's reference.
    """

    mode = ControlMode.FEEDFORWARD


class GravityCompensationLaw(_JointLaw):
    """``tau = g(q)`` (and friction at the measured velocity): the arm floats."""

    mode = ControlMode.GRAVITY_COMPENSATION
    integrates = False


class AdaptiveLaw(Law):
    """Slotine & Li's (1987) adaptive computed torque, its step clock this run's.

    :mod:`~ne_dynamics_ros.control.adaptive_mode`: its estimate is the controller's
    (kept across runs and modes), its step clock this run's.
    """

    mode = ControlMode.ADAPTIVE
    needs_efforts = True

    def __init__(self, context):
        super().__init__(context)
        #: when the estimate was last advanced, s; None: not yet in this run
        self.adaptation_time = None

    def effort(self, step):
        """Return the n clamped efforts of one state (:class:`Law`)."""
        return self.context.adaptive.effort(self, step.now, (step.q, step.qd),
                                            step.reference, step.efforts,
                                            self.context.config, step.extra)


class ComplyLaw(Law):
    """What ``contact.reaction: comply`` commands: gravity and friction only.

    Gravity (the learned load's too) and friction at the measured velocity, nothing
    else, until a new reference comes.
    """

    mode = None
    integrates = False

    def effort(self, step):
        """Return the n clamped efforts of one state (:class:`Law`)."""
        context = self.context
        return context.contact.comply_effort(step.q, step.qd, context.adaptive_law)

    def reconfigured(self, context):
        """Keep the arm complying under new settings (a new trajectory ends it)."""
        return ComplyLaw(context)


#: The law of each mode: ``LAWS[mode](context)`` builds it.
LAWS: Dict[ControlMode, Callable[[LawContext], Law]] = {
    ControlMode.COMPUTED_TORQUE: ComputedTorqueLaw,
    ControlMode.FEEDFORWARD: FeedforwardLaw,
    ControlMode.GRAVITY_COMPENSATION: GravityCompensationLaw,
    ControlMode.ADAPTIVE: AdaptiveLaw,
    ControlMode.CARTESIAN_IMPEDANCE: CartesianImpedanceLaw,
}


def make_law(context: LawContext) -> Law:
    """Return a new law of ``context.config.mode`` (:data:`LAWS`)."""
    return LAWS[context.config.mode](context)


class ContactReaction(str, enum.Enum):
    """What a contact the observer reports does to the run (``contact.reaction``)."""

    #: the goal is aborted and the run restarts holding the position (pose) measured
    HOLD = 'hold'
    #: the goal is aborted and the run restarts with :class:`ComplyLaw`
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


__all__ = ['AdaptiveLaw', 'clamped', 'ComplyLaw', 'ComputedTorqueLaw', 'CONTACT_REACTIONS',
           'ContactReaction', 'FeedforwardLaw', 'GravityCompensationLaw', 'Law',
           'LawContext', 'LAWS', 'LawStep', 'LOAD_CARRYING_MODES', 'make_law']
