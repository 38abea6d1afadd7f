"""Computed-torque control of a simulated UR5e (full torque, gravity included).

ur5e.launch.py with config/ur5e_sim.yaml and the command topic of an
``effort_controllers/JointGroupEffortController`` named ``effort_controller`` (Gazebo,
MuJoCo, or ``sim_arm_node``)::

    ros2 launch ne_dynamics_ros ur5e_sim.launch.py
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare

PACKAGE = 'ne_dynamics_ros'


def generate_launch_description():
    """Include ur5e.launch.py with the simulation's parameters and topic."""
    share = FindPackageShare(PACKAGE)
    return LaunchDescription([
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
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                PathJoinSubstitution([share, 'launch', 'ur5e.launch.py'])),
            launch_arguments={
                'params_file': LaunchConfiguration('params_file'),
                'command_topic': LaunchConfiguration('command_topic'),
                # a simulated arm commands at once (the real arm's launch waits)
                'autostart': LaunchConfiguration('autostart'),
            }.items()),
    ])
