"""Joint-space control: laws, references, and the controller that decides.

Pure Python + NumPy (no ROS import); imports only :mod:`ne_dynamics_ros.dynamics` and
:mod:`ne_dynamics_ros.codegen`.

* :mod:`.laws`: the control laws, one module each, and their registry
  (:mod:`.laws.registry`: the one list of modes), effort clamping;
* :mod:`.trajectory`: trajectories validated and interpolated like
  joint_trajectory_controller;
* :mod:`.profiles`: quintic and trapezoidal point-to-point profiles (Sasaki 1990, §4);
* :mod:`.velocity_estimator`: filtered finite differences for states without velocities;
* :mod:`.parameters`: the one table of the node's parameters;
* :mod:`.settings`: the controller's run-time settings, generated from that table;
* :mod:`.measured_state`: joint states read, checked and given velocities;
* :mod:`.run_state`: what one run of the controller changes, and its answers;
* :mod:`.goals`: FollowJointTrajectory goals as joint_trajectory_controller judges them;
* :mod:`.controller`: :class:`ComputedTorqueController`, every decision of the node.
"""
from typing import TYPE_CHECKING

from .._facade import lazy_exports

if TYPE_CHECKING:       # the names below, imported on first use (see ne_dynamics_ros._facade)
    from .controller import ComputedTorqueController
    from .laws.registry import ControlMode
    from .measured_state import JointStateSample
    from .run_state import Command, NoCommand, SkipReason, Timeout
    from .settings import ControllerSettings

__getattr__, __dir__ = lazy_exports(__name__, {
    'ComputedTorqueController': '.controller', 'ControlMode': '.laws.registry',
    'JointStateSample': '.measured_state', 'ControllerSettings': '.settings',
    **dict.fromkeys(('Command', 'NoCommand', 'SkipReason', 'Timeout'), '.run_state')})

__all__ = ['Command', 'ComputedTorqueController', 'ControllerSettings', 'ControlMode',
           'JointStateSample', 'NoCommand', 'SkipReason', 'Timeout']
