"""The node's CDR reader and writers against rclpy's own serializer (no DDS involved).

rclpy's ``serialize_message``/``deserialize_message`` (Fast CDR underneath) are the
independent reference: whatever rclpy writes, :class:`JointStateReader` must read to the
same fields; whatever our writers produce, rclpy must read back to the message we meant.
"""
import math
import struct

from hypothesis import given, strategies as st
import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ne_dynamics_ros.nodes.cdr import (
    CdrError, controller_state_bytes, float64_multi_array_bytes, joint_names_block,
    joint_state_bytes, JointStateReader, read_follow_joint_trajectory_goal,
    read_joint_trajectory, TooManyNames, UnsupportedEncoding)
from ne_dynamics_ros.control.reference.trajectory import WaypointArrays

NAMES = [f'joint_{i}' for i in range(1, 7)]
#: names without NUL (a CDR string ends at its NUL) and without lone surrogates
TEXT = st.text(st.characters(blacklist_categories=('Cs',), blacklist_characters='\x00'),
               max_size=12)
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
#: one reader for every example: its cache of the previous names must never leak
READER = JointStateReader(max_names=1000)


def same_floats(a, b):
    """Equal bit for bit (NaN equals NaN)."""
    return len(a) == len(b) and all(struct.pack('<d', x) == struct.pack('<d', y)
                                    for x, y in zip(a, b))


@st.composite
def joint_states(draw):
    names = draw(st.lists(TEXT, max_size=8))
    msg = JointState(name=names)
    msg.header.stamp.sec = draw(st.integers(-2**31, 2**31 - 1))
    msg.header.stamp.nanosec = draw(st.integers(0, 2**32 - 1))
    msg.header.frame_id = draw(TEXT)
    for field in ('position', 'velocity', 'effort'):
        setattr(msg, field, draw(st.lists(FLOATS, max_size=9)))
    return msg


@given(joint_states())
def test_reader_reads_what_rclpy_writes(msg):
    fields = READER.read(serialize_message(msg))
    assert (fields.sec, fields.nanosec) == (msg.header.stamp.sec, msg.header.stamp.nanosec)
    assert fields.frame_id == msg.header.frame_id.encode('utf-8')
    assert fields.names == tuple(msg.name)
    for field in ('position', 'velocity', 'effort'):
        assert same_floats(getattr(fields, field), getattr(msg, field)), field


@given(joint_states())
def test_rclpy_reads_what_we_write(msg):
    data = joint_state_bytes(msg.header.stamp.sec, msg.header.stamp.nanosec,
                             msg.header.frame_id.encode('utf-8'), joint_names_block(msg.name),
                             msg.position, msg.velocity, msg.effort)
    back = deserialize_message(data, JointState)
    assert back.header == msg.header and back.name == msg.name
    for field in ('position', 'velocity', 'effort'):
        assert same_floats(getattr(back, field), getattr(msg, field)), field
    assert len(data) % 4 == 0


@given(st.lists(FLOATS, max_size=20))
def test_float64_multi_array_round_trip(values):
    back = deserialize_message(float64_multi_array_bytes(values), Float64MultiArray)
    assert same_floats(back.data, values)
    assert back.layout.dim == [] and back.layout.data_offset == 0


def test_the_names_cache_follows_the_names():
    """Same count, other names, then the first ones again: each read as sent."""
    reader = JointStateReader(max_names=10)
    others = ['joint_a', 'joint_2', 'joint_3', 'joint_4', 'joint_5', 'joint_6']
    for names in (NAMES, NAMES, others, NAMES, NAMES[:5], NAMES):
        msg = JointState(name=names, position=[0.5] * len(names))
        assert reader.read(serialize_message(msg)).names == tuple(names)


def exact_bytes():
    """A joint state as our writer makes it: no trailing bytes beyond its last field."""
    return joint_state_bytes(1, 2, b'base', joint_names_block(NAMES), [0.1] * 6, [0.2] * 6, [])


def test_every_truncation_is_a_cdr_error():
    data = exact_bytes()
    assert JointStateReader(10).read(data).names == tuple(NAMES)
    for size in range(len(data)):
        reader = JointStateReader(10)
        with pytest.raises(CdrError):
            reader.read(data[:size])


@pytest.mark.parametrize('offset, what', [(12, 'frame_id'), (24, 'name'),
                                          (100, 'position')])
def test_absurd_counts_are_refused_without_reading_on(offset, what):
    data = bytearray(exact_bytes())
    assert data[offset:offset + 4] != b'\xff\xff\xff\xff'
    data[offset:offset + 4] = b'\xff\xff\xff\xff'
    with pytest.raises(CdrError, match=what if what != 'name' else 'joint names'):
        JointStateReader(10).read(bytes(data))


def test_too_many_names_are_not_decoded():
    names = [f'n{i}' for i in range(11)]
    with pytest.raises(TooManyNames, match='11 joint names, more than MAX_STATE_JOINTS '
                                           r'\(10\): dropped unread'):
        JointStateReader(10).read(serialize_message(JointState(name=names)))


def test_other_encodings_are_left_to_rclpy():
    big_endian = b'\x00\x00' + exact_bytes()[2:]
    with pytest.raises(UnsupportedEncoding, match='not little-endian plain CDR'):
        JointStateReader(10).read(big_endian)
    with pytest.raises(UnsupportedEncoding):
        JointStateReader(10).read(b'')


def test_malformed_strings_name_their_field():
    data = bytearray(exact_bytes())
    data[20] = ord('x')                          # frame_id 'base' loses its NUL
    with pytest.raises(CdrError, match='frame_id'):
        JointStateReader(10).read(bytes(data))
    bad_utf8 = joint_state_bytes(0, 0, b'', joint_names_block(['ok']).replace(b'ok', b'\xff\xfe'),
                                 [0.0], [], [])
    with pytest.raises(CdrError, match=r'name\[0\]: not UTF-8'):
        JointStateReader(10).read(bad_utf8)


@given(st.binary(max_size=300))
def test_random_bytes_raise_only_cdr_errors(data):
    try:
        fields = JointStateReader(50).read(b'\x00\x01\x00\x00' + data)
    except CdrError:
        return
    assert all(isinstance(name, str) for name in fields.names)
    assert all(math.isnan(v) or isinstance(v, float) for v in fields.position)


@st.composite
def joint_trajectories(draw):
    msg = JointTrajectory(joint_names=draw(st.lists(TEXT, max_size=7)))
    msg.header.stamp.sec = draw(st.integers(-2**31, 2**31 - 1))
    msg.header.stamp.nanosec = draw(st.integers(0, 2**32 - 1))
    msg.header.frame_id = draw(TEXT)
    for _ in range(draw(st.integers(0, 5))):
        point = JointTrajectoryPoint()
        for field in ('positions', 'velocities', 'accelerations', 'effort'):
            setattr(point, field, draw(st.lists(FLOATS, max_size=7)))
        point.time_from_start.sec = draw(st.integers(-2**31, 2**31 - 1))
        point.time_from_start.nanosec = draw(st.integers(0, 2**32 - 1))
        msg.points.append(point)
    return msg


def point_rows(fields):
    """The points of read trajectory fields as (t, positions, velocities, accelerations)
    lists, whichever form the reader gave (arrays: empty where a point gives none)."""
    points = fields.points
    if isinstance(points, WaypointArrays):
        return [(t, list(q), list(qd) if given_qd else [], list(qdd) if given_qdd else [])
                for t, q, qd, qdd, given_qd, given_qdd in zip(*points)]
    return [(p.time_from_start, list(p.positions), list(p.velocities),
             list(p.accelerations)) for p in points]


def assert_reads_like_rclpy(fields, msg):
    assert (fields.sec, fields.nanosec) == (msg.header.stamp.sec, msg.header.stamp.nanosec)
    assert fields.frame_id == msg.header.frame_id.encode('utf-8')
    assert fields.joint_names == tuple(msg.joint_names)
    rows = point_rows(fields)
    assert len(rows) == len(msg.points)
    for (t, positions, velocities, accelerations), point in zip(rows, msg.points):
        assert t == point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec
        assert same_floats(positions, point.positions)
        assert same_floats(velocities, point.velocities)
        assert same_floats(accelerations, point.accelerations)


@given(joint_trajectories())
def test_trajectory_reader_reads_what_rclpy_writes(msg):
    data = serialize_message(msg)
    assert_reads_like_rclpy(read_joint_trajectory(data, max_names=10, max_points=10),
                            deserialize_message(data, JointTrajectory))


@st.composite
def uniform_trajectories(draw):
    """Trajectories whose points all give the same fields: k positions, and velocities,
    accelerations and efforts of k values or none (the same choice for every point)."""
    k = draw(st.integers(0, 7))
    msg = JointTrajectory(joint_names=[f'j{i}' for i in range(draw(st.integers(0, 7)))])
    msg.header.stamp.sec = draw(st.integers(-2**31, 2**31 - 1))
    msg.header.frame_id = draw(TEXT)
    given_fields = [draw(st.booleans()) for _ in range(3)]
    for _ in range(draw(st.integers(0, 40))):
        point = JointTrajectoryPoint(positions=draw(st.lists(FLOATS, min_size=k, max_size=k)))
        for field, field_given in zip(('velocities', 'accelerations', 'effort'), given_fields):
            if field_given:
                setattr(point, field, draw(st.lists(FLOATS, min_size=k, max_size=k)))
        point.time_from_start.sec = draw(st.integers(-2**31, 2**31 - 1))
        point.time_from_start.nanosec = draw(st.integers(0, 2**32 - 1))
        msg.points.append(point)
    return msg


@given(uniform_trajectories())
def test_uniform_trajectories_are_read_at_once_as_rclpy_reads_them(msg):
    """Points alike: one structured read over all of them (any number of joints, any mix
    of fields, every alignment pattern), equal to rclpy's deserializer bit for bit."""
    data = serialize_message(msg)
    fields = read_joint_trajectory(data, max_names=10, max_points=100)
    assert isinstance(fields.points, WaypointArrays)
    assert_reads_like_rclpy(fields, deserialize_message(data, JointTrajectory))


def test_a_long_uniform_trajectory_is_read_at_once():
    """50 000 points of 6 joints (4.4 MB, the issue's longest) read as rclpy reads them."""
    msg = JointTrajectory(joint_names=NAMES)
    rng = np.random.default_rng(3)
    values = rng.normal(size=(50_000, 6))
    msg.points = [JointTrajectoryPoint(positions=row) for row in values]
    for k, point in enumerate(msg.points):
        point.time_from_start.sec, point.time_from_start.nanosec = divmod(
            1_000_000 * (k + 1), 1_000_000_000)
    data = serialize_message(msg)
    fields = read_joint_trajectory(data, max_names=10, max_points=100_000)
    assert isinstance(fields.points, WaypointArrays)
    np.testing.assert_array_equal(fields.points.positions, values)
    np.testing.assert_array_equal(fields.points.times, [
        p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points])
    assert not fields.points.has_velocities.any()


def content_bytes(msg, size):
    """rclpy's serialization of ``msg`` cut at ``size``, where its CDR content ends (as
    laid out by hand in the caller's docstring; rclpy appends a few bytes more)."""
    data = serialize_message(msg)
    assert len(data) >= size
    return data[:size]


def assert_every_cut_is_a_cdr_error(read, data):
    for size in range(len(data)):
        with pytest.raises(CdrError):
            read(data[:size])


def trajectory_bytes():
    """Three points, cut where the CDR content ends (rclpy appends a few bytes more).

    By hand from the layout: header 4, stamp 8, frame_id 4 + 1 (NUL) + 3 (padding) = 20;
    joint_names 4 + 6 x (4 + 8) = 76; the points count 4: 100. A point (at an offset
    8-aligned from the header): positions 4 + 4 (padding) + 48, velocities 4 + 4 + 48,
    accelerations 4, effort 4 + 48, time_from_start 8 = 176. In all 100 + 3 x 176 = 628.
    """
    msg = JointTrajectory(joint_names=NAMES)
    msg.points = [JointTrajectoryPoint(positions=[0.1 * k] * 6, velocities=[0.0] * 6,
                                       effort=[1.0] * 6) for k in range(3)]
    msg.points[-1].time_from_start.sec = 2
    return content_bytes(msg, 628)


def test_every_trajectory_truncation_is_a_cdr_error():
    data = trajectory_bytes()
    fields = read_joint_trajectory(data, 10, 10)
    assert fields.joint_names == tuple(NAMES) and fields.points.times[-1] == 2.0
    assert_every_cut_is_a_cdr_error(lambda cut: read_joint_trajectory(cut, 10, 10), data)


def assert_bounds_and_encoding(read, data, names, points, field=''):
    """One name or point over ``read``'s bounds is refused, naming the field; another
    encoding is left to rclpy."""
    with pytest.raises(CdrError, match=f'{field}joint_names: {names} names, more than '
                                       f'{names - 1}'):
        read(data, max_names=names - 1, max_points=10)
    with pytest.raises(CdrError, match=f'{field}points: {points} points, more than '
                                       f'{points - 1}'):
        read(data, max_names=10, max_points=points - 1)
    with pytest.raises(UnsupportedEncoding):
        read(b'\x00\x00' + data[2:], 10, 10)


def test_trajectory_bounds_and_encodings():
    assert_bounds_and_encoding(read_joint_trajectory, trajectory_bytes(), 6, 3)


@given(st.lists(TEXT, max_size=7), TEXT, st.integers(-2**31, 2**31 - 1),
       st.integers(0, 2**32 - 1), st.data())
def test_rclpy_reads_the_controller_state_we_write(names, frame_id, sec, nanosec, data):
    control_msgs = pytest.importorskip('control_msgs.msg', reason='control_msgs is not '
                                       'installed (scripts/bootstrap.sh installs it)')
    n = len(names)
    vectors = [data.draw(st.lists(FLOATS, min_size=n, max_size=n)) for _ in range(8)]
    reference, feedback, error, output = vectors[0:3], vectors[3:5], vectors[5:7], vectors[7]
    raw = controller_state_bytes(sec, nanosec, frame_id.encode('utf-8'),
                                 joint_names_block(names), reference, feedback, error,
                                 output)
    msg = deserialize_message(raw, control_msgs.JointTrajectoryControllerState)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (sec, nanosec)
    assert msg.header.frame_id == frame_id and list(msg.joint_names) == names
    for point, fields, values in ((msg.reference, ('positions', 'velocities',
                                                   'accelerations'), reference),
                                  (msg.feedback, ('positions', 'velocities'), feedback),
                                  (msg.error, ('positions', 'velocities'), error),
                                  (msg.output, ('effort',), [output])):
        for field, expected in zip(fields, values):
            np.testing.assert_array_equal(getattr(point, field), expected)
    assert list(msg.output.positions) == [] and msg.speed_scaling_factor == 1.0
    assert list(msg.multi_dof_joint_names) == []


# ---- FollowJointTrajectory goal requests (the action servers' goals read as bytes) ----

def _goal_request_type():
    from control_msgs.action import FollowJointTrajectory
    return FollowJointTrajectory.Impl.SendGoalService.Request


@st.composite
def goal_requests(draw):
    """Goal requests as MoveIt or a user sends them: any trajectory (points alike or not),
    multi-DOF joint names without points, tolerances, a goal time tolerance."""
    from control_msgs.msg import JointTolerance
    request = _goal_request_type()()
    request.goal_id.uuid = np.array(draw(st.lists(st.integers(0, 255), min_size=16,
                                                  max_size=16)), dtype=np.uint8)
    request.goal.trajectory = draw(st.one_of(joint_trajectories(), uniform_trajectories()))
    multi = request.goal.multi_dof_trajectory
    multi.header.frame_id = draw(TEXT)
    multi.joint_names = draw(st.lists(TEXT, max_size=3))
    for field in ('path_tolerance', 'goal_tolerance'):
        setattr(request.goal, field, [
            JointTolerance(name=draw(TEXT), position=draw(FLOATS), velocity=draw(FLOATS),
                           acceleration=draw(FLOATS))
            for _ in range(draw(st.integers(0, 4)))])
    request.goal.goal_time_tolerance.sec = draw(st.integers(-2**31, 2**31 - 1))
    request.goal.goal_time_tolerance.nanosec = draw(st.integers(0, 2**32 - 1))
    return request


def assert_goal_reads_like_rclpy(fields, msg):
    assert fields.goal_id == bytes(msg.goal_id.uuid)
    goal = msg.goal
    assert_reads_like_rclpy(fields.trajectory, goal.trajectory)
    assert fields.multi_dof_joint_names == tuple(goal.multi_dof_trajectory.joint_names)
    for ours, theirs in ((fields.path_tolerance, goal.path_tolerance),
                         (fields.goal_tolerance, goal.goal_tolerance)):
        assert [t[0] for t in ours] == [t.name for t in theirs]
        assert same_floats([v for t in ours for v in t[1:]],
                           [v for t in theirs for v in (t.position, t.velocity,
                                                        t.acceleration)])
    assert fields.goal_time_tolerance == (goal.goal_time_tolerance.sec,
                                          goal.goal_time_tolerance.nanosec)


@given(goal_requests())
def test_goal_reader_reads_what_rclpy_writes(request):
    data = serialize_message(request)
    fields = read_follow_joint_trajectory_goal(data, max_names=10, max_points=100)
    assert_goal_reads_like_rclpy(fields, deserialize_message(data, _goal_request_type()))


def goal_bytes():
    """One joint 'a', one point (positions [0.5], 2 s), goal_tolerance for 'a', cut where
    the CDR content ends.

    By hand: header 4, goal_id 16 (20); trajectory stamp 8, frame_id 4 + 1 + 3 (36),
    joint_names 4 + 4 + 2 + 2 (48), points 4 (52); the point: positions 4 + 4 + 8 (68),
    velocities, accelerations, effort 4 each (80), time_from_start 8 (88); multi-DOF stamp
    8, frame_id 4 + 1 + 3 (104), joint_names 4, points 4 (112); path_tolerance 4,
    component_path_tolerance 4 (120); goal_tolerance 4, 'a' 4 + 2 + 2, its three doubles
    24 (156); component_goal_tolerance 4 (160); goal_time_tolerance 8: 168.
    """
    from control_msgs.msg import JointTolerance
    request = _goal_request_type()()
    request.goal.trajectory.joint_names = ['a']
    point = JointTrajectoryPoint(positions=[0.5])
    point.time_from_start.sec = 2
    request.goal.trajectory.points = [point]
    request.goal.goal_tolerance = [JointTolerance(name='a', position=0.1, velocity=0.2,
                                                  acceleration=0.3)]
    request.goal.goal_time_tolerance.nanosec = 7
    return content_bytes(request, 168)


def test_every_goal_truncation_is_a_cdr_error():
    data = goal_bytes()
    fields = read_follow_joint_trajectory_goal(data, 10, 10)
    assert fields.trajectory.joint_names == ('a',)
    assert fields.trajectory.points.positions.tolist() == [[0.5]]
    assert fields.goal_tolerance == (('a', 0.1, 0.2, 0.3),)
    assert fields.goal_time_tolerance == (0, 7)
    assert_every_cut_is_a_cdr_error(
        lambda cut: read_follow_joint_trajectory_goal(cut, 10, 10), data)


def test_goals_over_the_bounds_or_left_to_rclpy():
    """Bounds name their field; what the reader does not read (multi-DOF points,
    per-component tolerances, another encoding) is left to rclpy's own conversion."""
    from control_msgs.msg import JointComponentTolerance
    from geometry_msgs.msg import Transform
    from trajectory_msgs.msg import MultiDOFJointTrajectoryPoint
    data = goal_bytes()
    assert_bounds_and_encoding(read_follow_joint_trajectory_goal, data, 1, 1,
                               'goal.trajectory.')
    for field, value in (
            ('multi_dof_trajectory', None),
            ('component_path_tolerance', [JointComponentTolerance(joint_name='a')]),
            ('component_goal_tolerance', [JointComponentTolerance(joint_name='a')])):
        request = deserialize_message(data, _goal_request_type())
        if value is None:
            request.goal.multi_dof_trajectory.points = [
                MultiDOFJointTrajectoryPoint(transforms=[Transform()])]
        else:
            setattr(request.goal, field, value)
        with pytest.raises(UnsupportedEncoding, match=field):
            read_follow_joint_trajectory_goal(serialize_message(request), 10, 10)


@given(st.binary(max_size=300), st.sampled_from([0, 20, 36, 48, 88, 112, 160]))
def test_random_goal_bytes_raise_only_cdr_errors(noise, keep):
    """A valid start (``keep`` bytes of :func:`goal_bytes`) then anything: read, or a
    CdrError; nothing else escapes into rclpy's frame."""
    data = goal_bytes()[:keep] + noise
    try:
        read_follow_joint_trajectory_goal(data, 10, 10)
    except CdrError:
        pass
