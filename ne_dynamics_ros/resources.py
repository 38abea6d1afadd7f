"""Locate files installed in this package's share directory (``config/``, ``launch/``).

Search order, first hit wins:

1. ``ament_index_python``'s share directory of ``ne_dynamics_ros`` (colcon workspace or
   apt install, or a pip install that registered the ament index marker);
2. ``<sys.prefix>/share/ne_dynamics_ros`` (``pip install`` into a virtual environment:
   setup.py's ``data_files`` land there);
3. the source tree next to this module (``<repo>/config``, ``<repo>/launch``), for
   running from a checkout without installing.
"""
import os
import pathlib
import sys

PACKAGE_NAME = 'ne_dynamics_ros'


def share_directories():
    """Return the candidate share directories (``pathlib.Path``), in search order."""
    candidates = []
    try:
        from ament_index_python.packages import get_package_share_directory
        from ament_index_python.packages import PackageNotFoundError
    except ImportError:
        pass
    else:
        try:
            candidates.append(pathlib.Path(get_package_share_directory(PACKAGE_NAME)))
        except (PackageNotFoundError, ValueError, LookupError, OSError):
            # OSError: AMENT_PREFIX_PATH unset (no sourced ROS environment)
            pass
    candidates.append(pathlib.Path(sys.prefix) / 'share' / PACKAGE_NAME)
    candidates.append(pathlib.Path(__file__).resolve().parent.parent)
    return candidates


def find_resource(relative_path) -> pathlib.Path:
    """Return the absolute path of ``relative_path`` (e.g. ``'config/ur5e.urdf'``).

    Raises:
        FileNotFoundError: the file is in none of :func:`share_directories`; the message
            lists the directories searched.
    """
    relative = pathlib.PurePath(relative_path)
    if relative.is_absolute() or '..' in relative.parts:
        raise FileNotFoundError(f'{relative_path!r} must be a relative path inside the share '
                                'directory')
    searched = share_directories()
    for base in searched:
        path = base / relative
        if path.is_file():
            return path
    raise FileNotFoundError(
        f'{relative_path} not found in ' + os.pathsep.join(str(p) for p in searched))


#: Where example-robot-data (PyPI) keeps the Franka Panda's URDF in its distribution.
PANDA_URDF = 'cmeel.prefix/share/example-robot-data/robots/panda_description/urdf/panda.urdf'
#: ... and Universal Robots' UR5 (not the UR5e of ``config/``: other lengths and inertias).
UR5_URDF = 'cmeel.prefix/share/example-robot-data/robots/ur_description/urdf/ur5_robot.urdf'


def example_robot_data_file(relative: str):
    """Return the path (``pathlib.Path``) of a file of example-robot-data, or None.

    ``relative``: its path inside the distribution (:data:`PANDA_URDF`, :data:`UR5_URDF`).
    None when example-robot-data is not installed (``pip install example-robot-data``)
    or its distribution holds no such file.
    """
    from importlib import metadata
    try:
        path = pathlib.Path(metadata.distribution('example-robot-data').locate_file(relative))
    except metadata.PackageNotFoundError:
        return None
    return path if path.is_file() else None


def panda_urdf():
    """Return example-robot-data's Panda URDF, or None (:func:`example_robot_data_file`)."""
    return example_robot_data_file(PANDA_URDF)


def ur5_urdf():
    """Return example-robot-data's UR5 URDF, or None (:func:`example_robot_data_file`)."""
    return example_robot_data_file(UR5_URDF)
