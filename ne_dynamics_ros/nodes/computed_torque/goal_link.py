"""The node's side of ``~/follow_joint_trajectory``: goals in, ends and feedback out.

The action is served by the trajectory receiver process
(:mod:`ne_dynamics_ros.nodes.follow_joint_trajectory`); here its goals are installed as
the reference (:meth:`GoalLink.install_goal`, on the trajectory thread, exactly as a
topic trajectory), canceled (:meth:`GoalLink.cancel`), and a thread of its own (the
*goal link*) sends the receiver every goal's end, as the controller reports it, and the
feedback of the active goal at ``action_monitor_rate``. The control path only records
its last command and hands a goal's end to a queue: no socket write there.
"""
import queue
import threading
import time

from ne_dynamics_ros.control.reference.goals import (default_tolerances, fill_partial, GoalEnd,
                                                     GoalStatus, goal_tolerances, ResultCode)
from ne_dynamics_ros.control.reference.trajectory import TrajectoryError


class GoalLink:
    """Goals of the action for one configured node.

    Args:
        node: the :class:`~ne_dynamics_ros.nodes.computed_torque.node.ComputedTorqueNode`
            (its logger, warnings, clock and parameters).
        controller: its :class:`~ne_dynamics_ros.control.controller.
            ComputedTorqueController`.
        receiver: the :class:`~ne_dynamics_ros.nodes.trajectory_receiver.
            TrajectoryReceiver` serving the action.
        on_end: called with each goal's end (a :class:`~ne_dynamics_ros.control.reference.
            goals.GoalEnd`) once sent, on the link's thread, or None.
    """

    def __init__(self, node, controller, receiver, on_end=None):
        self._node = node
        self._on_end = on_end
        self._controller = controller
        self._receiver = receiver
        self._queue = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._last = None                # (stamp sec, nanosec, Command) of the last command
        chain = controller.model.joint_names
        value = node.get_parameter
        self.defaults = default_tolerances(
            [value(f'constraints.{j}.trajectory').value for j in chain],
            [value(f'constraints.{j}.goal').value for j in chain],
            value('constraints.stopped_velocity_tolerance').value,
            value('constraints.goal_time').value)
        self._period = 1.0 / value('action_monitor_rate').value
        #: Goals accepted by the controller, rejected (their reasons logged) and ended,
        #: since configured.
        self.accepted_goals = 0
        self.rejected_goals = 0
        self.ended_goals = 0
        self._thread = threading.Thread(target=self._run, name='goal_link', daemon=True)
        self._thread.start()

    @property
    def thread(self):
        """The thread judging goals and sending their feedback and results."""
        return self._thread

    # ---- the control path -------------------------------------------------------------------

    def record(self, state, out):
        """Control path: keep the last command for feedback; wake the link if goals ended."""
        self._last = (state.sec, state.nanosec, out)
        if self._controller.goal_ends_waiting:
            self._queue.put(None)

    def wake(self):
        """Have the link thread look for goals the controller ended (any thread)."""
        self._queue.put(None)

    # ---- frames from the receiver (the trajectory thread) ------------------------------------

    def install_goal(self, header, fields, received_ns):
        """Install an accepted goal as the reference; on failure, end it with the reason."""
        goal_id = header['goal_id']
        controller = self._controller
        chain = controller.model.joint_names
        tolerances, problem = goal_tolerances(
            self.defaults, chain, header['path_tolerance'], header['goal_tolerance'],
            header['goal_time_tolerance'])
        if problem:
            self._node.get_logger().error(f'goal {goal_id[:8]}: {problem}')
        stamp_ns = fields.sec * 1_000_000_000 + fields.nanosec
        try:
            points = fields.points
            if header.get('given') is not None:
                reference = controller.reference_at(received_ns)
                if reference is None:
                    raise TrajectoryError('no reference to hold the joints the goal leaves '
                                          'out (inactive, no joint_states yet, or a state '
                                          'timeout)')
                points = fill_partial(points.waypoints, header['given'], chain,
                                      reference.q)
            prepared = controller.prepare_trajectory(chain, points, stamp_ns, received_ns)
            # a zero stamp starts now, not at its receipt (JTC: at its first sample)
            trajectory = controller.install_trajectory(
                prepared, goal_id, tolerances, self._node.get_clock().now().nanoseconds)
        except TrajectoryError as err:
            self._queue.put(GoalEnd(goal_id, GoalStatus.ABORTED,
                                    int(ResultCode.INVALID_GOAL), f'Aborted: {err}'))
            self._node.get_logger().warning(f'goal {goal_id[:8]} not taken: {err}')
            return
        finally:
            self.wake()               # a goal it replaced has ended
        self.accepted_goals += 1
        slower = (f', played {prepared.stretch:.4g}x slower than sent to stay within the '
                  'effort limits' if prepared.stretch != 1.0 else '')
        self._node.get_logger().info(
            f'goal {goal_id[:8]} accepted: {len(trajectory.times)} points, '
            f'{trajectory.times[-1]:.3f} s{slower}')

    def reject(self, header):
        """Log a goal the receiver rejected, with its reason."""
        self.rejected_goals += 1
        self._node.warn_throttled('goal', f'rejected a FollowJointTrajectory goal: '
                                  f'{header["reason"]}')

    def cancel(self, goal_id):
        """Cancel ``goal_id`` if active (the controller holds); its end follows."""
        if self._controller.cancel_goal(goal_id):
            self._node.get_logger().info(f'goal {goal_id[:8]} canceled: holding')
        self.wake()

    # ---- the link thread ------------------------------------------------------------------

    def _run(self):
        due = time.monotonic()
        while not self._stopping.is_set():
            try:
                item = self._queue.get(timeout=max(0.0, due - time.monotonic()))
            except queue.Empty:
                item = None
            if self._stopping.is_set():
                return
            try:
                # the controller's ends leave it one way (take_goal_ends); a goal it never
                # took (refused at install) is the link's own
                ends = self._controller.take_goal_ends()
                if item is not None:
                    ends.append(item)
                for end in ends:
                    self._send_end(end)
                now = time.monotonic()
                if now >= due:
                    due = now + self._period
                    self._send_feedback()
            except Exception as err:  # noqa: BLE001 - the link must outlive one bad item
                self._node.warn_throttled('goal_link', f'goal link: {type(err).__name__}: '
                                          f'{err}')

    def _send_end(self, end):
        self.ended_goals += 1
        text = f'goal {end.goal_id[:8]} {end.status.value}: {end.error_string}'
        # rclpy refuses two severities from one call site: two calls
        if end.status is GoalStatus.SUCCEEDED:
            self._node.get_logger().info(text)
        else:
            self._node.get_logger().warning(text)
        self._receiver.send({'kind': 'goal_end', 'goal_id': end.goal_id,
                             'status': end.status.value, 'error_code': end.error_code,
                             'error_string': end.error_string})
        if self._on_end is not None:
            self._on_end(end)

    def _send_feedback(self):
        goal_id = self._controller.goal_id
        last = self._last
        if goal_id is None or last is None:
            return
        sec, nanosec, out = last
        self._receiver.send({
            'kind': 'feedback', 'goal_id': goal_id, 'stamp': [sec, nanosec],
            'joint_names': list(self._controller.joints),
            'desired': list(out.desired_values[:2]),
            'actual': list(out.measured_values),
            'error': [out.position_error_values, out.velocity_error_values]})

    def stop(self):
        """End the link thread (the goals still active are ended by the receiver's exit)."""
        self._stopping.set()
        self._queue.put(None)
        if self._thread is not threading.current_thread():
            self._thread.join(2.0)


__all__ = ['GoalLink']
