"""The stack's Fast DDS profile (ne_dynamics_ros.nodes.fast_dds): read back, then used.

The XML is parsed back with ElementTree (the schema's element names, not the module's
template); the environment is what rmw_fastrtps needs to keep the profile's transports
(``ROS_AUTOMATIC_DISCOVERY_RANGE`` moved off ``LOCALHOST`` only when it was there) and
nothing for another middleware or a user's own profile. Two real processes then show
what it does: the one with the environment opens no ``/dev/shm`` port, and it and a
``LOCALHOST`` process (shared memory and UDP) still hear each other.
"""
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest

from ne_dynamics_ros.nodes import fast_dds

NS = {'p': 'http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles'}


def parsed(text):
    profiles = ET.fromstring(text).find('p:profiles', NS)
    transport = profiles.find('p:transport_descriptors/p:transport_descriptor', NS)
    participant = profiles.find('p:participant', NS)
    return transport, participant


@pytest.mark.parametrize('localhost', [True, False])
def test_the_profile_has_one_udp_transport_and_no_builtin_ones(localhost):
    transport, participant = parsed(fast_dds.profile_text(localhost, ['10.0.0.7']))
    assert transport.find('p:type', NS).text == 'UDPv4'
    assert participant.get('is_default_profile') == 'true'
    rtps = participant.find('p:rtps', NS)
    assert rtps.find('p:useBuiltinTransports', NS).text == 'false'
    assert rtps.find('p:userTransports/p:transport_id', NS).text == \
        transport.find('p:transport_id', NS).text
    peers = [a.text for a in rtps.iterfind('p:builtin/p:initialPeersList/p:locator/'
                                           'p:udpv4/p:address', NS)]
    assert peers == (['127.0.0.1', '10.0.0.7'] if localhost else [])
    unicast = rtps.findall('p:builtin/p:metatrafficUnicastLocatorList/p:locator', NS)
    assert len(unicast) == (1 if localhost else 0)     # no multicast discovery on localhost
    # announced every half second, not Fast DDS's 3 s (fast_dds.LEASE_ANNOUNCEMENT)
    lease = rtps.find('p:builtin/p:discovery_config/p:leaseAnnouncement', NS)
    assert (int(lease.find('p:sec', NS).text), int(lease.find('p:nanosec', NS).text)) == \
        (0, 500_000_000)


def test_the_environment_moves_only_the_localhost_range(tmp_path):
    extra = fast_dds.udp_only_environment(tmp_path, {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST',
                                                     'ROS_STATIC_PEERS': 'a.local; 10.1.2.3'})
    assert extra['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'SYSTEM_DEFAULT'
    _, participant = parsed(open(extra['FASTRTPS_DEFAULT_PROFILES_FILE']).read())
    assert [a.text for a in participant.iter(f'{{{NS["p"]}}}address')] == \
        ['127.0.0.1', 'a.local', '10.1.2.3']
    for scope in ({}, {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET'},
                  {'RMW_IMPLEMENTATION': 'rmw_fastrtps_cpp'}):
        extra = fast_dds.udp_only_environment(tmp_path, scope)
        assert set(extra) == {'FASTRTPS_DEFAULT_PROFILES_FILE'}


@pytest.mark.parametrize('environ', [{'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp'},
                                     {'FASTRTPS_DEFAULT_PROFILES_FILE': '/etc/mine.xml'},
                                     {'FASTDDS_DEFAULT_PROFILES_FILE': '/etc/mine.xml'}])
def test_another_middleware_or_a_users_profile_is_left_alone(tmp_path, environ):
    assert fast_dds.udp_only_environment(tmp_path, environ) == {}
    assert not os.listdir(tmp_path)


def test_an_unwritable_folder_raises(tmp_path):
    with pytest.raises(OSError):
        fast_dds.udp_only_environment(tmp_path / 'missing', {})


PROCESS = textwrap.dedent('''
    import os, sys, time, rclpy
    from std_msgs.msg import String
    rclpy.init()
    node = rclpy.create_node('fast_dds_' + sys.argv[1])
    heard = []
    node.create_subscription(String, sys.argv[2], heard.append, 10)
    publisher = node.create_publisher(String, sys.argv[1], 10)
    deadline, linger = time.monotonic() + 20.0, None
    while time.monotonic() < (deadline if linger is None else linger):
        publisher.publish(String(data=sys.argv[1]))     # on after hearing: the other
        rclpy.spin_once(node, timeout_sec=0.02)          # one may still be listening
        if linger is None and len(heard) >= 20:
            linger = time.monotonic() + 2.0
    ports = 0
    for fd in os.listdir('/proc/self/fd'):
        try:
            ports += '/dev/shm' in os.readlink(f'/proc/self/fd/{fd}')
        except OSError:
            pass                # listdir's own descriptor, closed since
    print(ports, len(heard))
''')


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='reads /proc/self/fd')
def test_a_process_with_the_environment_opens_no_shared_memory_and_hears_a_localhost_peer(
        tmp_path):
    from dds import next_domain_id
    base = dict(os.environ, ROS_DOMAIN_ID=str(next_domain_id()),
                ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    for name in fast_dds.PROFILE_VARIABLES:
        base.pop(name, None)
    base.pop('RMW_IMPLEMENTATION', None)
    udp = dict(base, **fast_dds.udp_only_environment(tmp_path, base))
    script = tmp_path / 'process.py'
    script.write_text(PROCESS)
    runs = [subprocess.Popen([sys.executable, str(script), me, other], env=env,
                             stdout=subprocess.PIPE, text=True)
            for me, other, env in (('udp', 'shm', udp), ('shm', 'udp', base))]
    (udp_out, _), (shm_out, _) = (r.communicate(timeout=60) for r in runs)
    udp_ports, udp_heard = map(int, udp_out.split())
    shm_ports, shm_heard = map(int, shm_out.split())
    assert shm_ports > 0                      # Fast DDS under LOCALHOST: shared memory
    assert udp_ports == 0
    assert udp_heard >= 20 and shm_heard >= 20
