"""Import every module the package's processes load, so that Python writes their bytecode.

Run by ``scripts/bootstrap.sh`` with bytecode writing on, after installing without
compiling site-packages as a whole: each module of ``ne_dynamics_ros``, the libraries it
loads only when needed (Pinocchio, MuJoCo, SciPy's signal and optimize, CVXPY, rosbags,
matplotlib, the ROS messages of its nodes and tools), the launch tooling (``ros2 launch``)
and ros2_control's spawner, where they are installed. A module that cannot be imported
here (an optional extra left out) is skipped: its process compiles what it loads itself.
Prints one line: what was imported and skipped.
"""
import glob
import importlib
import os
import pkgutil
import sys

#: the libraries the package imports on demand (inside functions, or through
#: ``ne_dynamics_ros.errors.require``), and the tools that start its nodes
ON_DEMAND = (
    'pinocchio', 'mujoco', 'scipy.signal', 'scipy.optimize', 'scipy.linalg', 'scipy.ndimage',
    'cvxpy', 'rosbags.highlevel', 'rosbags.typesys', 'rosbags.rosbag2', 'matplotlib.pyplot',
    'tqdm', 'yaml', 'urdf_parser_py.urdf', 'rclpy.action', 'rclpy.executors',
    'rclpy.parameter_client', 'rclpy.serialization', 'rclpy.lifecycle',
    'control_msgs.action', 'controller_manager_msgs.srv', 'geometry_msgs.msg',
    'ament_index_python.packages',
    # `ros2 launch` and the launch files
    'launch', 'launch.frontend', 'launch_ros', 'launch_ros.actions', 'ros2cli.cli',
    'ros2launch.command.launch', 'ros2launch.api',
    # ros2_control's spawner (ros2_control.launch.py starts it as a Python process)
    'controller_manager.spawner',
)


def main():
    """Import the package's modules and :data:`ON_DEMAND`; print the counts."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    sys.path += glob.glob(os.path.join(root, '.venv', 'ros2_control', 'install', 'lib',
                                       'python3*', 'site-packages'))
    import ne_dynamics_ros
    names = [info.name for info in pkgutil.walk_packages(ne_dynamics_ros.__path__,
                                                         'ne_dynamics_ros.')
             if not info.name.endswith('__main__')]
    imported, skipped = 0, []
    for name in names + list(ON_DEMAND):
        try:
            importlib.import_module(name)
            imported += 1
        except Exception as exc:          # an optional part not installed: skip it
            skipped.append(f'{name} ({type(exc).__name__})')
    print(f'bootstrap: bytecode written for {imported} modules and what they import'
          + (f'; not importable here: {", ".join(skipped)}' if skipped else ''))


if __name__ == '__main__':
    main()
