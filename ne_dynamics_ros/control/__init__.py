"""Joint-space control: laws, references, and the controller that decides.

Pure Python + NumPy (no ROS import); imports only :mod:`ne_dynamics_ros.dynamics` and
:mod:`ne_dynamics_ros.codegen`.

* :mod:`.laws`: computed torque (``001_*`` eqs 4.1, 4.4), feedforward + PD, gravity
  compensation, effort clamping;
* :mod:`.trajectory`: trajectories validated and interpolated like
  joint_trajectory_controller;
* :mod:`.profiles`: quintic and Sasaki's trapezoidal point-to-point profiles (``002_*`` §4);
* :mod:`.velocity_estimator`: filtered finite differences for states without velocities;
* :mod:`.parameters`: the one table of the node's parameters;
* :mod:`.goals`: FollowJointTrajectory goals as joint_trajectory_controller judges them;
* :mod:`.controller`: :class:`ComputedTorqueController`, every decision of the node.
"""
from .controller import (Command, ComputedTorqueController, ControllerSettings,
                         JointStateSample, NoCommand, SkipReason, Timeout)
from .laws import ControlMode

__all__ = ['Command', 'ComputedTorqueController', 'ControllerSettings', 'ControlMode',
           'JointStateSample', 'NoCommand', 'SkipReason', 'Timeout']
