"""The node's hot-path messages read from and written to CDR bytes directly.

rclpy turns every received ``sensor_msgs/JointState`` into Python objects field by field
(about 40 us for six joints on the reference machine, more than the control law), and
every published message back. The node takes ``joint_states`` as serialized bytes
(``raw=True``) and reads them here with :mod:`struct`, caching the serialized joint-name
block of the previous state, and publishes its effort command, tracking error and
controller state as bytes written here. The trajectory receiver process reads
``trajectory_msgs/JointTrajectory`` here too (:func:`read_joint_trajectory`: every point
at once with NumPy when the points give the same fields).

The layout is the plain CDR of the DDS specification (OMG DDS-XTypes 1.3, section 7.4.3
"XCDR version 1"), as rmw_fastrtps and rmw_cyclonedds put ROS 2 messages on the wire and
as rosbag2 records them: a 4-byte encapsulation header (``00 01``: little-endian CDR, then
two option bytes), then the fields in declaration order, each primitive aligned to its own
size counted from the end of the header; a string is a uint32 length including the NUL,
the UTF-8 bytes and the NUL; a sequence is a uint32 count then its elements.
:class:`JointStateReader` reads the little-endian encapsulation and raises
:class:`UnsupportedEncoding` for any other, which the node hands to rclpy's own
deserializer; tests check both directions against rclpy's serializer.

No ROS import: the layout is fixed by the message definitions
(``std_msgs/Header``, ``sensor_msgs/JointState``, ``std_msgs/Float64MultiArray``,
``trajectory_msgs/JointTrajectory``, ``control_msgs/JointTrajectoryControllerState``).
"""
from array import array
import functools
import struct
import sys
from typing import List, NamedTuple, Sequence, Tuple, Union

import numpy as np

from ne_dynamics_ros.control.reference.trajectory import TrajectoryPoint, WaypointArrays

__all__ = ['CdrError', 'UnsupportedEncoding', 'TooManyNames', 'JointStateFields',
           'JointStateReader', 'JointTrajectoryFields', 'read_joint_trajectory',
           'joint_names_block', 'joint_state_bytes', 'float64_multi_array_bytes',
           'controller_state_bytes', 'trajectory_message_fields', 'GoalRequestFields',
           'read_follow_joint_trajectory_goal']

#: Encapsulation header of little-endian plain CDR (options zero), as rmw writes it.
CDR_LE = b'\x00\x01\x00\x00'

_HEADER = struct.Struct('<iII')        # header.stamp.sec, .nanosec, frame_id length
_UINT32 = struct.Struct('<I')
_DOUBLES_SWAPPED = sys.byteorder != 'little'
_PADS = tuple(b'\x00' * k for k in range(5))   # the NUL of a string and its padding


class CdrError(ValueError):
    """The bytes are not a well-formed message of the expected type (names the field)."""


class UnsupportedEncoding(CdrError):
    """Well-formed perhaps, but not little-endian plain CDR: read it with rclpy."""


class TooManyNames(CdrError):
    """A joint state names more joints than the reader's bound; it was not read further."""


class JointStateFields(NamedTuple):
    """A ``sensor_msgs/JointState`` as read from CDR.

    ``sec, nanosec``: ``header.stamp``; ``frame_id``: ``header.frame_id`` as its UTF-8
    bytes; ``names``: tuple of str (the same tuple object while the serialized names
    repeat); ``position, velocity, effort``: ``array('d')`` of any length (rad or m,
    rad/s or m/s, N*m or N), exactly as rclpy would give them.
    """

    sec: int
    nanosec: int
    frame_id: bytes
    names: Tuple[str, ...]
    position: array
    velocity: array
    effort: array


class JointStateReader:
    """Read ``sensor_msgs/JointState`` CDR bytes; one per subscription (it caches names).

    Args:
        max_names: states naming more joints raise :class:`TooManyNames` before any
            name is decoded.
    """

    def __init__(self, max_names: int):
        self.max_names = max_names
        self._names_block = None       # the serialized names of the last state read
        self._names = ()

    def read(self, data: bytes) -> JointStateFields:
        """Return the fields of one serialized JointState.

        Raises:
            UnsupportedEncoding: not little-endian plain CDR (big-endian, XCDR2...).
            TooManyNames: more than ``max_names`` names.
            CdrError: truncated or malformed bytes (the message names the field).
        """
        sec, nanosec, frame_id, offset = _read_header(data, 'JointState')
        count = _read_count(data, offset, 'name')
        if count > self.max_names:
            raise TooManyNames(f'{count} joint names, more than MAX_STATE_JOINTS '
                               f'({self.max_names}): dropped unread')
        block = self._names_block
        if block is not None and data.startswith(block, offset):
            names = self._names
            offset += len(block)
        else:
            start = offset
            names, offset = _read_names(data, offset + 4, count)
            self._names_block = bytes(data[start:offset])
            self._names = names
        position, offset = _read_doubles(data, offset, 'position')
        velocity, offset = _read_doubles(data, offset, 'velocity')
        effort, offset = _read_doubles(data, offset, 'effort')
        return JointStateFields(sec, nanosec, frame_id, names, position, velocity, effort)


class JointTrajectoryFields(NamedTuple):
    """A ``trajectory_msgs/JointTrajectory`` as read from CDR.

    ``sec, nanosec``: ``header.stamp``; ``frame_id``: UTF-8 bytes; ``joint_names``: tuple
    of str; ``points``: the waypoints (each point's ``effort`` is skipped), one
    :class:`~ne_dynamics_ros.control.reference.trajectory.WaypointArrays` when every point gives
    its fields with the same lengths (the usual message, read all at once), otherwise a
    list of :class:`~ne_dynamics_ros.control.reference.trajectory.TrajectoryPoint` (time in s,
    the values as ``array('d')``, empty when not given). Values in rad, rad/s, rad/s^2
    or m, m/s, m/s^2.
    """

    sec: int
    nanosec: int
    frame_id: bytes
    joint_names: Tuple[str, ...]
    points: Union[WaypointArrays, List[TrajectoryPoint]]


_DURATION = struct.Struct('<iI')
#: The float64[] fields of a JointTrajectoryPoint, in order; then its Duration.
_POINT_FIELDS = ('positions', 'velocities', 'accelerations', 'effort')


def read_joint_trajectory(data: bytes, max_names: int, max_points: int
                          ) -> JointTrajectoryFields:
    """Return the fields of one serialized ``trajectory_msgs/JointTrajectory``.

    Every point whose four arrays have the same lengths as the first point's has the
    same layout up to its 8-byte alignment, so such a message (the usual one) is read
    with one structured :func:`numpy.frombuffer` over all points: a fixed cost in
    Python, about 4 ms for 50 000 points of 6 joints here, against 0.25 s point by point.
    Other messages (points that differ, or bytes that break the pattern) are read point
    by point, which names the field at fault.

    Raises:
        UnsupportedEncoding: not little-endian plain CDR.
        CdrError: truncated or malformed bytes, more than ``max_names`` joint names or
            ``max_points`` points (the message names the field).
    """
    return _read_trajectory(data, 4, max_names, max_points, '')[0]


def _read_trajectory(data, start, max_names, max_points, field):
    """Read the JointTrajectory at ``start``: (JointTrajectoryFields, offset after it).

    ``field``: its name in the message (``''``: the message itself; ``'goal.trajectory.'``).
    """
    sec, nanosec, frame_id, offset = _read_header(data, 'JointTrajectory', start)
    count = _read_count(data, offset, f'{field}joint_names')
    if count > max_names:
        raise CdrError(f'{field}joint_names: {count} names, more than {max_names}')
    names, offset = _read_names(data, offset + 4, count, f'{field}joint_names')
    count = _read_count(data, offset, f'{field}points')
    if count > max_points:
        raise CdrError(f'{field}points: {count} points, more than {max_points}')
    offset += 4
    read = _read_uniform_points(data, offset, count, len(names))
    points, end = read if read is not None else _read_points(data, offset, count)
    return JointTrajectoryFields(sec, nanosec, frame_id, names, points), end


class GoalRequestFields(NamedTuple):
    """A ``control_msgs/action/FollowJointTrajectory`` goal request as read from CDR.

    ``goal_id``: the 16 bytes of its UUID; ``trajectory``: :class:`JointTrajectoryFields`
    of ``goal.trajectory``; ``multi_dof_joint_names``, ``multi_dof_points``: those of
    ``goal.multi_dof_trajectory`` (tuple of str; how many points: 0 from the bytes, a goal
    with any is left to rclpy); ``path_tolerance``, ``goal_tolerance``: tuples of
    ``control_msgs/JointTolerance`` as ``(name, position, velocity, acceleration)`` (rad,
    rad/s, rad/s^2 or m...; 0 the controller's default, -1 none); ``goal_time_tolerance``:
    ``(sec, nanosec)``.
    """

    goal_id: bytes
    trajectory: JointTrajectoryFields
    multi_dof_joint_names: Tuple[str, ...]
    multi_dof_points: int
    path_tolerance: Tuple[Tuple[str, float, float, float], ...]
    goal_tolerance: Tuple[Tuple[str, float, float, float], ...]
    goal_time_tolerance: Tuple[int, int]


_TOLERANCE = struct.Struct('<3d')


def read_follow_joint_trajectory_goal(data, max_names: int, max_points: int
                                      ) -> GoalRequestFields:
    """Return the fields of one serialized FollowJointTrajectory ``SendGoal`` request.

    The layout (control_msgs 5, ROS 2 Jazzy): ``goal_id`` (uint8[16]), then the goal:
    ``trajectory``, ``multi_dof_trajectory``, ``path_tolerance``,
    ``component_path_tolerance``, ``goal_tolerance``, ``component_goal_tolerance``,
    ``goal_time_tolerance``. The trajectory's points are read as
    :func:`read_joint_trajectory` reads them (all at once when they are alike).

    Raises:
        UnsupportedEncoding: not little-endian plain CDR, or a goal this reader leaves to
            rclpy: a multi-DOF trajectory with points, or per-component tolerances.
        CdrError: truncated or malformed bytes, or more than ``max_names`` joint names
            (or tolerances) or ``max_points`` points (the message names the field).
    """
    if len(data) < 4 or data[:2] != CDR_LE[:2]:
        raise UnsupportedEncoding(f'encapsulation {bytes(data[:4]).hex()!r} is not '
                                  'little-endian plain CDR')
    if len(data) < 20:
        raise CdrError(f'{len(data)} bytes: too short for goal_id')
    trajectory, offset = _read_trajectory(data, 20, max_names, max_points,
                                          'goal.trajectory.')
    _, _, _, offset = _read_header(data, 'goal.multi_dof_trajectory', offset)
    count = _read_count(data, offset, 'goal.multi_dof_trajectory.joint_names')
    if count > max_names:
        raise CdrError(f'goal.multi_dof_trajectory.joint_names: {count} names, more than '
                       f'{max_names}')
    multi_names, offset = _read_names(data, offset + 4, count,
                                      'goal.multi_dof_trajectory.joint_names')
    if _read_count(data, offset, 'goal.multi_dof_trajectory.points'):
        raise UnsupportedEncoding('goal.multi_dof_trajectory has points: read it with rclpy')
    path, offset = _read_tolerances(data, offset + 4, 'goal.path_tolerance', max_names)
    if _read_count(data, offset, 'goal.component_path_tolerance'):
        raise UnsupportedEncoding('goal.component_path_tolerance given: read it with rclpy')
    goal, offset = _read_tolerances(data, offset + 4, 'goal.goal_tolerance', max_names)
    if _read_count(data, offset, 'goal.component_goal_tolerance'):
        raise UnsupportedEncoding('goal.component_goal_tolerance given: read it with rclpy')
    offset += 4
    if offset + 8 > len(data):
        raise CdrError('goal.goal_time_tolerance: the message ends before it')
    return GoalRequestFields(bytes(data[4:20]), trajectory, multi_names, 0, path, goal,
                             _DURATION.unpack_from(data, offset))


def _read_tolerances(data, offset, field, max_count):
    """Read a ``control_msgs/JointTolerance[]`` at ``offset`` (4-aligned): (tuple, end)."""
    count = _read_count(data, offset, field)
    if count > max_count:
        raise CdrError(f'{field}: {count} tolerances, more than {max_count}')
    offset += 4
    items = []
    for i in range(count):
        (name,), offset = _read_names(data, offset, 1, f'{field}[{i}].name')
        offset += (4 - offset) % 8                  # 8-aligned counted from the header
        if offset + 24 > len(data):
            raise CdrError(f'{field}[{i}]: the message ends before its values')
        items.append((name, *_TOLERANCE.unpack_from(data, offset)))
        offset += 24
    return tuple(items), offset


def trajectory_message_fields(msg) -> JointTrajectoryFields:
    """Return the :class:`JointTrajectoryFields` of a ``trajectory_msgs/JointTrajectory`` object.

    What :func:`read_joint_trajectory` gives for its bytes, from a message rclpy already
    made (a deserialized one, an action goal's): points as
    :class:`~ne_dynamics_ros.control.reference.trajectory.TrajectoryPoint` items.
    """
    stamp = msg.header.stamp
    return JointTrajectoryFields(
        stamp.sec, stamp.nanosec, msg.header.frame_id.encode('utf-8', 'replace'),
        tuple(msg.joint_names),
        [TrajectoryPoint(p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec,
                         p.positions, p.velocities, p.accelerations) for p in msg.points])


def _read_points(data, offset, count):
    """Read ``count`` JointTrajectoryPoints one by one: (list of TrajectoryPoint, end)."""
    points = []
    for k in range(count):
        positions, offset = _read_doubles(data, offset, f'points[{k}].positions')
        velocities, offset = _read_doubles(data, offset, f'points[{k}].velocities')
        accelerations, offset = _read_doubles(data, offset, f'points[{k}].accelerations')
        _, offset = _read_doubles(data, offset, f'points[{k}].effort')
        offset += (-offset) % 4
        if offset + 8 > len(data):
            raise CdrError(f'points[{k}].time_from_start: the message ends before it')
        duration_sec, duration_nanosec = _DURATION.unpack_from(data, offset)
        offset += 8
        points.append(TrajectoryPoint(duration_sec + 1e-9 * duration_nanosec, positions,
                                      velocities, accelerations))
    return points, offset


class _Layout(NamedTuple):
    """Where the parts of a JointTrajectoryPoint lie in the message.

    ``fields``: one (count offset, count, values offset or None) per float64[] field;
    ``duration``, ``start`` and ``end``: offsets.
    """

    start: int
    fields: list
    duration: int
    end: int


def _point_layout(data, offset):
    """Lay out the point at ``offset`` (a :class:`_Layout`); None if it runs past the end."""
    start = offset
    fields = []
    for _ in _POINT_FIELDS:
        offset += (-offset) % 4
        if offset + 4 > len(data):
            return None
        count = _UINT32.unpack_from(data, offset)[0]
        stop = offset + 4
        values = None
        if count:
            values = stop + (4 - stop) % 8          # 8-aligned counted from the header
            stop = values + 8 * count
        fields.append((offset, count, values))
        offset = stop
    offset += (-offset) % 4
    if offset + 8 > len(data):
        return None
    return _Layout(start, fields, offset, offset + 8)


def _records(data, layout, offset, count):
    """Return the ``count`` points at ``offset`` laid out as ``layout``, all at once.

    A structured array with fields ``<name>_count``, ``<name>`` (the values; not for
    effort), ``sec`` and ``nanosec``; None if the points run past the end.
    """
    names, formats, offsets = [], [], []
    for name, (at, size, values) in zip(_POINT_FIELDS, layout.fields):
        names.append(f'{name}_count')
        formats.append('<u4')
        offsets.append(at - layout.start)
        if size and name != 'effort':
            names.append(name)
            formats.append(('<f8', (size,)))
            offsets.append(values - layout.start)
    names += ['sec', 'nanosec']
    formats += ['<i4', '<u4']
    offsets += [layout.duration - layout.start, layout.duration + 4 - layout.start]
    dtype = np.dtype({'names': names, 'formats': formats, 'offsets': offsets,
                      'itemsize': layout.end - layout.start})
    if offset + count * dtype.itemsize > len(data):
        return None
    return np.frombuffer(data, dtype, count=count, offset=offset)


def _read_uniform_points(data, offset, count, k):
    """Read all points at once when they share the first point's array lengths.

    A point's layout depends only on its array lengths and on whether it starts 8-aligned
    (counted from the header); where it ends does not depend on that when it has values
    (the last array of doubles ends 8-aligned). So with equal lengths every point is laid
    out alike, or the first differs and all the others are alike. Returns (WaypointArrays,
    the offset after the last point), or None when the message is not of that kind (the
    caller then reads it point by point): points that differ, velocities or accelerations
    of a length other than the positions' (or none), or bytes past the end.
    """
    if count == 0:
        empty = np.zeros((0, k))
        return WaypointArrays(np.zeros(0), empty, empty, empty, np.zeros(0, bool),
                              np.zeros(0, bool)), offset
    first = _point_layout(data, offset)
    if first is None:
        return None
    counts = [c for _, c, _ in first.fields]
    size = counts[0]
    if any(c not in (0, size) for c in counts[1:3]):
        return None
    pieces = [(0, first, count)]          # (first point, its layout, points laid out so)
    end = first.end
    if count > 1:
        layout = _point_layout(data, first.end)
        if layout is None or [c for _, c, _ in layout.fields] != counts \
                or (layout.end - layout.start) % 8:
            return None
        if (layout.start - first.start) % 8:
            pieces = [(0, first, 1), (1, layout, count - 1)]
        end = first.end + (count - 1) * (layout.end - layout.start)
    times = np.empty(count)
    positions = np.empty((count, size))
    zeros = np.zeros((count, size))
    velocities = np.empty((count, size)) if counts[1] else zeros
    accelerations = np.empty((count, size)) if counts[2] else zeros
    for start, layout, number in pieces:
        part = _records(data, layout, layout.start, number)
        if part is None or any(np.any(part[f'{name}_count'] != c)
                               for name, c in zip(_POINT_FIELDS, counts)):
            return None
        rows = slice(start, start + len(part))
        times[rows] = part['sec'].astype(float) + 1e-9 * part['nanosec'].astype(float)
        for out, name, c in ((positions, 'positions', size),
                             (velocities, 'velocities', counts[1]),
                             (accelerations, 'accelerations', counts[2])):
            if c:
                out[rows] = part[name].reshape(-1, size)
    return WaypointArrays(times, positions, velocities, accelerations,
                          np.full(count, counts[1] > 0), np.full(count, counts[2] > 0)), end


def _read_header(data, message, start=4):
    """Check the encapsulation, read the ``std_msgs/Header`` at ``start`` (4-aligned).

    Returns (sec, nanosec, frame_id, offset); ``offset`` is where the next field starts,
    4-aligned.
    """
    size = len(data)
    if size < 4 or data[:2] != CDR_LE[:2]:
        raise UnsupportedEncoding(f'encapsulation {bytes(data[:4]).hex()!r} is not '
                                  'little-endian plain CDR')
    if size < start + 12:
        raise CdrError(f'{size} bytes: too short for a {message} header')
    sec, nanosec, length = _HEADER.unpack_from(data, start)
    end = start + 12 + length
    if length == 0 or end > size or data[end - 1] != 0:
        raise CdrError('header.frame_id: bad string length or missing NUL')
    return sec, nanosec, bytes(data[start + 12:end - 1]), end + (-end) % 4


def _read_count(data, offset, field):
    """Return the uint32 length of the sequence ``field`` at ``offset`` (4-aligned)."""
    if offset + 4 > len(data):
        raise CdrError(f'{field}: the message ends before its length')
    return _UINT32.unpack_from(data, offset)[0]


def _read_doubles(data, offset, field):
    """Read the float64[] ``field`` at ``offset``: (array('d'), offset after it)."""
    offset += (-offset) % 4
    count = _read_count(data, offset, field)
    stop = offset + 4
    values = array('d')
    if count:
        offset = stop + (4 - stop) % 8               # 8-aligned counted from the header
        stop = offset + 8 * count
        if stop > len(data):
            raise CdrError(f'{field}: {count} values run past the end of the '
                           f'{len(data)} bytes')
        values.frombytes(data[offset:stop])
        if _DOUBLES_SWAPPED:
            values.byteswap()
    return values, stop


def _read_names(data, offset, count, field='name'):
    """Decode ``count`` CDR strings from ``offset``; return (tuple, offset after them)."""
    names = []
    size = len(data)
    for i in range(count):
        offset += (-offset) % 4      # the header is 4 bytes: 4-aligned either way
        if offset + 4 > size:
            raise CdrError(f'{field}[{i}]: the message ends before its length')
        (length,) = _UINT32.unpack_from(data, offset)
        stop = offset + 4 + length
        if length == 0 or stop > size or data[stop - 1] != 0:
            raise CdrError(f'{field}[{i}]: bad string length or missing NUL')
        try:
            names.append(data[offset + 4:stop - 1].decode('utf-8'))
        except UnicodeDecodeError as err:
            raise CdrError(f'{field}[{i}]: not UTF-8 ({err.reason})') from None
        offset = stop
    return tuple(names), offset + (-offset) % 4


def joint_names_block(names: Sequence[str]) -> bytes:
    """Serialize a ``string[]`` to CDR (count, then each string padded to 4 bytes).

    Written at a 4-aligned offset, as ``JointState.name`` always is when the header
    before it is padded (:func:`joint_state_bytes` does that).
    """
    parts = [_UINT32.pack(len(names))]
    for name in names:
        raw = name.encode('utf-8') + b'\x00'
        parts += [_UINT32.pack(len(raw)), raw, b'\x00' * (-len(raw) % 4)]
    return b''.join(parts)


@functools.lru_cache(maxsize=256)
def _doubles_struct(offset, counts):
    """Return a Struct packing float64[] sequences of ``counts`` from absolute ``offset``.

    Each sequence: its uint32 count, then (when not empty) padding to 8 bytes counted
    from the header, then the values. Cached: the node writes the same shapes each time.
    """
    fmt = ['<']
    for count in counts:
        fmt.append('I')
        offset += 4
        if count:
            pad = (-(offset - 4)) % 8
            fmt.append(f'{pad}x{count}d')
            offset += pad + 8 * count
    return struct.Struct(''.join(fmt))


def joint_state_bytes(sec: int, nanosec: int, frame_id: bytes, names_block: bytes,
                      position: Sequence[float], velocity: Sequence[float],
                      effort: Sequence[float]) -> bytes:
    """Serialize a ``sensor_msgs/JointState`` (little-endian plain CDR).

    ``names_block`` is :func:`joint_names_block` of the names (cache it: names rarely
    change); ``frame_id`` UTF-8 bytes without NUL. Returns bytes for
    ``Publisher.publish``.
    """
    head = 17 + len(frame_id)
    pad = (-head) % 4
    offset = head + pad + len(names_block)
    arrays = _doubles_struct(offset % 8, (len(position), len(velocity), len(effort)))
    return b''.join((
        CDR_LE, _HEADER.pack(sec, nanosec, len(frame_id) + 1), frame_id, _PADS[pad + 1],
        names_block, arrays.pack(len(position), *position, len(velocity), *velocity,
                                 len(effort), *effort)))


def float64_multi_array_bytes(data: Sequence[float]) -> bytes:
    """Serialize a ``std_msgs/Float64MultiArray`` with an empty layout (as rclpy's default).

    Layout: ``dim`` empty, ``data_offset`` 0; ``data`` the values.
    """
    # two uint32 zeros (the empty dim sequence's count, data_offset) pack like two empty
    # float64[] counts; then the data
    return CDR_LE + _doubles_struct(4, (0, 0, len(data))).pack(0, 0, len(data), *data)


_DURATION_ZERO = struct.pack('<iI', 0, 0)
#: an empty MultiDOFJointTrajectoryPoint: three empty sequences and a zero Duration
_EMPTY_MULTI_DOF_POINT = struct.pack('<5I', 0, 0, 0, 0, 0)


def controller_state_bytes(sec: int, nanosec: int, frame_id: bytes, names_block: bytes,
                           reference: Sequence[Sequence[float]],
                           feedback: Sequence[Sequence[float]],
                           error: Sequence[Sequence[float]],
                           output: Sequence[float],
                           speed_scaling_factor: float = 1.0) -> bytes:
    """Serialize a ``control_msgs/JointTrajectoryControllerState`` (little-endian CDR).

    ``reference``: (positions, velocities, accelerations); ``feedback`` and ``error``:
    (positions, velocities); ``output``: the effort command, written as the ``effort`` of
    the ``output`` point. Every ``time_from_start`` is zero; the multi-DOF fields are
    empty. ``names_block``: :func:`joint_names_block` of ``joint_names``.
    """
    head = 17 + len(frame_id)
    pad = (-head) % 4
    parts = [CDR_LE, _HEADER.pack(sec, nanosec, len(frame_id) + 1), frame_id, _PADS[pad + 1],
             names_block]
    offset = head + pad + len(names_block)
    empty = ()
    for fields in ((reference[0], reference[1], reference[2], empty),
                   (feedback[0], feedback[1], empty, empty),
                   (error[0], error[1], empty, empty),
                   (empty, empty, empty, output)):
        packer = _doubles_struct(offset % 8, tuple(len(v) for v in fields))
        values = []
        for v in fields:
            values.append(len(v))
            values.extend(v)
        parts += [packer.pack(*values), _DURATION_ZERO]
        offset += packer.size + 8
    parts.append(_UINT32.pack(0))                  # multi_dof_joint_names
    parts.append(_EMPTY_MULTI_DOF_POINT * 4)       # multi_dof_reference ... _output
    offset += 4 + 4 * _EMPTY_MULTI_DOF_POINT_SIZE
    parts.append(b'\x00' * ((-(offset - 4)) % 8))
    parts.append(struct.pack('<d', speed_scaling_factor))
    return b''.join(parts)


_EMPTY_MULTI_DOF_POINT_SIZE = len(_EMPTY_MULTI_DOF_POINT)
