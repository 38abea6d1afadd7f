"""ComputedTorqueNode with real rclpy (Fast DDS), in-process, executor spun by the test.

A peer node publishes ``/joint_states`` and ``~/joint_trajectory`` and records
``/effort_controller/commands``, ``~/tracking_error`` and ``~/desired``. Expected efforts
are computed with Pinocchio (``PinocchioArm`` of test_control_law) on the same URDF with
the node's armature; effort limits come from the URDF via ElementTree. Every effort
message a test receives is checked finite and within the limits when the test ends.

Replies are matched to the state they answer by ``header.stamp`` (the tracking error
carries it), so "no reply" is checked by sending a good state after a bad one and seeing
that only the good one is answered: no fixed sleeps.
"""
import math
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import rclpy
from builtin_interfaces.msg import Time
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
import yaml

from ne_dynamics_ros.nodes.computed_torque_node import (
    ComputedTorqueNode, JOINT_STATE_QOS, NodeConfigurationError)

from node_harness import (key, puma_params, SETTLE, stamp, stream_set_point, TIMEOUT,
                          trajectory_msg)
from references import (BAD_STATES, expected_effort, PinocchioArm, PUMA_ARMATURE, PUMA_JOINTS,
                        PUMA_LIMITS, PUMA_URDF, Q0, QD0, REPO, SET_Q, SET_QD, SET_QDD,
                        UR5E_URDF, urdf_joint_values)


@pytest.fixture(scope='module')
def puma_ref():
    return PinocchioArm(PUMA_URDF, PUMA_JOINTS, PUMA_ARMATURE)


def test_holds_first_measured_position_before_any_trajectory(make_harness, puma_ref):
    h = make_harness()
    tau, err, desired = h.exchange(PUMA_JOINTS, Q0, QD0)
    raw, want = expected_effort(puma_ref, 'computed_torque', Q0, QD0, Q0, 0 * Q0, 0 * Q0)
    np.testing.assert_allclose(tau, want, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(desired.points[0].positions, Q0)
    # the first position stays the reference even when the arm moves
    q1 = Q0 + 0.01
    tau, err, desired = h.exchange(PUMA_JOINTS, q1, QD0)
    np.testing.assert_allclose(desired.points[0].positions, Q0)
    np.testing.assert_allclose(err.position, Q0 - q1, atol=1e-12)


@pytest.mark.parametrize('mode', ['computed_torque', 'feedforward', 'gravity_compensation'])
def test_effort_matches_pinocchio_in_every_mode(make_harness, puma_ref, mode):
    h = make_harness(puma_params(mode=mode))
    h.exchange(PUMA_JOINTS, Q0, QD0)
    stream_set_point(h)
    for scale in (1.0, -0.5):
        q, qd = Q0 + scale * 0.01, QD0 * scale
        tau, err, desired = h.exchange(PUMA_JOINTS, q, qd)
        raw, want = expected_effort(puma_ref, mode, q, qd, SET_Q, SET_QD, SET_QDD)
        assert np.all(np.abs(raw) < PUMA_LIMITS), 'test state should not saturate'
        np.testing.assert_allclose(tau, want, rtol=1e-9, atol=1e-9)
        # tracking error: q_d - q, qd_d - qd, effort = tau; names = joints; stamp echoed
        assert list(err.name) == PUMA_JOINTS
        np.testing.assert_allclose(err.position, SET_Q - q, atol=1e-12)
        np.testing.assert_allclose(err.velocity, SET_QD - qd, atol=1e-12)
        np.testing.assert_allclose(err.effort, tau)
        np.testing.assert_allclose(desired.points[0].positions, SET_Q)
        np.testing.assert_allclose(desired.points[0].velocities, SET_QD)
        np.testing.assert_allclose(desired.points[0].accelerations, SET_QDD)


def test_ur5e_from_robot_description_parameter(make_harness):
    xml = UR5E_URDF.read_text()
    names = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
             'wrist_2_joint', 'wrist_3_joint']
    limits = urdf_joint_values(UR5E_URDF, names, 'limit', 'effort', math.inf)
    armature = [0.1, 0.2, 0.3, 0.04, 0.05, 0.06]
    h = make_harness([Parameter('robot_description', value=xml),
                      Parameter('armature', value=armature), Parameter('convention', value='dh'),
                      Parameter('mode', value='feedforward'), Parameter('kp', value=50.0),
                      Parameter('kd', value=5.0), Parameter('state_timeout', value=5.0)],
                     limits)
    ref = PinocchioArm(UR5E_URDF, names, armature)
    q = np.array([0.3, -1.2, 1.0, -0.5, 0.4, 0.1])
    h.exchange(names, q, np.zeros(6))
    h.send_trajectory(trajectory_msg(names, [(0.0, q + 0.05, 0.1 * np.ones(6), np.ones(6))]))
    tau, _, _ = h.exchange(names, q, 0.2 * np.ones(6))
    raw, want = expected_effort(ref, 'feedforward', q, 0.2 * np.ones(6), q + 0.05,
                                0.1 * np.ones(6), np.ones(6), 50.0, 5.0, limits)
    np.testing.assert_allclose(tau, want, rtol=1e-9, atol=1e-9)


def test_shuffled_order_extra_joints_and_command_order(make_harness, puma_ref):
    command_order = ['joint_6', 'joint_5', 'joint_4', 'joint_1', 'joint_2', 'joint_3']
    cmd = [PUMA_JOINTS.index(j) for j in command_order]
    h = make_harness(puma_params(joints=command_order), limits=PUMA_LIMITS[cmd])
    msg_names = ['gripper_left', 'joint_3', 'joint_1', 'joint_6', 'joint_2', 'joint_5',
                 'joint_4', 'gripper_right']
    chain_to_msg = [msg_names.index(j) for j in PUMA_JOINTS]

    def in_msg_order(chain_values, extra=(0.7, -0.7)):
        out = np.empty(len(msg_names))
        out[chain_to_msg] = chain_values
        out[[0, 7]] = extra
        return out

    h.exchange(msg_names, in_msg_order(Q0), in_msg_order(QD0), in_msg_order(np.zeros(6)))
    stream_set_point(h, names=list(reversed(PUMA_JOINTS)), q=SET_Q[::-1], qd=SET_QD[::-1],
                     qdd=SET_QDD[::-1])
    tau, err, desired = h.exchange(msg_names, in_msg_order(Q0), in_msg_order(QD0),
                                   in_msg_order(np.ones(6), (np.nan, np.nan)))
    _, want = expected_effort(puma_ref, 'computed_torque', Q0, QD0, SET_Q, SET_QD, SET_QDD)
    np.testing.assert_allclose(tau, want[cmd], rtol=1e-9, atol=1e-9)
    assert list(err.name) == command_order
    np.testing.assert_allclose(err.position, (SET_Q - Q0)[cmd], atol=1e-12)
    assert list(desired.joint_names) == command_order
    np.testing.assert_allclose(desired.points[0].positions, SET_Q[cmd])


def test_missing_velocity_is_estimated_by_filtered_differences(make_harness, puma_ref):
    cutoff = 50.0
    h = make_harness(puma_params(velocity_filter_cutoff=cutoff))
    v = np.array([0.2, -0.1, 0.3, 0.0, 0.5, -0.4])
    dt = 0.01
    alpha = dt / (dt + 1.0 / (2.0 * math.pi * cutoff))
    estimate = np.zeros(6)
    for k in range(4):
        q = Q0 + v * k * dt
        tau, err, _ = h.exchange(PUMA_JOINTS, q, velocity=(), header_stamp=stamp(100 + k))
        if k > 0:
            estimate = estimate + alpha * (v - estimate)
        np.testing.assert_allclose(err.velocity, 0.0 - estimate, atol=1e-9)
        _, want = expected_effort(puma_ref, 'computed_torque', q, estimate, Q0, 0 * q, 0 * q)
        np.testing.assert_allclose(tau, want, rtol=1e-9, atol=1e-9)
    # joint_state_broadcaster publishes NaN velocities for a missing velocity interface
    q = Q0 + v * 4 * dt
    estimate = estimate + alpha * (v - estimate)
    _, err, _ = h.exchange(PUMA_JOINTS, q, velocity=[math.nan] * 6, header_stamp=stamp(104))
    np.testing.assert_allclose(err.velocity, -estimate, atol=1e-9)


def test_trajectory_is_interpolated_and_last_point_held(make_harness):
    h = make_harness()
    h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
    target = Q0 + 0.1
    # positions only -> linear: qd_d is the constant slope while moving
    h.send_trajectory(trajectory_msg(PUMA_JOINTS, [(0.0, Q0), (0.3, target)]))
    slope = (target - Q0) / 0.3
    moving = 0
    deadline = time.monotonic() + TIMEOUT
    while True:
        _, err, desired = h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
        point = desired.points[0]
        # rtol=0: numpy's default rtol (1e-5 of the target) took a state 15 us before the
        # last point, still moving at the slope, for the end (failed once in CI)
        if np.allclose(point.positions, target, rtol=0.0, atol=1e-12):
            np.testing.assert_allclose(point.velocities, 0.0)
            break
        moving += 1
        np.testing.assert_allclose(point.velocities, slope, rtol=1e-9)
        frac = (np.array(point.positions) - Q0) / (target - Q0)
        np.testing.assert_allclose(frac, frac[0], atol=1e-9)
        assert 0.0 <= frac[0] <= 1.0
        assert time.monotonic() < deadline
    assert moving > 0
    # held afterwards
    _, _, desired = h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
    np.testing.assert_allclose(desired.points[0].positions, target)
    # a new trajectory replaces the old one
    stream_set_point(h)
    _, _, desired = h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
    np.testing.assert_allclose(desired.points[0].positions, SET_Q)


BAD_TRAJECTORIES = {
    'non-increasing time': trajectory_msg(PUMA_JOINTS, [(0.5, Q0), (0.5, Q0 + 0.1)]),
    'decreasing time': trajectory_msg(PUMA_JOINTS, [(0.5, Q0), (0.2, Q0 + 0.1)]),
    'unknown joint': trajectory_msg(PUMA_JOINTS[:5] + ['elbow'], [(0.0, Q0)]),
    'missing joint': trajectory_msg(PUMA_JOINTS[:5], [(0.0, Q0[:5])]),
    'short positions': trajectory_msg(PUMA_JOINTS, [(0.0, Q0[:5])]),
    'short velocities': trajectory_msg(PUMA_JOINTS, [(0.0, Q0, [0.0] * 4)]),
    'NaN position': trajectory_msg(PUMA_JOINTS, [(0.0, [math.nan] * 6)]),
    'no points': trajectory_msg(PUMA_JOINTS, []),
    'ends in the past': trajectory_msg(PUMA_JOINTS, [(0.1, Q0)], start=Time(sec=1)),
}


def test_bad_trajectories_are_rejected_and_the_old_one_kept(make_harness):
    h = make_harness()
    h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
    stream_set_point(h)
    kept = h.node.controller.trajectory
    for name, msg in BAD_TRAJECTORIES.items():
        h.send_trajectory(msg, accepted=False)
        assert h.node.controller.trajectory is kept, name
    assert h.node.controller.rejected_trajectories == len(BAD_TRAJECTORIES)
    _, _, desired = h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
    np.testing.assert_allclose(desired.points[0].positions, SET_Q)


def test_a_trajectory_before_any_joint_state_waits_for_the_first(make_harness):
    """Kept (not refused) and followed from the first state: a set-point at once."""
    h = make_harness()
    h.trajectory_pub.publish(trajectory_msg(PUMA_JOINTS, [(0.0, SET_Q)]))
    h.spin_until(lambda: h.node.accepted_trajectories == 1, what='the trajectory kept')
    assert h.node.controller.trajectory is None and h.node.controller.rejected_trajectories == 0
    _, _, desired = h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
    np.testing.assert_allclose(desired.points[0].positions, SET_Q)


def test_bad_joint_states_are_dropped(make_harness, puma_ref):
    h = make_harness()
    h.exchange(PUMA_JOINTS, Q0, QD0)
    n_efforts = len(h.efforts)
    for i, (name, (names, q, qd, eff)) in enumerate(BAD_STATES.items()):
        bad = h.publish_state(names, q, qd, eff)
        tau, _, _ = h.exchange(PUMA_JOINTS, Q0, QD0)
        assert key(bad) not in h.errors, name
        assert h.node.controller.data.dropped_joint_states == i + 1, name
        assert len(h.efforts) == n_efforts + i + 1, name   # one command per good state only
        _, want = expected_effort(puma_ref, 'computed_torque', Q0, QD0, Q0, 0 * Q0, 0 * Q0)
        np.testing.assert_allclose(tau, want, rtol=1e-9, atol=1e-9)
    # a message with none of the controlled joints (e.g. a gripper) is ignored silently
    other = h.publish_state(['gripper'], [0.1], [0.0])
    h.exchange(PUMA_JOINTS, Q0, QD0)
    assert key(other) not in h.errors
    assert h.node.controller.data.dropped_joint_states == len(BAD_STATES)


def test_efforts_are_clamped_to_limits(make_harness, puma_ref):
    h = make_harness(puma_params(kp=1e4, kd=200.0))
    h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
    far = Q0 + np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    h.send_trajectory(trajectory_msg(PUMA_JOINTS, [(0.0, far)]))
    tau, err, _ = h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
    raw, want = expected_effort(puma_ref, 'computed_torque', Q0, np.zeros(6), far, 0 * far,
                                0 * far, 1e4, 200.0)
    assert np.all(np.abs(raw) > PUMA_LIMITS)
    np.testing.assert_allclose(tau, want, rtol=1e-12)
    np.testing.assert_allclose(np.abs(tau), PUMA_LIMITS)
    np.testing.assert_allclose(err.effort, tau)


def test_effort_limits_parameter_overrides_urdf(make_harness):
    limits = np.array([5.0, 6.0, 7.0, 1.0, 1.0, 1.0])
    h = make_harness(puma_params(effort_limits=limits.tolist()), limits)
    tau, _, _ = h.exchange(PUMA_JOINTS, Q0 + 0.5, np.ones(6))
    assert np.all(np.abs(tau) <= limits)
    assert np.any(np.isclose(np.abs(tau), limits))


def test_runtime_parameter_changes_and_refusals(make_harness, puma_ref):
    h = make_harness()
    h.exchange(PUMA_JOINTS, Q0, QD0)
    stream_set_point(h)

    def check(mode, kp, kd):
        tau, _, _ = h.exchange(PUMA_JOINTS, Q0, QD0)
        _, want = expected_effort(puma_ref, mode, Q0, QD0, SET_Q, SET_QD, SET_QDD, kp, kd)
        np.testing.assert_allclose(tau, want, rtol=1e-9, atol=1e-9)

    kp = [10, 20, 30, 40, 50, 60]          # integers, as `ros2 param set` gives them
    assert all(r.successful for r in h.set(kp=kp, kd=3.5))
    check('computed_torque', np.array(kp, dtype=float), 3.5)
    assert h.set(mode='feedforward')[0].successful
    check('feedforward', np.array(kp, dtype=float), 3.5)
    refusals = {
        'kp': ([1.0, 2.0], 'one value or 6'),
        'kd': (-1.0, '>= 0'),
        'mode': ('position', 'not one of'),
        'gravity': ([0.0, 9.81], 'gravity'),
        'state_timeout': (0.0, 'state_timeout'),
        'effort_limits': ([1.0] * 6, 'read-only'),
        'urdf_path': ('/tmp/other.urdf', 'read-only'),
    }
    for name, (value, reason) in refusals.items():
        result = h.set(**{name: value})[0]
        assert not result.successful, name
        assert reason in result.reason, (name, result.reason)
    result = h.node.set_parameters([Parameter('kp', Parameter.Type.STRING, 'high')])[0]
    assert not result.successful and 'number' in result.reason
    check('feedforward', np.array(kp, dtype=float), 3.5)     # nothing changed
    assert h.set(mode='gravity_compensation')[0].successful
    check('gravity_compensation', 0.0, 0.0)


def test_leaving_gravity_compensation_holds_the_current_position(make_harness):
    h = make_harness(puma_params(mode='gravity_compensation'))
    h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
    moved = Q0 + 0.3                       # moved by hand while floating
    h.exchange(PUMA_JOINTS, moved, np.zeros(6))
    assert h.set(mode='computed_torque')[0].successful
    _, err, desired = h.exchange(PUMA_JOINTS, moved, np.zeros(6))
    np.testing.assert_allclose(desired.points[0].positions, moved)
    np.testing.assert_allclose(err.position, 0.0, atol=1e-12)


def record_timeouts(controller):
    """Return the list the controller's ``check_timeout`` reports go to from now on."""
    reports = []
    check_timeout = controller.check_timeout

    def observed(steady_ns):
        report = check_timeout(steady_ns)
        if report is not None:
            reports.append(report)
        return report

    controller.check_timeout = observed
    return reports


def test_state_timeout_holds_gravity_then_zero_effort_then_resumes(make_harness, puma_ref):
    h = make_harness(puma_params(state_timeout=0.3, state_loss_hold=0.6))
    # what the watchdog decides, with the silence it measured on the node's steady clock
    # (this process's own clock would also count its spinning delays)
    reports = record_timeouts(h.node.controller)
    tau, _, _ = h.exchange(PUMA_JOINTS, Q0, QD0)
    assert np.any(tau != 0.0)
    n = len(h.efforts)
    h.spin_until(lambda: h.node.controller.timed_out and len(h.efforts) > n, what='the timeout')
    assert reports[0].started and reports[0].silence >= 0.3, reports[0]
    # first Pinocchio's gravity at the last measured position (state_loss_policy default)
    assert reports[0].holding
    np.testing.assert_allclose(h.efforts[-1], puma_ref.rnea(Q0, np.zeros(6), np.zeros(6)),
                               rtol=1e-9, atol=1e-9)
    # past state_timeout + state_loss_hold, zeros, and they keep coming
    h.spin_until(lambda: np.all(h.efforts[-1] == 0.0), what='zero effort after the hold')
    assert any(report.hold_ended for report in reports)
    assert all(report.silence <= 0.9 for report in reports if report.holding)
    n = len(h.efforts)
    h.spin_until(lambda: len(h.efforts) >= n + 2, what='repeated zeros')
    assert all(np.all(e == 0.0) for e in h.efforts[n:])
    # a trajectory during the timeout is refused
    h.send_trajectory(trajectory_msg(PUMA_JOINTS, [(0.0, SET_Q)]), accepted=False)
    # states return: resume, holding the position measured now (old set-point dropped)
    q_new = Q0 - 0.05
    tau, err, desired = h.exchange(PUMA_JOINTS, q_new, np.zeros(6))
    assert not h.node.controller.timed_out
    np.testing.assert_allclose(desired.points[0].positions, q_new)
    np.testing.assert_allclose(err.position, 0.0, atol=1e-12)


def test_a_publish_that_blocks_is_no_state_loss(make_harness, monkeypatch):
    """The executor stuck in its own publish of a command (Fast DDS's first write of a
    writer blocked 0.2-0.3 s with the GIL held once in ~60 activations here) while the
    states keep arriving: the watchdog must not call that silence a state loss and
    command zero (test_activation's failure)."""
    h = make_harness(puma_params(state_timeout=0.5))
    reports = record_timeouts(h.node.controller)
    h.exchange(PUMA_JOINTS, Q0, QD0)
    publish, stalls = h.node._effort_pub.publish, [1.0]

    def blocking_publish(message):
        if stalls:
            time.sleep(stalls.pop())     # twice state_timeout, with the command lock held
        publish(message)

    monkeypatch.setattr(h.node._effort_pub, 'publish', blocking_publish)
    h.exchange(PUMA_JOINTS, Q0, QD0)
    assert not stalls
    deadline = time.monotonic() + 0.25             # 2.5 watchdog periods, < state_timeout
    while time.monotonic() < deadline:
        h.executor.spin_once(timeout_sec=0.01)
    assert not reports and not h.node.controller.timed_out, reports
    assert not any(np.all(e == 0.0) for e in h.efforts)
    # and states that really stop still time out
    h.spin_until(lambda: h.node.controller.timed_out, what='the timeout')
    assert reports[0].started and reports[0].silence >= 0.5


@pytest.mark.parametrize('frame', ['tip', 'base'])
def test_external_wrench_is_published_while_subscribed(make_harness, frame):
    """~/external_wrench: the observer's r as a wrench at the tip, stamped like the state,
    in the frame external_wrench_frame names; J^T [F; M] (our kinematics at the state,
    rotated back from the tip's frame) is the r of ~/external_effort of that state."""
    from geometry_msgs.msg import WrenchStamped

    from ne_dynamics_ros.dynamics.kinematics import jacobian, tip_pose
    h = make_harness(puma_params(external_wrench_frame=frame))
    wrenches, external = {}, {}
    h.peer.create_subscription(WrenchStamped, '/computed_torque_node/external_wrench',
                               lambda m: wrenches.__setitem__(key(m.header.stamp), m), 100)
    h.peer.create_subscription(JointState, '/computed_torque_node/external_effort',
                               lambda m: external.__setitem__(key(m.header.stamp), m), 100)
    h.spin_until(lambda: h.node.outputs.wrench_wanted and h.node.outputs.wanted[3],
                 what='the ~/external_wrench reader')
    base = h.node.get_clock().now().nanoseconds
    for k, qd in enumerate([np.zeros(6)] * 3 + [np.array([0.5, 0, -0.5, 0, 0.3, 0])]):
        ns = base + k * 2_000_000
        at = Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
        h.exchange(PUMA_JOINTS, Q0, qd, header_stamp=at)
    h.spin_until(lambda: key(at) in wrenches and key(at) in external,
                 what='the wrench and the external effort of the last state')
    model = h.node.controller.model
    message = wrenches[key(at)]
    assert message.header.frame_id == (model.tip_link if frame == 'tip' else model.base_link)
    w = message.wrench
    f = np.array([w.force.x, w.force.y, w.force.z])
    m = np.array([w.torque.x, w.torque.y, w.torque.z])
    if frame == 'tip':
        R = tip_pose(model, Q0)[:3, :3]
        f, m = R @ f, R @ m
    r = np.array(external[key(at)].effort)
    assert np.abs(r).max() > 0.1                     # the velocity jump: something to map
    np.testing.assert_allclose(jacobian(model, Q0).T @ np.r_[f, m], r, rtol=1e-4,
                               atol=1e-4 * np.abs(r).max())


def test_external_effort_is_published_and_a_contact_is_logged_and_diagnosed(make_harness):
    """~/external_effort carries the observer's r stamped like the state it answers; a
    velocity jump nothing commanded is a contact: counted, in /diagnostics, and the
    reference holds where it was measured (contact.reaction hold)."""
    from diagnostic_msgs.msg import DiagnosticArray
    h = make_harness(puma_params(**{'contact.threshold': [3.0] * 6, 'contact.debounce': 1}))
    external, diagnostics = {}, []
    h.peer.create_subscription(JointState, '/computed_torque_node/external_effort',
                               lambda m: external.__setitem__(key(m.header.stamp), m), 100)
    h.peer.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)
    h.spin_until(lambda: h.node.outputs.wanted[3], what='the ~/external_effort reader')
    controller = h.node.controller
    for attempt in range(5):
        # the next periodic /diagnostics over half a second away: a message naming the
        # contact before then was forced by it (as force_update)
        h.spin_until(lambda: h.node.diagnostics_due - time.monotonic() > 0.5,
                     what='a periodic /diagnostics')
        next_periodic = h.node.diagnostics_due
        # stamps on the node's clock, 2 ms apart: the observer's step is the stamps'
        base = h.node.get_clock().now().nanoseconds
        sent = []
        for k, qd in enumerate([np.zeros(6)] * 3 + [np.array([0, 0, 2.0, 0, 0, 0])]):
            ns = base + k * 2_000_000
            at = Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
            h.exchange(PUMA_JOINTS, Q0, qd, header_stamp=at)
            sent.append(at)
        if controller.contacts:
            break
    assert controller.contacts == 1 and controller.contact.joint in PUMA_JOINTS
    h.spin_until(lambda: key(sent[-1]) in external, what='the external effort message')
    message = external[key(sent[-1])]
    assert list(message.name) == PUMA_JOINTS and not message.position
    assert max(abs(v) for v in message.effort) > 3.0
    assert max(abs(v) for v in external[key(sent[0])].effort) < 3.0
    h.spin_until(lambda: any('contact on' in s.message for d in diagnostics for s in d.status),
                 what='the contact in /diagnostics')
    assert time.monotonic() < next_periodic      # not the 1 Hz tick: the event's own
    events = [v.value for d in diagnostics for s in d.status for v in s.values
              if v.key == 'events']
    assert any('contact on' in e for e in events), events
    np.testing.assert_allclose(controller.trajectory.positions[-1], Q0)


def test_a_payload_declared_on_the_topic_becomes_the_adaptive_estimate(make_harness):
    geometry_msgs = pytest.importorskip(
        'geometry_msgs.msg', reason='geometry_msgs comes with the control_msgs wheel '
        '(scripts/bootstrap.sh installs it from ../shared/wheels)')
    h = make_harness(puma_params(mode='adaptive'))
    h.exchange(PUMA_JOINTS, Q0, np.zeros(6))
    publisher = h.peer.create_publisher(geometry_msgs.Inertia,
                                        '/computed_torque_node/declared_payload', 10)
    h.spin_until(lambda: publisher.get_subscription_count() > 0, what='the subscription')
    message = geometry_msgs.Inertia(m=2.0, ixx=1e-3, iyy=1e-3, izz=1e-3)
    message.com.z = 0.05
    publisher.publish(message)
    controller = h.node.controller
    h.spin_until(lambda: controller.payload_estimate[0] == pytest.approx(2.0),
                 what='the declared 2 kg')
    np.testing.assert_allclose(controller.payload_estimate[1], [0.0, 0.0, 0.05], atol=1e-12)


def test_robot_description_topic(make_harness, ros_context, puma_ref):
    latched = QoSProfile(depth=1, reliability=QoSReliabilityPolicy.RELIABLE,
                         durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)
    publisher_node = rclpy.create_node('fake_robot_state_publisher', context=ros_context)
    try:
        pub = publisher_node.create_publisher(String, '/robot_description', latched)
        pub.publish(String(data='<robot name="broken"><link'))       # bad: keep waiting
        pub.publish(String(data=PUMA_URDF.read_text()))
        h = make_harness([Parameter('armature', value=PUMA_ARMATURE),
                          Parameter('state_timeout', value=5.0)])
        h.executor.add_node(publisher_node)
        h.spin_until(lambda: h.node.controller is not None, what='the model from the topic')
        tau, _, _ = h.exchange(PUMA_JOINTS, Q0, QD0)
        _, want = expected_effort(puma_ref, 'computed_torque', Q0, QD0, Q0, 0 * Q0, 0 * Q0)
        np.testing.assert_allclose(tau, want, rtol=1e-9, atol=1e-9)
    finally:
        publisher_node.destroy_node()


@pytest.mark.parametrize('params, match', [
    ([Parameter('robot_description', value='<robot name="x"><link name="a"/>')], 'robot model'),
    ([Parameter('urdf_path', value='/nonexistent/arm.urdf')], 'urdf_path'),
    (puma_params(kp=[1.0, 2.0]), 'kp'),
    (puma_params(joints=['joint_1', 'joint_2']), 'joints'),
    (puma_params(armature=[0.1] * 5), 'armature'),
    (puma_params(convention='euler'), 'convention'),
    (puma_params(tip_link='no_such_link'), 'no_such_link'),
    (puma_params(effort_limits=[0.0] * 6), 'effort_limits'),
    (puma_params(mode=5), 'mode'),                      # wrong type in a params file
    ([Parameter('mode', value='position')], 'mode'),  # checked even before a model exists
    ([Parameter('kd', value=-1.0)], 'kd'),
    (puma_params(dynamics_backend='fast'), 'dynamics_backend'),
    (puma_params(executor='multi'), 'executor'),
    (puma_params(max_trajectory_bytes=0), 'max_trajectory_bytes'),
    (puma_params(max_trajectory_bytes=1.5e6), 'max_trajectory_bytes'),
])
def test_bad_configuration_fails_in_the_constructor(ros_context, params, match):
    with pytest.raises(NodeConfigurationError, match=match):
        ComputedTorqueNode(context=ros_context, parameter_overrides=params)


@pytest.mark.parametrize('bound', [None, 1000])
def test_trajectory_messages_over_the_size_bound_are_dropped_unread(make_harness, bound):
    """The default bound (MAX_TRAJECTORY_BYTES) and a lowered one: a message one byte
    over is counted as dropped unread (all zeros: read, it would be a CDR error)."""
    from ne_dynamics_ros.nodes.computed_torque_node import MAX_TRAJECTORY_BYTES
    h = make_harness(puma_params() if bound is None
                     else puma_params(max_trajectory_bytes=bound))
    limit = MAX_TRAJECTORY_BYTES if bound is None else bound
    h.exchange(PUMA_JOINTS, Q0, QD0)
    h.node.intake.take_bytes(bytes(limit + 1))
    assert h.node.dropped_trajectories == 1
    good = serialize_message(trajectory_msg(PUMA_JOINTS, [(0.5, SET_Q)]))
    assert len(good) <= limit
    h.node.intake.take_bytes(good)                  # under the bound: prepared
    h.spin_until(lambda: h.node.accepted_trajectories == 1, what='the trajectory')
    assert h.node.dropped_trajectories == 1


@pytest.mark.parametrize('backend', ['generated', 'recursive'])
def test_both_dynamics_backends_match_pinocchio(make_harness, puma_ref, backend):
    h = make_harness(puma_params(dynamics_backend=backend))
    assert h.node.controller.dynamics_backend == backend
    h.exchange(PUMA_JOINTS, Q0, QD0)
    stream_set_point(h)
    tau, _, _ = h.exchange(PUMA_JOINTS, Q0, QD0)
    _, want = expected_effort(puma_ref, 'computed_torque', Q0, QD0, SET_Q, SET_QD, SET_QDD)
    np.testing.assert_allclose(tau, want, rtol=1e-9, atol=1e-9)


def test_a_generated_program_that_disagrees_stops_the_node(ros_context, monkeypatch):
    from ne_dynamics_ros.codegen import compiled
    original = compiled.python_source

    def corrupted(program, robot='robot'):
        return original(program, robot).replace('    return [', '    return [1e-3 + ', 1)
    monkeypatch.setattr(compiled, 'python_source', corrupted)
    with pytest.raises(NodeConfigurationError, match='generated inverse dynamics differ'):
        ComputedTorqueNode(context=ros_context, parameter_overrides=puma_params())
    node = ComputedTorqueNode(context=ros_context, parameter_overrides=puma_params(
        dynamics_backend='recursive'))
    node.destroy_node()


def _run_main(args, domain_id):
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id), PYTHONUNBUFFERED='1',
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get('PYTHONPATH', '')]))
    return subprocess.Popen(
        [sys.executable, '-m', 'ne_dynamics_ros.nodes.computed_torque_node', '--ros-args', *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_main_exits_non_zero_on_bad_description(domain_id):
    proc = _run_main(['-p', 'urdf_path:=/nonexistent/arm.urdf'], domain_id)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1, out
    assert 'urdf_path' in out


def test_main_publishes_zero_effort_on_ctrl_c(ros_context, domain_id):
    # long state timeout: the zero command can only come from the shutdown path
    proc = _run_main(['-p', f'urdf_path:={PUMA_URDF}', '-p', 'state_timeout:=60.0',
                      '-p', f'discovery_settle:={SETTLE.value}'], domain_id)
    peer = rclpy.create_node('ctrl_c_peer', context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(peer)
    efforts = []
    try:
        peer.create_subscription(Float64MultiArray, '/effort_controller/commands',
                                 lambda m: efforts.append(np.array(m.data)), 10)
        state_pub = peer.create_publisher(JointState, '/joint_states', JOINT_STATE_QOS)
        deadline = time.monotonic() + 20.0
        while not efforts:          # keep publishing until the node is up and answers
            assert time.monotonic() < deadline, 'node did not answer'
            assert proc.poll() is None, proc.communicate()[0]
            state_pub.publish(JointState(name=PUMA_JOINTS, position=list(Q0),
                                         velocity=[0.0] * 6))
            executor.spin_once(timeout_sec=0.05)
        assert np.any(efforts[-1] != 0.0)
        proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 10.0
        while proc.poll() is None or not np.all(efforts[-1] == 0.0):
            if time.monotonic() > deadline:
                exited = proc.poll() is not None
                if not exited:
                    proc.kill()
                raise AssertionError(f'no zero effort after Ctrl-C (the node '
                                     f'{"exited" if exited else "still ran"}): '
                                     + proc.communicate()[0][-3000:])
            executor.spin_once(timeout_sec=0.05)
        out, _ = proc.communicate(timeout=10)
        assert proc.returncode == 0, out
        np.testing.assert_array_equal(efforts[-1], np.zeros(6))
        assert 'control path priority: ' in out, out      # what it got, said at start
        if 'control path priority: SCHED_FIFO priority' in out:
            # Fast DDS's reception and event threads were found by name and raised too
            assert re.search(r'the same for [1-9][0-9]* DDS threads; nice -10 for 2 of the 2 '
                             r'threads sharing the GIL', out), out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        executor.shutdown(timeout_sec=1.0)
        peer.destroy_node()


@pytest.mark.parametrize('robot, urdf', [('puma560', PUMA_URDF), ('ur5e', UR5E_URDF),
                                         ('ur5e_sim', UR5E_URDF)])
def test_config_yaml_files_load_through_the_rcl_parser(ros_context, robot, urdf):
    params_file = REPO / 'config' / f'{robot}.yaml'
    expected = yaml.safe_load(params_file.read_text())['computed_torque_node'][
        'ros__parameters']
    node = ComputedTorqueNode(context=ros_context, cli_args=[
        '--ros-args', '--params-file', str(params_file), '-p', f'urdf_path:={urdf}',
        '-p', 'discovery_settle:=0.2'])
    try:
        assert node.controller is not None
        assert node.controller.settings.mode.value == expected['mode']
        np.testing.assert_array_equal(node.controller.settings.kp, expected['kp'])
        np.testing.assert_array_equal(node.controller.settings.kd, expected['kd'])
        model = node.controller.model
        np.testing.assert_array_equal(model.armature, expected.get('armature', 0.0))
        if 'joints' in expected:
            assert node.controller.joints == expected['joints']
        np.testing.assert_array_equal(
            node.controller.effort_limits,
            urdf_joint_values(urdf, model.joint_names, 'limit', 'effort', math.inf))
        # a real UR adds g(q) and its friction itself; the simulated arms do not
        assert node.controller.hardware_compensates_gravity == (robot == 'ur5e')
        assert node.controller.hardware_compensates_friction == (robot == 'ur5e')
    finally:
        node.destroy_node()
    if robot == 'puma560':
        assert (expected['kp'], expected['kd']) == (100.0, 20.0)     # Lee et al. section 5


def test_ros2_controllers_yaml_matches_the_node():
    config = yaml.safe_load((REPO / 'config' / 'ros2_controllers.yaml').read_text())
    controllers = config['controller_manager']['ros__parameters']
    assert controllers['joint_state_broadcaster']['type'] == \
        'joint_state_broadcaster/JointStateBroadcaster'
    assert controllers['effort_controller']['type'] == \
        'effort_controllers/JointGroupEffortController'
    assert config['effort_controller']['ros__parameters']['joints'] == PUMA_JOINTS


def test_find_resource_and_relative_urdf_path(ros_context, tmp_path, monkeypatch):
    from ne_dynamics_ros.resources import find_resource
    assert find_resource('config/puma560.urdf').read_bytes() == PUMA_URDF.read_bytes()
    with pytest.raises(FileNotFoundError, match='searched|not found'):
        find_resource('config/no_such.urdf')
    with pytest.raises(FileNotFoundError):
        find_resource('../setup.py')
    # a relative urdf_path that is not under the working directory is looked up in the
    # package's share directory (here: the source tree)
    monkeypatch.chdir(tmp_path)
    node = ComputedTorqueNode(context=ros_context, parameter_overrides=[
        Parameter('urdf_path', value='config/puma560.urdf'), SETTLE])
    try:
        assert node.controller.model.joint_names == PUMA_JOINTS
    finally:
        node.destroy_node()


def test_urdf_loader_notes_reach_the_ros_log(ros_context, capfd):
    """urdf_parser_py's complaints about vendor tags: one line, through the node's logger."""
    xml = PUMA_URDF.read_text().replace('<link name="base_link"/>', '<link name="base_link">'
                                        + ''.join(f'<vendor_{i}/>' for i in range(12))
                                        + '</link>', 1)
    assert '<vendor_0/>' in xml
    node = ComputedTorqueNode(context=ros_context, parameter_overrides=[
        Parameter('robot_description', value=xml), SETTLE])
    try:
        assert node.controller is not None
    finally:
        node.destroy_node()
    err = capfd.readouterr().err
    # not urdf_parser_py's own twelve lines: one, which quotes the first complaint
    assert sum('Unknown tag' in line for line in err.splitlines()) == 1
    lines = [line for line in err.splitlines() if 'urdf_parser_py ignored 12 unknown' in line]
    assert len(lines) == 1 and 'computed_torque_node' in lines[0], err[-2000:]


def test_floating_point_errors_become_throttled_node_warnings(ros_context, capfd,
                                                              monkeypatch):
    """A NumPy overflow inside the control path: the node's warning, once a second."""
    node = ComputedTorqueNode(context=ros_context, parameter_overrides=[
        Parameter('urdf_path', value=str(PUMA_URDF)), SETTLE])
    real_update = node.controller.update

    def overflowing_update(*args, **kwargs):
        np.float64(1e308) * np.array([10.0])           # overflow: RuntimeWarning by default
        return real_update(*args, **kwargs)

    monkeypatch.setattr(node.controller, 'update', overflowing_update)
    try:
        msg = JointState(name=PUMA_JOINTS, position=list(Q0), velocity=[0.0] * 6)
        for _ in range(5):
            node._on_joint_state(msg)
    finally:
        node.destroy_node()
    err = capfd.readouterr().err
    assert 'RuntimeWarning' not in err
    lines = [line for line in err.splitlines() if 'floating-point overflow' in line]
    assert len(lines) == 1 and '[WARN]' in lines[0], err[-2000:]


@pytest.mark.parametrize('first_after', [0.0, 0.02, 0.2])
def test_main_survives_a_storm_of_ctrl_c(domain_id, first_after):
    """ros2 launch forwards Ctrl-C a second time, and a user may press it again: however
    many SIGINTs arrive, early or late, the node exits 0 without a traceback or an abort
    (an exception thrown into rclpy's C++ executor ends in std::terminate)."""
    proc = _run_main(['-p', f'urdf_path:={PUMA_URDF}'], domain_id)
    try:
        out = ''
        deadline = time.monotonic() + 20.0
        while 'dynamics generated' not in out:          # the node is built, about to spin
            assert time.monotonic() < deadline and proc.poll() is None, out
            out += proc.stdout.readline()
        time.sleep(first_after)
        deadline = time.monotonic() + 15.0
        while proc.poll() is None:
            assert time.monotonic() < deadline, 'the node did not exit'
            proc.send_signal(signal.SIGINT)
            time.sleep(0.002)
        out += proc.communicate(timeout=10)[0]
        assert proc.returncode == 0, out
        for sign in ('Traceback', 'terminate called', 'Fatal Python error'):
            assert sign not in out, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_the_control_clock_follows_simulated_time(ros_context):
    """Without /clock the node's time is the system clock; with use_sim_time it is /clock's."""
    from rosgraph_msgs.msg import Clock
    node = ComputedTorqueNode(context=ros_context, parameter_overrides=[
        Parameter('urdf_path', value=str(PUMA_URDF)), SETTLE])
    try:
        before = time.time_ns()
        assert before <= node._now_ns() <= time.time_ns()
        node.set_parameters([Parameter('use_sim_time', value=True)])
        peer = rclpy.create_node('clock_source', context=ros_context)
        clock_pub = peer.create_publisher(Clock, '/clock', 10)
        executor = SingleThreadedExecutor(context=ros_context)
        executor.add_node(node)
        simulated = Time(sec=1234, nanosec=5678)
        deadline = time.monotonic() + 10.0
        while node._now_ns() != 1234 * 1_000_000_000 + 5678:
            assert time.monotonic() < deadline, node._now_ns()
            clock_pub.publish(Clock(clock=simulated))
            executor.spin_once(timeout_sec=0.05)
        executor.remove_node(node)
        peer.destroy_node()
    finally:
        node.destroy_node()
