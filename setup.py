"""ament_python / pip packaging for ne_dynamics_ros."""
from glob import glob
import os

from setuptools import find_packages, setup

package_name = 'ne_dynamics_ros'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'benchmarks']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        (os.path.join('share', package_name, 'launch'), glob('launch/*.launch.py')),
        (os.path.join('share', package_name, 'config'), glob('config/*')),
    ],
    # The ROS 2 client libraries (rclpy, sensor_msgs, std_msgs, trajectory_msgs) are
    # deliberately not install_requires: in a ROS workspace they come from apt/rosdep,
    # in a plain venv from requirements/ros-jazzy.txt (the Jazzy wheels on PyPI).
    install_requires=['setuptools', 'numpy', 'urdf-parser-py', 'defusedxml'],
    extras_require={
        'ros-jazzy-wheels': [
            'ros-jazzy-rclpy[fastrtps]', 'ros-jazzy-sensor-msgs',
            'ros-jazzy-std-msgs', 'ros-jazzy-trajectory-msgs', 'ros-jazzy-lifecycle-msgs',
            'ros-jazzy-diagnostic-msgs', 'ros-jazzy-geometry-msgs',
        ],
        'sim': ['pin', 'matplotlib'],
        'identify': ['scipy', 'cvxpy', 'rosbags', 'tqdm', 'pyyaml'],
        'mujoco': ['mujoco'],
        'test': ['pytest', 'pytest-timeout', 'hypothesis', 'pin', 'roboticstoolbox-python',
                 'matplotlib', 'flake8', 'pydocstyle', 'scipy', 'pyyaml', 'rosbags',
                 'cvxpy', 'tqdm'],
    },
    zip_safe=True,
    maintainer='ne_dynamics_ros developers',
    maintainer_email='ne-dynamics-ros@example.org',
    description='URDF to DH/MDH, recursive Newton-Euler inverse dynamics and a '
                'computed-torque controller node for ros2_control effort interfaces.',
    license='BSD-3-Clause',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [
            'ne-dynamics = ne_dynamics_ros.tools.cli:main',
            'ne-dynamics-demo = ne_dynamics_ros.tools.demo:main',
            'computed_torque_node = ne_dynamics_ros.nodes.computed_torque_node:main',
            'sim_arm_node = ne_dynamics_ros.nodes.sim_arm_node:main',
            'trajectory_source = ne_dynamics_ros.nodes.trajectory_source_node:main',
            'robot_description_publisher = ne_dynamics_ros.nodes.robot_description_node:main',
            'effort_guard = ne_dynamics_ros.nodes.effort_guard_node:main',
            'jtc_feedforward = ne_dynamics_ros.nodes.jtc_feedforward_node:main',
        ],
    },
)
