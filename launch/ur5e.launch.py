"""Computed-torque control of a UR5e (config/ur5e.urdf, config/ur5e.yaml).

By default the model is read from config/ur5e.urdf. Beside the UR driver or a simulator
that runs robot_state_publisher, pass ``urdf:=''`` to take the model from the
``/robot_description`` topic instead (the calibrated description of your robot).

    ros2 launch ne_dynamics_ros ur5e.launch.py
    ros2 launch ne_dynamics_ros ur5e.launch.py urdf:='' command_topic:=/effort_controller/commands
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare

PACKAGE = 'ne_dynamics_ros'


def generate_launch_description():
    """Include computed_torque.launch.py with the UR5e files."""
    share = FindPackageShare(PACKAGE)
    return LaunchDescription([
        DeclareLaunchArgument(
            'urdf', default_value=PathJoinSubstitution([share, 'config', 'ur5e.urdf']),
            description="URDF of the UR5e; '' to use the /robot_description topic."),
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([share, 'config', 'ur5e.yaml']),
            description='Node parameters for the UR5e (gains, chain ends).'),
        DeclareLaunchArgument(
            'command_topic', default_value='/effort_controller/commands',
            description='Float64MultiArray topic of the effort controller.'),
        DeclareLaunchArgument(
            'namespace', default_value='', description='Namespace of the node.'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false',
            description='Use the /clock topic (simulation) for trajectory timing.'),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                PathJoinSubstitution([share, 'launch', 'computed_torque.launch.py'])),
            launch_arguments={
                'urdf': LaunchConfiguration('urdf'),
                'params_file': LaunchConfiguration('params_file'),
                'command_topic': LaunchConfiguration('command_topic'),
                'namespace': LaunchConfiguration('namespace'),
                'use_sim_time': LaunchConfiguration('use_sim_time'),
            }.items()),
    ])
