"""Fast DDS without shared memory for the package's processes and the ros2_control stack.

Pure module (no ROS import). rmw_fastrtps_cpp (ROS 2 Jazzy's default middleware) gives
every participant a shared-memory transport beside UDP; with
``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` it adds one itself, whatever
``FASTDDS_BUILTIN_TRANSPORTS`` or an XML profile says (rmw_fastrtps_shared_cpp's
``create_participant``). A process that dies by SIGKILL leaves its shared-memory port
behind, and a CI run saw ``controller_manager``'s write and ``effort_guard``'s checks
stall for 1.0 s right after the node was killed: Fast DDS's shared-memory health check
(``healthy_check_timeout_ms``, 1000 ms) is the one 1 s wait in that path
(docs/ros2-control.md). The stack's processes talk over UDP instead:
:func:`udp_only_environment` writes an XML profile whose default participant has one
UDPv4 transport and no built-in ones, and announces itself every
:data:`LEASE_ANNOUNCEMENT` s, and returns the environment that makes each process load
it:

* ``FASTRTPS_DEFAULT_PROFILES_FILE``: the profile;
* under ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` the range becomes
  ``SYSTEM_DEFAULT`` (rmw then keeps the profile's transports) and the profile does
  what rmw's localhost range does: no multicast discovery, ``127.0.0.1`` (and
  ``ROS_STATIC_PEERS``) as the initial peers, 32 participants a host. Processes
  that keep shared memory (a user's tools, a test's client) still reach the stack
  over UDP. Under any other range (unset is ``SUBNET``) rmw leaves the transports to
  the profile, and discovery is unchanged.

Nothing changes (``{}``) for another middleware or when the user gives a profile of
their own (``FASTRTPS_DEFAULT_PROFILES_FILE`` / ``FASTDDS_DEFAULT_PROFILES_FILE``).
"""
import os
import tempfile
import html

#: The middleware this applies to (``RMW_IMPLEMENTATION`` unset or empty means it).
FAST_DDS = 'rmw_fastrtps_cpp'
#: The variables that name a user's own profile.
PROFILE_VARIABLES = ('FASTRTPS_DEFAULT_PROFILES_FILE', 'FASTDDS_DEFAULT_PROFILES_FILE')
#: Participants a host reached from the initial peers (rmw_fastrtps's localhost value).
MAX_INITIAL_PEERS_RANGE = 32
PROFILE_NAME = 'ne_dynamics_ros_udp'
#: How often a participant announces itself, s (Fast DDS's default: 3 s). A participant
#: that missed another's first announcements finds it at the next one: measured with
#: a node and its trajectory receiver started twelve times, 2-3 starts in 12 waited
#: 3.65 s for it at the default, none over 1.16 s at 0.5 s (2026-12-02).
LEASE_ANNOUNCEMENT = 0.5

_TEMPLATE = """<?xml version="1.0" encoding="UTF-8" ?>
<dds>
  <profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
    <transport_descriptors>
      <transport_descriptor>
        <transport_id>{name}</transport_id>
        <type>UDPv4</type>
        <maxInitialPeersRange>{peers_range}</maxInitialPeersRange>
      </transport_descriptor>
    </transport_descriptors>
    <participant profile_name="{name}" is_default_profile="true">
      <rtps>
{builtin}        <userTransports><transport_id>{name}</transport_id></userTransports>
        <useBuiltinTransports>false</useBuiltinTransports>
      </rtps>
    </participant>
  </profiles>
</dds>
"""


_ANNOUNCEMENT_TEMPLATE = """<?xml version="1.0" encoding="UTF-8" ?>
<dds>
  <profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
    <participant profile_name="{name}" is_default_profile="true">
      <rtps>
        <builtin>
{announcement}        </builtin>
      </rtps>
    </participant>
  </profiles>
</dds>
"""


def _announcement():
    seconds, nanoseconds = divmod(round(LEASE_ANNOUNCEMENT * 1e9), 1_000_000_000)
    return ('          <discovery_config><leaseAnnouncement>'
            f'<sec>{seconds}</sec><nanosec>{nanoseconds}</nanosec>'
            '</leaseAnnouncement></discovery_config>\n')


def announcement_profile_text(name='ne_dynamics_ros_announce'):
    """Return a profile that changes only how often participants announce themselves.

    The default participant keeps Fast DDS's transports and discovery and announces
    itself every :data:`LEASE_ANNOUNCEMENT` s: for a process outside the stack (a test's
    client) that should find the stack's participants as quickly as they find each other.
    """
    return _ANNOUNCEMENT_TEMPLATE.format(name=html.escape(name, quote=False),
                                         announcement=_announcement())


def _builtin(localhost, peers):
    lines = ['        <builtin>\n', _announcement()]
    if localhost:
        locators = ''.join(
            '            <locator><udpv4><address>'
            f'{html.escape(p, quote=False)}</address></udpv4></locator>\n' for p in peers)
        lines += ['          <metatrafficUnicastLocatorList><locator/>'
                  '</metatrafficUnicastLocatorList>\n',
                  f'          <initialPeersList>\n{locators}          </initialPeersList>\n']
    return ''.join(lines + ['        </builtin>\n'])


def profile_text(localhost, static_peers=()):
    """Return the XML profile: UDPv4 only; with ``localhost``, discovery as rmw's LOCALHOST.

    ``static_peers``: addresses added to ``127.0.0.1`` as initial peers (``ROS_STATIC_PEERS``).
    """
    builtin = _builtin(localhost, ['127.0.0.1', *static_peers])
    return _TEMPLATE.format(name=PROFILE_NAME, peers_range=MAX_INITIAL_PEERS_RANGE,
                            builtin=builtin)


def udp_only_environment(folder, environ=None):
    """Write the profile into ``folder``; return the variables to give the stack's processes.

    ``environ``: the environment the processes would inherit (default ``os.environ``).
    Returns ``{}`` where nothing is to change: another ``RMW_IMPLEMENTATION``, or a
    profile of the user's own. Raises ``OSError`` when ``folder`` cannot be written.
    """
    environ = os.environ if environ is None else environ
    if (environ.get('RMW_IMPLEMENTATION') or FAST_DDS) != FAST_DDS or \
            any(environ.get(v) for v in PROFILE_VARIABLES):
        return {}
    localhost = environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE', '') == 'LOCALHOST'
    peers = [p.strip() for p in environ.get('ROS_STATIC_PEERS', '').split(';') if p.strip()]
    path = os.path.join(folder, 'fast_dds_udp.xml')
    # whole or not at all: processes started together may write and read the same file
    fd, part = tempfile.mkstemp(dir=folder, prefix='.fast_dds_udp.', suffix='.xml')
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as stream:
            stream.write(profile_text(localhost, peers))
        os.replace(part, path)
    except BaseException:
        os.unlink(part)
        raise
    extra = {'FASTRTPS_DEFAULT_PROFILES_FILE': path}
    if localhost:
        extra['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'SYSTEM_DEFAULT'
    return extra


__all__ = ['FAST_DDS', 'LEASE_ANNOUNCEMENT', 'MAX_INITIAL_PEERS_RANGE', 'PROFILE_VARIABLES',
           'announcement_profile_text', 'profile_text',
           'PROFILE_VARIABLES',
           'udp_only_environment']
