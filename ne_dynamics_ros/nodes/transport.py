"""The DDS transport of the package's processes: Fast DDS over UDP, not shared memory.

Fast DDS (Jazzy's default middleware) sends to a process on the same host through shared
memory when both ends offer it. Opening a peer's shared-memory port takes the transport's
lock, and ``SharedMemGlobal::open_port_internal`` sleeps there while the port it finds is
not usable (a port left by a process that died, one still being made); a publish of the
same process waits for the lock, in rclpy with the GIL held, so the whole control path
stops. Seen as 230–330 ms without an effort command right after the node's activation in
about one start in twenty on a 1 kHz state stream (7 of 157, ``bench_node.py --starts``); native
stacks taken with gdb during the gap: the control thread's publish in
``SharedMemTransport::send``, Fast DDS's event thread in ``open_port_internal`` sending an
initial ACKNACK to a writer that had just matched. The ros2_control launch already ran
its stack over UDP for the same family of stalls (:mod:`ne_dynamics_ros.nodes.fast_dds`).

So each of the package's processes, before ``rclpy.init`` creates its participant, takes
that module's UDPv4-only profile (``FASTRTPS_DEFAULT_PROFILES_FILE``; under
``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` the profile does localhost discovery itself,
as rmw would otherwise add shared memory back), unless the user chose the transports
(``FASTDDS_BUILTIN_TRANSPORTS``, or a profile of their own) or another middleware
(``RMW_IMPLEMENTATION``). Peers that keep shared memory (controller_manager, rviz,
``ros2 topic``) talk to these processes over UDP. The processes a node starts inherit the
choice. No ROS import: the choice is made in the environment before rclpy starts.
"""
import os
import tempfile

from ne_dynamics_ros.nodes import fast_dds

#: Set by a user who chose Fast DDS's built-in transports (kept as it is).
BUILTIN_TRANSPORTS = 'FASTDDS_BUILTIN_TRANSPORTS'
#: Every variable by which a user already chose the transports.
USER_CHOICES = (BUILTIN_TRANSPORTS, *fast_dds.PROFILE_VARIABLES)


def profile_folder():
    """Return the folder of the profile (this user's, in the system's temporary folder).

    Raises:
        OSError: the folder cannot be made.
    """
    folder = os.path.join(tempfile.gettempdir(), f'ne_dynamics_ros-{os.getuid()}')
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return folder


def choose_transports(environ=None, folder=None):
    """Give ``environ`` Fast DDS's UDPv4-only profile unless the user chose; say what holds.

    Call before ``rclpy.init`` (the participant reads the environment when it is made).

    Args:
        environ: the environment to read and change (default ``os.environ``).
        folder: where the profile is written (default :func:`profile_folder`).

    Returns:
        A clause for the start-up log: the transports in force and who chose them.

    Raises:
        OSError: the profile cannot be written.
    """
    environ = os.environ if environ is None else environ
    rmw = environ.get('RMW_IMPLEMENTATION') or fast_dds.FAST_DDS
    if rmw != fast_dds.FAST_DDS:
        return f'DDS transports: those of {rmw}'
    for name in USER_CHOICES:
        if environ.get(name):
            return f'DDS transports: as {name}={environ[name]} sets them'
    environ.update(fast_dds.udp_only_environment(folder or profile_folder(), environ))
    return ('DDS transports: UDPv4 only (Fast DDS shared memory can hold a publish while '
            f'it opens a peer\'s port; set {BUILTIN_TRANSPORTS}=DEFAULT to keep it)')


__all__ = ['BUILTIN_TRANSPORTS', 'choose_transports', 'profile_folder', 'USER_CHOICES']
