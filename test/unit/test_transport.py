"""The package's processes take Fast DDS's UDPv4 profile unless the user chose (nodes/transport).

Why UDP: ``ne_dynamics_ros/nodes/transport.py`` (a shared-memory port opened under the
transport's lock held the node's publish 230–330 ms). Here the rule on the environment:
the profile when nobody chose, nothing otherwise, and only for Fast DDS. That the profile
leaves a process without shared memory is shown on real processes in
``test/ros/test_fast_dds.py``.
"""
import os

import pytest

from ne_dynamics_ros.nodes.transport import choose_transports, profile_folder
from ne_dynamics_ros.nodes import fast_dds


@pytest.mark.parametrize('rmw', [None, '', 'rmw_fastrtps_cpp'])
@pytest.mark.parametrize('localhost', [True, False])
def test_fast_dds_gets_the_udp_profile_when_nobody_chose(tmp_path, rmw, localhost):
    environ = {} if rmw is None else {'RMW_IMPLEMENTATION': rmw}
    if localhost:
        environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    said = choose_transports(environ, tmp_path)
    path = environ['FASTRTPS_DEFAULT_PROFILES_FILE']
    assert os.path.dirname(path) == str(tmp_path)
    assert open(path, encoding='utf-8').read() == fast_dds.profile_text(localhost)
    # under LOCALHOST rmw would add shared memory back: the profile does the localhost part
    assert environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE') == \
        ('SYSTEM_DEFAULT' if localhost else None)
    assert said.startswith('DDS transports: UDPv4 only')
    assert os.listdir(tmp_path) == ['fast_dds_udp.xml']        # no partial file left


@pytest.mark.parametrize('name, value', [
    ('FASTDDS_BUILTIN_TRANSPORTS', 'DEFAULT'),
    ('FASTDDS_BUILTIN_TRANSPORTS', 'SHM'),
    ('FASTRTPS_DEFAULT_PROFILES_FILE', '/etc/fastdds.xml'),
    ('FASTDDS_DEFAULT_PROFILES_FILE', '/etc/fastdds.xml')])
def test_a_users_choice_is_kept_and_named(tmp_path, name, value):
    environ = {name: value, 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}
    said = choose_transports(environ, tmp_path)
    assert environ == {name: value, 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}
    assert said == f'DDS transports: as {name}={value} sets them'
    assert not os.listdir(tmp_path)


def test_an_empty_variable_is_no_choice(tmp_path):
    environ = {'FASTDDS_BUILTIN_TRANSPORTS': ''}
    choose_transports(environ, tmp_path)
    assert 'FASTRTPS_DEFAULT_PROFILES_FILE' in environ


@pytest.mark.parametrize('rmw', ['rmw_cyclonedds_cpp', 'rmw_zenoh_cpp'])
def test_another_middleware_is_left_alone(tmp_path, rmw):
    environ = {'RMW_IMPLEMENTATION': rmw}
    assert choose_transports(environ, tmp_path) == f'DDS transports: those of {rmw}'
    assert environ == {'RMW_IMPLEMENTATION': rmw}
    assert not os.listdir(tmp_path)


def test_the_profile_folder_is_this_users_and_private():
    folder = profile_folder()
    assert os.path.isdir(folder) and folder.endswith(f'-{os.getuid()}')
    assert os.stat(folder).st_mode & 0o077 == 0


def test_the_announcement_profile_changes_the_announcement_and_nothing_else():
    """The tests' own participants keep Fast DDS's transports: only the period is set."""
    import xml.etree.ElementTree as ElementTree
    space = {'f': 'http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles'}
    root = ElementTree.fromstring(fast_dds.announcement_profile_text('a<b'))
    participant = root.find('f:profiles/f:participant', space)
    assert participant.get('profile_name') == 'a<b'
    assert participant.get('is_default_profile') == 'true'
    rtps = participant.find('f:rtps', space)
    assert [child.tag.split('}')[1] for child in rtps] == ['builtin']
    builtin = rtps.find('f:builtin', space)
    assert [child.tag.split('}')[1] for child in builtin] == ['discovery_config']
    lease = builtin.find('f:discovery_config/f:leaseAnnouncement', space)
    period = int(lease.find('f:sec', space).text) + int(lease.find('f:nanosec', space).text) * 1e-9
    assert period == pytest.approx(fast_dds.LEASE_ANNOUNCEMENT) and period == pytest.approx(0.5)
