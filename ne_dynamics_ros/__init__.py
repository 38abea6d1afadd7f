"""ne_dynamics_ros: URDF -> DH/MDH models, recursive Newton–Euler dynamics, computed torque.

The dynamics core (this package's top level) is pure Python + NumPy and imports no ROS:

>>> from ne_dynamics_ros import load_model
>>> model = load_model('config/ur5e.urdf', tip_link='tool0', convention='dh')
>>> tau = model.rnea(q, qd, qdd)          # doctest: +SKIP
"""
from .dh import Convention, DHRow, JointType
from .errors import InertiaError, ModelError, StateError, URDFError
from .model import fk_residual, load_model, RobotModel

__all__ = [
    'Convention', 'DHRow', 'JointType', 'InertiaError', 'ModelError', 'StateError',
    'URDFError', 'fk_residual', 'load_model', 'RobotModel',
]
