"""Computed-torque control of a simulated UR5e (full torque, gravity included).

computed_torque.launch.py with config/ur5e.urdf, config/ur5e_sim.yaml and the command
topic of an
``effort_controllers/JointGroupEffortController`` named ``effort_controller`` (Gazebo,
MuJoCo, or ``sim_arm_node``)::

    ros2 launch ne_dynamics_ros ur5e_sim.launch.py              # node + simulated UR5e
    ros2 launch ne_dynamics_ros ur5e_sim.launch.py plant:=mujoco
    ros2 launch ne_dynamics_ros ur5e_sim.launch.py sim:=false   # the node alone (Gazebo...)

Starts ``computed_torque_node`` and, with ``sim:=true`` (the default), ``sim_arm_node``:
a UR5e (Pinocchio or MuJoCo) at ``initial_positions`` (default 0, -90, 90, -90, -90, 0
deg, the demo's start), held by its brakes until the node's first command.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare

PACKAGE = 'ne_dynamics_ros'


def generate_launch_description():
    """Include computed_torque.launch.py with the UR5e and the simulation's parameters."""
    share = FindPackageShare(PACKAGE)
    return LaunchDescription([
        DeclareLaunchArgument(
            'urdf', default_value=PathJoinSubstitution([share, 'config', 'ur5e.urdf']),
            description='URDF of the UR5e.'),
        DeclareLaunchArgument(
            'params_file',
            default_value=PathJoinSubstitution([share, 'config', 'ur5e_sim.yaml']),
            description='Node parameters for the simulated UR5e.'),
        DeclareLaunchArgument(
            'command_topic', default_value='/effort_controller/commands',
            description='Float64MultiArray topic of the effort controller.'),
        DeclareLaunchArgument(
            'autostart', default_value='true',
            description='Configure and activate the node at start-up (false: wait for ros2 '
                        'lifecycle set configure / activate).'),
        DeclareLaunchArgument(
            'sim', default_value='true',
            description='Also start sim_arm_node, the simulated arm (false: the node alone).'),
        DeclareLaunchArgument(
            'plant', default_value='pinocchio',
            description='The simulated arm\'s engine: pinocchio or mujoco.'),
        DeclareLaunchArgument(
            'initial_positions', default_value='[0.0, -1.5708, 1.5708, -1.5708, -1.5708, 0.0]',
            description='The simulated arm\'s start, rad (held until the first command).'),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                PathJoinSubstitution([share, 'launch', 'computed_torque.launch.py'])),
            launch_arguments={
                'sim': LaunchConfiguration('sim'),
                'plant': LaunchConfiguration('plant'),
                'initial_positions': LaunchConfiguration('initial_positions'),
                'urdf': LaunchConfiguration('urdf'),
                'params_file': LaunchConfiguration('params_file'),
                'command_topic': LaunchConfiguration('command_topic'),
                # a simulated arm commands at once (the real arm's launch waits)
                'autostart': LaunchConfiguration('autostart'),
            }.items()),
    ])
