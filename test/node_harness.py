"""A ComputedTorqueNode and a peer node on one executor: the harness of the DDS tests.

Real rclpy (Fast DDS), in-process, the executor spun by the test. The peer publishes
``/joint_states`` and ``~/joint_trajectory`` and records ``/effort_controller/commands``,
``~/tracking_error`` and ``~/desired``; replies are matched to the state they answer by
``header.stamp``. Every effort a harness received is checked finite and within the limits
when the test ends (the ``make_harness`` fixture of ``test/ros/conftest.py``).
"""
import time

import numpy as np
import rclpy
from builtin_interfaces.msg import Duration, Time
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from references import (KD, KP, PUMA_ARMATURE, PUMA_JOINTS, PUMA_LIMITS, PUMA_URDF, SET_Q,
                        SET_QD, SET_QDD)
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ne_dynamics_ros.nodes.computed_torque_node import ComputedTorqueNode, JOINT_STATE_QOS

TIMEOUT = 10.0
#: ``discovery_settle`` of nodes in tests that do not test late discovery (its pause of
#: the exchange, ~0.3 s, is far under their state timeouts); test_activation keeps 3.5 s.
SETTLE = Parameter('discovery_settle', value=0.2)


def stamp(k):
    """Return a distinct, increasing header stamp for the k-th state (10 ms apart)."""
    ns = 1_000_000_000 + k * 10_000_000
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def key(t):
    return (t.sec, t.nanosec)


def duration(seconds):
    ns = int(round(seconds * 1e9))
    return Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def trajectory_msg(names, points, start=None):
    """points: (time_from_start, positions[, velocities[, accelerations]])."""
    msg = JointTrajectory(joint_names=list(names))
    if start is not None:
        msg.header.stamp = start
    for t, *fields in points:
        p = JointTrajectoryPoint(time_from_start=duration(t))
        for attr, values in zip(('positions', 'velocities', 'accelerations'), fields):
            setattr(p, attr, [float(v) for v in values])
        msg.points.append(p)
    return msg


class Harness:
    """A ComputedTorqueNode plus a peer node that talks to it, on one executor."""

    def __init__(self, context, params, limits=PUMA_LIMITS):
        self.context = context
        self.limits = limits
        self.node = ComputedTorqueNode(context=context, parameter_overrides=params)
        self.peer = rclpy.create_node('computed_torque_test_peer', context=context)
        self.efforts, self.errors, self.desired = [], {}, {}
        self.peer.create_subscription(Float64MultiArray, '/effort_controller/commands',
                                      lambda m: self.efforts.append(np.array(m.data)), 100)
        self.peer.create_subscription(
            JointState, '/computed_torque_node/tracking_error',
            lambda m: self.errors.__setitem__(key(m.header.stamp), m), 100)
        self.peer.create_subscription(
            JointTrajectory, '/computed_torque_node/desired',
            lambda m: self.desired.__setitem__(key(m.header.stamp), m), 100)
        self.state_pub = self.peer.create_publisher(JointState, '/joint_states', JOINT_STATE_QOS)
        self.trajectory_pub = self.peer.create_publisher(
            JointTrajectory, '/computed_torque_node/joint_trajectory', 10)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.peer)
        self.k = 0
        self.spin_until(lambda: self.state_pub.get_subscription_count() >= 1
                        and self.trajectory_pub.get_subscription_count() >= 1
                        and self.node._effort_pub.get_subscription_count() >= 1
                        # the node's watchdog thread has noticed the ~/ outputs' readers
                        and self.node.outputs.wanted[:2] == (True, True),
                        what='discovery')

    def spin_until(self, predicate, timeout=TIMEOUT, what='condition'):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f'timed out waiting for {what}')
            self.executor.spin_once(timeout_sec=0.01)

    def publish_state(self, names, position, velocity=(), effort=(), header_stamp=None):
        self.k += 1
        msg = JointState(name=list(names), position=[float(v) for v in position],
                         velocity=[float(v) for v in velocity],
                         effort=[float(v) for v in effort])
        msg.header.stamp = stamp(self.k) if header_stamp is None else header_stamp
        self.state_pub.publish(msg)
        return msg.header.stamp

    def exchange(self, names, position, velocity=(), effort=(), header_stamp=None):
        """Publish a state and return (effort, tracking_error, desired) answering it.

        The effort is the command of that state: ``~/tracking_error``'s effort, stamped
        like it, which the command topic (unstamped) must carry too; not merely the last
        command received.
        """
        n_before = len(self.efforts)
        s = self.publish_state(names, position, velocity, effort, header_stamp)

        def answered():
            error = self.errors.get(key(s))
            return (error is not None and key(s) in self.desired and any(
                np.array_equal(tau, error.effort) for tau in self.efforts[n_before:]))
        self.spin_until(answered, what='the reply to a joint state')
        error = self.errors[key(s)]
        return np.array(error.effort), error, self.desired[key(s)]

    def send_trajectory(self, msg, accepted=True):
        controller = self.node.controller
        before = (id(controller.trajectory), controller.rejected_trajectories)
        self.trajectory_pub.publish(msg)
        self.spin_until(lambda: (id(controller.trajectory), controller.rejected_trajectories)
                        != before, what='the trajectory to be handled')
        assert (controller.rejected_trajectories == before[1]) == accepted

    def set(self, **values):
        return self.node.set_parameters([Parameter(k, value=v) for k, v in values.items()])

    def check_everything_published(self):
        for tau in self.efforts:
            assert np.all(np.isfinite(tau)), tau
            assert np.all(np.abs(tau) <= self.limits + 1e-12), tau

    def close(self):
        self.executor.shutdown(timeout_sec=1.0)
        self.peer.destroy_node()
        self.node.destroy_node()


def puma_params(**extra):
    # A state timeout far above any pause a loaded CI machine makes between two states of
    # a test; test_state_timeout_holds_gravity_then_zero_effort_then_resumes sets its own.
    params = {'urdf_path': str(PUMA_URDF), 'armature': PUMA_ARMATURE, 'kp': KP, 'kd': KD,
              'state_timeout': 5.0, 'discovery_settle': SETTLE.value}
    params.update(extra)
    return [Parameter(k, value=v) for k, v in params.items()]


def stream_set_point(h, names=PUMA_JOINTS, q=SET_Q, qd=SET_QD, qdd=SET_QDD):
    h.send_trajectory(trajectory_msg(names, [(0.0, q, qd, qdd)]))
