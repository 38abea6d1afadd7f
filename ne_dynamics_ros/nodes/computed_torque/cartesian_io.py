"""The node's Cartesian topics: ``~/target_pose`` in, ``~/current_pose`` out.

The topics of a law that follows a target pose (``cartesian_impedance``:
:mod:`~ne_dynamics_ros.control.laws.cartesian`; its ``inputs`` and ``outputs``):

* ``~/target_pose`` (``geometry_msgs/PoseStamped``): the pose the tip is held at, in the
  chain's base link frame (``header.frame_id`` empty or the base link's name). A target
  that cannot be taken (another frame, NaN or inf, a zero quaternion, another mode) is
  dropped with a throttled warning; the last good one stays. Taken on the executor, off
  the control path.
* ``~/current_pose`` (``geometry_msgs/PoseStamped``): the tip pose measured at each
  command, stamped like the state it answers, while somebody subscribes (looked up once
  a second with the diagnostics, as ``~/external_effort``: every graph query on the
  watchdog thread's period is one more wait on the DDS discovery's lock, which stalled
  the node for >100 ms while a participant joined).

The node only converts messages here; the checks are the controller's.
"""
from geometry_msgs.msg import PoseStamped

from ne_dynamics_ros.control.laws.cartesian import TargetError
from ne_dynamics_ros.dynamics.kinematics import matrix_to_quaternion


class CartesianTopics:
    """Subscribe ``~/target_pose`` and publish ``~/current_pose`` for ``node``.

    Args:
        node: the node (its ``controller``, ``warn_throttled``, logger).
        event_callbacks: the publisher's QoS-event callbacks (the other ``~/`` outputs').
    """

    def __init__(self, node, event_callbacks):
        self._node = node
        self._current = node.create_publisher(PoseStamped, '~/current_pose', 10,
                                              event_callbacks=event_callbacks)
        self.subscription = node.create_subscription(PoseStamped, '~/target_pose',
                                                     self._on_target, 10)
        #: somebody subscribes to ~/current_pose (refreshed off the control path)
        self.wanted = False
        self._base_link = ''

    def configure(self, base_link: str):
        """Take the chain's base link (the frame of ``~/current_pose``)."""
        self._base_link = base_link

    def refresh(self):
        """Look up who subscribes (the watchdog thread)."""
        self.wanted = self._current.get_subscription_count() > 0

    def _on_target(self, msg):
        controller = self._node.controller
        if controller is None:
            return
        p, o = msg.pose.position, msg.pose.orientation
        try:
            controller.set_target_pose((p.x, p.y, p.z), (o.x, o.y, o.z, o.w),
                                       msg.header.frame_id)
        except TargetError as err:
            self._node.warn_throttled('target_pose', f'dropped a target pose: {err}')

    def publish(self, report, state):
        """Publish the tip pose of a command's report (stamped like ``state``) if wanted.

        ``report``: the law's :class:`~ne_dynamics_ros.control.laws.cartesian.
        CartesianReport`, or None (nothing to publish).
        """
        if not self.wanted or report is None:
            return
        T = report.pose
        message = PoseStamped()
        message.header.stamp.sec, message.header.stamp.nanosec = state.sec, state.nanosec
        message.header.frame_id = self._base_link
        position, orientation = message.pose.position, message.pose.orientation
        position.x, position.y, position.z = (float(v) for v in T[:3, 3])
        orientation.x, orientation.y, orientation.z, orientation.w = (
            float(v) for v in matrix_to_quaternion(T[:3, :3]))
        self._current.publish(message)


__all__ = ['CartesianTopics']
