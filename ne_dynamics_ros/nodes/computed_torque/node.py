"""The lifecycle adapter: :class:`ComputedTorqueNode`, a managed (lifecycle) rclpy node.

Transitions (``ros2 lifecycle set /computed_torque_node <transition>``):

* ``configure``: the parameters are checked against the table, the robot description is
  read (parameter, file, or the ``robot_description`` topic, waited for) and the model
  and controller built; ``joint_states`` is subscribed, the trajectory receiver process
  and the node's threads start. A bad URDF or parameter fails the transition: the node
  stays unconfigured and logs the reason (also in ``/diagnostics``).
* ``activate``: the controller holds the position measured (the last state read while
  inactive, if at most ``state_timeout`` old; else the next one) and commands start.
* ``deactivate``: one zero-effort command, then silence on the command topic (states are
  still read, trajectories refused).
* ``cleanup`` / ``shutdown``: threads, receiver and subscriptions go (``shutdown`` from
  active sends zero effort first).
* an unexpected error on the control path while active: logged, one zero-effort command,
  and the node deactivates (inactive, silent) until activated again;
* an error in a transition: the error-processing transition sends zero effort; the node
  is unconfigured afterwards (ROS 2's lifecycle).

Beside ros2_control (``ros2_control.controller_manager``) activate switches to the effort
controller and deactivate, Ctrl-C and SIGTERM hand the arm to the hold controller
(:mod:`~ne_dynamics_ros.nodes.computed_torque.ros2_control_link`).

Over 600 lines because the lifecycle transitions, the control path and the watchdog share
the node's state under one lock; what is not that state lives in the modules beside it
(the parameters, the diagnostics, the outputs, the goal link, the ros2_control link).

``autostart`` (default true) configures and activates at construction, so ``ros2 run``,
the demo and the simulated arms behave as an unmanaged node; then a failure to configure
raises :class:`NodeConfigurationError` from the constructor, as before.
"""
import logging
import threading
import time

from rclpy.duration import Duration
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.qos import QoSDurabilityPolicy, QoSHistoryPolicy, QoSProfile, QoSReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from diagnostic_msgs.msg import DiagnosticArray

from ne_dynamics_ros.control.controller import Command, MAX_STATE_JOINTS, SkipReason
from ne_dynamics_ros.nodes.cdr import CdrError, float64_multi_array_bytes, JointStateReader
from ne_dynamics_ros.nodes.computed_torque import (answers, diagnostics, priority,
                                                   ros2_control_link)
from ne_dynamics_ros.nodes.computed_torque import ros_parameters as params
from ne_dynamics_ros.nodes.computed_torque.goal_link import GoalLink
from ne_dynamics_ros.nodes.computed_torque.ros_parameters import NodeConfigurationError
from ne_dynamics_ros.nodes.computed_torque.readers import (joint_state_fields,
                                                           read_joint_state, sample)
from ne_dynamics_ros.nodes.computed_torque.support import (FloatingPointErrors, RosLogHandler,
                                                           ThrottledWarnings)
from ne_dynamics_ros.nodes.computed_torque.outputs import NO_PUBLISHER_EVENTS, Outputs
from ne_dynamics_ros.nodes.computed_torque.threads import TrajectoryIntake, Watchdog
from ne_dynamics_ros.nodes.trajectory_receiver import TrajectoryReceiver

try:        # control_msgs is not on PyPI: a wheel of its jazzy sources, or rosdep
    from control_msgs.msg import JointTrajectoryControllerState
    from control_msgs.srv import QueryTrajectoryState
    CONTROL_MSGS_MISSING = ''
except ImportError as _err:      # the node runs without the action and says so once
    JointTrajectoryControllerState = QueryTrajectoryState = None
    CONTROL_MSGS_MISSING = str(_err)

NODE_NAME = 'computed_torque_node'
#: Seconds a transition waits for the trajectory receiver to apply the goal options.
STATE_APPLIED_WAIT = 1.0
#: joint_state_broadcaster's publisher QoS (reliable, volatile, keep last 10).
JOINT_STATE_QOS = QoSProfile(history=QoSHistoryPolicy.KEEP_LAST, depth=10,
                             reliability=QoSReliabilityPolicy.RELIABLE,
                             durability=QoSDurabilityPolicy.VOLATILE)
#: robot_state_publisher's latched robot_description.
ROBOT_DESCRIPTION_QOS = QoSProfile(history=QoSHistoryPolicy.KEEP_LAST, depth=1,
                                   reliability=QoSReliabilityPolicy.RELIABLE,
                                   durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)
_SKIP_WARNINGS = {SkipReason.INVALID_STATE: 'dropped a joint_states message: ',
                  SkipReason.NO_VALID_EFFORT: 'no command for this joint state: '}
_SUCCESS, _FAILURE = TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE


class ComputedTorqueNode(LifecycleNode):
    """Computed-torque controller node, managed (lifecycle); see the package docstring.

    ``controller`` is the :class:`ComputedTorqueController` (None until configured and the
    robot description has arrived); ``intake`` the
    :class:`~ne_dynamics_ros.nodes.computed_torque.threads.TrajectoryIntake` and
    ``watchdog`` the :class:`~ne_dynamics_ros.nodes.computed_torque.threads.Watchdog`,
    the node's two threads; ``goals`` the goal link while configured.

    Raises:
        NodeConfigurationError: from the constructor, with ``autostart`` true, when the
            robot description is missing or bad, or a parameter is invalid (logged too).
            ``main`` turns it into exit code 1.
    """

    def __init__(self, node_name=NODE_NAME, activate=True, **kwargs):
        """Declare the parameters and the outputs; configure and activate if ``autostart``.

        ``activate`` False: configure only (``program._activate`` activates). ``kwargs``
        go to :class:`rclpy.lifecycle.LifecycleNode` (``context``, ``cli_args``...).
        """
        super().__init__(node_name, **kwargs)
        # the package's Python log lines (e.g. the URDF loader's summary of ignored vendor
        # tags) go to this node's ROS logger
        self._log_bridge = RosLogHandler(self.get_logger())
        logging.getLogger('ne_dynamics_ros').addHandler(self._log_bridge)
        logging.getLogger('ne_dynamics_ros').setLevel(logging.INFO)
        self._warnings = ThrottledWarnings(self.get_logger())
        self._fp_errors = FloatingPointErrors()
        self._command_lock = threading.Lock()
        #: monotonic ns when the last command left (it answered a valid state)
        self._answered_ns = 0
        self._receiver = None
        self._state_sent = 0        # the last goal options' number (the receiver echoes it)
        self._subscriptions_made = []
        self.controller = None
        self.goals = None                        # the GoalLink while configured
        self.intake = TrajectoryIntake(lambda: self.controller, lambda: self.goals,
                                       self.get_clock(), self.get_logger(), self._warnings)
        self.watchdog = Watchdog(self._watchdog_period, self._watchdog_tick,
                                 self._watchdog_failed)
        self.statistics = diagnostics.ControlStatistics()
        #: Why the last configure failed ('' when it did not).
        self.configure_error = ''
        self._activate_when_built = False
        self._description_source = ''
        self._state_reader = JointStateReader(MAX_STATE_JOINTS)
        self._ros_clock = self.get_clock()
        self._diagnostics_due = time.monotonic()
        self._diagnostics_counts = {}
        self.events = diagnostics.Events()       # what /diagnostics must say at once
        self.control_policy = None     # the control threads' scheduling, set by main()
        #: the Ros2ControlLink while configured with ros2_control.controller_manager
        self.ros2_control = None
        #: what the ros2_control link may ask of this node, and nothing more
        self._link_side = ros2_control_link.NodeSide(
            controller=lambda: self.controller, last_command=lambda: self.last_command,
            commanding=lambda: self.lifecycle_state == 'active', event=self._event,
            logger=self.get_logger())
        self.last_command = None      # the last Command (the hold's feed-forward)
        try:
            params.declare(self)
        except Exception as err:  # a value of the wrong ROS type
            self.get_logger().error(f'invalid parameter: {err}')
            self.destroy_node()
            raise NodeConfigurationError(f'invalid parameter: {err}') from err
        self._make_interfaces()
        if self.get_parameter('autostart').value is True:
            self.trigger_configure()
            if self.configure_error:
                self.destroy_node()
                raise NodeConfigurationError(self.configure_error)
            if activate:
                self.trigger_activate()

    def _make_interfaces(self):
        """Make the node's publishers, its service and its parameter callbacks."""
        # the command: a lifecycle publisher, silent unless active
        self._effort_pub = self.create_lifecycle_publisher(
            Float64MultiArray, 'effort_controller/commands', 10)
        # the ~/ outputs; JTC's interfaces (control_msgs) made now, so that nothing joins
        # the graph later
        self.outputs = Outputs(self, JointTrajectoryControllerState)
        self._diagnostics_pub = self.create_publisher(
            DiagnosticArray, '/diagnostics', 10, event_callbacks=NO_PUBLISHER_EVENTS)
        self._query_state_srv = None
        if CONTROL_MSGS_MISSING:
            self.get_logger().warning(
                f'control_msgs is not installed ({CONTROL_MSGS_MISSING}): no '
                '~/follow_joint_trajectory action, ~/controller_state or ~/query_state; '
                'trajectories are taken on ~/joint_trajectory only')
        else:
            self._query_state_srv = self.create_service(
                QueryTrajectoryState, '~/query_state', self._on_query_state)
        self.add_on_set_parameters_callback(
            lambda changes: params.validate_changes(self, self.controller, changes))
        self.add_post_set_parameters_callback(self._apply_parameters)

    # ---- lifecycle ---------------------------------------------------------------------------

    @property
    def lifecycle_state(self):
        """Return the current lifecycle state's label ('unconfigured', 'active', ...)."""
        return self._state_machine.current_state[1]

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Check the parameters, build the model (or wait for it), start the threads."""
        self.configure_error = ''
        try:
            params.check_all(self)
            self._max_trajectory_bytes = self.get_parameter('max_trajectory_bytes').value
            description = self._description_from_parameters()
            if description is not None:
                self._build(description)
        except NodeConfigurationError as err:
            self.configure_error = str(err)
            self.get_logger().error(f'configure failed: {err}')
            self.controller = None
            self._publish_diagnostics()
            return _FAILURE
        if description is None:
            self.get_logger().info('robot_description and urdf_path are empty: waiting for '
                                   'the robot_description topic')
            self._subscriptions_made.append(self.create_subscription(
                String, 'robot_description', self._on_robot_description,
                ROBOT_DESCRIPTION_QOS))
        # Raw bytes, read by ne_dynamics_ros.nodes.cdr: rclpy's own conversion of a
        # JointState into Python objects costs more than the control law.
        self._subscriptions_made.append(self.create_subscription(
            JointState, 'joint_states', self._on_joint_state_bytes, JOINT_STATE_QOS, raw=True))
        # Trajectories are taken and read by a process of their own (see
        # ne_dynamics_ros.nodes.trajectory_receiver): no message, however large, is ever
        # copied in this process before the node sees it; what arrives here are columns.
        self._receiver_started = time.monotonic()
        self._receiver = TrajectoryReceiver(
            self.resolve_topic_name('~/joint_trajectory'), self.get_name(),
            self.get_namespace(), self.context.get_domain_id(), self._max_trajectory_bytes,
            chain_joint_names=(None if self.controller is None
                               else self.controller.model.joint_names),
            action_name='' if CONTROL_MSGS_MISSING else self.action_name)
        self._send_goal_options()
        if self.controller is not None:
            self._chain_built()
        if self.ros2_control is None:
            self.ros2_control, problem = ros2_control_link.attach(self.context, {
                name: self.get_parameter(name).value for name in (
                    'ros2_control.controller_manager', 'ros2_control.effort_controller',
                    'ros2_control.hold_controller')}, self._link_side)
        else:
            problem = ''
        if problem:
            self.configure_error = f'configure failed: {problem}'
            self.get_logger().error(self.configure_error)
            self._teardown()
            return _FAILURE
        self.intake.start(self._receiver, self._max_trajectory_bytes)
        self.watchdog.start()
        priority.raise_node_threads(self)
        priority.freeze_collector()
        return _SUCCESS

    @property
    def action_name(self):
        """Return the fully resolved name of the node's FollowJointTrajectory action."""
        # resolved as a topic name is: namespace, ~, and the node's remapping rules (the
        # receiver process serving it has no remapping rules of its own)
        return self.resolve_topic_name('~/follow_joint_trajectory')

    def _send_goal_options(self, active=False):
        """Tell the receiver whether goals are taken now, and the goal parameters."""
        if self._receiver is not None:
            value = self.get_parameter
            self._state_sent += 1
            options = {name: bool(value(name).value) for name in (
                'allow_partial_joints_goal', 'allow_nonzero_velocity_at_trajectory_end')}
            self._receiver.send({'kind': 'state', 'seq': self._state_sent, 'active': active,
                                 'options': options})

    def _goal_options_applied(self, what):
        """Wait until the receiver says it applied the last goal options; warn if it did not.

        Called where the node is not commanding (this blocks its executor), at most
        :data:`STATE_APPLIED_WAIT`, so that a goal sent once the transition has ended finds
        them in force: without it, a goal sent as soon as the commands resumed after an
        activation was refused now and then (the receiver's thread read the frame after
        its executor took the goal; a fresh-clone suite run, 2026-12-06). ``what``: what
        the options say, for the warning.
        """
        if self._receiver is not None and \
                not self.intake.state_applied_wait(self._state_sent, STATE_APPLIED_WAIT):
            self.get_logger().warning(
                f'the trajectory receiver did not confirm within {STATE_APPLIED_WAIT} s '
                f'that it {what}')

    def _chain_built(self):
        """Tell the receiver the chain (the model exists now); start the goal link."""
        model = self.controller.model
        self._receiver.set_chain(model.joint_names, model.lower_limits, model.upper_limits)
        if not CONTROL_MSGS_MISSING:
            if self.goals is not None:
                self.goals.stop()
            self.goals = GoalLink(self, self.controller, self._receiver,
                                  on_end=self.events.goal_ended)

    def _wait_until_ready(self):
        """Wait (bounded) until the receiver and the action server are up and discovered.

        Returns '' when ready, else why not. Ready: the receiver process said so, this
        node's graph lists its subscription of ``~/joint_trajectory`` and the action's
        services, and its participant has been on the graph for ``discovery_settle``: a
        peer that missed its first announcements discovers it at the next periodic one
        (Fast DDS: every 3 s) and, measured here, stops exchanging samples with this
        node for about 335 ms meanwhile; that must happen before commands flow.
        """
        timeout = float(self.get_parameter('activation_timeout').value)
        settle = float(self.get_parameter('discovery_settle').value)
        deadline = time.monotonic() + timeout
        topic = self.resolve_topic_name('~/joint_trajectory')
        send_goal = self.action_name + '/_action/send_goal'
        while True:
            missing = []
            if not self.intake.ready.is_set():
                missing.append('the trajectory receiver process has not started')
            elif self.count_subscribers(topic) < 1:
                missing.append(f'its subscription of {topic} is not discovered')
            elif self.intake.action == self.action_name and send_goal not in {
                    name for name, _ in self.get_service_names_and_types()}:
                missing.append(f'the action {self.action_name} is not discovered')
            if not missing and time.monotonic() - self._receiver_started < settle:
                missing.append(f'the receiver process has been on the graph for less than '
                               f'discovery_settle ({settle} s)')
            if not missing:
                return ''
            if time.monotonic() > deadline:
                return f'not ready after {timeout} s (activation_timeout): ' + missing[0]
            time.sleep(0.01)

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Command from now on, holding the position measured (the last state if fresh).

        Only once the receiver process and the action server are up and discovered;
        fails with the reason after ``activation_timeout``.
        """
        problem = self._wait_until_ready() if self._receiver is not None else ''
        if problem:
            self.configure_error = f'activate failed: {problem}'
            self.get_logger().error(self.configure_error)
            self._publish_diagnostics()
            return _FAILURE
        if self.controller is None:
            self._activate_when_built = True      # the description is still to come
        else:
            self.controller.activate(now_ns=self._now_ns(), steady_ns=time.monotonic_ns())
        # goals taken from here on (the controller is active), before the commands start
        self._send_goal_options(active=True)
        self._goal_options_applied('takes goals: the first ones may be refused')
        result = super().on_activate(state)
        if self.ros2_control is not None:
            ok, message = self.ros2_control.to_effort()
            said = (f'switch to {self.ros2_control.effort} on {self.ros2_control.manager}: '
                    f'{message}')
            if ok:             # one severity per call site (rclpy raises otherwise)
                self.get_logger().info(said)
            else:
                self.get_logger().error(said)
        self.get_logger().info('activated: holding the position measured, then '
                               'following trajectories (topic '
                               f'{self.resolve_topic_name("~/joint_trajectory")}'
                               + ('' if CONTROL_MSGS_MISSING
                                  else f', action {self.action_name}') + ')')
        return result

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Send one zero-effort command, then stay silent on the command topic."""
        self._activate_when_built = False
        self._send_goal_options(active=False)
        handed = self.hand_to_hold()
        if self.controller is not None:
            with self._command_lock:
                zero = self.controller.deactivate()
                if not handed:
                    self._effort_pub.publish(float64_multi_array_bytes(zero.tolist()))
            if self.goals is not None:
                self.goals.wake()                # the goal it aborted
        self.get_logger().info(f'deactivated: {self.ros2_control.hold} holds the arm'
                               if handed else 'deactivated: published zero effort; '
                               'commands stop')
        self._goal_options_applied('refuses goals: one sent meanwhile may be accepted')
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop the threads and the receiver, drop the subscriptions and the model."""
        self._teardown()
        return _SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """From active: zero effort first; then as cleanup."""
        if state.label == 'active':
            self.publish_zero_effort()
        self._teardown()
        return _SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Error processing: zero effort, threads stopped; the node ends unconfigured."""
        self.get_logger().error(f'error in the {state.label} state: publishing zero effort')
        self.publish_zero_effort()
        self._teardown()
        return _SUCCESS

    def _teardown(self):
        if self.controller is not None:
            self.controller.deactivate()        # ends an active goal
        self.stop_threads()
        if self.ros2_control is not None:
            self.ros2_control.stop()
            self.ros2_control = None
        self.goals = None
        for subscription in self._subscriptions_made:
            self.destroy_subscription(subscription)
        self._subscriptions_made = []
        self._receiver = None
        self.controller = None
        self._activate_when_built = False

    def stop_threads(self, timeout=2.0):
        """Stop the watchdog, the goal link, the receiver and the intake (idempotent)."""
        self.watchdog.stop(timeout)
        if self.goals is not None:
            self.goals.stop()           # kept until teardown: its counts are reported
        self.intake.stop(timeout)

    @property
    def accepted_trajectories(self) -> int:
        """Trajectory messages that became the reference."""
        return self.intake.accepted_trajectories

    @property
    def dropped_trajectories(self) -> int:
        """Trajectory messages dropped before the controller saw them."""
        return self.intake.dropped_trajectories

    def destroy_node(self):
        """Stop the node's threads, detach the log bridge, then destroy the node."""
        self.stop_threads()
        if self.ros2_control is not None:
            self.ros2_control.stop()
            self.ros2_control = None
        logging.getLogger('ne_dynamics_ros').removeHandler(self._log_bridge)
        return super().destroy_node()

    # ---- configuration --------------------------------------------------------------------------

    def _description_from_parameters(self):
        """URDF XML text from robot_description / urdf_path, or None if both are empty."""
        text, source = params.robot_description(self)
        if text is not None:
            self._description_source = source
        return text

    def _build(self, urdf_xml):
        """Build the controller (inactive) from the URDF and the parameters.

        Raises:
            NodeConfigurationError: the URDF or a parameter is unusable.
        """
        controller = params.build_controller(self, urdf_xml)
        controller.deactivate()                  # commands start with activation
        params.declare_joint_constraints(self, controller.model.joint_names)
        self.outputs.configure(controller.joints,
                               self.get_parameter('controller_state_rate').value,
                               controller.model.base_link)
        self.statistics = diagnostics.ControlStatistics(controller.n)
        self.controller = controller
        model = controller.model
        for note in model.warnings:
            self.get_logger().warning(f'URDF import: {note}')
        self.get_logger().info(
            f'model {model.base_link} -> {model.tip_link}, {model.n} joints {model.joint_names}, '
            f'{model.convention.value}; mode {controller.settings.mode.value}, effort limits '
            f'{controller.effort_limits.tolist()}; dynamics {controller.dynamics_backend}'
            + (f' ({controller.dynamics.operations["mul"]} mul + '
               f'{controller.dynamics.operations["add"]} add per call)'
               if controller.dynamics_backend == 'generated' else ''))
        for caveat in controller.adaptive_caveats:      # the adaptive settings on this arm
            self._warnings.warn(caveat, caveat)

    def _apply_parameters(self, changes):
        """Post-set callback: hand the new run-time values to the controller."""
        names = {p.name for p in changes}
        if self.controller is not None and names & set(params.RUNTIME_PARAMETERS):
            changed = {k: v for k, v in params.runtime_values(self).items() if k in names}
            settings = self.controller.reconfigure(**changed)
            self.get_logger().info(
                f'parameters {sorted(names)} set: mode {settings.mode.value}, '
                f'kp {settings.kp.tolist()}, kd {settings.kd.tolist()}')
            for caveat in self.controller.adaptive_caveats:
                self._warnings.warn(caveat, caveat)

    def _on_robot_description(self, msg):
        if self.controller is not None:
            return
        try:
            self._build(msg.data)
        except NodeConfigurationError as err:
            self.get_logger().error(f'{err}; still waiting for a valid robot_description')
            return
        self._description_source = 'robot_description topic'
        if self._receiver is not None:
            self._chain_built()
        priority.freeze_collector()          # the model's objects, before commanding
        if self._activate_when_built:
            self.controller.activate(now_ns=self._now_ns(), steady_ns=time.monotonic_ns())

    # ---- joint states -> controller -> effort ---------------------------------------------

    def _on_joint_state_bytes(self, data):
        """Executor thread: one serialized ``joint_states`` message (the control path)."""
        started = time.perf_counter_ns()
        controller = self.controller
        if controller is None:
            return
        try:
            state = read_joint_state(self._state_reader, data)
        except CdrError as err:
            self.statistics.seen()
            self._skip(controller.reject_state(str(err)))
            return
        try:
            self._answer(controller, state, started)
        except Exception as err:  # noqa: BLE001 - an error while active: stop commanding
            self._fail_while_active(err)

    def _fail_while_active(self, err):
        """Answer an unexpected error on the control path: zero effort once, then inactive.

        The error that deactivates is logged as an error; the same path failing again
        while inactive (the cause not gone) is a warning at most once a second, not one a
        state.
        """
        what = f'{type(err).__name__}: {err}'
        if self.lifecycle_state != 'active':
            self.warn_throttled('error_inactive', f'error while reading a state (inactive, '
                                f'silent): {what}')
            return
        self.get_logger().error(f'error while commanding: {what}; deactivating (zero '
                                'effort, then silence); activate again when the cause is '
                                'gone')
        self.trigger_deactivate()

    def _on_joint_state(self, msg):
        """Answer a ``sensor_msgs/JointState`` object as the subscription answers its bytes."""
        controller = self.controller
        if controller is not None:
            self._answer(controller, joint_state_fields(msg), time.perf_counter_ns())

    def _now_ns(self):
        """ROS time now, ns: the system clock unless simulated time (/clock) is active."""
        clock = self._ros_clock
        return clock.now().nanoseconds if clock.ros_time_is_active else time.time_ns()

    def _answer(self, controller, state, started):
        """Command (and report) one joint state, a :class:`JointStateFields`."""
        # one lock for "decide, then publish" here and in the watchdog: the watchdog's zero
        # command can never overtake a command of a state that ended the timeout
        with self._command_lock, self._fp_errors.context():
            now_ns = self._now_ns()
            measured = sample(state)
            # an input of the controller, which decides what to hold: nobody applies the
            # commands (the effort controller is switched away); they are sent on, so
            # that the effort controller has one the cycle it returns (its buffer is
            # emptied on activation)
            link = self.ros2_control
            applied = link is None or link.commands_applied()
            # and which of the observer's outputs are read (it runs for contact
            # detection too): inputs as well
            out = controller.update(now_ns, measured, commands_applied=applied,
                                    reading=self.outputs.externals_read)
            commanded = out.__class__ is Command
            if commanded:
                self.last_command = out
                if not applied:
                    link.note_unapplied()
                self._effort_pub.publish(float64_multi_array_bytes(out.effort_values))
                self._answered_ns = time.monotonic_ns()
        if self._fp_errors.kinds:
            self._warnings.floating_point(
                self._fp_errors, 'answering a joint_states message (the command, if any, was '
                'checked finite and within the limits)')
        if not commanded:
            self.statistics.seen()
            self._skip(out)
            return
        stamp = measured.stamp_ns
        reached = self.statistics.commanded(time.perf_counter_ns() - started, out.at_limit,
                                            out.position_error_values,
                                            now_ns - stamp if stamp else None)
        if self.events.note(controller.joints, out, reached, self.get_logger()):
            self.watchdog.wake()
        goals = self.goals
        if goals is not None:
            goals.record(state, out)
        self.outputs.publish(state, out)

    def hand_to_hold(self):
        """Hand the arm to ``ros2_control.hold_controller``; True if it holds now.

        :func:`~ne_dynamics_ros.nodes.computed_torque.ros2_control_link.hand_to_hold`.
        """
        return ros2_control_link.hand_to_hold(self.ros2_control, self._link_side)

    def _event(self, text):
        """Say ``text`` on ``/diagnostics`` at once (any thread)."""
        self.events.add(text)
        self.watchdog.wake()

    def _on_query_state(self, request, response):
        """``~/query_state``: the reference at ``request.time`` (JTC's QueryTrajectoryState)."""
        return answers.query_state(self.controller, request, response)

    def warn_throttled(self, key, text):
        """Log ``text`` as a warning at most once per second per ``key``."""
        self._warnings.warn(key, text)

    def _skip(self, out):
        """Warn (throttled) of a :class:`NoCommand`, unless the state was not ours."""
        if out.reason in _SKIP_WARNINGS:         # not NOT_CONTROLLED, not INACTIVE
            self._warnings.warn(out.reason.value, _SKIP_WARNINGS[out.reason] + out.message)

    # ---- the watchdog -----------------------------------------------------------------------

    def _watchdog_period(self):
        timeout = float(self.get_parameter('state_timeout').value)
        return min(max(timeout / 4.0, 0.005), 0.1)

    def _watchdog_tick(self):
        """Watchdog thread: the state timeout every period, /diagnostics every second."""
        self._check_state_timeout()
        self.outputs.refresh()          # off the control path: who subscribes to ~/
        self.publish_diagnostics_when_due()

    def _watchdog_failed(self, err):
        """Stop the watchdog once the context is gone; else warn and go on."""
        if not self.context.ok():
            return True               # e.g. the context shut down meanwhile
        self._warnings.warn('watchdog', f'watchdog: {type(err).__name__}: {err}')
        return False

    def _check_state_timeout(self):
        controller = self.controller
        if controller is None:
            return
        with self._command_lock:
            now = time.monotonic_ns()
            # A command that left within state_timeout answered a valid state: the silence
            # is this node's own executor, stuck in a publish that holds the GIL (Fast DDS's
            # first write of the effort writer took up to 0.3 s here, once in ~60
            # activations), while the states kept arriving. Not a state loss.
            if now - self._answered_ns < controller.settings.state_timeout * 1e9:
                return
            timeout = controller.check_timeout(now)
            if timeout is None:
                return
            self._effort_pub.publish(float64_multi_array_bytes(timeout.effort.tolist()))
        if timeout.started:
            if self.goals is not None:
                self.goals.wake()          # the goal the timeout aborted
            self.statistics.timed_out()
            self.get_logger().error(controller.timeout_text(timeout))
            self.events.add('state timeout: no valid joint_states')
        elif timeout.hold_ended:
            self.get_logger().error('state_loss_hold over: zero effort until states return')

    # ---- diagnostics, shutdown --------------------------------------------------------------

    diagnostics_due = property(lambda self: self._diagnostics_due,
                               doc='When the next periodic /diagnostics is due (monotonic s).')

    def publish_diagnostics_when_due(self):
        """Publish ``/diagnostics`` when a period has passed or an event waits.

        The watchdog thread calls it; an event waits at most
        :data:`~ne_dynamics_ros.nodes.computed_torque.diagnostics.EVENT_INTERVAL` after the
        previous one (the next tick publishes it).
        """
        now = time.monotonic()
        if self.events.due(now):
            self._publish_diagnostics(now)
        elif now >= self._diagnostics_due:
            self._publish_diagnostics(now)

    def _publish_diagnostics(self, now=None):
        self.outputs.refresh(external_effort=True)
        now = time.monotonic() if now is None else now
        elapsed = max(1e-9, now - (self._diagnostics_due - diagnostics.PERIOD))
        self._diagnostics_due = now + diagnostics.PERIOD
        c = self.controller
        counts = diagnostics.counts(self)
        facts = diagnostics.node_facts(
            self, c, self._description_source,
            f'not served: {CONTROL_MSGS_MISSING}' if CONTROL_MSGS_MISSING else
            self.intake.action or 'not ready',
            self.last_command if c is not None and c.active else None)
        events = self.events.take()
        message = diagnostics.status(
            self.get_name(), f'{c.model.base_link} -> {c.model.tip_link}' if c else '',
            facts, self.statistics.take(c.n if c else 0), elapsed, self._diagnostics_counts,
            counts, float(self.get_parameter('state_timeout').value),
            c.joints if c else [], bool(c and c.timed_out), self.configure_error, events,
            c.delay_checked_gains if c else None)
        message.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics_counts = counts
        self._diagnostics_pub.publish(message)

    def command_subscribers(self):
        """Subscriptions matched to the effort command topic (the effort controller's)."""
        return self._effort_pub.get_subscription_count()

    def drop_summary(self):
        """One line: what the node refused since it started (logged on shutdown)."""
        return diagnostics.drop_summary(self)

    def publish_zero_effort(self, wait=0.0):
        """Publish zero effort while active; wait up to ``wait`` s for its acknowledgement."""
        if self.controller is not None and self.controller.active:
            self._effort_pub.publish(
                float64_multi_array_bytes(self.controller.zero_effort().tolist()))
            if wait > 0:     # before an exit: a message not yet delivered dies with it
                self._effort_pub.wait_for_all_acked(Duration(nanoseconds=int(wait * 1e9)))


__all__ = ['ComputedTorqueNode', 'JOINT_STATE_QOS', 'NODE_NAME', 'ROBOT_DESCRIPTION_QOS']
