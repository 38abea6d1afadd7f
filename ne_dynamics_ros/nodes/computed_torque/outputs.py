"""The node's ``~/`` outputs beside the command: tracking error, reference, JTC's state.

:class:`Outputs` owns the publishers of ``~/tracking_error`` (``sensor_msgs/JointState``:
position = ``q_d - q``, velocity = ``qd_d - qd``, effort = the command), ``~/desired``
(``trajectory_msgs/JointTrajectory``, one point: the reference sampled) and, with
control_msgs, ``~/controller_state`` (``control_msgs/JointTrajectoryControllerState``, as
joint_trajectory_controller publishes it, at most at ``controller_state_rate``). Each
costs a DDS write per command, so each is written only while somebody subscribes: the
watchdog thread refreshes who does (:meth:`Outputs.refresh`), off the control path.
``~/external_effort`` (``sensor_msgs/JointState``, effort only: the momentum observer's
external effort per joint, N·m or N, stamped with the state it answers) likewise, and
``~/external_wrench`` (``geometry_msgs/WrenchStamped``: that effort as a wrench at the
tip link's origin, in the frame ``external_wrench_frame`` says:
:mod:`~ne_dynamics_ros.control.sensing.wrench`), in every mode. Every
vector is in the command order (the controller's ``joints``). The laws' own topics
(what each law declares) are :mod:`~ne_dynamics_ros.nodes.computed_torque.law_topics`,
written from the command's report
(:attr:`~ne_dynamics_ros.control.run_state.Command.report`).
"""
import time

from rclpy.event_handler import PublisherEventCallbacks
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ne_dynamics_ros.nodes.cdr import (controller_state_bytes, joint_names_block,
                                       joint_state_bytes)
from ne_dynamics_ros.nodes.computed_torque.law_topics import LawTopics

#: No QoS-event handlers on the ~/ outputs: each one is polled by the executor on every
#: wake-up (~8 us apiece in rclpy), which the 1 kHz loop notices.
NO_PUBLISHER_EVENTS = PublisherEventCallbacks(use_default_callbacks=False)


class Outputs:
    """Publish the ``~/`` outputs of each command while they have subscribers.

    Args:
        node: the node the publishers are made on (made now, so that nothing joins the
            DDS graph later).
        controller_state_type: ``JointTrajectoryControllerState`` of control_msgs, or None
            when control_msgs is missing (no ``~/controller_state`` then).
    """

    def __init__(self, node, controller_state_type=None):
        self._tracking_error = node.create_publisher(
            JointState, '~/tracking_error', 10, event_callbacks=NO_PUBLISHER_EVENTS)
        self._desired = node.create_publisher(
            JointTrajectory, '~/desired', 10, event_callbacks=NO_PUBLISHER_EVENTS)
        self._controller_state = None if controller_state_type is None else \
            node.create_publisher(controller_state_type, '~/controller_state', 10,
                                  event_callbacks=NO_PUBLISHER_EVENTS)
        self._external_effort = node.create_publisher(
            JointState, '~/external_effort', 10, event_callbacks=NO_PUBLISHER_EVENTS)
        self._external_wrench = node.create_publisher(
            WrenchStamped, '~/external_wrench', 10, event_callbacks=NO_PUBLISHER_EVENTS)
        #: somebody subscribes to ~/external_wrench (refreshed with ~/external_effort)
        self.wrench_wanted = False
        #: the laws' own topics (each law's ``topics``)
        self.laws = LawTopics(node, NO_PUBLISHER_EVENTS)
        #: (tracking_error, desired, controller_state, external_effort): somebody
        #: subscribes
        self.wanted = (False, False, False, False)
        #: (the observer's external effort read, its wrench read): an input of the
        #: controller's update (``reading``: ``LawInputs.read_externals``, which runs the
        #: observer for either), from ~/external_effort's and ~/external_wrench's
        #: subscribers
        self.externals_read = (False, False)
        self._joints, self._joints_block = [], None
        self._state_rate = 0.0
        self._state_due_ns = 0

    def configure(self, joints, controller_state_rate: float, base_link: str = ''):
        """Take the command order, ``controller_state_rate`` (Hz) and the base link.

        ``joints``: names; ``base_link``: the chain's base (the frame of the laws' pose
        outputs).
        """
        self.laws.configure(base_link)
        self._joints = list(joints)
        self._joints_block = joint_names_block(self._joints)
        self._state_rate = float(controller_state_rate)

    def refresh(self, external_effort=False):
        """Look up who subscribes (the watchdog thread, off the control path).

        ``external_effort``: look ``~/external_effort``, ``~/external_wrench`` and the
        laws' outputs up too (the node does once a second, with its diagnostics: graph
        queries fewer per watchdog tick).
        """
        wanted_external = (self._external_effort.get_subscription_count() > 0
                           if external_effort else self.wanted[3])
        if external_effort:
            self.laws.refresh()
            self.wrench_wanted = self._external_wrench.get_subscription_count() > 0
        self.wanted = (
            self._tracking_error.get_subscription_count() > 0,
            self._desired.get_subscription_count() > 0,
            self._controller_state is not None
            and self._controller_state.get_subscription_count() > 0,
            wanted_external)
        self.externals_read = (wanted_external, self.wrench_wanted)

    def publish(self, state, out):
        """Publish the outputs of the command ``out`` answering ``state``.

        Stamped like ``state``; the law's own outputs from ``out.report`` when due and
        wanted (:class:`~ne_dynamics_ros.nodes.computed_torque.law_topics.LawTopics`).
        """
        self.laws.publish(out.report, state)
        tracking_error, desired, controller_state, external_effort = self.wanted
        if self.wrench_wanted and out.external_wrench is not None:
            self._publish_wrench(state, out.external_wrench)
        if external_effort and out.external_effort_values is not None:
            self._external_effort.publish(joint_state_bytes(
                state.sec, state.nanosec, state.frame_id, self._joints_block, (), (),
                out.external_effort_values))
        if controller_state:
            self._publish_controller_state(state, out)
        if tracking_error:
            self._tracking_error.publish(joint_state_bytes(
                state.sec, state.nanosec, state.frame_id, self._joints_block,
                out.position_error_values, out.velocity_error_values, out.effort_values))
        if desired:
            q_d, qd_d, qdd_d = out.desired_values
            message = JointTrajectory(joint_names=self._joints)
            message.header.stamp.sec = state.sec
            message.header.stamp.nanosec = state.nanosec
            message.header.frame_id = state.frame_id.decode('utf-8', 'replace')
            message.points = [JointTrajectoryPoint(positions=q_d, velocities=qd_d,
                                                   accelerations=qdd_d)]
            self._desired.publish(message)

    def _publish_wrench(self, state, wrench):
        """Publish ``~/external_wrench`` of a command's wrench, stamped like ``state``."""
        message = WrenchStamped()
        message.header.stamp.sec, message.header.stamp.nanosec = state.sec, state.nanosec
        message.header.frame_id = wrench.frame_id
        force, torque = message.wrench.force, message.wrench.torque
        force.x, force.y, force.z = (float(v) for v in wrench.force)
        torque.x, torque.y, torque.z = (float(v) for v in wrench.moment)
        self._external_wrench.publish(message)

    def _publish_controller_state(self, state, out):
        """``~/controller_state`` as JTC publishes it, at ``controller_state_rate``."""
        rate = self._state_rate
        if rate > 0.0:
            now = time.monotonic_ns()
            if now < self._state_due_ns:
                return
            self._state_due_ns = max(self._state_due_ns + int(1e9 / rate), now)
        self._controller_state.publish(controller_state_bytes(
            state.sec, state.nanosec, state.frame_id, self._joints_block, out.desired_values,
            out.measured_values, (out.position_error_values, out.velocity_error_values),
            out.effort_values))


__all__ = ['NO_PUBLISHER_EVENTS', 'Outputs']
