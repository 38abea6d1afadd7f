"""Message fields to the controller's inputs: joint states as bytes or objects, stamps.

The control path takes ``joint_states`` as serialized CDR bytes, read by
:class:`~ne_dynamics_ros.nodes.cdr.JointStateReader` (about 7 us against rclpy's 40 us
conversion into Python objects); an encoding it does not read goes to rclpy's
deserializer. The result is the :class:`~ne_dynamics_ros.control.controller.
JointStateSample` the controller answers.
"""
import time

from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState

from ne_dynamics_ros.control import JointStateSample
from ne_dynamics_ros.nodes.cdr import (CdrError, JointStateFields, JointStateReader,
                                       UnsupportedEncoding)


def stamp_ns(fields):
    """Return the ``header.stamp`` of read message fields as integer nanoseconds."""
    return fields.sec * 1_000_000_000 + fields.nanosec


def joint_state_fields(msg):
    """Return the :class:`JointStateFields` of a ``sensor_msgs/JointState`` object."""
    stamp = msg.header.stamp
    return JointStateFields(stamp.sec, stamp.nanosec,
                            msg.header.frame_id.encode('utf-8', 'replace'), tuple(msg.name),
                            msg.position, msg.velocity, msg.effort)


def read_joint_state(reader: JointStateReader, data):
    """Read serialized ``joint_states`` bytes into :class:`JointStateFields`.

    Raises:
        CdrError: bytes neither this reader nor rclpy's deserializer can read (the
            message says why).
    """
    try:
        return reader.read(data)
    except UnsupportedEncoding:
        # not little-endian plain CDR: rclpy's deserializer reads every encoding
        try:
            return joint_state_fields(deserialize_message(data, JointState))
        except Exception as err:  # noqa: BLE001 - whatever rclpy raises, a reason
            raise CdrError(f'cannot deserialize it: {type(err).__name__}: {err}') from None


def sample(fields):
    """Return the controller's :class:`JointStateSample` of read fields, stamped now."""
    return JointStateSample(fields.names, fields.position, fields.velocity, fields.effort,
                            stamp_ns(fields), time.monotonic_ns())


__all__ = ['joint_state_fields', 'read_joint_state', 'sample', 'stamp_ns']
