"""FollowJointTrajectory goals read as CDR bytes by rclpy's own action server, over DDS.

:func:`~ne_dynamics_ros.nodes.raw_goals.fast_goal_type` swaps the goal request's
converter for one that serialises the C message back to CDR and reads it with NumPy. The
reference is the goal the client sent (rclpy's converter, Fast DDS, rclpy's action
server): what the goal callback gets must be it, bit for bit; the goals the reader leaves
to rclpy must reach the callback as rclpy's own message; accept, reject, feedback,
results and cancels work as with the plain type.
"""
from hypothesis import given, HealthCheck, settings, strategies as st
import numpy as np
import pytest
import rclpy
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.executors import SingleThreadedExecutor
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from dds import next_domain_id, spin_until

TIMEOUT = 10.0
NAMES = [f'joint_{k}' for k in range(1, 7)]


class Served:
    """An action server of the fast goal type and a client, on a private domain."""

    def __init__(self):
        from control_msgs.action import FollowJointTrajectory
        from ne_dynamics_ros.nodes.raw_goals import fast_goal_type
        self.action = FollowJointTrajectory
        self.context = rclpy.context.Context()
        rclpy.init(context=self.context, domain_id=next_domain_id())
        self.node = rclpy.create_node('raw_goal_server', context=self.context)
        self.type = fast_goal_type(FollowJointTrajectory, 100, 100_000)
        assert self.type is not None, 'the fast goal type could not be made here'
        self.goals, self.accept, self.cancelled = [], True, None
        self.server = ActionServer(self.node, self.type, 'follow_joint_trajectory',
                                   execute_callback=self._execute,
                                   goal_callback=self._on_goal,
                                   cancel_callback=self._on_cancel)
        self.client = ActionClient(self.node, FollowJointTrajectory,
                                   'follow_joint_trajectory')
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        spin_until(self.executor, self.client.server_is_ready, TIMEOUT, 'the server')

    def _on_goal(self, goal):
        self.goals.append(goal)
        return GoalResponse.ACCEPT if self.accept else GoalResponse.REJECT

    def _on_cancel(self, handle):
        if self.cancelled is not None:
            self.cancelled.set_result(True)
        return CancelResponse.ACCEPT

    async def _execute(self, handle):
        from rclpy.task import Future
        handle.publish_feedback(self.action.Feedback(joint_names=['fed back']))
        if handle.request.trajectory.joint_names[:1] == ('wait',):
            self.cancelled = Future()
            await self.cancelled
            handle.canceled()
            return self.action.Result(error_string='canceled')
        handle.succeed()
        return self.action.Result(error_string=f'{len(handle.request.trajectory.joint_names)}')

    def send(self, goal, feedback=None):
        """Return the goal handle once answered (bounded)."""
        future = self.client.send_goal_async(goal, feedback_callback=feedback)
        spin_until(self.executor, future.done, TIMEOUT, 'the goal answered')
        return future.result()

    def result(self, handle):
        future = handle.get_result_async()
        spin_until(self.executor, future.done, TIMEOUT, 'the result')
        return future.result()

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


@pytest.fixture(scope='module')
def served():
    s = Served()
    yield s
    s.close()


def _goal(action, trajectory, tolerances=()):
    from control_msgs.msg import JointTolerance
    goal = action.Goal(trajectory=trajectory)
    goal.path_tolerance = [JointTolerance(name=n, position=p, velocity=v, acceleration=a)
                           for n, p, v, a in tolerances]
    goal.goal_tolerance = goal.path_tolerance[::-1]
    goal.goal_time_tolerance.sec, goal.goal_time_tolerance.nanosec = 1, 250_000_000
    return goal


FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)


@st.composite
def trajectories(draw):
    """Points alike (read all at once) or not (read point by point)."""
    k = draw(st.integers(1, 7))
    msg = JointTrajectory(joint_names=[f'j{i}' for i in range(k)])
    msg.header.frame_id = draw(st.sampled_from(['', 'base_link', 'wörld']))
    alike = draw(st.booleans())
    for j in range(draw(st.integers(1, 30))):
        size = k if alike else draw(st.integers(0, 7))
        point = JointTrajectoryPoint(
            positions=draw(st.lists(FLOATS, min_size=size, max_size=size)),
            velocities=draw(st.lists(FLOATS, min_size=size, max_size=size))
            if alike or draw(st.booleans()) else [])
        point.time_from_start.sec, point.time_from_start.nanosec = j, draw(
            st.integers(0, 999_999_999))
        msg.points.append(point)
    return msg


def same_bits(a, b):
    return np.array_equal(np.asarray(a, float).view(np.uint64),
                          np.asarray(b, float).view(np.uint64))


@settings(max_examples=20, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(trajectory=trajectories(),
       tolerances=st.lists(st.tuples(st.sampled_from(NAMES), FLOATS, FLOATS, FLOATS),
                           max_size=3))
def test_the_callback_gets_the_goal_sent_bit_for_bit(served, trajectory, tolerances):
    from ne_dynamics_ros.control.reference.trajectory import WaypointArrays
    from ne_dynamics_ros.nodes.cdr import GoalRequestFields
    before = served.type.conversions['bytes']
    del served.goals[:]
    handle = served.send(_goal(served.action, trajectory, tolerances))
    assert handle.accepted
    (got,) = served.goals
    assert isinstance(got, GoalRequestFields)
    assert served.type.conversions['bytes'] == before + 1
    assert got.goal_id == bytes(handle.goal_id.uuid)
    assert got.trajectory.joint_names == tuple(trajectory.joint_names)
    assert got.trajectory.frame_id == trajectory.header.frame_id.encode('utf-8')
    points = got.trajectory.points
    if isinstance(points, WaypointArrays):
        rows = [(t, q, qd if given_qd else []) for t, q, qd, given_qd in zip(
            points.times, points.positions, points.velocities, points.has_velocities)]
    else:
        rows = [(p.time_from_start, p.positions, p.velocities) for p in points]
    assert len(rows) == len(trajectory.points)
    for (t, q, qd), sent in zip(rows, trajectory.points):
        assert t == sent.time_from_start.sec + 1e-9 * sent.time_from_start.nanosec
        assert same_bits(q, sent.positions) and same_bits(qd, sent.velocities)
    assert [t[0] for t in got.path_tolerance] == [t[0] for t in tolerances]
    assert same_bits([v for t in got.path_tolerance for v in t[1:]],
                     [v for t in tolerances for v in t[1:]])
    assert [t[0] for t in got.goal_tolerance] == [t[0] for t in tolerances[::-1]]
    assert same_bits([v for t in got.goal_tolerance for v in t[1:]],
                     [v for t in tolerances[::-1] for v in t[1:]])
    assert got.goal_time_tolerance == (1, 250_000_000)
    result = served.result(handle)
    assert result.result.error_string == str(len(trajectory.joint_names))


def test_goals_the_reader_leaves_to_rclpy_arrive_as_rclpys_message(served):
    from control_msgs.msg import JointComponentTolerance
    from geometry_msgs.msg import Transform
    from trajectory_msgs.msg import MultiDOFJointTrajectoryPoint
    trajectory = JointTrajectory(joint_names=NAMES, points=[
        JointTrajectoryPoint(positions=[0.1] * 6)])
    with_multi = _goal(served.action, trajectory)
    with_multi.multi_dof_trajectory.joint_names = ['base']
    with_multi.multi_dof_trajectory.points = [
        MultiDOFJointTrajectoryPoint(transforms=[Transform()])]
    with_components = _goal(served.action, trajectory)
    with_components.component_goal_tolerance = [JointComponentTolerance(joint_name='a')]
    for goal in (with_multi, with_components):
        before = dict(served.type.conversions)
        del served.goals[:]
        handle = served.send(goal)
        assert handle.accepted
        (got,) = served.goals
        assert isinstance(got, served.action.Goal) and got == goal
        assert served.type.conversions == {'bytes': before['bytes'],
                                           'rclpy': before['rclpy'] + 1}
        served.result(handle)


def test_rejects_feedback_and_cancels_work_as_with_rclpys_type(served):
    trajectory = JointTrajectory(joint_names=['wait'], points=[
        JointTrajectoryPoint(positions=[0.0])])
    served.accept = False
    try:
        assert not served.send(_goal(served.action, trajectory)).accepted
    finally:
        served.accept = True
    feedback = []
    handle = served.send(_goal(served.action, trajectory), feedback.append)
    assert handle.accepted
    spin_until(served.executor, lambda: feedback, TIMEOUT, 'the feedback')
    assert list(feedback[0].feedback.joint_names) == ['fed back']
    cancel = handle.cancel_goal_async()
    spin_until(served.executor, cancel.done, TIMEOUT, 'the cancel answered')
    result = served.result(handle)
    assert result.result.error_string == 'canceled'
