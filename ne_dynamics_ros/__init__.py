"""ne_dynamics_ros: URDF -> DH/MDH models, recursive Newton–Euler dynamics, computed torque.

Layers (each imports only the ones before it; only ``nodes`` and ``tools`` import ROS):

* :mod:`ne_dynamics_ros.dynamics`: URDF import, DH/MDH frames, the recursions,
  :class:`RobotModel`;
* :mod:`ne_dynamics_ros.codegen`: the robot-specific generated dynamics (Renaud 1987);
* :mod:`ne_dynamics_ros.control`: control laws, trajectories and profiles, goals, the
  :class:`~ne_dynamics_ros.control.controller.ComputedTorqueController`;
* :mod:`ne_dynamics_ros.identification`: excitation, recordings, estimation, a URDF out;
* :mod:`ne_dynamics_ros.simulation`: the Pinocchio and MuJoCo plants and an in-process
  closed loop;
* :mod:`ne_dynamics_ros.nodes`: the ROS 2 nodes (message adapters only);
* :mod:`ne_dynamics_ros.tools`: the ``ne-dynamics`` and ``ne-dynamics-demo`` commands.

>>> from ne_dynamics_ros import load_model
>>> model = load_model('config/ur5e.urdf', tip_link='tool0', convention='dh')
>>> tau = model.rnea(q, qd, qdd)          # doctest: +SKIP
"""
from typing import TYPE_CHECKING

from ._facade import lazy_exports

if TYPE_CHECKING:       # the names below, imported on first use (see _facade)
    from .dynamics import Convention, DHRow, fk_residual, JointType, load_model, RobotModel
    from .errors import InertiaError, ModelError, StateError, URDFError

__getattr__, __dir__ = lazy_exports(__name__, {
    **dict.fromkeys(('Convention', 'DHRow', 'fk_residual', 'JointType', 'load_model',
                     'RobotModel'), '.dynamics'),
    **dict.fromkeys(('InertiaError', 'ModelError', 'StateError', 'URDFError'), '.errors')})

__all__ = [
    'Convention', 'DHRow', 'JointType', 'InertiaError', 'ModelError', 'StateError',
    'URDFError', 'fk_residual', 'load_model', 'RobotModel',
]
