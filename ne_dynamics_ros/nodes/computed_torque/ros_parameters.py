"""The node's parameters: descriptors and validation, built from the one table.

:data:`ne_dynamics_ros.control.parameters.PARAMETERS` says what each parameter is; here
it becomes ROS: a ``ParameterDescriptor`` per parameter (description with the unit,
``additional_constraints``, read-only unless it may change at run time), the values read
back from the node, and the on-set validation (the table's check of each value, then the
controller's of the whole set).
"""
import os

from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.parameter import Parameter

from ne_dynamics_ros.control import parameters as table
from ne_dynamics_ros.control.config.parameter_checks import scalar
from ne_dynamics_ros.control import ComputedTorqueController, ControllerSettings
from ne_dynamics_ros.errors import ControlParameterError
from ne_dynamics_ros.resources import find_resource

#: The parameters that may change while the node runs (the controller's settings).
RUNTIME_PARAMETERS = table.RUNTIME


class NodeConfigurationError(ValueError):
    """The node cannot be configured: bad or missing robot description or parameters."""


def descriptor(spec):
    """Return the ``ParameterDescriptor`` of one parameter of the table (a ``ParameterSpec``)."""
    description = spec.description + (f' Unit: {spec.unit}.' if spec.unit else '')
    # arrays, numbers given as one value or one per joint, and unset defaults take any type
    dynamic = spec.type in ('double_array', 'string_array', 'double', 'integer') \
        or spec.default is None
    return ParameterDescriptor(description=description, read_only=not spec.runtime,
                               dynamic_typing=dynamic,
                               additional_constraints=spec.constraints)


#: name -> (default, descriptor), as the node declares them.
PARAMETERS = {spec.name: (spec.default, descriptor(spec)) for spec in table.PARAMETERS}


def declare(node):
    """Declare every parameter of the table on ``node``."""
    for name, (default, desc) in PARAMETERS.items():
        node.declare_parameter(name, default, desc)


def declare_joint_constraints(node, joint_names):
    """Declare ``constraints.<joint>.trajectory`` and ``.goal`` for each chain joint.

    As joint_trajectory_controller, whose per-joint names its parameter file (and
    MoveIt's setups) use: path and final position tolerances of the action's goals, rad
    (m), 0 = not checked. Values given at start-up (``--params-file``, launch) are taken.
    Already declared ones (a second configure) are left as they are.

    Raises:
        NodeConfigurationError: a negative or non-finite value.
    """
    for joint in joint_names:
        for which, what in (('trajectory', 'path (while moving)'),
                            ('goal', 'final (after the last point)')):
            name = f'constraints.{joint}.{which}'
            if not node.has_parameter(name):
                node.declare_parameter(name, 0.0, ParameterDescriptor(
                    description=f'FollowJointTrajectory {what} position tolerance of '
                                f'{joint}; 0 = not checked. Unit: rad or m.',
                    read_only=True, dynamic_typing=True, additional_constraints='>= 0'))
            value = node.get_parameter(name).value
            try:
                value = scalar(value, name)
                if not (0.0 <= value < float('inf')):
                    raise ControlParameterError(f'{name} must be finite and >= 0, got {value}')
            except ControlParameterError as err:
                raise NodeConfigurationError(f'invalid parameter: {err}') from None


def unset_to_none(param):
    """Return a parameter's value; None if never set or set to an empty array."""
    if param.type_ == Parameter.Type.NOT_SET:
        return None
    if param.type_.name.endswith('_ARRAY') and len(param.value) == 0:
        return None
    return param.value


def values(node):
    """Return {name: value} of every parameter (None where unset)."""
    return {name: unset_to_none(node.get_parameter_or(name)) for name in PARAMETERS}


def check_all(node):
    """Check every parameter value against the table (before the model is known).

    Raises:
        NodeConfigurationError: naming the parameter and what is wrong.
    """
    try:
        for name, value in values(node).items():
            table.check(name, value)
    except ControlParameterError as err:
        raise NodeConfigurationError(f'invalid parameter: {err}') from None


def runtime_values(node, changes=()):
    """Run-time parameter values by name, with the ``Parameter`` list ``changes`` applied."""
    current = {name: node.get_parameter_or(name).value for name in RUNTIME_PARAMETERS}
    current.update((p.name, p.value) for p in changes if p.name in current)
    return current


def validate_changes(node, controller, params):
    """On-set validation of run-time values: the whole set, each value by the table.

    rclpy refuses changes to read-only parameters before this runs; the run-time ones
    are checked by :meth:`ControllerSettings.from_values`, which applies the table's check
    to each. Returns a ``SetParametersResult`` (refused with the reason).
    """
    try:
        merged = runtime_values(node, params)
        if controller is not None:
            controller.validate(**merged)
        else:
            ControllerSettings.from_values(merged)
    except ValueError as err:
        return SetParametersResult(successful=False, reason=str(err))
    return SetParametersResult(successful=True)


def robot_description(node):
    """Return ``(URDF XML text, where it came from)`` of the node's parameters.

    ``robot_description`` if set, else the file ``urdf_path`` (absolute, relative to the
    working directory, or inside the package's share); ``(None, '')`` when both are empty
    (the description is to come on the ``robot_description`` topic).

    Raises:
        NodeConfigurationError: ``urdf_path`` names no file, or one that cannot be read.
    """
    xml = node.get_parameter('robot_description').value
    if xml.strip():
        return xml, 'robot_description parameter'
    path = node.get_parameter('urdf_path').value
    if not path.strip():
        return None, ''
    from ne_dynamics_ros.dynamics.urdf_import import read_urdf_text
    if not os.path.exists(path):
        if os.path.isabs(path):
            raise NodeConfigurationError(f'urdf_path {path!r}: no such file')
        try:
            path = str(find_resource(path))      # a path inside the package's share
        except FileNotFoundError as err:
            raise NodeConfigurationError(
                f'urdf_path {path!r} not found: tried {os.path.abspath(path)!r}, then '
                f'{err}') from None
    try:
        text = read_urdf_text(path)              # encoding as declared, size bound
    except ValueError as err:
        raise NodeConfigurationError(f'cannot read urdf_path {path!r}: {err}') from None
    return text, f'urdf_path {path}'


def build_controller(node, urdf_xml):
    """Build the controller of ``urdf_xml`` (URDF text) with the node's parameters.

    Raises:
        NodeConfigurationError: the URDF or a parameter is unusable.
    """
    v = values(node)
    try:
        return ComputedTorqueController.from_urdf(
            urdf_xml, base_link=v['base_link'] or None, tip_link=v['tip_link'] or None,
            convention=v['convention'], armature=v['armature'], damping=v['damping'],
            friction=v['friction'], friction_velocity=v['friction_velocity'],
            friction_offset=v['friction_offset'], settings=runtime_values(node),
            hardware_compensates_gravity=v['hardware_compensates_gravity'],
            hardware_compensates_friction=v['hardware_compensates_friction'],
            joints=v['joints'], effort_limits=v['effort_limits'],
            dynamics_backend=v['dynamics_backend'],
            adaptation_link=v['adaptation_link'] or None)
    except ValueError as err:
        # ModelError/URDFError/StateError and ControlParameterError are ValueErrors.
        raise NodeConfigurationError(f'cannot build the robot model: {err}') from err


__all__ = ['build_controller', 'check_all', 'declare', 'declare_joint_constraints',
           'descriptor', 'NodeConfigurationError', 'PARAMETERS', 'robot_description',
           'RUNTIME_PARAMETERS', 'runtime_values', 'unset_to_none', 'validate_changes',
           'values']
