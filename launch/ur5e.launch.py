r"""Computed-torque control of a real UR5e through Universal Robots' ROS 2 driver.

Commands go to the driver's ``/forward_effort_controller/commands`` (direct torque
control); config/ur5e.yaml tells the node that the robot compensates gravity and friction
itself, so the torques sent leave them out. The node starts unconfigured
(``autostart:=false``), as a hardware controller is operated: launch it, switch the
driver's controllers, then configure and activate it::

    ros2 launch ne_dynamics_ros ur5e.launch.py
    ros2 control switch_controllers --deactivate scaled_joint_trajectory_controller \
        --activate forward_effort_controller
    ros2 lifecycle set /computed_torque_node configure
    ros2 lifecycle set /computed_torque_node activate     # holds the current position

``ros2 lifecycle set /computed_torque_node deactivate`` sends zero effort once and stops.

The model is read from config/ur5e.urdf; pass ``urdf:=robot_description`` to take it from
the driver's ``/robot_description`` topic instead (the calibrated description of your
robot). For a simulated UR5e (full torque, gravity included, to an effort controller)
use ur5e_sim.launch.py.
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
            description="URDF of the UR5e; robot_description to use that topic."),
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([share, 'config', 'ur5e.yaml']),
            description='Node parameters for the UR5e (gains, chain ends, what the robot '
                        'compensates).'),
        DeclareLaunchArgument(
            'command_topic', default_value='/forward_effort_controller/commands',
            description='Float64MultiArray topic of the effort controller.'),
        DeclareLaunchArgument(
            'namespace', default_value='', description='Namespace of the node.'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false',
            description='Use the /clock topic (simulation) for trajectory timing.'),
        DeclareLaunchArgument(
            'autostart', default_value='false',
            description='false (a real arm): the node waits unconfigured for ros2 '
                        'lifecycle set configure / activate; true: start commanding at '
                        'once.'),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                PathJoinSubstitution([share, 'launch', 'computed_torque.launch.py'])),
            launch_arguments={
                'urdf': LaunchConfiguration('urdf'),
                'params_file': LaunchConfiguration('params_file'),
                'command_topic': LaunchConfiguration('command_topic'),
                'namespace': LaunchConfiguration('namespace'),
                'use_sim_time': LaunchConfiguration('use_sim_time'),
                'autostart': LaunchConfiguration('autostart'),
            }.items()),
    ])
