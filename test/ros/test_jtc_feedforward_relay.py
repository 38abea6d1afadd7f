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
        spin_until(executor, lambda: relay.newest_state() is not None, TIMEOUT,
                   'the relay has a state')
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


def test_a_goal_is_accepted_once_checked_and_aborted_if_its_resampling_fails(
        ros_context, monkeypatch):
    """The relay answers a goal once it has checked it (the resampling comes after: it
    took most of the relay's time to accept a 1 000-point goal); a goal whose resampling
    then fails (here: more points than a lowered MAX_POINTS allows) ends ABORTED with the
    reason, and the controller never sees it."""
    stack.link_messages()                    # controller_manager_msgs, for the relay
    from control_msgs.action import FollowJointTrajectory
    from rclpy.action import ActionClient, ActionServer, GoalResponse
    from action_msgs.msg import GoalStatus
    from ne_dynamics_ros.control.reference import trajectory_efforts
    from ne_dynamics_ros.nodes.jtc_feedforward_node import JtcFeedforward
    monkeypatch.setattr(trajectory_efforts, 'MAX_POINTS', 20)
    relay = JtcFeedforward(context=ros_context, parameter_overrides=[
        Parameter('urdf_path', value=str(UR5E_URDF)),
        Parameter('effort_tolerance', value=1e-9)])       # every interval halved
    peer = rclpy.create_node('relay_test_jtc', context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    seen = []

    def execute(handle):
        handle.succeed()
        return FollowJointTrajectory.Result()
    try:
        server = ActionServer(peer, FollowJointTrajectory, '/joint_trajectory_controller/'
                              'follow_joint_trajectory', execute,
                              goal_callback=lambda goal: seen.append(goal) or GoalResponse.ACCEPT)
        client = ActionClient(peer, FollowJointTrajectory,
                              '/jtc_feedforward/follow_joint_trajectory')
        states = peer.create_publisher(JointState, '/joint_states', qos_profile_sensor_data)
        for node in (relay, peer):
            executor.add_node(node)
        spin_until(executor, lambda: client.server_is_ready()
                   and relay.client.server_is_ready()
                   and states.get_subscription_count() == 1, TIMEOUT, 'the relay is up')
        start = [0.0, -1.57, 1.57, -1.57, -1.57, 0.0]
        states.publish(JointState(name=CHAIN, position=start, velocity=[0.0] * 6))
        spin_until(executor, lambda: relay.newest_state() is not None, TIMEOUT,
                   'the relay has a state')
        goal = FollowJointTrajectory.Goal(trajectory=stack.quintic(
            CHAIN, start, [v + 0.2 for v in start], 2.0, points=11))
        sent = client.send_goal_async(goal)
        spin_until(executor, sent.done, TIMEOUT, 'the goal answered')
        assert sent.result().accepted
        result = sent.result().get_result_async()
        spin_until(executor, result.done, TIMEOUT, 'the goal ended')
        assert result.result().status == GoalStatus.STATUS_ABORTED
        assert 'more than 20 points' in result.result().result.error_string
        assert seen == []
        server.destroy()
    finally:
        executor.shutdown()
        relay.destroy_node()
        peer.destroy_node()
