"""jtc_feedforward's hold when its controller returns, in process over real rclpy.

controller_manager publishes ``~/activity`` once per switch (reliable, transient local,
depth 1). A switch away and straight back is two messages milliseconds apart; the relay
must see both, or it never learns that the controller came back and left it holding with
no gravity (the system test saw the UR5e sag 1 rad).
"""
import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from dds import spin_until
import ros2_control_stack as stack
from references import UR5E_URDF

WHY = stack.missing()
pytestmark = pytest.mark.skipif(bool(WHY), reason=WHY or 'the stack runs here')
CHAIN = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
         'wrist_2_joint', 'wrist_3_joint']
TIMEOUT = 10.0
#: controller_manager's own publisher of ~/activity (controller_manager.cpp, Jazzy)
MANAGER_QOS = QoSProfile(depth=1, reliability=QoSReliabilityPolicy.RELIABLE,
                         durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)


def _activity(messages, active):
    from lifecycle_msgs.msg import State
    state = State(id=State.PRIMARY_STATE_ACTIVE if active else State.PRIMARY_STATE_INACTIVE)
    return messages.msg.ControllerManagerActivity(controllers=[
        messages.msg.NamedLifecycleState(name='joint_trajectory_controller', state=state)])


def test_a_switch_away_and_straight_back_is_held_though_both_messages_waited(ros_context):
    messages = stack.link_messages()
    from ne_dynamics_ros.nodes.jtc_feedforward_node import JtcFeedforward
    relay = JtcFeedforward(context=ros_context, parameter_overrides=[
        Parameter('urdf_path', value=str(UR5E_URDF))])
    peer = rclpy.create_node('relay_test_peer', context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    try:
        activity = peer.create_publisher(messages.msg.ControllerManagerActivity,
                                         '/controller_manager/activity', MANAGER_QOS)
        states = peer.create_publisher(JointState, '/joint_states', qos_profile_sensor_data)
        held = []
        peer.create_subscription(JointTrajectory, '/joint_trajectory_controller/'
                                 'joint_trajectory', held.append, 10)
        for node in (relay, peer):
            executor.add_node(node)
        spin_until(executor, lambda: activity.get_subscription_count() == 1
                   and states.get_subscription_count() == 1, TIMEOUT, 'the relay subscribed')
        state = JointState(name=CHAIN, position=[0.0, -1.57, 1.57, -1.57, -1.57, 0.0],
                           velocity=[0.0] * 6)
        states.publish(state)
        spin_until(executor, lambda: relay.state is not None, TIMEOUT, 'the relay has a state')
        activity.publish(_activity(messages, True))
        spin_until(executor, lambda: len(held) == 1, TIMEOUT, 'the hold at activation')
        # away and back while the relay's executor is busy elsewhere: both wait for it
        activity.publish(_activity(messages, False))
        activity.publish(_activity(messages, True))
        time.sleep(0.2)
        spin_until(executor, lambda: len(held) == 2, TIMEOUT,
                   'the hold on the controller\'s return')
        assert held[1].points[-1].effort and any(abs(e) > 1.0 for e in held[1].points[-1].effort)
    finally:
        executor.shutdown()
        relay.destroy_node()
        peer.destroy_node()
