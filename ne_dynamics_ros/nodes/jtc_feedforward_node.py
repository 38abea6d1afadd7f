"""``jtc_feedforward``: the model's efforts on the trajectories joint_trajectory_controller runs.

joint_trajectory_controller (JTC) with the ``effort`` command interface commands
``u = PID(q_d - q, qd_d - qd) + effort_d`` inside controller_manager's own cycle, the
state read in that cycle, ``effort_d`` interpolated linearly between the trajectory's
points (ros2_controllers #1200); with ``position`` + ``effort`` interfaces it passes the
effort to the drive's own position loop. This node stands in front of a JTC and fills
that ``effort`` with the arm's inverse dynamics (the computed-torque feed-forward of Lee,
Chung, Mudge and Turney 1982, eq. 4.1, with the drives' armature and friction):

* ``~/follow_joint_trajectory`` (``control_msgs/FollowJointTrajectory``, what MoveIt
  calls) and ``~/joint_trajectory`` (``trajectory_msgs/JointTrajectory``) take
  trajectories; each is checked (joints, times, values; the effort it needs against the
  limits less ``effort_margin``, as the node checks its own:
  :func:`~ne_dynamics_ros.control.reference.trajectory_efforts.checked_goal`), resampled
  where JTC's linear interpolation of the model's effort would be off by more than
  ``effort_tolerance``
  (:func:`~ne_dynamics_ros.control.reference.trajectory_efforts.goal_points`; each point's
  effort the model's ``effort_offset`` periods earlier, half a period by default, because
  JTC applies the effort one period ahead over the period after its cycle:
  :data:`~ne_dynamics_ros.control.reference.trajectory_efforts.EFFORT_OFFSET_PERIODS`) and
  sent on to ``/<controller>/follow_joint_trajectory`` (``/<controller>/joint_trajectory``),
  in the controller's ``joints`` order, every point with the trajectory's own ``q, q̇, q̈``. A
  goal that is malformed or needs more than the limits is rejected before JTC sees it; a
  goal is accepted once checked, and resampled after (one that would need more than
  ``MAX_POINTS`` points then ends ABORTED with the reason, before JTC sees it).
* JTC's feedback and result are relayed unchanged; a new goal preempts in JTC as JTC
  does. A cancel is answered CANCELED, its JTC goal ended by a stop goal that preempts it
  (not by JTC's cancel, whose zero-effort hold let the arm fall until the stop came).
* Holding: JTC's own hold (at activation, after a cancel or an abort) carries zero
  effort, so a torque-controlled arm without drive-side gravity compensation sags until
  the PID winds up. Whenever the controller becomes active (at the position the arm had
  then: JTC's own hold point) and after a goal ends other than by success (at the
  measured position), this node sends JTC a one-point trajectory with the model's
  gravity as its effort
  (:func:`~ne_dynamics_ros.control.reference.trajectory_efforts.hold_effort`); an arm still
  moving (a cancel mid-move) first gets a smooth stop with the model's efforts
  (:func:`~ne_dynamics_ros.control.reference.trajectory_efforts.stop_waypoints`), whose last point
  JTC then holds. After a success JTC holds the goal's last point, whose effort is already the
  model's.

The control loop never waits for this node: it runs in controller_manager's cycle. The
arm's state comes from ``/joint_states`` (joint_state_broadcaster's, mapped by name).
"""
import collections
import math

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointTolerance
from controller_manager_msgs.msg import ControllerManagerActivity
from lifecycle_msgs.msg import State

from ne_dynamics_ros.codegen.compiled import CompiledDynamics
from ne_dynamics_ros.control.controller import MAX_STATE_JOINTS
from ne_dynamics_ros.control.reference.trajectory_efforts import (
    checked_goal, EFFORT_OFFSET_PERIODS, feedforward_goal, FeedforwardSettings, goal_points,
    hold_effort, stop_waypoints)
from ne_dynamics_ros.control.reference.trajectory import TrajectoryError
from ne_dynamics_ros.dynamics.model import load_model
from ne_dynamics_ros.errors import ModelError
from ne_dynamics_ros.nodes.computed_torque.priority import (
    bulk_work, freeze_collector, hold_cpu_latency, own_collector, raise_process)
from ne_dynamics_ros.nodes.cdr import (CdrError, GoalRequestFields, JointStateReader,
                                       JointTrajectoryFields, trajectory_message_fields)
from ne_dynamics_ros.nodes.follow_joint_trajectory import READ_POINTS
from ne_dynamics_ros.nodes.qos import ACTIVITY_QOS
from ne_dynamics_ros.nodes.raw_goals import fast_goal_type
from ne_dynamics_ros.nodes.spin import (init_until_signalled, PolledSubscription,
                                        spin_until_signalled)

WARN_PERIOD = 2.0


class FeedforwardConfigError(ModelError):
    """The relay's parameters do not describe an arm and a controller it can serve."""


def goal_tolerances(goal):
    """Return a goal's ``(path_tolerance, goal_tolerance, goal_time_tolerance)`` messages.

    ``goal``: a ``FollowJointTrajectory.Goal`` (given back as it is) or the
    :class:`~ne_dynamics_ros.nodes.cdr.GoalRequestFields` the action server read as bytes
    (the controller's goal is a message).
    """
    if not isinstance(goal, GoalRequestFields):
        return goal.path_tolerance, goal.goal_tolerance, goal.goal_time_tolerance

    def messages(items):
        return [JointTolerance(name=name, position=position, velocity=velocity,
                               acceleration=acceleration)
                for name, position, velocity, acceleration in items]
    sec, nanosec = goal.goal_time_tolerance
    return (messages(goal.path_tolerance), messages(goal.goal_tolerance),
            Duration(sec=sec, nanosec=nanosec))


def trajectory_message(points, order, joints):
    """Return the feed-forward points as a ``JointTrajectory`` for the controller.

    ``points``: :class:`~.trajectory_efforts.FeedforwardPoints` (chain order); ``order``:
    (n,) chain index of each of the controller's ``joints``. Stamped 0: the controller
    starts it on receipt.
    """
    msg = JointTrajectory(joint_names=list(joints))
    q, qd, qdd, effort = (a[:, order] for a in (points.q, points.qd, points.qdd,
                                                points.effort))
    for k, t in enumerate(points.times.tolist()):
        point = JointTrajectoryPoint(positions=q[k].tolist(), velocities=qd[k].tolist(),
                                     accelerations=qdd[k].tolist(),
                                     effort=effort[k].tolist())
        point.time_from_start.sec, point.time_from_start.nanosec = divmod(
            int(round(t * 1e9)), 1_000_000_000)
        msg.points.append(point)
    return msg


class JtcFeedforward(Node):
    """The relay; see the module docstring."""

    def __init__(self, **kwargs):
        super().__init__('jtc_feedforward', **kwargs)
        v = self._declare()
        self.model = self._model(v)
        try:
            # the model's RNEA through its generated program, as computed_torque_node runs
            # it (checked against the recursion here): 6x faster in batch than the recursion
            self.dynamics = CompiledDynamics(self.model)
        except ModelError as exc:
            raise FeedforwardConfigError(f'the generated dynamics disagree: {exc}') from exc
        chain = list(self.model.joint_names)
        self.joints = [j for j in v['joints'] if j] or chain
        if sorted(self.joints) != sorted(chain) or len(set(self.joints)) != len(chain):
            raise FeedforwardConfigError(f'joints {self.joints} must be the chain\'s {chain}, '
                                         'each once')
        self.order = np.array([chain.index(j) for j in self.joints])
        self.settings = self._settings(v)
        self.state = None                     # (q, qd) chain order, from /joint_states
        self.state_time = 0.0                 # its header stamp, s
        self._state_names, self._state_order = None, None   # the names seen, chain's rows
        self.recent = collections.deque(maxlen=RECENT_STATES)   # (stamp s, q) of the last
        self.activated_at = None              # the controller's activation (its stamp), s
        self.hold_pending = False
        self.active_goals = {}                # our goal id -> JTC's goal handle
        self.stopped_goals = set()            # our goal ids ended by a stop goal
        self.prepared_goals = {}              # id(goal request) -> its checked trajectory
        self.controller_active = False
        controller = self.controller = v['controller']
        # read when the relay acts (a goal, a stop, a hold), not a callback per state:
        # rclpy's executor took half a core for 500 states a second, which at the relay's
        # SCHED_FIFO priority starved every process at the default policy beside it
        self.states = PolledSubscription(self, JointState, '/joint_states', STATE_QOS,
                                         raw=True)
        self.state_reader = JointStateReader(MAX_STATE_JOINTS)
        # and every DRAIN_PERIOD in one batch, so that a goal finds few states waiting
        # (256 of them took 3.7 ms to read, most of what the relay added to a goal)
        self.create_timer(DRAIN_PERIOD, self._read_states)
        self.pending_timer = None             # polls for a first state while a hold waits
        self.create_subscription(ControllerManagerActivity,
                                 f'{v["controller_manager"]}/activity', self._on_activity,
                                 ACTIVITY_QOS)
        self.create_subscription(JointTrajectory, '~/joint_trajectory', self._on_topic, 10)
        self.publisher = self.create_publisher(JointTrajectory,
                                               f'/{controller}/joint_trajectory', 10)
        self.client = ActionClient(self, FollowJointTrajectory,
                                   f'/{controller}/follow_joint_trajectory')
        # goals read as CDR bytes, not point by point into Python objects by rclpy (a
        # 1 000-point goal: 19.8 ms of rclpy's conversion before any check could start)
        goal_type = fast_goal_type(FollowJointTrajectory, MAX_STATE_JOINTS, READ_POINTS,
                                   log=self.get_logger().warning) or FollowJointTrajectory
        self.server = ActionServer(self, goal_type, '~/follow_joint_trajectory',
                                   execute_callback=self._execute,
                                   goal_callback=self._on_goal,
                                   cancel_callback=self._on_cancel)
        self.get_logger().info(
            f'feed-forward for {controller} ({self.joints}): efforts within '
            f'{np.max(np.atleast_1d(self.settings.tolerance)):g} N*m of the model at '
            f'{self.settings.rate:g} Hz; holding with '
            f'{"gravity" if self.settings.with_gravity else "zero effort (drives compensate)"}')

    def _declare(self):
        def declare(name, default, description):
            return self.declare_parameter(name, default, ParameterDescriptor(
                description=description, read_only=True, dynamic_typing=True)).value

        v = {name: declare(name, default, text) for name, default, text in PARAMETERS}
        v['urdf'] = v['robot_description'] or v['urdf_path']
        if not str(v['urdf']).strip():
            raise FeedforwardConfigError('jtc_feedforward needs robot_description or urdf_path')
        return v

    @staticmethod
    def _model(v):
        """Load the chain, then again with the per-joint values given (one value: all)."""
        def given(name, n):
            values = [float(x) for x in (v[name] or [])]
            if not values or values == [0.0]:
                return None                   # the URDF's (armature: none)
            return values * n if len(values) == 1 else values
        try:
            model = load_model(v['urdf'], base_link=v['base_link'] or None,
                               tip_link=v['tip_link'] or None)
            extra = {name: given(name, model.n) for name in ('armature', 'damping', 'friction')}
            if any(value is not None for value in extra.values()):
                model = load_model(v['urdf'], base_link=v['base_link'] or None,
                                   tip_link=v['tip_link'] or None, **extra)
        except (ValueError, TypeError) as exc:
            raise FeedforwardConfigError(f'cannot build the robot model: {exc}') from exc
        return model

    def _settings(self, v):
        rate = float(v['rate'])
        if not (math.isfinite(rate) and rate > 0):
            raise FeedforwardConfigError(f'rate must be > 0 Hz, got {rate}')
        n = self.model.n
        given = [float(x) for x in (v['effort_limits'] or [])]
        limits = np.asarray(self.model.effort_limits if given in ([], [0.0]) else given,
                            dtype=float)
        limits = np.where(limits > 0, limits, np.inf)
        tolerance = np.asarray(v['effort_tolerance'], dtype=float).reshape(-1)
        margin = float(v['effort_margin'])
        offset = float(v['effort_offset'])
        if not math.isfinite(offset):
            raise FeedforwardConfigError(f'effort_offset must be finite, periods: {offset}')
        if limits.shape != (n,) or tolerance.size not in (1, n) or \
                not np.all(tolerance > 0) or not 0.0 <= margin < 1.0:
            raise FeedforwardConfigError(
                f'effort_limits needs {n} values, effort_tolerance 1 or {n} values > 0, '
                f'effort_margin in [0, 1): got {limits.tolist()}, {tolerance.tolist()}, '
                f'{margin}')
        return FeedforwardSettings(
            gravity=np.asarray(v['gravity'], dtype=float),
            tolerance=float(tolerance[0]) if tolerance.size == 1 else tolerance, rate=rate,
            effort_limits=limits, effort_margin=margin,
            with_gravity=not v['hardware_compensates_gravity'],
            friction=bool(v['friction_compensation'])
            and not v['hardware_compensates_friction'], effort_offset=offset)

    # -- inputs -------------------------------------------------------------------------

    def _read_states(self):
        """Take the states received since the last look: the newest, and the recent ones.

        A state that does not name every joint of the chain, is malformed or not finite
        is skipped. The values of all the states taken are gathered into one array (one
        NumPy pass, not a few per state: 256 waiting UR5e states took 10.3 ms read one by
        one, more than the goal check they delayed).
        """
        chain = self.model.joint_names
        stamps, positions, velocities = [], [], []
        zeros = bytes(8 * len(chain))
        for data, _ in self.states.take():
            try:
                fields = self.state_reader.read(data)
            except CdrError:
                continue
            names = fields.names
            if names is not self._state_names:      # the reader gives repeated names once
                index = {name: k for k, name in enumerate(names)}
                self._state_names = names
                self._state_order = None if any(j not in index for j in chain) else \
                    np.array([index[j] for j in chain])
            order = self._state_order
            if order is None or len(fields.position) != len(names):
                continue
            stamps.append(fields.sec + 1e-9 * fields.nanosec)
            positions.append(np.frombuffer(fields.position)[order].tobytes())
            velocities.append(np.frombuffer(fields.velocity)[order].tobytes()
                              if len(fields.velocity) == len(names) else zeros)
        if not stamps:
            return
        q = np.frombuffer(b''.join(positions)).reshape(len(stamps), len(chain)).copy()
        qd = np.frombuffer(b''.join(velocities)).reshape(q.shape).copy()
        valid = np.flatnonzero(np.isfinite(q).all(axis=1) & np.isfinite(qd).all(axis=1))
        self.recent.extend((stamps[k], q[k]) for k in valid)
        if valid.size:
            k = valid[-1]
            self.state, self.state_time = (q[k], qd[k]), stamps[k]

    def newest_state(self):
        """Return the newest ``(q, qd)`` read (chain order, rad and rad/s), or None yet."""
        self._read_states()
        return self.state

    def _hold_when_a_state_comes(self):
        """Hold once a first state came (a timer's callback while the activation's hold waits)."""
        if self.newest_state() is not None and self.hold_pending:
            self._hold('the controller became active', at=self.activated_at)
        if not self.hold_pending and self.pending_timer is not None:
            self.destroy_timer(self.pending_timer)
            self.pending_timer = None

    def _on_activity(self, msg):
        active = any(c.name == self.controller and c.state.id == State.PRIMARY_STATE_ACTIVE
                     for c in msg.controllers)
        if active and not self.controller_active:
            self.hold_pending = True
            self.activated_at = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            if self.newest_state() is not None:
                self._hold('the controller became active', at=self.activated_at)
            elif self.pending_timer is None:
                self.pending_timer = self.create_timer(1.0 / self.settings.rate,
                                                       self._hold_when_a_state_comes)
        self.controller_active = active

    def _position_at(self, at):
        """Return the arm's position (n,) at stamp ``at`` (s): the last state up to it.

        Without a state that old (or ``at`` 0: no stamp), the oldest kept, or the newest.
        """
        if at:
            earlier = [q for stamp, q in self.recent if stamp <= at]
            if earlier:
                return earlier[-1]
        return self.recent[0][1] if at and self.recent else self.state[0]

    def _checked(self, trajectory):
        """Return a trajectory as the reference it makes, or raise (the reason).

        ``trajectory``: a ``JointTrajectory`` message or the
        :class:`~ne_dynamics_ros.nodes.cdr.JointTrajectoryFields` of a goal read as bytes.
        """
        if self.newest_state() is None:
            raise TrajectoryError('no /joint_states yet: the arm\'s state is unknown')
        fields = trajectory if isinstance(trajectory, JointTrajectoryFields) else \
            trajectory_message_fields(trajectory)
        now = self.get_clock().now().nanoseconds * 1e-9
        return checked_goal(self.dynamics, list(fields.joint_names), fields.points,
                            self.state, self.settings, now)

    def _message(self, checked):
        """Return the controller's message for a :meth:`_checked` trajectory, or raise."""
        return trajectory_message(goal_points(self.dynamics, checked, self.settings),
                                  self.order, self.joints)

    def _prepared(self, trajectory):
        """Return the controller's message for a trajectory, or raise (the reason)."""
        return self._message(self._checked(trajectory))

    def _on_topic(self, msg):
        with bulk_work():              # as a goal's message (_execute)
            try:
                out = self._prepared(msg)
            except (TrajectoryError, ValueError) as exc:
                self.get_logger().warning(f'dropped trajectory: {exc}',
                                          throttle_duration_sec=WARN_PERIOD)
                return
            self.publisher.publish(out)

    # -- the action ---------------------------------------------------------------------

    def _on_goal(self, goal):
        if not self.client.server_is_ready():
            self.get_logger().warning(f'goal rejected: /{self.controller}/'
                                      'follow_joint_trajectory is not available')
            return GoalResponse.REJECT
        try:
            # the check decides; the resampling and the message wait until the goal is
            # accepted (19-21 ms of the 24-28 ms a 1 000-point UR5e goal cost, 2026-12-06)
            self.prepared_goals[id(goal)] = self._checked(goal.trajectory)
        except (TrajectoryError, ValueError) as exc:
            self.get_logger().warning(f'goal rejected: {exc}')
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _on_cancel(self, handle):
        self._stop_instead_of(handle)
        return CancelResponse.ACCEPT

    def _stop_instead_of(self, handle):
        """End JTC's goal for ``handle`` by a stop goal that preempts it, not by a cancel.

        JTC answers a cancel by holding the position with zero effort until the next
        trajectory arrives; the relay's stop, sent after JTC's result, came tens of ms
        later: on the UR5e the arm fell meanwhile (wrist_1 moved 54 mrad after a cancel
        mid-move, the joints that were not moving among them). A new goal preempts the
        active one in JTC's goal callback with its own trajectory installed at once, so
        the arm goes from the goal to the stop with no cycle of zero effort. The stop
        starts :data:`STOP_LEAD` s on from the state carried there (a stop from the state
        as measured, some ms old, set the reference back on the moving joints: the soft
        hold gains then rang, 4-7 mrad on wrist_1; 0.2 mrad with the lead, Pinocchio).
        """
        key = bytes(handle.goal_id.uuid)
        relayed = self.active_goals.get(key)
        if relayed is None:
            return
        if self.newest_state() is not None and self._hold('cancel requested', preempt=True):
            self.stopped_goals.add(key)
        else:
            relayed.cancel_goal_async()   # no stop to send: JTC's own cancel, then our hold

    async def _execute(self, handle):
        request = handle.request
        checked = self.prepared_goals.pop(id(request), None)
        # the resampling, the message and its conversion (~40 ms for 1 000 points) below
        # SCHED_FIFO: the goal's client, woken by the response just sent, gets a core
        with bulk_work():
            try:
                trajectory = self._prepared(request.trajectory) if checked is None else \
                    self._message(checked)
            except (TrajectoryError, ValueError) as exc:
                self.get_logger().warning(f'goal aborted: {exc}')
                handle.abort()
                return FollowJointTrajectory.Result(
                    error_code=FollowJointTrajectory.Result.INVALID_GOAL,
                    error_string=str(exc))
            path_tolerance, goal_tolerance, goal_time_tolerance = goal_tolerances(request)
            goal = FollowJointTrajectory.Goal(
                trajectory=trajectory, path_tolerance=path_tolerance,
                goal_tolerance=goal_tolerance, goal_time_tolerance=goal_time_tolerance)
            sent = self.client.send_goal_async(
                goal, feedback_callback=lambda f: handle.publish_feedback(f.feedback))
        key = bytes(handle.goal_id.uuid)
        relayed = await sent
        if not relayed.accepted:
            handle.abort()
            return FollowJointTrajectory.Result(
                error_code=FollowJointTrajectory.Result.INVALID_GOAL,
                error_string=f'{self.controller} rejected the goal')
        self.active_goals[key] = relayed
        if handle.is_cancel_requested:
            self._stop_instead_of(handle)
        answer = await relayed.get_result_async()
        del self.active_goals[key]
        stopped = key in self.stopped_goals
        self.stopped_goals.discard(key)
        if answer.status == GoalStatus.STATUS_SUCCEEDED and not handle.is_cancel_requested:
            handle.succeed()
        elif handle.is_cancel_requested or answer.status == GoalStatus.STATUS_CANCELED:
            handle.canceled()      # JTC's goal preempted by the stop (or JTC's own cancel)
        else:
            handle.abort()
        if answer.status != GoalStatus.STATUS_SUCCEEDED and not self.active_goals \
                and not stopped:
            self._hold(f'the goal ended with status {answer.status}')
        # ended by our stop: the empty result JTC gives a goal it cancels itself
        return FollowJointTrajectory.Result() if stopped else answer.result

    def _hold(self, why, preempt=False, at=None):
        """Stop the arm smoothly where it goes, then hold it there with the model's gravity.

        A moving arm gets
        :func:`~ne_dynamics_ros.control.reference.trajectory_efforts.stop_waypoints` with the
        model's efforts; one at rest (or a stop the effort limits refuse) a one-point
        trajectory at the measured position. Sent on JTC's topic, or with ``preempt`` as a
        goal of JTC's action (it preempts JTC's active goal: :meth:`_stop_instead_of`).
        ``at`` (the controller's activation, s): a one-point hold where the arm was then,
        the point JTC's own hold pulls it to; not a stop from the velocity it has when
        this runs, tens of ms later, which is JTC's PID pulling it back there (a stop
        planned from it carried the UR5e 40-70 mrad past, and the hold rang on).
        Returns False when the server is not there to preempt (nothing sent).
        """
        self.hold_pending = False
        q, qd = self.newest_state()
        if at is not None:
            q, qd = self._position_at(at), np.zeros_like(qd)
        start = None
        if preempt:
            # the stop starts STOP_LEAD s on, from the state carried there: JTC takes the
            # arm from where it is to that first point itself (its point before the
            # trajectory), so the reference does not jump back by the state's age
            now = self.get_clock().now().nanoseconds * 1e-9
            start = now + STOP_LEAD
            q = q + qd * min(max(start - self.state_time, 0.0), 2 * STOP_LEAD)
        stop = stop_waypoints(q, qd)
        message, said = None, ''
        if stop is not None:
            try:
                points = feedforward_goal(self.dynamics, list(self.model.joint_names), stop,
                                          (q, qd), self.settings)
            except (TrajectoryError, ValueError) as exc:
                self.get_logger().warning(f'{why}: no smooth stop ({exc}): holding here')
            else:
                message = trajectory_message(points, self.order, self.joints)
                said = (f'stopping in {stop[-1].time_from_start:.3g} s, then holding with '
                        'the model\'s efforts')
        if message is None:
            effort = hold_effort(self.dynamics, q, self.settings)
            point = JointTrajectoryPoint(positions=q[self.order].tolist(),
                                         velocities=[0.0] * len(q),
                                         accelerations=[0.0] * len(q),
                                         effort=effort[self.order].tolist())
            point.time_from_start.nanosec = int(2e9 / self.settings.rate)
            message = JointTrajectory(joint_names=self.joints, points=[point])
            where = 'at the measured position' if at is None else 'where it was at activation'
            said = (f'holding {where} with '
                    f'{"the model" if self.settings.with_gravity else "zero"} effort')
        if preempt:
            if not self.client.server_is_ready():
                return False
            message.header.stamp.sec, message.header.stamp.nanosec = divmod(
                int(round(start * 1e9)), 1_000_000_000)
            self.client.send_goal_async(FollowJointTrajectory.Goal(trajectory=message))
            said += f' (a goal preempting {self.controller}\'s)'
        else:
            self.publisher.publish(message)
        self.get_logger().info(f'{why}: {said}')
        return True


#: States kept to find where the arm was when the controller became active (0.25 s at
#: 1 kHz; the activation is seen within tens of ms).
RECENT_STATES = 256
#: How often the states waiting in the subscription are read in one batch, s (25 states
#: at 500 Hz, about 0.4 ms of the relay's CPU each time).
DRAIN_PERIOD = 0.05

#: The relay's look at ``/joint_states``: best effort as joint_state_broadcaster's readers,
#: the last :data:`RECENT_STATES` kept until it reads them.
STATE_QOS = QoSProfile(depth=RECENT_STATES, history=HistoryPolicy.KEEP_LAST,
                       reliability=ReliabilityPolicy.BEST_EFFORT)

#: How far ahead of now a stop that preempts a goal starts, s (the goal's round trip to
#: JTC and one cycle, with room).
STOP_LEAD = 0.02


#: (name, default, description) of every parameter (all read-only).
PARAMETERS = (
    ('robot_description', '', 'URDF XML of the arm; if empty, urdf_path is read'),
    ('urdf_path', '', 'path to the URDF file'),
    ('base_link', '', 'first link of the chain (default: the URDF root)'),
    ('tip_link', '', 'last link of the chain (default: the single end of the tree)'),
    ('armature', [0.0], 'reflected rotor inertia per joint, kg m^2 (one value: all)'),
    ('damping', [0.0], 'viscous friction Fv per joint, N m s/rad (empty: the URDF\'s)'),
    ('friction', [0.0], 'Coulomb friction Fc per joint, N m (empty: the URDF\'s)'),
    ('gravity', [0.0, 0.0, -9.81], 'gravity in the base frame, m/s^2'),
    ('controller', 'joint_trajectory_controller', 'the joint_trajectory_controller served'),
    ('controller_manager', '/controller_manager', 'its controller_manager'),
    ('joints', [''], 'the controller\'s joints, its order (default: chain order)'),
    ('rate', 500.0, 'the controller\'s update rate, Hz: the shortest interval between '
                    'points and the rate the effort limits are checked at'),
    ('effort_tolerance', [0.001], 'largest gap between the controller\'s interpolated '
                                  'effort and the model\'s, N m (one value or per joint)'),
    ('effort_offset', EFFORT_OFFSET_PERIODS,
     'where each point\'s effort is the model\'s, in controller periods from the point\'s '
     'time (-0.5: JTC applies the effort one period ahead, held over the next period)'),
    ('effort_limits', [0.0], 'per joint, N m (0 or empty: the URDF\'s <limit effort>)'),
    ('effort_margin', 0.05, 'share of each effort limit a trajectory may not use'),
    ('hardware_compensates_gravity', False, 'the drives add g(q) themselves: the efforts '
                                            'carry no gravity, the hold none'),
    ('hardware_compensates_friction', False, 'the drives compensate friction themselves'),
    ('friction_compensation', False, 'add the model\'s drive friction (Fv, Fc) to the '
                                     'points\' efforts, as computed_torque_node\'s '
                                     'parameter of the same name'),
    ('realtime_priority', 50, 'SCHED_FIFO priority of the relay\'s executor and DDS threads '
     'where permitted (0: the default policy): the stops and holds it sends start from '
     'the newest state, which CPU-bound neighbours otherwise delay'),
    ('cpu_dma_latency', 0, 'the CPUs\' wake-up latency asked of Linux while it runs, us '
     '(PM QoS, /dev/cpu_dma_latency; 0: idle CPUs poll, so controller_manager\'s cycle is '
     'not woken from a halted core; -1: leave it alone), as computed_torque_node\'s'),
)


def main(args=None):
    """Run ``jtc_feedforward`` until SIGINT/SIGTERM; exit 1 on a bad configuration."""
    import rclpy
    stop = init_until_signalled(args)
    try:
        node = JtcFeedforward()
    except FeedforwardConfigError as exc:
        rclpy.logging.get_logger('jtc_feedforward').fatal(str(exc))
        rclpy.try_shutdown()
        return 1
    node.get_logger().info(hold_cpu_latency(int(node.get_parameter('cpu_dma_latency').value)))
    # this thread spins the node: it and the DDS threads made with the node
    node.get_logger().info(raise_process(int(node.get_parameter('realtime_priority').value),
                                         'the relay'))
    # a goal's garbage no longer makes a full collection walk the set-up objects (as the
    # node, the guard and the simulated arm do)
    own_collector()
    freeze_collector()
    return spin_until_signalled(node, stop)


if __name__ == '__main__':
    raise SystemExit(main())
