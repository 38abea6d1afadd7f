"""What the controller's states change, in one object beside its model: :class:`ControllerData`.

Pure module (no ROS). Pinocchio keeps what is fixed after building (``pinocchio.Model``)
apart from what a computation changes (``pinocchio.Data``); the controller does the same.
What is fixed between two reconfigurations is the controller's own: its
:class:`~ne_dynamics_ros.dynamics.model.RobotModel` (``model``), the law's class, gains
and settings (``context``, ``settings``), the command order and the effort limits.
Everything its states, trajectories and goals change is one :class:`ControllerData`
(``controller.data``), made once with the controller:

* ``runs``: the run in force (:class:`~.run_state.Runs`: its lock and clock, and the
  :class:`~.run_state.RunState` with the run's law, its integral and its
  :class:`~.sensing.activation.Sensing`: the velocity estimator, the momentum observer,
  the contact detector), replaced whole on a restart;
* ``references``: the trajectories and goals installed, and every goal's end on one queue
  (:class:`~.references.References`);
* what is learned across runs: the load (:class:`~.laws.adaptive.LoadEstimate`) and the
  drives' Coulomb level (:class:`~.sensing.friction_estimate.CoulombEstimate`);
* ``contact_supervisor``: the reaction to a contact and the external wrench
  (:class:`~.sensing.contact.ContactSupervisor`);
* ``repeats`` and ``sent``: the states that repeated a measurement, and the commands in
  flight (:mod:`~.prediction`);
* ``dropped_joint_states``: the states dropped since the controller was built.

A law keeps what it changes between states in itself, and the run's law is the run's
(``runs.current.law``): a new run makes a new law.
"""
from dataclasses import dataclass, field

from ne_dynamics_ros.control.laws.adaptive import LoadEstimate
from ne_dynamics_ros.control.prediction import RepeatedStates, SentCommands
from ne_dynamics_ros.control.references import References
from ne_dynamics_ros.control.run_state import Runs
from ne_dynamics_ros.control.sensing.contact import ContactSupervisor
from ne_dynamics_ros.control.sensing.friction_estimate import CoulombEstimate
from ne_dynamics_ros.errors import ControlParameterError, ModelError


@dataclass(eq=False)
class ControllerData:
    """What the controller's states change (module docstring); one per controller.

    Attributes:
        runs: the run in force, its lock and its clock (:class:`~.run_state.Runs`).
        references: trajectories and goals (:class:`~.references.References`).
        load: the load learned at the adaptation link, kept across runs.
        friction_estimate: the drives' Coulomb level learned, kept across runs.
        contact_supervisor: the momentum observer's contacts and the external wrench.
        repeats: states that repeated the previous measurement under a newer stamp
            (:class:`~.prediction.RepeatedStates`).
        sent: the commands in flight, for ``delay_prediction: model``
            (:class:`~.prediction.SentCommands`).
        dropped_joint_states: states dropped (unreadable, invalid, no valid effort).
    """

    runs: Runs
    references: References
    load: LoadEstimate
    friction_estimate: CoulombEstimate
    contact_supervisor: ContactSupervisor
    repeats: RepeatedStates = field(default_factory=RepeatedStates)
    sent: SentCommands = field(default_factory=SentCommands)
    dropped_joint_states: int = 0

    @classmethod
    def new(cls, model, dynamics, effort_limits, adaptation_link, with_gravity=True,
            with_friction=True) -> 'ControllerData':
        """Make the data of a controller of ``model`` (its first run inactive until set).

        Args:
            model: the :class:`~ne_dynamics_ros.dynamics.model.RobotModel`; ``dynamics``:
                what the law calls for M, C, g (the model or its generated program).
            effort_limits: (n,) symmetric limits in chain order, N*m (N).
            adaptation_link: the link a load is learned at.
            with_gravity, with_friction: the references' effort check counts g(q) and the
                drives' friction (False: the hardware adds them).

        Raises:
            ControlParameterError: no such adaptation link in the chain.
        """
        try:
            load = LoadEstimate(model, adaptation_link)
        except ModelError as err:
            raise ControlParameterError(str(err)) from None
        runs = Runs(model.n)
        return cls(runs=runs,
                   references=References(model, effort_limits, runs,
                                         with_gravity=with_gravity,
                                         with_friction=with_friction),
                   load=load,
                   friction_estimate=CoulombEstimate(model.friction, model.coulomb_velocity),
                   contact_supervisor=ContactSupervisor(model, dynamics))


__all__ = ['ControllerData']
