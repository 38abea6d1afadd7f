"""Trajectories taken in a process of their own (ne_dynamics_ros.nodes.trajectory_receiver).

The frames it sends are checked against rclpy's deserializer and our own pure checks; the
node with its receiver process is driven over real Fast DDS: a 50 000-point trajectory is
installed and followed, a message over the bound is dropped unread and counted, a model
that arrives on robot_description reaches the child, and the child never outlives the
node (Ctrl-C, SIGKILL).
"""
import os
import pathlib
import signal
import socket
import subprocess
import sys
import threading
import time

from cdr_writer import BigEndianCdr
import numpy as np
import pytest
import rclpy
from rclpy.parameter import Parameter
from rclpy.qos import QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy
from rclpy.serialization import serialize_message
from std_msgs.msg import String
from node_harness import puma_params, trajectory_msg
from references import PUMA_JOINTS, PUMA_URDF, Q0
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ne_dynamics_ros.control.reference.trajectory import prepare_waypoints, TrajectoryPoint
from ne_dynamics_ros.nodes.trajectory_receiver import (
    message_frame, receive_frame, send_frame, trajectory_fields)

REPO = pathlib.Path(__file__).resolve().parents[2]
CHAIN = tuple(PUMA_JOINTS)


def big_endian_trajectory(names, points):
    """A JointTrajectory in big-endian plain CDR (encapsulation 00 00), field by field.

    ``points``: (time_from_start s, positions, velocities) with integral nanoseconds.
    """
    cdr = BigEndianCdr()
    cdr.header()
    cdr.strings(names)
    cdr.uint32(len(points))
    for t, positions, velocities in points:
        for values in (positions, velocities, [], []):
            cdr.doubles(values)
        cdr.duration(t)
    return cdr.data


def test_a_big_endian_trajectory_is_read_by_rclpy_to_the_same_frame():
    names = PUMA_JOINTS[::-1]
    rng = np.random.default_rng(1)
    points = [(0.5 * (k + 1), rng.normal(size=6), rng.normal(size=6)) for k in range(3)]
    little = serialize_message(trajectory_msg(names, points))
    big = big_endian_trajectory(names, points)
    want_header, want = message_frame(little, 1 << 20, CHAIN)
    got_header, got = message_frame(big, 1 << 20, CHAIN)
    assert got_header == want_header and want_header['kind'] == 'trajectory'
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    # and the columns are those of the message, reordered into the chain's order
    fields = trajectory_fields(got_header, got)
    np.testing.assert_array_equal(fields.points.waypoints.positions,
                                  np.array([p[1][::-1] for p in points]))


@pytest.mark.parametrize('data, chain, kind, reason', [
    (bytes((1 << 20) + 1), CHAIN, 'dropped', 'unread'),
    (b'\x00\x01\x00\x00' + b'\xff' * 64, CHAIN, 'dropped', 'CdrError'),
    (serialize_message(trajectory_msg(PUMA_JOINTS[:5] + ['elbow'], [(1.0, Q0)])), CHAIN,
     'rejected', 'unknown joints'),
    (serialize_message(trajectory_msg(PUMA_JOINTS, [(1.0, Q0), (2.0, Q0[:5])])), CHAIN,
     'rejected', 'point 1 positions has 5 values'),
    (serialize_message(trajectory_msg(PUMA_JOINTS, [(1.0, Q0)])), None, 'rejected',
     'no robot model yet'),
], ids=['over the bound', 'garbage', 'unknown joint', 'points of different lengths',
        'no model'])
def test_frames_of_bad_messages_say_why(data, chain, kind, reason):
    header, arrays = message_frame(data, 1 << 20, chain)
    assert header['kind'] == kind and reason in header['reason'] and arrays == []
    assert header.get('unread', False) == (reason == 'unread')


def test_a_frame_reaches_the_other_end_whole():
    """Frames of a long trajectory (with every field) and of a refusal over a socket pair,
    the payload bigger than the socket's buffer."""
    msg = JointTrajectory(joint_names=PUMA_JOINTS)
    rng = np.random.default_rng(2)
    msg.points = [JointTrajectoryPoint(positions=rng.normal(size=6), velocities=rng.normal(
        size=6), accelerations=rng.normal(size=6)) for _ in range(20_000)]
    for k, point in enumerate(msg.points):
        point.time_from_start.nanosec = 1000 * (k + 1)
    frames = [message_frame(serialize_message(msg), 1 << 30, CHAIN),
              ({'kind': 'rejected', 'reason': 'why'}, [])]
    a, b = socket.socketpair()
    with a, b:
        sender = threading.Thread(target=lambda: [send_frame(a, *f) for f in frames])
        sender.start()
        for header, arrays in frames:
            got_header, got = receive_frame(b)
            assert got_header == header
            assert len(got) == len(arrays)
            for g, w in zip(got, arrays):
                np.testing.assert_array_equal(g, w.ravel())
        sender.join()
        a.close()
        assert receive_frame(b) is None
    # the columns and polynomials are what the pure preparation gives for the same points
    fields = trajectory_fields(*frames[0])
    want = prepare_waypoints(PUMA_JOINTS, [
        TrajectoryPoint(p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec,
                        p.positions, p.velocities, p.accelerations) for p in msg.points],
        CHAIN)
    for g, w in zip(fields.points.waypoints, want.waypoints):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(fields.points.coefficients, want.coefficients)
    assert want.coefficients.shape == (6, 19_999, 6)           # quintic segments


def test_a_50000_point_trajectory_is_installed_and_followed(make_harness):
    """Over DDS, through the receiving process: positions only, 1 ms apart, the joints
    in another order than the chain's; each joint moves at its own constant speed, so
    the reference it publishes must be the straight line of each joint (velocity = its
    speed), all at the same elapsed time."""
    speed = np.array([0.01, -0.02, 0.03, -0.04, 0.05, -0.06])        # rad/s
    order = [3, 0, 5, 1, 4, 2]
    names = [PUMA_JOINTS[i] for i in order]
    times = 1e-3 * np.arange(1, 50_001)
    msg = trajectory_msg(names, [(t, (Q0 + speed * t)[order]) for t in times])
    # no state comes from the test while the message is published and read: a state
    # timeout far over that (beside two CPU-bound processes it took over the 5 s of
    # puma_params in a fresh-clone run, 2026-12-07, and the node restarted its reference)
    h = make_harness(puma_params(state_timeout=60.0))
    h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
    h.send_trajectory(msg)
    trajectory = h.node.controller.trajectory
    assert len(trajectory.times) == 50_000
    np.testing.assert_allclose(trajectory.positions, Q0 + speed * times[:, None], atol=1e-12)
    for _ in range(3):
        time.sleep(0.05)
        _, _, desired = h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
        q_d = np.array(desired.points[0].positions)
        np.testing.assert_allclose(desired.points[0].velocities, speed, rtol=1e-6)
        elapsed = (q_d - Q0) / speed
        assert np.ptp(elapsed) < 1e-9 and 0.0 < elapsed[0] < 50.0, elapsed


def test_a_message_over_the_bound_published_is_dropped_unread(make_harness):
    h = make_harness(puma_params(max_trajectory_bytes=100_000))
    h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
    kept = h.node.controller.trajectory
    big = trajectory_msg(PUMA_JOINTS, [(1.0, Q0)])
    big.points[0].positions = np.zeros(20_000)              # 160 kB
    h.trajectory_pub.publish(big)
    h.spin_until(lambda: h.node.dropped_trajectories == 1, what='the drop')
    assert h.node.controller.trajectory is kept
    assert h.node.controller.rejected_trajectories == 0
    h.send_trajectory(trajectory_msg(PUMA_JOINTS, [(0.5, Q0 + 0.01)]))     # still receiving
    assert 'dropped unread' in h.node.drop_summary()


def test_a_model_from_robot_description_reaches_the_receiver(make_harness,  # noqa: F811
                                                             ros_context):
    """Before the model, the child refuses trajectories (no chain to check against);
    once robot_description has arrived, it reads them for that chain."""
    latched = QoSProfile(depth=1, reliability=QoSReliabilityPolicy.RELIABLE,
                         durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)
    h = make_harness([Parameter('state_timeout', value=5.0)])
    assert h.node.controller is None
    publisher_node = rclpy.create_node('fake_robot_state_publisher', context=ros_context)
    try:
        pub = publisher_node.create_publisher(String, '/robot_description', latched)
        pub.publish(String(data=PUMA_URDF.read_text()))
        h.executor.add_node(publisher_node)
        h.spin_until(lambda: h.node.controller is not None, what='the model from the topic')
        h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
        h.send_trajectory(trajectory_msg(PUMA_JOINTS[::-1], [(0.5, (Q0 + 0.01)[::-1])]))
        np.testing.assert_allclose(h.node.controller.trajectory.positions[-1], Q0 + 0.01)
    finally:
        h.executor.remove_node(publisher_node)
        publisher_node.destroy_node()


def _children(pid):
    """Process ids whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open(f'/proc/{entry}/stat', encoding='ascii') as stat:
                    fields = stat.read().rsplit(')', 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid):
    try:
        with open(f'/proc/{pid}/stat', encoding='ascii') as stat:
            return stat.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


@pytest.mark.parametrize('how', ['SIGINT', 'SIGKILL'])
def test_the_receiver_never_outlives_the_node(domain_id, how):
    """Ctrl-C: the node ends it and exits 0; SIGKILL: it notices its socket closed."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id),
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get('PYTHONPATH', '')]))
    proc = subprocess.Popen(
        [sys.executable, '-m', 'ne_dynamics_ros.nodes.computed_torque_node', '--ros-args',
         '-p', f'urdf_path:={PUMA_URDF}'], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30.0
        while not _children(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        (child,) = _children(proc.pid)
        time.sleep(1.0)                                   # both up and spinning
        proc.send_signal(getattr(signal, how))
        out, _ = proc.communicate(timeout=30)
        if how == 'SIGINT':
            assert proc.returncode == 0, out
            assert 'Traceback' not in out, out
        deadline = time.monotonic() + 10.0
        while _alive(child):
            assert time.monotonic() < deadline, f'receiver {child} still running'
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
