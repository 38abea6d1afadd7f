"""Joint-space control: laws, references, sensing, and the controller that decides.

Pure Python + NumPy (no ROS import); imports only :mod:`ne_dynamics_ros.dynamics` and
:mod:`ne_dynamics_ros.codegen`. By concern, each import running downwards only:

* :mod:`.reference`: trajectories, splines, profiles, goals, the effort check and the
  efforts of a goal's points (what the arm should do);
* :mod:`.laws`: the control laws, one module each, and their registry
  (:mod:`.laws.registry`: the one list of modes), the clamp, the gain rule, the integral
  action, the Slotine–Li estimator and the physical load;
* :mod:`.sensing`: measured states, velocities, the momentum observer, contacts, the
  friction estimate and the wrench (what the arm does);
* :mod:`.config`: what a parameter is and the checks its values pass (the bottom);
* the controller's run, at the top: :mod:`.controller`
  (:class:`ComputedTorqueController`, every decision of the node), :mod:`.data` (what its
  states change, in one object beside the model), :mod:`.run_state` (what one run
  changes, and its answers), :mod:`.references` (references installed and
  goals judged), :mod:`.law_inputs`, :mod:`.prediction` (across the loop's delay),
  :mod:`.state_loss`, :mod:`.parameters` (the node's parameter table: its own rows and
  each law's) and :mod:`.settings` (the controller's settings, made from it).
"""
from typing import TYPE_CHECKING

from .._facade import lazy_exports

if TYPE_CHECKING:       # the names below, imported on first use (see ne_dynamics_ros._facade)
    from .controller import ComputedTorqueController
    from .laws.registry import ControlMode
    from .sensing.measured_state import JointStateSample
    from .run_state import Command, NoCommand, SkipReason, Timeout
    from .settings import ControllerSettings

__getattr__, __dir__ = lazy_exports(__name__, {
    'ComputedTorqueController': '.controller', 'ControlMode': '.laws.registry',
    'JointStateSample': '.sensing.measured_state', 'ControllerSettings': '.settings',
    **dict.fromkeys(('Command', 'NoCommand', 'SkipReason', 'Timeout'), '.run_state')})

__all__ = ['Command', 'ComputedTorqueController', 'ControllerSettings', 'ControlMode',
           'JointStateSample', 'NoCommand', 'SkipReason', 'Timeout']
