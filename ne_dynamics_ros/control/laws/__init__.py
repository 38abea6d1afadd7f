"""The control laws: one module per law, one protocol, one registry (no ROS).

* :mod:`.base`: the protocol (:class:`~.base.Law`, :class:`~.base.JointLaw`), what a law
  is built from and sees (:class:`~.base.LawContext`, :class:`~.base.LawStep`), the
  gains in force (:class:`~.base.JointGains`), the one clamp;
* :mod:`.registry`: the modes and their laws, the only place that names a mode;
  each law declares its rows of the node's parameter table in its module
  (:attr:`~.base.Law.parameters`) and its own topics (:attr:`~.base.Law.topics`,
  :class:`~.base.LawTopic`), which the node makes for every law of the registry;
* one module per law: :mod:`.computed_torque` (Lee, Chung, Mudge & Turney 1982),
  :mod:`.feedforward`, :mod:`.gravity`, :mod:`.adaptive` (Slotine & Li 1987),
  :mod:`.cartesian` (Cartesian impedance, Albu-Schäffer et al. 2003), and
  :mod:`.comply` (what a contact's ``comply`` reaction commands; not a mode);
* what the laws share: :mod:`.gains` (the gain and stiffness rule), :mod:`.integral`
  (the integral action), :mod:`.slotine_li` (the Slotine–Li estimator of the adaptive
  law) and :mod:`.physical_load` (the load as a physical body).

Units: q in rad (m for prismatic joints), qd in rad/s, qdd in rad/s², efforts in N·m (N).
"""
from ne_dynamics_ros.control.laws.base import (clamp, InertiaInput, JointGains, JointLaw, Law,
                                               LawContext, LawInputError, LawStep, LawTopic,
                                               PoseInput, reference_friction, TOPIC_KINDS,
                                               WrenchInput)
from ne_dynamics_ros.control.laws.comply import ComplyLaw
from ne_dynamics_ros.control.laws.registry import (compute_effort, compute_effort_values,
                                                   ControlMode, INPUTS, LAW_CLASSES,
                                                   LAW_TOPICS, law_class, LAWS, make_law,
                                                   parse_mode)
from ne_dynamics_ros.errors import ControlParameterError, NonFiniteEffortError

__all__ = ['clamp', 'ComplyLaw', 'compute_effort', 'compute_effort_values',
           'ControlMode', 'ControlParameterError', 'InertiaInput', 'INPUTS', 'JointGains',
           'JointLaw', 'Law', 'LAW_CLASSES', 'LAW_TOPICS', 'law_class', 'LawContext',
           'LawInputError', 'LAWS', 'LawStep', 'LawTopic', 'make_law', 'NonFiniteEffortError',
           'parse_mode', 'PoseInput', 'reference_friction', 'TOPIC_KINDS', 'WrenchInput']
