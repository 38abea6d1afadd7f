r"""``trajectory_source``: publish one point-to-point joint trajectory for the controller.

Samples a profile of :mod:`ne_dynamics_ros.control.reference.profiles` (``quintic``, or
``trapezoidal`` after Sasaki 1990, §4) from ``start`` to ``goal`` over ``duration`` every
``sample_period`` seconds (and at the end), and publishes it once as a
``trajectory_msgs/JointTrajectory`` whose points carry positions, velocities and
accelerations, so the controller can interpolate with quintic splines and recover the
profile exactly between points.

* ``cycles`` > 0: that many round trips ``start -> goal -> start`` with ``dwell`` s of rest
  at each end (a pick-and-place cycle, e.g. with ``sim_arm_node``'s ``payload_schedule``).
* ``joint_names`` empty: take the names from the first ``/joint_states`` message;
  ``start`` empty: start from the measured positions (by name).
* ``start_time`` 0: ``header.stamp`` is zero, "start on receipt"; otherwise the stamp
  is that absolute time (seconds, in the receiver's clock -- simulated time when the
  nodes run with ``use_sim_time``).
* The publisher is reliable and transient-local, and the message is sent only once the
  topic has a subscriber (then kept for ``linger`` seconds for late joiners), so it is
  not lost to discovery.

* ``profile: excitation`` with ``file:`` an ``ne-dynamics excite`` YAML: a quintic move
  of ``duration`` s from the start to the excitation's rest pose, then ``periods``
  periods of the Fourier excitation (for identification; record ``/joint_states`` and
  ``/computed_torque_node/tracking_error`` with ``ros2 bag record`` meanwhile); ``goal``
  is not used.
* The excitation is played under a law that does not rely on the model being identified
  (``excitation_law: feedforward_pd``, the default): before publishing, the node reads
  the controller's ``mode``, ``kp``, ``kd`` and sets ``mode: feedforward`` with the joint
  PD of the file's ``play`` section (N*m/rad, sized from the effort limits by
  ``ne-dynamics excite``; see :mod:`ne_dynamics_ros.identification.excitation`) through
  the controller's parameter services (``controller``, default: the node the topic
  belongs to); when the trajectory has ended (and on Ctrl-C) it sets the values it read
  back. ``excitation_law: unchanged`` leaves the controller's law alone.

* ``use_action: true``: the trajectory goes as a ``control_msgs/action/
  FollowJointTrajectory`` goal to ``action`` (default: ``<controller>/
  follow_joint_trajectory``, as MoveIt sends it) instead of the topic; the node waits for
  the result, prints it (``error_code``, ``error_string``) and exits 0 only on
  ``SUCCESSFUL``. Ctrl-C cancels the goal (the controller holds).

Example::

    ros2 run ne_dynamics_ros trajectory_source --ros-args \\
        -p goal:="[0.785, 0.524, 0.0, 0.785, 1.047, 1.571]" -p duration:=3.0
    ros2 run ne_dynamics_ros trajectory_source --ros-args \\
        -p profile:=excitation -p file:=excitation.yaml -p periods:=3
    ros2 run ne_dynamics_ros trajectory_source --ros-args -p use_action:=true \\
        -p goal:="[0.785, 0.524, 0.0, 0.785, 1.047, 1.571]"
"""
import sys
import time

from builtin_interfaces.msg import Duration
import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
import rclpy
import rclpy.duration
from rclpy.clock import Clock, ClockType
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions
from rclpy.qos import QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy
from rclpy.time import Time
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ne_dynamics_ros.control.laws.feedforward import FeedforwardLaw
from ne_dynamics_ros.control.reference.profiles import PROFILES, sample_cycles, sample_profile
from ne_dynamics_ros.identification import FourierTrajectory, sample_excitation

DEFAULT_TOPIC = '/computed_torque_node/joint_trajectory'
#: Values of ``excitation_law``.
EXCITATION_LAWS = ('feedforward_pd', 'unchanged')
#: The controller parameters the excitation law sets (and the node restores).
LAW_PARAMETERS = ('mode', 'kp', 'kd')
#: Seconds to wait for the controller's parameter services.
SERVICE_TIMEOUT = 10.0
#: Seconds a subscriber must have been matched before the trajectory is published.
MATCH_GRACE = 0.5
TRAJECTORY_QOS = QoSProfile(depth=1, reliability=QoSReliabilityPolicy.RELIABLE,
                            durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)


class TrajectorySourceError(ValueError):
    """The trajectory source's parameters cannot make a trajectory."""


def build_trajectory(joint_names, start, goal, duration, profile='quintic',
                     sample_period=0.01, start_time=0.0, cycles=0, dwell=0.5):
    """Build a ``JointTrajectory`` sampling ``profile`` from ``start`` to ``goal`` (rad or m).

    ``start_time`` (s) becomes ``header.stamp`` (0: start on receipt). ``cycles`` > 0:
    that many round trips to ``goal`` and back with ``dwell`` s of rest at each end
    (:func:`~ne_dynamics_ros.control.reference.profiles.sample_cycles`, a pick-and-place cycle).
    """
    start = np.asarray(start, dtype=float)
    goal = np.asarray(goal, dtype=float)
    if len(joint_names) != start.size or start.size != goal.size:
        raise TrajectorySourceError(
            f'{len(joint_names)} joint names, {start.size} start values and {goal.size} goal '
            'values: they must match')
    try:
        if cycles:
            times, q, qd, qdd = sample_cycles(profile, start, goal, duration, cycles, dwell,
                                              sample_period)
        else:
            times, q, qd, qdd = sample_profile(profile, start, goal, duration, sample_period)
    except ValueError as err:
        raise TrajectorySourceError(str(err)) from None
    return _message(joint_names, times, q, qd, qdd, start_time)


def _message(joint_names, times, q, qd, qdd, start_time):
    msg = JointTrajectory()
    msg.header.stamp = Time(nanoseconds=round(start_time * 1e9)).to_msg()
    msg.joint_names = list(joint_names)
    for k, t in enumerate(times):
        nanoseconds = round(t * 1e9)
        msg.points.append(JointTrajectoryPoint(
            positions=q[k].tolist(), velocities=qd[k].tolist(), accelerations=qdd[k].tolist(),
            time_from_start=Duration(sec=nanoseconds // 10**9,
                                     nanosec=nanoseconds % 10**9)))
    return msg


def load_excitation(path):
    """Read an ``ne-dynamics excite`` YAML file; raise TrajectorySourceError naming it."""
    import yaml
    try:
        with open(path, encoding='utf-8') as stream:
            data = yaml.safe_load(stream)
        return FourierTrajectory.from_dict(data, where=str(path))
    except OSError as exc:
        raise TrajectorySourceError(f'cannot read excitation file {path}: '
                                    f'{exc.strerror or exc}') from None
    except (yaml.YAMLError, ValueError) as exc:
        raise TrajectorySourceError(str(exc)) from None


def build_excitation_trajectory(excitation, start, move_duration, periods=1,
                                sample_period=0.01, start_time=0.0):
    """Build a ``JointTrajectory``: a quintic move to the excitation's rest pose, then it.

    Args:
        excitation: :class:`~ne_dynamics_ros.identification.excitation.FourierTrajectory`.
        start: (n,) positions now (rad or m), in the excitation's joint order.
        move_duration: s for the move to ``excitation.q0`` (0: start at q0 directly).
        periods: how many periods of the excitation.

    Raises:
        TrajectorySourceError: as :func:`~ne_dynamics_ros.identification.excitation.
            sample_excitation` (wrong start, periods).
    """
    try:
        times, q, qd, qdd = sample_excitation(excitation, start, move_duration, periods,
                                              sample_period)
    except ValueError as exc:
        raise TrajectorySourceError(str(exc)) from None
    return _message(excitation.joints, times, q, qd, qdd, start_time)


class TrajectorySourceNode(Node):
    """Publishes one trajectory as soon as it knows the joints and someone listens."""

    def __init__(self, **kwargs):
        super().__init__('trajectory_source', **kwargs)

        def declare(name, default, description):
            descriptor = ParameterDescriptor(description=description, dynamic_typing=True,
                                             read_only=True)
            return self.declare_parameter(name, default, descriptor).value

        self.joint_names = [j for j in declare(
            'joint_names', [], 'joints; default: from the first /joint_states') if j]
        self.start = [float(v) for v in declare(
            'start', [], 'start positions (rad or m); default: the measured ones')]
        self.goal = [float(v) for v in declare('goal', [], 'goal positions (rad or m)')]
        self.duration = float(declare('duration', 3.0, 'motion time, s'))
        self.cycles = declare('cycles', 0, 'round trips to goal and back (a pick-and-place '
                              'cycle); 0: one move to goal, then hold')
        self.dwell = float(declare('dwell', 0.5, 'with cycles: rest at each end, s'))
        self.profile = declare('profile', 'quintic',
                               f'one of {sorted(PROFILES) + ["excitation"]}')
        self.file = declare('file', '', 'excitation YAML (ne-dynamics excite) for '
                            'profile excitation')
        self.periods = declare('periods', 1, 'periods of the excitation to play')
        self.sample_period = float(declare('sample_period', 0.01, 'time between points, s'))
        self.start_time = float(declare('start_time', 0.0,
                                        'header.stamp in s; 0 = start on receipt'))
        topic = declare('topic', DEFAULT_TOPIC, 'trajectory topic')
        self.excitation_law = declare(
            'excitation_law', 'feedforward_pd', 'profile excitation: feedforward_pd (set the '
            'controller to mode feedforward with the file\'s play kp, kd while the '
            'excitation plays, then restore) or unchanged')
        controller = declare('controller', '', 'node whose mode, kp, kd the excitation law '
                             'sets; default: the node the topic belongs to')
        self.controller = controller or (topic.rsplit('/', 1)[0] or '/')
        self.use_action = bool(declare(
            'use_action', False, 'send the trajectory as a FollowJointTrajectory goal (as '
            'MoveIt does) instead of publishing it; print the result'))
        action = declare('action', '', 'the FollowJointTrajectory action; default: '
                         '<controller>/follow_joint_trajectory')
        self.action_name = action or self.controller.rstrip('/') + '/follow_joint_trajectory'
        self.action_client = self.goal_handle = self.result_future = None
        self._goal_future = None
        if self.use_action:
            self._make_action_client()
        self.excitation = None
        self._law = None          # the excitation law's progress (see _switch_law)
        self._check_motion()
        self.trajectory = None
        self._matched_since = None
        self.publisher = self.create_publisher(JointTrajectory, topic, TRAJECTORY_QOS)
        if not self.joint_names or not self.start:
            self.create_subscription(JointState, '/joint_states', self._on_joint_states, 10)
        # A steady clock, so the node also works under use_sim_time before /clock runs.
        self.create_timer(0.05, self._try_publish,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))

    def _make_action_client(self):
        """Make the FollowJointTrajectory client of ``use_action``."""
        try:
            from control_msgs.action import FollowJointTrajectory
            from rclpy.action import ActionClient
        except ImportError as err:
            raise TrajectorySourceError(f'use_action needs control_msgs ({err})') from None
        self._action_type = FollowJointTrajectory
        self.action_client = ActionClient(self, FollowJointTrajectory, self.action_name)

    def _check_motion(self):
        """Check the profile (or load the excitation and its law); raise what is wrong."""
        if self.profile == 'excitation':
            if not self.file:
                raise TrajectorySourceError('profile excitation needs the parameter file '
                                            '(an ne-dynamics excite YAML)')
            self.excitation = load_excitation(self.file)
            if self.joint_names and list(self.joint_names) != list(self.excitation.joints):
                raise TrajectorySourceError(f'joint_names {self.joint_names} differ from the '
                                            f'excitation\'s {list(self.excitation.joints)}')
            self.joint_names = list(self.excitation.joints)
            if self.excitation_law not in EXCITATION_LAWS:
                raise TrajectorySourceError(f'excitation_law must be one of '
                                            f'{list(EXCITATION_LAWS)}, got '
                                            f'{self.excitation_law!r}')
            if self.excitation_law == 'feedforward_pd':
                if self.excitation.kp is None:
                    raise TrajectorySourceError(
                        f'{self.file} has no play section (the joint PD to play it under; '
                        'written by ne-dynamics excite since 0.9): write it again, or set '
                        'excitation_law:=unchanged to play it under the controller\'s law')
                from rclpy.parameter_client import AsyncParameterClient
                self._law = {'client': AsyncParameterClient(self, self.controller),
                             'state': 'waiting', 'since': time.monotonic()}
        elif self.profile not in PROFILES:
            raise TrajectorySourceError(f'unknown profile {self.profile!r}; choose one of '
                                        f'{sorted(PROFILES) + ["excitation"]}')
        elif not self.goal:
            raise TrajectorySourceError('parameter goal (one position per joint) is required')
        if isinstance(self.cycles, bool) or not isinstance(self.cycles, int) or self.cycles < 0:
            raise TrajectorySourceError(f'cycles must be a whole number >= 0, got '
                                        f'{self.cycles!r}')
        if not (0 <= self.dwell < float('inf')):
            raise TrajectorySourceError(f'dwell must be a finite time >= 0 s, got {self.dwell}')

    def _on_joint_states(self, msg):
        if self.joint_names and self.start:
            return
        names = self.joint_names or list(msg.name)
        position = dict(zip(msg.name, msg.position))
        if any(name not in position for name in names):
            self.get_logger().warning(f'/joint_states lacks some of {names}',
                                      throttle_duration_sec=2.0)
            return
        self.joint_names = names
        if not self.start:
            self.start = [position[name] for name in names]

    def _try_publish(self):
        if self.trajectory is not None or not self.joint_names or not self.start:
            return
        if self.use_action:
            if not self.action_client.server_is_ready():
                return
        elif self.publisher.get_subscription_count() == 0:
            self._matched_since = None
            return
        # Our side of discovery knows the subscriber; its side must also know us, or a
        # volatile reader drops what we publish meanwhile (seen with the node's receiver
        # process under load): give it MATCH_GRACE of the steady clock.
        now = time.monotonic()
        if self._matched_since is None:
            self._matched_since = now
        if now - self._matched_since < MATCH_GRACE:
            return
        if self._law is not None and not self._switch_law():
            return
        if self.excitation is not None:
            self.trajectory = build_excitation_trajectory(
                self.excitation, self.start, self.duration, self.periods, self.sample_period,
                self.start_time)
            what = (f'{self.duration:g} s move and {self.periods} x '
                    f'{self.excitation.duration:g} s excitation')
        else:
            self.trajectory = build_trajectory(self.joint_names, self.start, self.goal,
                                               self.duration, self.profile,
                                               self.sample_period, self.start_time,
                                               self.cycles, self.dwell)
            what = f'{self.duration:g} s {self.profile}' + (
                f' x {2 * self.cycles} (dwell {self.dwell:g} s)' if self.cycles else '')
        self.published_at = self.get_clock().now()
        if self.use_action:
            goal = self._action_type.Goal(trajectory=self.trajectory)
            self._goal_future = self.action_client.send_goal_async(goal)
            self._goal_future.add_done_callback(self._on_goal_response)
            self.get_logger().info(
                f'sent a {what} trajectory with {len(self.trajectory.points)} points for '
                f'{self.joint_names} as a goal to {self.action_name}')
            return
        self.publisher.publish(self.trajectory)
        self.get_logger().info(
            f'published a {what} trajectory with {len(self.trajectory.points)} points for '
            f'{self.joint_names}')

    def _on_goal_response(self, future):
        self.goal_handle = future.result()
        if not self.goal_handle.accepted:
            self.get_logger().error(f'{self.action_name} rejected the goal (its node logs '
                                    'why)')
            return
        self.result_future = self.goal_handle.get_result_async()

    def _switch_law(self):
        """Advance the excitation law's switch; True once the controller runs it.

        waiting (for the parameter services) -> reading (mode, kp, kd) -> setting (mode
        feedforward, the file's kp, kd) -> active.

        Raises:
            TrajectorySourceError: the services did not come up within SERVICE_TIMEOUT,
                or the controller refused the values (its reason).
        """
        law = self._law
        state = law['state']
        if state == 'waiting':
            if not law['client'].services_are_ready():
                if time.monotonic() - law['since'] > SERVICE_TIMEOUT:
                    raise TrajectorySourceError(
                        f'no parameter services of {self.controller} within '
                        f'{SERVICE_TIMEOUT:g} s to set the excitation law (set controller:= '
                        'its node name, or excitation_law:=unchanged)')
                return False
            law['future'] = law['client'].get_parameters(list(LAW_PARAMETERS))
            law['state'] = 'reading'
        elif state == 'reading' and law['future'].done():
            values = law['future'].result().values
            if len(values) != len(LAW_PARAMETERS) or any(v.type == 0 for v in values):
                raise TrajectorySourceError(f'{self.controller} has no {LAW_PARAMETERS} '
                                            'parameters: is it computed_torque_node?')
            from rcl_interfaces.msg import Parameter as ParameterMsg
            law['previous'] = [ParameterMsg(name=name, value=value)
                               for name, value in zip(LAW_PARAMETERS, values)]
            law['future'] = law['client'].set_parameters_atomically([
                Parameter('mode', value=FeedforwardLaw.name),
                Parameter('kp', value=[float(v) for v in self.excitation.kp]),
                Parameter('kd', value=[float(v) for v in self.excitation.kd])])
            law['state'] = 'setting'
        elif state == 'setting' and law['future'].done():
            result = law['future'].result().result
            if not result.successful:
                raise TrajectorySourceError(f'{self.controller} refused the excitation law: '
                                            f'{result.reason}')
            law['state'] = 'active'
            self.get_logger().info(
                f'{self.controller} set to mode feedforward, kp '
                f'{np.round(self.excitation.kp, 3).tolist()} N*m/rad, kd '
                f'{np.round(self.excitation.kd, 3).tolist()} N*m*s/rad for the excitation; '
                'restored when it ends')
        return law['state'] == 'active'

    @property
    def law_switching(self):
        """True once the excitation law is being set and until it is restored."""
        return self._law is not None and self._law['state'] in ('setting', 'active')

    @property
    def law_active(self):
        """True while the controller runs the excitation law this node set."""
        return self._law is not None and self._law['state'] == 'active'

    def trajectory_end(self):
        """Return the controller-clock time (rclpy Time) the published trajectory ends at."""
        last = self.trajectory.points[-1].time_from_start
        stamp = self.trajectory.header.stamp
        start = (Time.from_msg(stamp) if stamp.sec or stamp.nanosec else self.published_at)
        return start + rclpy.duration.Duration(seconds=last.sec, nanoseconds=last.nanosec)

    def restore_law(self):
        """Set the controller's mode, kp, kd back to what they were; return the Future."""
        self._law['state'] = 'restoring'
        return self._law['client'].set_parameters_atomically(self._law['previous'])


def _publish_once(node, wait_timeout, linger):
    """Spin until the trajectory is out, then linger; return an exit status.

    With the excitation law set on the controller, spin until the trajectory has ended
    (plus ``linger``) and set the controller's law back, also on Ctrl-C.
    """
    from rclpy.executors import SingleThreadedExecutor
    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    try:
        return _spin_publish(node, executor, wait_timeout, linger)
    finally:
        executor.remove_node(node)
        executor.shutdown()


def _spin_publish(node, executor, wait_timeout, linger):
    deadline = time.monotonic() + wait_timeout
    while node.trajectory is None and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
    if node.trajectory is None:
        what = ('joint states' if not (node.joint_names and node.start) else
                f'action server {node.action_name}' if node.use_action else 'subscriber')
        print(f'trajectory_source: no {what} within {wait_timeout:g} s', file=sys.stderr)
        return 1
    if node.use_action:
        try:
            return _wait_for_result(node, executor)
        finally:
            if node.law_active and _restore(node, executor):
                return 1        # noqa: B012 - the law could not be restored: say so
    end = time.monotonic() + linger
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.1)
    if not node.law_active:
        return 0
    try:
        ends = node.trajectory_end() + rclpy.duration.Duration(seconds=linger)
        node.get_logger().info('waiting for the excitation to end to restore the '
                               f'controller\'s law ({node.controller})')
        while node.get_clock().now() < ends:
            executor.spin_once(timeout_sec=0.1)
    finally:                  # Ctrl-C included: the controller must not stay on the PD
        if _restore(node, executor):
            return 1        # noqa: B012 - the law could not be restored: say so
    return 0


def _restore(node, executor):
    """Set the controller's law back; return True (and say so) if that failed."""
    future = node.restore_law()
    executor.spin_until_future_complete(future, timeout_sec=SERVICE_TIMEOUT)
    if not (future.done() and future.result().result.successful):
        print(f'trajectory_source: could not restore the law of {node.controller}: '
              f'set its mode, kp, kd by hand', file=sys.stderr)
        return True
    node.get_logger().info(f'restored the law of {node.controller}')
    return False


def _wait_for_result(node, executor):
    """Spin until the goal's result; print it; 0 only for SUCCESSFUL. Ctrl-C cancels."""
    try:
        while node.goal_handle is None or (node.goal_handle.accepted
                                           and not (node.result_future
                                                    and node.result_future.done())):
            executor.spin_once(timeout_sec=0.1)
    except KeyboardInterrupt:
        if node.goal_handle is not None and node.goal_handle.accepted:
            future = node.goal_handle.cancel_goal_async()
            executor.spin_until_future_complete(future, timeout_sec=SERVICE_TIMEOUT)
            print('trajectory_source: canceled the goal', file=sys.stderr)
        raise
    if not node.goal_handle.accepted:
        print(f'trajectory_source: the goal was rejected by {node.action_name}',
              file=sys.stderr)
        return 1
    response = node.result_future.result()
    result = response.result
    print(f'trajectory_source: result error_code {result.error_code} '
          f'({"SUCCESSFUL" if result.error_code == 0 else "failed"}), status '
          f'{response.status}: {result.error_string}')
    return 0 if result.error_code == 0 and response.status == 4 else 1


def main(args=None, wait_timeout=30.0, linger=1.0):
    """Publish one trajectory and exit 0, or exit 1 if nobody listens within the timeout."""
    # Ctrl-C raises KeyboardInterrupt instead of shutting the context down, so that the
    # controller's law can still be restored
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    status = 1
    node = None
    try:
        node = TrajectorySourceNode()
        status = _publish_once(node, wait_timeout, linger)
    except TrajectorySourceError as exc:
        print(f'trajectory_source: {exc}', file=sys.stderr)
    except (KeyboardInterrupt, ExternalShutdownException):
        status = 0
        if node is not None and node.law_switching:
            # interrupted while the law was being set: set the values read back
            rclpy.spin_until_future_complete(node, node.restore_law(),
                                             timeout_sec=SERVICE_TIMEOUT)
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return status


if __name__ == '__main__':
    raise SystemExit(main())
