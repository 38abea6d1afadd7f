"""Computed-torque control of the PUMA 560 (config/puma560.urdf, config/puma560.yaml).

Gains K_p = 100, K_v = 20 on each joint as in Lee et al. (1982), section 5, armature from
config/puma560.yaml.

    ros2 launch ne_dynamics_ros puma560.launch.py             # node + simulated PUMA
    ros2 launch ne_dynamics_ros puma560.launch.py plant:=mujoco
    ros2 launch ne_dynamics_ros puma560.launch.py sim:=false  # the node alone (a real arm)

Starts ``computed_torque_node`` and, with ``sim:=true`` (the default), ``sim_arm_node``:
a PUMA 560 (Pinocchio or MuJoCo) at ``initial_positions`` (default all zeros, inside the
URDF's limits; Lee et al.'s start has joint 3 at 90 deg, beyond them), held by its
brakes until the node's first command.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare

PACKAGE = 'ne_dynamics_ros'


def generate_launch_description():
    """Include computed_torque.launch.py with the PUMA 560 files."""
    share = FindPackageShare(PACKAGE)
    return LaunchDescription([
        DeclareLaunchArgument(
            'urdf', default_value=PathJoinSubstitution([share, 'config', 'puma560.urdf']),
            description='URDF of the PUMA 560.'),
        DeclareLaunchArgument(
            'params_file',
            default_value=PathJoinSubstitution([share, 'config', 'puma560.yaml']),
            description='Node parameters for the PUMA 560 (gains, armature).'),
        DeclareLaunchArgument(
            'command_topic', default_value='/effort_controller/commands',
            description='Float64MultiArray topic of the effort controller.'),
        DeclareLaunchArgument(
            'namespace', default_value='', description='Namespace of the node.'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false',
            description='Use the /clock topic (simulation) for trajectory timing.'),
        DeclareLaunchArgument(
            'sim', default_value='true',
            description='Also start sim_arm_node, the simulated arm (false: the node alone).'),
        DeclareLaunchArgument(
            'plant', default_value='pinocchio',
            description='The simulated arm\'s engine: pinocchio or mujoco.'),
        DeclareLaunchArgument(
            'initial_positions', default_value='[0.0, 0.0, 0.0, 0.0, 0.0, 0.0]',
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
                'namespace': LaunchConfiguration('namespace'),
                'use_sim_time': LaunchConfiguration('use_sim_time'),
            }.items()),
    ])
