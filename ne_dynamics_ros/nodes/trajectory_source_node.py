r"""``trajectory_source``: publish one point-to-point joint trajectory for the controller.

Samples a profile of :mod:`ne_dynamics_ros.control.profiles` (``quintic`` or Sasaki's
``trapezoidal``, 002 section 4) from ``start`` to ``goal`` over ``duration`` every
``sample_period`` seconds (and at the end), and publishes it once as a
``trajectory_msgs/JointTrajectory`` whose points carry positions, velocities and
accelerations, so the controller can interpolate with quintic splines and recover the
profile exactly between points.

* ``joint_names`` empty: take the names from the first ``/joint_states`` message;
  ``start`` empty: start from the measured positions (by name).
* ``start_time`` 0: ``header.stamp`` is zero, "start on receipt"; otherwise the stamp
  is that absolute time (seconds, in the receiver's clock -- simulated time when the
  nodes run with ``use_sim_time``).
* The publisher is reliable and transient-local, and the message is sent only once the
  topic has a subscriber (then kept for ``linger`` seconds for late joiners), so it is
  not lost to discovery.

Example::

    ros2 run ne_dynamics_ros trajectory_source --ros-args \\
        -p goal:="[0.785, 0.524, 0.0, 0.785, 1.047, 1.571]" -p duration:=3.0
"""
import sys
import time

from builtin_interfaces.msg import Duration
import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
import rclpy
from rclpy.clock import Clock, ClockType
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy
from rclpy.time import Time
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ne_dynamics_ros.control.profiles import PROFILES, sample_profile

DEFAULT_TOPIC = '/computed_torque_node/joint_trajectory'
TRAJECTORY_QOS = QoSProfile(depth=1, reliability=QoSReliabilityPolicy.RELIABLE,
                            durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)


class TrajectorySourceError(ValueError):
    """The trajectory source's parameters cannot make a trajectory."""


def build_trajectory(joint_names, start, goal, duration, profile='quintic',
                     sample_period=0.01, start_time=0.0):
    """Build a ``JointTrajectory`` sampling ``profile`` from ``start`` to ``goal`` (rad or m).

    ``start_time`` (s) becomes ``header.stamp`` (0: start on receipt).
    """
    start = np.asarray(start, dtype=float)
    goal = np.asarray(goal, dtype=float)
    if len(joint_names) != start.size or start.size != goal.size:
        raise TrajectorySourceError(
            f'{len(joint_names)} joint names, {start.size} start values and {goal.size} goal '
            'values: they must match')
    try:
        times, q, qd, qdd = sample_profile(profile, start, goal, duration, sample_period)
    except ValueError as err:
        raise TrajectorySourceError(str(err)) from None
    msg = JointTrajectory()
    msg.header.stamp = Time(nanoseconds=round(start_time * 1e9)).to_msg()
    msg.joint_names = list(joint_names)
    for k, t in enumerate(times):
        nanoseconds = round(t * 1e9)
        msg.points.append(JointTrajectoryPoint(
            positions=q[k].tolist(), velocities=qd[k].tolist(), accelerations=qdd[k].tolist(),
            time_from_start=Duration(sec=nanoseconds // 10**9,
                                     nanosec=nanoseconds % 10**9)))
    return msg


class TrajectorySourceNode(Node):
    """Publishes one trajectory as soon as it knows the joints and someone listens."""

    def __init__(self, **kwargs):
        super().__init__('trajectory_source', **kwargs)

        def declare(name, default, description):
            descriptor = ParameterDescriptor(description=description, dynamic_typing=True,
                                             read_only=True)
            return self.declare_parameter(name, default, descriptor).value

        self.joint_names = [j for j in declare(
            'joint_names', [], 'joints; default: from the first /joint_states') if j]
        self.start = [float(v) for v in declare(
            'start', [], 'start positions (rad or m); default: the measured ones')]
        self.goal = [float(v) for v in declare('goal', [], 'goal positions (rad or m)')]
        self.duration = float(declare('duration', 3.0, 'motion time, s'))
        self.profile = declare('profile', 'quintic', f'one of {sorted(PROFILES)}')
        self.sample_period = float(declare('sample_period', 0.01, 'time between points, s'))
        self.start_time = float(declare('start_time', 0.0,
                                        'header.stamp in s; 0 = start on receipt'))
        topic = declare('topic', DEFAULT_TOPIC, 'trajectory topic')
        if self.profile not in PROFILES:
            raise TrajectorySourceError(f'unknown profile {self.profile!r}; '
                                        f'choose one of {sorted(PROFILES)}')
        if not self.goal:
            raise TrajectorySourceError('parameter goal (one position per joint) is required')
        self.trajectory = None
        self.publisher = self.create_publisher(JointTrajectory, topic, TRAJECTORY_QOS)
        if not self.joint_names or not self.start:
            self.create_subscription(JointState, '/joint_states', self._on_joint_states, 10)
        # A steady clock, so the node also works under use_sim_time before /clock runs.
        self.create_timer(0.05, self._try_publish,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))

    def _on_joint_states(self, msg):
        if self.joint_names and self.start:
            return
        names = self.joint_names or list(msg.name)
        position = dict(zip(msg.name, msg.position))
        if any(name not in position for name in names):
            self.get_logger().warning(f'/joint_states lacks some of {names}',
                                      throttle_duration_sec=2.0)
            return
        self.joint_names = names
        if not self.start:
            self.start = [position[name] for name in names]

    def _try_publish(self):
        if self.trajectory is not None or not self.joint_names or not self.start:
            return
        if self.publisher.get_subscription_count() == 0:
            return
        self.trajectory = build_trajectory(self.joint_names, self.start, self.goal,
                                           self.duration, self.profile, self.sample_period,
                                           self.start_time)
        self.publisher.publish(self.trajectory)
        self.get_logger().info(
            f'published a {self.duration:g} s {self.profile} trajectory with '
            f'{len(self.trajectory.points)} points for {self.joint_names}')


def _publish_once(node, wait_timeout, linger):
    """Spin until the trajectory is out, then linger; return an exit status."""
    deadline = time.monotonic() + wait_timeout
    while node.trajectory is None and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)
    if node.trajectory is None:
        what = 'joint states' if not (node.joint_names and node.start) else 'subscriber'
        print(f'trajectory_source: no {what} within {wait_timeout:g} s', file=sys.stderr)
        return 1
    end = time.monotonic() + linger
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.1)
    return 0


def main(args=None, wait_timeout=30.0, linger=1.0):
    """Publish one trajectory and exit 0, or exit 1 if nobody listens within the timeout."""
    rclpy.init(args=args)
    status = 1
    node = None
    try:
        node = TrajectorySourceNode()
        status = _publish_once(node, wait_timeout, linger)
    except TrajectorySourceError as exc:
        print(f'trajectory_source: {exc}', file=sys.stderr)
    except (KeyboardInterrupt, ExternalShutdownException):
        status = 0
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return status


if __name__ == '__main__':
    raise SystemExit(main())
