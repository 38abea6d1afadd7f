"""Mode hand_guiding through the node over DDS: a flange sensor on ~/flange_wrench.

The PUMA 560 harness (states published by a peer, the node's commands read back): the
mode holds with Pinocchio's g(q) while the sensor is tared; a reading on
``~/flange_wrench`` (``geometry_msgs/WrenchStamped``, best effort as
force_torque_sensor_broadcaster publishes it, in the tip link's frame) reaches the law as
the push in the base frame (R f, from our kinematics, checked against Pinocchio's in
test/unit/test_kinematics.py), less the tare; the command then differs from g(q); a
reading in another frame is dropped with a warning naming the topic; trajectories are
refused with the reason.
"""
import numpy as np
from geometry_msgs.msg import WrenchStamped
from node_harness import puma_params, trajectory_msg
from random_urdf import PinocchioReference
from references import PUMA_ARMATURE, PUMA_JOINTS, PUMA_URDF
from rclpy.qos import QoSProfile, QoSReliabilityPolicy

from ne_dynamics_ros.dynamics.kinematics import tip_pose

Q = np.array([0.1, -0.4, 0.3, 0.2, 0.5, -0.1])


def wrench_msg(force, frame):
    msg = WrenchStamped()
    msg.header.frame_id = frame
    msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = (float(v) for v in force)
    return msg


def test_a_flange_sensor_guides_the_tip_over_dds(make_harness, capfd):
    h = make_harness(puma_params(mode='hand_guiding', **{'ft_sensor.tare_time': 0.02}))
    controller = h.node.controller
    model = controller.model
    sensor = h.peer.create_publisher(
        WrenchStamped, '/computed_torque_node/flange_wrench',
        QoSProfile(depth=5, reliability=QoSReliabilityPolicy.BEST_EFFORT))
    h.spin_until(lambda: sensor.get_subscription_count() >= 1, what='the sensor topic')
    zero = np.zeros(6)
    pin = PinocchioReference(PUMA_URDF.read_text(), PUMA_JOINTS, model.tip_link,
                             PUMA_ARMATURE)
    bias = np.array([1.0, -0.5, 0.3])                 # the sensor's own, tared away
    # the states' stamps are not on the node's clock: the tare counts the node's time
    for _ in range(500):
        if controller.law is not None and controller.law.bias is not None:
            break
        sensor.publish(wrench_msg(bias, model.tip_link))
        h.spin_until(lambda: controller.law is None or controller.law.sensor.fresh,
                     what='the reading to be taken')
        effort, _, _ = h.exchange(PUMA_JOINTS, Q, zero)
        np.testing.assert_allclose(effort, np.clip(pin.rnea(Q, zero, zero), -h.limits,
                                                   h.limits), atol=1e-9)
    np.testing.assert_allclose(controller.law.bias[:3], bias, atol=1e-12)

    push = np.array([8.0, 0.0, -6.0])                 # in the tip link's frame
    sensor.publish(wrench_msg(bias + push, model.tip_link))
    h.spin_until(lambda: controller.law.sensor.fresh, what='the push')
    effort, _, _ = h.exchange(PUMA_JOINTS, Q, zero)
    R = tip_pose(model, Q)[:3, :3]
    np.testing.assert_allclose(controller.law.wrench[:3], R @ push, atol=1e-9)
    assert np.max(np.abs(effort - pin.rnea(Q, zero, zero))) > 0.1

    sensor.publish(wrench_msg(push, 'camera_link'))
    deadline = h.k + 50
    while 'dropped a message on ~/flange_wrench' not in capfd.readouterr().err:
        assert h.k < deadline, 'no warning of the reading in another frame'
        h.exchange(PUMA_JOINTS, Q, zero)

    h.trajectory_pub.publish(trajectory_msg(PUMA_JOINTS, [(1.0, Q, zero, zero)]))
    h.spin_until(lambda: controller.rejected_trajectories >= 1, what='the refusal')
    h.check_everything_published()
