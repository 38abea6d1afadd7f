"""The laws' own topics, made from their declarations: messages to values and back.

Each law declares its topics in its module (:attr:`~ne_dynamics_ros.control.laws.base.
Law.topics`, :class:`~ne_dynamics_ros.control.laws.base.LawTopic`); :class:`LawTopics`
makes every one of the registry's (:data:`~ne_dynamics_ros.control.laws.registry.
LAW_TOPICS`) once, whatever the mode, so that nothing joins the DDS graph when the mode
changes. This module only converts: a message of a kind to its value
(:data:`~ne_dynamics_ros.control.laws.base.TOPIC_KINDS`) for
:meth:`~ne_dynamics_ros.control.law_inputs.LawInputs.take_input`, and a command's report
back to a message. An input the controller refuses (another mode, a bad value) is
dropped with a throttled warning that names the topic; the last good value stays.
Inputs are taken on the executor, off the control path. An output is written while
somebody subscribes (looked up once a second with the diagnostics: every graph query is
one more wait on the DDS discovery's lock), stamped like the state the command answers,
at most at its declared rate per second of the states' stamps.
"""
import functools
import time

from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.qos import QoSProfile, QoSReliabilityPolicy

from ne_dynamics_ros.control.laws import (InertiaInput, LAW_TOPICS, LawInputError, PoseInput,
                                          WrenchInput)
from ne_dynamics_ros.dynamics.kinematics import matrix_to_quaternion

try:
    from geometry_msgs.msg import Inertia
except ImportError:                        # geometry_msgs comes with control_msgs' wheel
    Inertia = None

#: QoS of a sensor's stream (``LawTopic.sensor_data``): best effort, the newest 5, as
#: ros2_controllers' broadcasters (force_torque_sensor_broadcaster) publish.
SENSOR_QOS = QoSProfile(depth=5, reliability=QoSReliabilityPolicy.BEST_EFFORT)


def _stamp(header):
    return header.stamp.sec + 1e-9 * header.stamp.nanosec


def _pose_in(msg):
    p, o = msg.pose.position, msg.pose.orientation
    return PoseInput((p.x, p.y, p.z), (o.x, o.y, o.z, o.w), msg.header.frame_id)


def _pose_out(T, state, frame):
    message = PoseStamped()
    message.header.stamp.sec, message.header.stamp.nanosec = state.sec, state.nanosec
    message.header.frame_id = frame
    position, orientation = message.pose.position, message.pose.orientation
    position.x, position.y, position.z = (float(v) for v in T[:3, 3])
    orientation.x, orientation.y, orientation.z, orientation.w = (
        float(v) for v in matrix_to_quaternion(T[:3, :3]))
    return message


def _wrench_in(msg):
    f, m = msg.wrench.force, msg.wrench.torque
    return WrenchInput((f.x, f.y, f.z), (m.x, m.y, m.z), msg.header.frame_id,
                       _stamp(msg.header))


def _inertia_in(msg):
    return InertiaInput(msg.m, (msg.com.x, msg.com.y, msg.com.z),
                        (msg.ixx, msg.ixy, msg.ixz, msg.iyy, msg.iyz, msg.izz))


def _inertia_out(value, state, frame):
    mass, com, inertia = value
    message = Inertia(m=float(mass))
    message.com.x, message.com.y, message.com.z = (float(v) for v in com)
    (message.ixx, message.ixy, message.ixz, message.iyy, message.iyz,
     message.izz) = (float(v) for v in inertia)
    return message


#: kind -> (message type or None where missing, message -> value, value -> message)
KINDS = {
    'pose': (PoseStamped, _pose_in, _pose_out),
    'wrench': (WrenchStamped, _wrench_in, None),
    'inertia': (Inertia, _inertia_in, _inertia_out),
}


class _Output:
    __slots__ = ('topic', 'publisher', 'write', 'wanted', 'due_ns')

    def __init__(self, topic, publisher, write):
        self.topic, self.publisher, self.write = topic, publisher, write
        self.wanted, self.due_ns = False, None

    def due(self, state) -> bool:
        """Say whether the output may be written for ``state`` (its rate, by the stamp).

        A stamp that went back (a simulation restarted) makes it due at once; a state
        without a stamp counts on the steady clock.
        """
        rate = self.topic.rate
        if rate <= 0:
            return True
        stamp = state.sec * 1_000_000_000 + state.nanosec or time.monotonic_ns()
        period = int(1e9 / rate)
        if self.due_ns is not None and self.due_ns - period <= stamp < self.due_ns:
            return False
        self.due_ns = stamp + period
        return True


class LawTopics:
    """Every law's own topics on ``node``: subscriptions, publishers and conversions.

    Args:
        node: the node (its ``controller``, ``warn_throttled`` and logger).
        event_callbacks: the publishers' QoS-event callbacks (the other ``~/`` outputs').
    """

    def __init__(self, node, event_callbacks):
        self._node = node
        self._outputs = {}
        self._frame = ''
        self.subscriptions = []
        for _, topic in LAW_TOPICS:
            message, read, write = KINDS[topic.kind]
            if message is None:
                continue
            qos = SENSOR_QOS if topic.sensor_data else 10
            if topic.output:
                self._outputs[topic.key] = _Output(topic, node.create_publisher(
                    message, topic.name, qos, event_callbacks=event_callbacks), write)
            else:
                self.subscriptions.append(node.create_subscription(
                    message, topic.name, functools.partial(self._on_input, topic, read), qos))

    def configure(self, base_link: str):
        """Take the chain's base link (the frame of the outputs that are poses)."""
        self._frame = base_link

    def refresh(self):
        """Look up who subscribes to each output (off the control path)."""
        for output in self._outputs.values():
            output.wanted = output.publisher.get_subscription_count() > 0

    def wanted(self, key: str) -> bool:
        """Say whether somebody subscribes to the output ``key`` (as last looked up)."""
        output = self._outputs.get(key)
        return output is not None and output.wanted

    def _on_input(self, topic, read, msg):
        controller = self._node.controller
        if controller is None:
            return
        value = read(msg)
        try:
            controller.take_input(topic.key, value)
        except LawInputError as err:
            self._node.warn_throttled(topic.key, f'dropped a message on {topic.name}: {err}')
            return
        if topic.every_mode:            # a declaration, not a stream: say it was taken
            self._node.get_logger().info(f'{topic.name} taken: {value}')

    def publish(self, report, state):
        """Publish the outputs a command's ``report`` carries, stamped like ``state``.

        ``report``: ``{key: value with topic_value()}`` (the law's
        :meth:`~ne_dynamics_ros.control.laws.base.Law.report`), or None.
        """
        if not report:
            return
        for key, value in report.items():
            output = self._outputs.get(key)
            if output is None or not output.wanted or not output.due(state):
                continue
            output.publisher.publish(output.write(value.topic_value(), state, self._frame))


__all__ = ['KINDS', 'LawTopics', 'SENSOR_QOS']
