"""The frames computed_torque_node and its trajectory receiver process exchange.

Over a Unix socket pair: a frame is a ``<IQ`` prefix (header length, payload length), a
JSON header, then the payload of float64 and bool arrays (trajectory and goal frames:
:data:`ARRAYS`, the columns of the waypoints in chain order and their segment
polynomials). What each side sends is described where it is sent
(:mod:`ne_dynamics_ros.nodes.trajectory_receiver`,
:mod:`ne_dynamics_ros.nodes.follow_joint_trajectory`,
:mod:`ne_dynamics_ros.nodes.computed_torque`). No ROS import.
"""
import json
import struct

import numpy as np

from ne_dynamics_ros.control.reference.trajectory import PreparedWaypoints, WaypointArrays
from ne_dynamics_ros.nodes.cdr import JointTrajectoryFields

_PREFIX = struct.Struct('<IQ')          # header bytes, payload bytes
#: The arrays of a trajectory frame, in payload order: (name, dtype, shape for m points
#: of n joints and p coefficient planes).
ARRAYS = (('times', '<f8', lambda m, n, p: (m,)),
          ('positions', '<f8', lambda m, n, p: (m, n)),
          ('velocities', '<f8', lambda m, n, p: (m, n)),
          ('accelerations', '<f8', lambda m, n, p: (m, n)),
          ('has_velocities', '|b1', lambda m, n, p: (m,)),
          ('has_accelerations', '|b1', lambda m, n, p: (m,)),
          ('coefficients', '<f8', lambda m, n, p: (p, max(m - 1, 0), n)))


def trajectory_arrays(points: WaypointArrays, coefficients, joint_names) -> dict:
    """Return the header fields and payload arrays of a trajectory frame (``'_arrays'``).

    ``points`` in ``joint_names`` order; ``coefficients``: their (p, m - 1, n) segment
    polynomials, or None when the receiver of the frame works them out (p = 0).
    """
    m, n = points.positions.shape
    if coefficients is None:
        coefficients = np.zeros((0, max(m - 1, 0), n))
    fields = {'joint_names': list(joint_names), 'points': m, 'width': n,
              'planes': coefficients.shape[0],
              'arrays': [name for name, _, _ in ARRAYS
                         if name not in ('velocities', 'accelerations')
                         or getattr(points, f'has_{name}').any()]}
    values = dict(points._asdict(), coefficients=coefficients)
    fields['_arrays'] = [np.ascontiguousarray(values[name], dtype)
                         for name, dtype, _ in ARRAYS if name in fields['arrays']]
    return fields


def trajectory_fields(header, arrays) -> JointTrajectoryFields:
    """Return the :class:`JointTrajectoryFields` of a ``'trajectory'`` frame.

    Its points are :class:`~ne_dynamics_ros.control.reference.trajectory.PreparedWaypoints` of the
    chain (views of the frame's payload, nothing copied); ``frame_id`` is not carried.
    """
    m, n, p = header['points'], header['width'], header['planes']
    given = dict(zip(header['arrays'], arrays))
    columns = {}
    for name, _, shape in ARRAYS:
        column = given.get(name)
        if column is None:             # velocities or accelerations given by no point
            column = np.zeros((m, n))
        columns[name] = column.reshape(shape(m, n, p))
    coefficients = columns.pop('coefficients')
    return JointTrajectoryFields(header['sec'], header['nanosec'], b'',
                                 tuple(header['joint_names']),
                                 PreparedWaypoints(WaypointArrays(**columns), coefficients))


def send_frame(sock, header, arrays):
    """Write one frame (blocking until the peer has taken it all)."""
    raw = json.dumps(header).encode('utf-8')
    payload = sum(a.nbytes for a in arrays)
    sock.sendall(_PREFIX.pack(len(raw), payload) + raw)
    for a in arrays:
        if a.nbytes:
            sock.sendall(a)


def _receive_exactly(sock, size):
    """``size`` bytes from the socket as a uint8 array; None at end of stream.

    Not a ``bytearray``: that is zero-filled first, holding the GIL (17 ms for 44 MB
    here); this buffer is filled by ``recv_into``, which gives the GIL up.
    """
    buffer = np.empty(size, dtype=np.uint8)
    view = memoryview(buffer)
    got = 0
    while got < size:
        chunk = sock.recv_into(view[got:])
        if chunk == 0:
            return None
        got += chunk
    return buffer


def receive_frame(sock):
    """Read one frame: ``(header, arrays)``; None when the peer closed the socket."""
    prefix = _receive_exactly(sock, _PREFIX.size)
    if prefix is None:
        return None
    header_size, payload_size = _PREFIX.unpack(prefix.tobytes())
    raw = _receive_exactly(sock, header_size)
    payload = _receive_exactly(sock, payload_size) if payload_size else np.empty(0, np.uint8)
    if raw is None or payload is None:
        return None
    header = json.loads(raw.tobytes().decode('utf-8'))
    arrays = []
    if header['kind'] in ('trajectory', 'goal'):
        m, n, p = header['points'], header['width'], header['planes']
        offset = 0
        for name, dtype, shape in ARRAYS:
            if name in header['arrays']:
                count = int(np.prod(shape(m, n, p)))
                arrays.append(np.frombuffer(payload, dtype, count, offset))
                offset += arrays[-1].nbytes
    return header, arrays


__all__ = ['ARRAYS', 'receive_frame', 'send_frame', 'trajectory_arrays',
           'trajectory_fields']
