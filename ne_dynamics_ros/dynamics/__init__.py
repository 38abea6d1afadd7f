"""The dynamics core: URDF -> DH/MDH model, recursive Newton-Euler, derived quantities.

Pure Python + NumPy (no ROS import). Modules:

* :mod:`.urdf_import`: URDF parsing (defusedxml, urdf_parser_py), the kinematic chain
  from ``base_link`` to ``tip_link``, lumping of fixed links.
* :mod:`.dh`: standard DH and Craig's modified DH (MDH) frames and tables.
* :mod:`.rnea`: the two recursions, modified DH (Craig 2005, §6.5) and Luh-Walker-Paul
  (Lee et al. 1982, eqs 3.21-3.27), with the prismatic joints of Sasaki (1990).
* :mod:`.model`: :class:`RobotModel` and :func:`load_model`, the public entry point.
"""
from .dh import Convention, DHRow, JointType
from .model import fk_residual, load_model, RobotModel

__all__ = ['Convention', 'DHRow', 'JointType', 'fk_residual', 'load_model', 'RobotModel']
