"""Mode cartesian_impedance through the node over DDS: ~/target_pose in, ~/current_pose out.

The PUMA 560 harness (states published by a peer, the node's commands read back): the
mode set at run time holds the pose measured (the command is Pinocchio's g(q)); a target
on ~/target_pose pulls (the command changes by J^T K e, checked against our Jacobian,
itself checked against Pinocchio's in test/unit/test_kinematics.py); bad targets are
dropped with a warning and change nothing; ~/current_pose is the tip pose of the state;
trajectories are refused with the reason; /diagnostics gives the manipulability.
"""
import math

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from node_harness import puma_params, stamp, trajectory_msg
from random_urdf import PinocchioReference
from references import PUMA_ARMATURE, PUMA_JOINTS, PUMA_URDF

from ne_dynamics_ros.dynamics.kinematics import jacobian, matrix_to_quaternion, tip_pose

Q = np.array([0.1, -0.4, 0.3, 0.2, 0.5, -0.1])


def pose_msg(position, quaternion, frame='base_link'):
    msg = PoseStamped()
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in position)
    (msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z,
     msg.pose.orientation.w) = (float(v) for v in quaternion)
    return msg


def test_targets_current_pose_and_refusals_over_dds(make_harness, capfd):
    h = make_harness(puma_params(mode='cartesian_impedance',
                                 **{'cartesian.stiffness': [400.0] * 3 + [40.0] * 3,
                                    'cartesian.max_speed': [10.0, 10.0]}))
    node, controller = h.node, h.node.controller
    model = controller.model
    targets = h.peer.create_publisher(PoseStamped, '/computed_torque_node/target_pose', 10)
    poses, diagnostics = [], []
    h.peer.create_subscription(PoseStamped, '/computed_torque_node/current_pose',
                               poses.append, 10)
    h.peer.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)
    h.spin_until(lambda: targets.get_subscription_count() >= 1
                 and node.outputs.laws.wanted('current_pose'), what='the Cartesian topics')
    zero = np.zeros(6)
    effort, _, _ = h.exchange(PUMA_JOINTS, Q, zero)
    pin = PinocchioReference(PUMA_URDF.read_text(), PUMA_JOINTS, model.tip_link,
                             PUMA_ARMATURE)
    np.testing.assert_allclose(effort, pin.rnea(Q, zero, zero), atol=1e-9)   # no jump
    T = tip_pose(model, Q)
    h.spin_until(lambda: poses and poses[-1].header.stamp == stamp(h.k), what='current_pose')
    got = poses[-1]
    assert got.header.frame_id == model.base_link
    np.testing.assert_allclose([got.pose.position.x, got.pose.position.y,
                                got.pose.position.z], T[:3, 3], atol=1e-12)

    # bad targets: dropped with a warning; the goal stays the pose held
    held = controller.law.goal.copy()
    quaternion = matrix_to_quaternion(T[:3, :3])
    for bad in (pose_msg([math.nan, 0.0, 0.0], quaternion),
                pose_msg(T[:3, 3], [0.0, 0.0, 0.0, 0.0]),
                pose_msg(T[:3, 3], quaternion, frame='camera_link')):
        targets.publish(bad)
    deadline = h.k + 50
    while 'dropped a message on ~/target_pose' not in capfd.readouterr().err:
        assert h.k < deadline, 'no warning of the bad targets'
        h.exchange(PUMA_JOINTS, Q, zero)
    h.exchange(PUMA_JOINTS, Q, zero)
    np.testing.assert_array_equal(controller.law.goal, held)

    # a target 1 cm along x pulls with J^T K e (reached in one step at this max_speed)
    targets.publish(pose_msg(T[:3, 3] + [0.01, 0.0, 0.0], quaternion))
    h.spin_until(lambda: not np.allclose(controller.law.goal, held),
                 what='the target to be taken')
    pulled, _, _ = h.exchange(PUMA_JOINTS, Q, zero)
    expected = pin.rnea(Q, zero, zero) + jacobian(model, Q)[:3].T @ [4.0, 0.0, 0.0]
    np.testing.assert_allclose(pulled, np.clip(expected, -h.limits, h.limits), atol=1e-6)

    # trajectories are refused in this mode, with the reason
    h.send_trajectory(trajectory_msg(PUMA_JOINTS, [(1.0, Q, zero, zero)]), accepted=False)

    # /diagnostics gives the manipulability
    h.spin_until(lambda: any(value.key == 'manipulability' for d in diagnostics
                             for s in d.status for value in s.values),
                 timeout=3.0, what='the manipulability on /diagnostics')
