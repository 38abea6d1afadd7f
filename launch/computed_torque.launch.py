"""Start computed_torque_node for any serial arm.

The robot model comes from ``robot_description`` (URDF XML) if given, else from the file
``urdf``; with ``urdf:=robot_description`` (or both empty) the node waits for the
``/robot_description`` topic (as published by robot_state_publisher or a robot driver).
A ``urdf`` or ``params_file`` that does not exist stops the launch with an error naming
the path, before any node runs (a typo must not leave an arm on default gains); a node
that exits with an error makes ``ros2 launch`` exit non-zero.
``params_file`` is a YAML file of node parameters (gains, mode, armature...; see
config/puma560.yaml). The effort command goes to ``command_topic``: the ``~/commands`` topic of an
``effort_controllers/JointGroupEffortController`` (or ``forward_command_controller`` with
``interface_name: effort``).

    ros2 launch ne_dynamics_ros computed_torque.launch.py \
        urdf:=/path/arm.urdf params_file:=/path/arm.yaml command_topic:=/arm_effort/commands

``sim:=true`` also starts ``sim_arm_node`` (``plant:=pinocchio`` or ``mujoco``) on the
same URDF, with the armature of ``params_file``, at ``initial_positions`` and held there
by its brakes until the node's first command: one command brings up a closed loop.
"""
import os

import yaml

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue


#: ``urdf:=robot_description``: take the model from the /robot_description topic (Jazzy's
#: ``ros2 launch`` does not accept an empty ``urdf:=''``).
TOPIC = 'robot_description'


def _node(context):
    params_file = LaunchConfiguration('params_file').perform(context)
    urdf = LaunchConfiguration('urdf').perform(context)
    overrides = {
        'robot_description': ParameterValue(LaunchConfiguration('robot_description'),
                                            value_type=str),
        'use_sim_time': ParameterValue(LaunchConfiguration('use_sim_time'), value_type=bool),
        'autostart': ParameterValue(LaunchConfiguration('autostart'), value_type=bool),
    }
    if params_file and not os.path.isfile(params_file):
        raise RuntimeError(f'params_file not found: {params_file} (no such file)')
    if urdf == TOPIC:
        overrides['urdf_path'] = ''
    elif urdf:
        if not os.path.isfile(urdf):
            raise RuntimeError(f'urdf not found: {urdf} (no such file; give '
                               f'urdf:={TOPIC} to use the /robot_description topic)')
        overrides['urdf_path'] = urdf
    parameters = ([params_file] if params_file else []) + [overrides]
    node = Node(
        package='ne_dynamics_ros',
        executable='computed_torque_node',
        name='computed_torque_node',
        namespace=LaunchConfiguration('namespace'),
        output='screen',
        emulate_tty=True,
        parameters=parameters,
        remappings=[('effort_controller/commands', LaunchConfiguration('command_topic'))],
        arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')],
    )
    actions = [node, RegisterEventHandler(OnProcessExit(target_action=node, on_exit=_failed))]
    if LaunchConfiguration('sim').perform(context).lower() == 'true':
        actions.insert(0, _sim_arm(context, urdf, params_file))
    return actions


def _sim_arm(context, urdf, params_file):
    """sim_arm_node on the node's URDF, with the armature the node's parameters give."""
    if not urdf or urdf == TOPIC:
        raise RuntimeError('sim:=true needs urdf:= a file (the simulated arm reads it)')
    armature = None
    if params_file:
        with open(params_file, encoding='utf-8') as stream:
            document = yaml.safe_load(stream) or {}
        for section in document.values():      # computed_torque_node, /**, ...
            values = (section or {}).get('ros__parameters', {})
            armature = values.get('armature', armature)
    parameters = {'urdf_path': urdf, 'plant': LaunchConfiguration('plant').perform(context),
                  'publish_rate': float(LaunchConfiguration('sim_rate').perform(context)),
                  'initial_positions': yaml.safe_load(
                      LaunchConfiguration('initial_positions').perform(context)),
                  'brakes': True,
                  'realtime_priority': int(
                      LaunchConfiguration('sim_realtime_priority').perform(context))}
    if armature is not None:
        parameters['armature'] = [float(v) for v in armature]
    return Node(package='ne_dynamics_ros', executable='sim_arm_node', name='sim_arm_node',
                namespace=LaunchConfiguration('namespace'), output='screen',
                emulate_tty=True, parameters=[parameters],
                remappings=[('/effort_controller/commands',
                             LaunchConfiguration('command_topic'))])


def _failed(event, context):
    """Make ``ros2 launch`` fail (exit 1) when the node exits with an error."""
    if event.returncode not in (0, None):
        raise RuntimeError(f'computed_torque_node exited with code {event.returncode}; '
                           'its error is printed above')


def generate_launch_description():
    """Declare the arguments and the node."""
    from ne_dynamics_ros.tools.launch_signals import quiet_keyboard_interrupt
    quiet_keyboard_interrupt()     # Ctrl-C must not break launch's run loop (its docstring)
    return LaunchDescription([
        DeclareLaunchArgument(
            'urdf', default_value='',
            description='Path of the URDF file of the arm (used when robot_description is '
                        'empty). robot_description (or empty): wait for the '
                        '/robot_description topic.'),
        DeclareLaunchArgument(
            'robot_description', default_value='',
            description='URDF XML of the arm; takes precedence over urdf.'),
        DeclareLaunchArgument(
            'params_file', default_value='',
            description='YAML file with computed_torque_node parameters (mode, kp, kd, '
                        'armature, joints, effort_limits...). Empty: node defaults.'),
        DeclareLaunchArgument(
            'command_topic', default_value='/effort_controller/commands',
            description='Float64MultiArray topic of the effort controller the torques go to.'),
        DeclareLaunchArgument(
            'namespace', default_value='',
            description='Namespace of the node (joint_states and robot_description are '
                        'resolved in it).'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false',
            description='Use the /clock topic (simulation) for trajectory timing.'),
        DeclareLaunchArgument(
            'autostart', default_value='true',
            description='Configure and activate the (lifecycle) node at start-up; false: it '
                        'waits unconfigured for ros2 lifecycle set '
                        '/computed_torque_node configure, then activate.'),
        DeclareLaunchArgument(
            'sim', default_value='false',
            description='true: also start sim_arm_node (a simulated arm on the same URDF, '
                        'the armature of params_file) for a closed loop.'),
        DeclareLaunchArgument(
            'plant', default_value='pinocchio',
            description='sim:=true: the simulated arm\'s engine, pinocchio or mujoco.'),
        DeclareLaunchArgument(
            'initial_positions', default_value='[0.0]',
            description='sim:=true: the simulated arm\'s start (rad or m, one per joint or '
                        'one for all), held by its brakes until the first command.'),
        DeclareLaunchArgument(
            'sim_rate', default_value='500.0',
            description='sim:=true: joint_states rate of the simulated arm, Hz.'),
        DeclareLaunchArgument(
            'sim_realtime_priority', default_value='60',
            description='sim:=true: SCHED_FIFO priority of the simulated arm where permitted '
                        '(0: the default scheduling). Above the node\'s 50: a real arm\'s '
                        'physics never waits for a CPU, and beside CPU-bound processes a '
                        'simulated arm at the default scheduling was starved (the UR5e '
                        'fell 0.77 rad, 2026-12-08).'),
        DeclareLaunchArgument(
            'log_level', default_value='info',
            description='Logging level of the node: debug, info, warn, error.'),
        OpaqueFunction(function=_node),
    ])
