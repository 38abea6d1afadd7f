"""``~/follow_joint_trajectory``: the FollowJointTrajectory action, served by the receiver.

MoveIt executes plans by sending ``control_msgs/action/FollowJointTrajectory`` goals to
``<controller>/follow_joint_trajectory``; this module serves that action for
``computed_torque_node`` with joint_trajectory_controller's (JTC's) semantics. It runs in
the node's trajectory receiver process (:mod:`ne_dynamics_ros.nodes.trajectory_receiver`),
not in the control process: rclpy turns a goal into Python objects in the process whose
executor serves the action, and a 50 000-point goal holds that process's GIL for about
0.4-0.5 s here (``benchmarks/bench_node.py --stall``), which a control loop cannot wait
for.

What happens where:

* here, on the receiver's executor: a goal is checked without clock or state
  (:func:`~ne_dynamics_ros.control.reference.goals.check_goal`: not active, joints, empty, times,
  sizes, NaN/inf, position limits, ``multi_dof_trajectory``, non-zero final velocity,
  a stamp already past) and *rejected* with the reason (sent to the node, which logs
  it), or accepted and sent to the node as a frame of columns (its segment polynomials
  worked out here, as for a topic trajectory);
* in the node: the goal's trajectory replaces the reference exactly as a topic
  trajectory does, the controller judges it on every state
  (:class:`~ne_dynamics_ros.control.reference.goals.GoalMonitor`) and the node sends back the
  goal's end (succeeded, aborted with the reason, canceled) and its feedback at
  ``action_monitor_rate``;
* here again: the end becomes the action's result, the feedback its feedback.

Frames (over the receiver's socket, see :mod:`~ne_dynamics_ros.nodes.trajectory_receiver`):
to the node ``goal`` (a trajectory frame with ``goal_id`` and the goal's tolerances),
``goal_rejected`` (``reason``), ``cancel`` (``goal_id``); from the node ``state``
(``active``, ``options``), ``goal_end`` (``goal_id``, ``status``, ``error_code``,
``error_string``), ``feedback`` (``goal_id``, ``stamp``, ``joint_names``, ``desired``,
``actual``, ``error``: lists of positions and velocities).
"""
import time

import numpy as np

from ne_dynamics_ros.control.reference.goals import (check_goal, given_joints, GoalOptions,
                                                     GoalStatus, ResultCode)
from ne_dynamics_ros.control.reference.trajectory import (MAX_POINTS, prepare_waypoints,
                                                          TrajectoryError, waypoint_arrays,
                                                          WaypointArrays)
from ne_dynamics_ros.nodes.cdr import GoalRequestFields, trajectory_message_fields
from ne_dynamics_ros.nodes.frames import trajectory_arrays
from ne_dynamics_ros.nodes.raw_goals import fast_goal_type

#: Most joint names a goal may carry before it is refused unread (as for topic messages).
MAX_GOAL_JOINTS = 100_000
#: Most points a goal read as bytes may have (more: rclpy converts it, slowly). Above
#: MAX_POINTS, so that a goal over it is read fast and refused with the count (100 001
#: points: 3.5 s through rclpy's conversion, 2026-12-08).
READ_POINTS = 10 * MAX_POINTS
#: Requests the action's services queue (goals, cancels, results) before dropping any.
SERVICE_DEPTH = 1000


def goal_message_fields(goal, goal_id: bytes = b'') -> GoalRequestFields:
    """Return the :class:`~ne_dynamics_ros.nodes.cdr.GoalRequestFields` of a goal object.

    ``goal``: a ``FollowJointTrajectory.Goal`` rclpy made (a request left to its own
    conversion): the form a goal read as bytes has, points as
    :func:`~ne_dynamics_ros.nodes.cdr.trajectory_message_fields` gives them.
    """
    multi, wait = goal.multi_dof_trajectory, goal.goal_time_tolerance
    return GoalRequestFields(
        goal_id, trajectory_message_fields(goal.trajectory), tuple(multi.joint_names),
        len(multi.points), *(tuple((t.name, t.position, t.velocity, t.acceleration)
                                   for t in items)
                             for items in (goal.path_tolerance, goal.goal_tolerance)),
        (wait.sec, wait.nanosec))


def _oversized(trajectory) -> str:
    """Say why a goal's trajectory (message or fields) has too many names or points."""
    points = trajectory.points
    names = len(trajectory.joint_names)
    count = len(points.times) if isinstance(points, WaypointArrays) else len(points)
    if names > MAX_GOAL_JOINTS or count > MAX_POINTS:
        return (f'{names} joint names and {count} points: more than {MAX_GOAL_JOINTS} '
                f'names or {MAX_POINTS} points')
    return ''


def goal_frame(goal_id: str, goal, chain, lower, upper, options: GoalOptions,
               active: bool, now: float):
    """Judge one goal request; return ``(code, reason, frame)``.

    ``code`` None: accepted, ``frame`` = ``(header, arrays)`` to send to the node (a
    ``goal`` frame: the trajectory in chain order with its segment polynomials, or the
    given joints' columns for a partial goal, plus the goal's tolerances). Otherwise the
    :class:`~ne_dynamics_ros.control.reference.goals.ResultCode` and the reason, ``frame`` None.

    Args:
        goal_id: the goal's UUID as text.
        goal: a ``FollowJointTrajectory.Goal``, or the ``GoalRequestFields`` of one
            read as bytes (:mod:`~ne_dynamics_ros.nodes.raw_goals`).
        chain: the controlled joints (None: no model yet).
        lower, upper: their position limits (chain order).
        options: :class:`GoalOptions`.
        active: whether the node is active (else rejected).
        now: the time now, s (the node's clock, for ``header.stamp``).
    """
    if not active or chain is None:
        return ResultCode.INVALID_GOAL, ('the controller is not active: goals are taken '
                                         'once it is activated'), None
    if lower is None or upper is None:
        lower, upper = [-np.inf] * len(chain), [np.inf] * len(chain)
    if reason := _oversized(goal.trajectory):
        return ResultCode.INVALID_GOAL, reason, None
    if not isinstance(goal, GoalRequestFields):   # rclpy's objects: read as the bytes are
        goal = goal_message_fields(goal)
    fields = goal.trajectory
    names = list(fields.joint_names)
    try:
        waypoints = fields.points if isinstance(fields.points, WaypointArrays) else \
            waypoint_arrays(fields.points, len(names))
    except TrajectoryError as err:
        return ResultCode.INVALID_GOAL, str(err), None
    code, reason, checked = check_goal(
        names, waypoints, chain, lower, upper, options, goal.multi_dof_points,
        len(goal.multi_dof_joint_names), fields.sec + 1e-9 * fields.nanosec, now)
    if code is not None:
        return code, reason, None
    given = given_joints(names, chain)
    wait = goal.goal_time_tolerance
    header = {'goal_id': goal_id, 'sec': fields.sec, 'nanosec': fields.nanosec,
              'path_tolerance': list(goal.path_tolerance),
              'goal_tolerance': list(goal.goal_tolerance),
              'goal_time_tolerance': wait[0] + 1e-9 * wait[1]}
    if len(given) < len(chain):
        # the joints left out hold the reference the node has at receipt: it completes
        # the waypoints and works out the polynomials itself
        header['given'] = given
        header.update(trajectory_arrays(checked, None, given))
    else:
        try:
            prepared = prepare_waypoints(chain, checked, chain)
        except TrajectoryError as err:
            return ResultCode.INVALID_GOAL, str(err), None
        header.update(trajectory_arrays(prepared.waypoints, prepared.coefficients, chain))
    arrays = header.pop('_arrays')
    header['kind'] = 'goal'
    return None, '', (header, arrays)


class GoalServer:
    """The action server, in the receiver process (one per node).

    Args:
        node: the receiver's rclpy node.
        executor: the executor spinning it (a Python executor: its ``create_task`` is
            how the socket's thread hands the node's answers to it).
        action_name: the fully resolved ``<node>/follow_joint_trajectory``.
        send: ``send(header, arrays)`` writes a frame to the node (thread-safe).
        chain: the controlled joints and their limits: ``(names, lower, upper)``, or
            None until the node has a model.
    """

    def __init__(self, node, executor, action_name, send, chain=None):
        from control_msgs.action import FollowJointTrajectory
        from rclpy.action import ActionServer, CancelResponse, GoalResponse
        from rclpy.qos import (QoSDurabilityPolicy, QoSHistoryPolicy, QoSProfile,
                               QoSReliabilityPolicy)

        self._action = FollowJointTrajectory
        self._responses = (GoalResponse, CancelResponse)
        self._node = node
        self._executor = executor
        self._send = send
        self._chain = chain
        self._options = GoalOptions()
        self._active = False
        self._frames = {}          # id(goal request) -> (goal_id placeholder, frame)
        self._pending = {}         # goal_id -> [rclpy Future, goal handle]
        self.accepted = 0          # goals accepted so far (a result may be on its way)
        # rclpy's default service QoS keeps the last 10 requests: a burst of goals or of
        # cancel requests beyond that would lose some unanswered
        deep = QoSProfile(history=QoSHistoryPolicy.KEEP_LAST, depth=SERVICE_DEPTH,
                          reliability=QoSReliabilityPolicy.RELIABLE,
                          durability=QoSDurabilityPolicy.VOLATILE)
        # goals read as CDR bytes, not point by point into Python objects by rclpy
        # (:mod:`~ne_dynamics_ros.nodes.raw_goals`)
        goal_type = fast_goal_type(FollowJointTrajectory, MAX_GOAL_JOINTS, READ_POINTS,
                                   log=node.get_logger().warning) or FollowJointTrajectory
        self.server = ActionServer(
            node, goal_type, action_name, self._execute,
            goal_callback=self._on_goal, handle_accepted_callback=self._on_accepted,
            cancel_callback=self._on_cancel, goal_service_qos_profile=deep,
            result_service_qos_profile=deep, cancel_service_qos_profile=deep)

    # ---- from the node (the socket's thread) --------------------------------------------

    def on_frame(self, header):
        """Take one frame from the node: ``state``, ``chain``, ``goal_end``, ``feedback``."""
        kind = header.get('kind')
        if kind == 'chain':
            self._chain = (tuple(header['joints']), header.get('lower'),
                           header.get('upper'))
        elif kind == 'state':
            self._active = bool(header['active'])
            options = header.get('options')
            if options is not None:
                self._options = GoalOptions(**options)
        elif kind in ('goal_end', 'feedback'):
            self._executor.create_task(self._deliver, header)

    def _deliver(self, header):
        """Executor thread: the goal's end becomes its result; feedback is published."""
        entry = self._pending.get(header['goal_id'])
        if entry is None:
            return
        future, handle = entry
        if header['kind'] == 'feedback':
            if handle.is_active:
                feedback = self._action.Feedback()
                feedback.header.stamp.sec, feedback.header.stamp.nanosec = header['stamp']
                feedback.joint_names = header['joint_names']
                for field in ('desired', 'actual', 'error'):
                    point = getattr(feedback, field)
                    point.positions, point.velocities = header[field]
                handle.publish_feedback(feedback)
        elif not future.done():
            future.set_result(header)

    def abort_all(self, reason):
        """Executor thread: end every goal still waiting (the node is gone)."""
        for goal_id in list(self._pending):
            self._deliver({'kind': 'goal_end', 'goal_id': goal_id, 'status': 'aborted',
                           'error_code': int(ResultCode.INVALID_GOAL),
                           'error_string': reason})

    # ---- rclpy's callbacks (executor thread) ----------------------------------------------

    def _on_goal(self, goal):
        """Accept or reject a goal request; a rejection's reason goes to the node's log."""
        chain, lower, upper = self._chain if self._chain is not None else (None, None, None)
        try:
            code, reason, frame = goal_frame('', goal, chain, lower, upper, self._options,
                                             self._active, time.time())
        except Exception as err:  # noqa: BLE001 - whatever the goal holds, a reason
            code, reason, frame = (ResultCode.INVALID_GOAL,
                                   f'{type(err).__name__}: {err}', None)
        if code is not None:
            self._send({'kind': 'goal_rejected', 'error_code': int(code),
                        'reason': reason}, [])
            return self._responses[0].REJECT
        self._frames[id(goal)] = frame
        return self._responses[0].ACCEPT

    def _on_accepted(self, handle):
        """Send the accepted goal to the node, then run its execution."""
        from rclpy.task import Future

        goal_id = uuid_text(handle.goal_id.uuid)
        header, arrays = self._frames.pop(id(handle.request))
        header['goal_id'] = goal_id
        header['received_monotonic_ns'] = time.monotonic_ns()
        self._pending[goal_id] = [Future(executor=self._executor), handle]
        self.accepted += 1
        self._send(header, arrays)
        handle.execute()

    def _on_cancel(self, handle):
        """Ask the node to cancel (it holds, then answers CANCELED)."""
        goal_id = uuid_text(handle.goal_id.uuid)
        if goal_id not in self._pending:
            return self._responses[1].REJECT
        self._send({'kind': 'cancel', 'goal_id': goal_id}, [])
        return self._responses[1].ACCEPT

    async def _execute(self, handle):
        """Wait for the node's word on the goal; return the result."""
        goal_id = uuid_text(handle.goal_id.uuid)
        future = self._pending[goal_id][0]
        end = await future
        del self._pending[goal_id]
        result = self._action.Result()
        result.error_code = int(end['error_code'])
        result.error_string = end['error_string']
        status = GoalStatus(end['status'])
        if status is GoalStatus.SUCCEEDED:
            handle.succeed()
        elif status is GoalStatus.CANCELED and handle.is_cancel_requested:
            handle.canceled()
        else:
            handle.abort()
        return result

    def busy(self):
        """Return True while a goal's execution has not returned its result."""
        return bool(self._pending)

    def destroy(self):
        """Destroy the action server."""
        self.server.destroy()


def uuid_text(uuid) -> str:
    """Return a goal UUID (16 bytes) as the hex text the frames carry."""
    return bytes(np.asarray(uuid, dtype=np.uint8)).hex()


__all__ = ['goal_frame', 'GoalServer', 'MAX_GOAL_JOINTS', 'SERVICE_DEPTH', 'uuid_text']
