"""Launch files: every argument documented; with an installed package, the node starts.

Needs ``launch`` and ``launch_ros``, which come with a ROS 2 installation and are not on
PyPI: the whole module is skipped without them. Starting the node through the launch
files also needs the package installed in the ament index (``colcon build`` and a sourced
workspace), since the launch files find their files with ``FindPackageShare``.
"""
import importlib.util
import pathlib
import threading
import time

import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

try:
    import launch
    from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
    from launch.actions import RegisterEventHandler
    from launch.event_handlers import OnProcessExit
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    import launch_ros  # noqa: F401  (the launch files need it)
except ImportError as err:
    pytest.skip(f'launch/launch_ros not importable ({err}); they come with a ROS 2 '
                'installation (apt, colcon), not from PyPI', allow_module_level=True)

LAUNCH_DIR = pathlib.Path(__file__).resolve().parent.parent / 'launch'
LAUNCH_FILES = sorted(LAUNCH_DIR.glob('*.launch.py'))
PUMA_JOINTS = [f'joint_{i}' for i in range(1, 7)]


def load_description(path):
    spec = importlib.util.spec_from_file_location(path.stem.replace('.', '_'), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


def test_all_launch_files_found():
    assert {p.name for p in LAUNCH_FILES} >= {
        'computed_torque.launch.py', 'puma560.launch.py', 'ur5e.launch.py',
        'ur5e_sim.launch.py'}


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_every_argument_has_a_description(path):
    description = load_description(path)
    arguments = [e for e in description.entities if isinstance(e, DeclareLaunchArgument)]
    assert arguments
    for argument in arguments:
        assert argument.description and argument.description != 'no description given', \
            argument.name


@pytest.mark.parametrize('name', ['puma560.launch.py', 'ur5e.launch.py', 'ur5e_sim.launch.py'])
def test_robot_launch_files_include_the_generic_one(name):
    description = load_description(LAUNCH_DIR / name)
    assert any(isinstance(e, IncludeLaunchDescription) for e in description.entities)


def installed_share():
    from ament_index_python.packages import get_package_share_directory
    from ament_index_python.packages import PackageNotFoundError
    try:
        return pathlib.Path(get_package_share_directory('ne_dynamics_ros'))
    except PackageNotFoundError:
        pytest.skip('ne_dynamics_ros is not installed in the ament index (colcon build and '
                    'source the workspace to run the launch files)')


def run_launch(path, arguments, exit_codes):
    service = launch.LaunchService(argv=[], noninteractive=True)
    service.include_launch_description(launch.LaunchDescription([
        RegisterEventHandler(OnProcessExit(
            on_exit=lambda event, context: exit_codes.append(event.returncode))),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(str(path)), launch_arguments=arguments.items()),
    ]))
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    return service, thread


def test_puma560_launch_starts_a_working_node(ros_context):
    share = installed_share()
    exit_codes = []
    service, thread = run_launch(share / 'launch' / 'puma560.launch.py', {}, exit_codes)
    peer = rclpy.create_node('launch_test_peer', context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(peer)
    efforts = []
    try:
        peer.create_subscription(Float64MultiArray, '/effort_controller/commands',
                                 lambda m: efforts.append(np.array(m.data)), 10)
        pub = peer.create_publisher(JointState, '/joint_states', 10)
        deadline = time.monotonic() + 30.0
        while not efforts:
            assert time.monotonic() < deadline, 'launched node did not answer'
            assert not exit_codes, f'node exited with {exit_codes}'
            pub.publish(JointState(name=PUMA_JOINTS, position=[0.0] * 6, velocity=[0.0] * 6))
            executor.spin_once(timeout_sec=0.05)
        assert np.all(np.isfinite(efforts[-1])) and efforts[-1].shape == (6,)
    finally:
        service.shutdown()
        thread.join(timeout=15.0)
        executor.shutdown(timeout_sec=1.0)
        peer.destroy_node()


def test_bad_urdf_makes_the_launched_node_exit_non_zero(domain_id):
    share = installed_share()
    exit_codes = []
    service, thread = run_launch(share / 'launch' / 'computed_torque.launch.py',
                                 {'urdf': '/nonexistent/arm.urdf'}, exit_codes)
    thread.join(timeout=30.0)
    if thread.is_alive():
        service.shutdown()
        thread.join(timeout=15.0)
    assert exit_codes == [1]
