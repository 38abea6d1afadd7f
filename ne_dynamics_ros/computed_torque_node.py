"""ROS 2 node ``computed_torque_node``: joint states + reference trajectory -> effort commands.

The node only translates messages to arrays and back; the control law is in
:mod:`ne_dynamics_ros.control_law` (001_ccc6fd40c72dea18.txt eqs 4.1, 4.4), the reference
interpolation in :mod:`ne_dynamics_ros.trajectory`, the dynamics (RNEA) in
:mod:`ne_dynamics_ros.model`.

Topics (names relative to the node's namespace, so ``/joint_states`` etc. in the root
namespace; remap as usual):

==============================  ==================================  ===========================
topic                           type                                meaning
==============================  ==================================  ===========================
``joint_states`` (sub)          sensor_msgs/JointState              measured q (and qd); QoS as
                                                                    joint_state_broadcaster:
                                                                    reliable, volatile, depth 10
``~/joint_trajectory`` (sub)    trajectory_msgs/JointTrajectory     reference; replaces the
                                                                    previous one
``robot_description`` (sub)     std_msgs/String                     URDF, transient local; only
                                                                    when no parameter gives it
``effort_controller/commands``  std_msgs/Float64MultiArray          tau in ``joints`` order,
(pub)                                                               N*m or N
``~/tracking_error`` (pub)      sensor_msgs/JointState              position = q_d - q,
                                                                    velocity = qd_d - qd,
                                                                    effort = commanded tau
``~/desired`` (pub)             trajectory_msgs/JointTrajectory     one point: q_d, qd_d, qdd_d
                                                                    in positions/velocities/
                                                                    accelerations
==============================  ==================================  ===========================

Effort commands and both ``~/`` outputs are computed on every valid ``joint_states``
message. The ``~/`` outputs are stamped with the ``header.stamp`` of the joint state they
answer, list the joints in ``joints`` order, and are only published while someone
subscribes to them (each costs a DDS write).

State timeout: once commanding, if no valid ``joint_states`` message arrives for
``state_timeout`` seconds (steady clock), the node logs an error and publishes an
all-zero effort command, repeated every watchdog tick (at most 0.1 s) while the timeout
lasts. Why zeros: ``effort_controllers/JointGroupEffortController`` (and
``forward_command_controller``) keep applying the last command they received forever; a
stale computed-torque command, with its PD part frozen, keeps pushing the arm open loop.
Zero effort injects no energy; the arm then sags under gravity onto its brakes or
hardware limits, which the hardware's own safety must handle (no controller can hold an
arm it no longer measures). Repeating it makes sure a controller that is (re)activated
during the outage also receives zero. When valid states return, the node resumes by
holding the position measured then (the old trajectory is discarded, since the arm may
have moved). The same zero command is published on a clean shutdown (Ctrl-C, SIGTERM).
"""
import math
import signal
import time

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
import rclpy
from rclpy.clock import Clock, ClockType
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSDurabilityPolicy, QoSHistoryPolicy, QoSProfile, QoSReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ne_dynamics_ros.control_law import (
    check_cutoff, check_effort_limits, check_gravity, compute_effort, ControlLawConfig,
    ControlMode, ControlParameterError, expand_gain, NonFiniteEffortError, parse_mode,
    VelocityEstimator)
from ne_dynamics_ros.errors import StateError
from ne_dynamics_ros.model import load_model
from ne_dynamics_ros.resources import find_resource
from ne_dynamics_ros.trajectory import Trajectory, trajectory_from_points, TrajectoryError
from ne_dynamics_ros.trajectory import TrajectoryPoint

NODE_NAME = 'computed_torque_node'
# A joint state stamped within this many seconds of receipt is taken to be on our clock.
STAMP_TOLERANCE = 0.5

#: QoS of ``joint_states``: what joint_state_broadcaster publishes with
#: (``rclcpp::SystemDefaultsQoS``: reliable, volatile, keep last).
JOINT_STATE_QOS = QoSProfile(history=QoSHistoryPolicy.KEEP_LAST, depth=10,
                             reliability=QoSReliabilityPolicy.RELIABLE,
                             durability=QoSDurabilityPolicy.VOLATILE)
#: QoS of ``robot_description`` as robot_state_publisher publishes it (latched).
ROBOT_DESCRIPTION_QOS = QoSProfile(history=QoSHistoryPolicy.KEEP_LAST, depth=1,
                                   reliability=QoSReliabilityPolicy.RELIABLE,
                                   durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)

_NO_PUBLISHER_EVENTS = PublisherEventCallbacks(use_default_callbacks=False)
_NO_SUBSCRIPTION_EVENTS = SubscriptionEventCallbacks(use_default_callbacks=False)
_NUMERIC_TYPES = (Parameter.Type.INTEGER, Parameter.Type.DOUBLE,
                  Parameter.Type.INTEGER_ARRAY, Parameter.Type.DOUBLE_ARRAY)
#: Parameters that can be changed while running (the others are read-only).
RUNTIME_PARAMETERS = ('mode', 'kp', 'kd', 'friction_compensation', 'gravity',
                      'state_timeout', 'velocity_filter_cutoff')


class NodeConfigurationError(ValueError):
    """The node cannot start: bad or missing robot description or parameters."""


class JointStateError(ValueError):
    """A ``joint_states`` message cannot be used (the message says why)."""


def _descriptor(description, read_only=False, dynamic_typing=False, constraints=''):
    return ParameterDescriptor(description=description, read_only=read_only,
                               dynamic_typing=dynamic_typing,
                               additional_constraints=constraints)


#: name -> (default, descriptor). ``None`` defaults: "not set, use the model's value".
PARAMETERS = {
    'robot_description': ('', _descriptor(
        'URDF XML of the robot. If empty, urdf_path is used; if both are empty the node '
        'waits for the robot_description topic.', read_only=True)),
    'urdf_path': ('', _descriptor(
        'Path of a URDF file (absolute, relative to the working directory, or relative to '
        'the share directory of ne_dynamics_ros, e.g. config/puma560.urdf).',
        read_only=True)),
    'base_link': ('', _descriptor('First link of the chain; empty = URDF root link.',
                                  read_only=True)),
    'tip_link': ('', _descriptor('Last link of the chain; empty = the single tip of the '
                                 'movable tree.', read_only=True)),
    'convention': ('mdh', _descriptor(
        'Frame convention of the Newton-Euler recursion: mdh (Craig) or dh (Luh-Walker-Paul, '
        '001 eqs 3.21-3.27). Both give the same torques.', read_only=True,
        constraints='one of: dh, mdh')),
    'mode': (ControlMode.COMPUTED_TORQUE.value, _descriptor(
        'Control law: computed_torque (tau = RNEA(q, qd, qdd_d + kd*(qd_d - qd) + '
        'kp*(q_d - q)), 001 eqs 4.1, 4.4), feedforward (tau = RNEA(q_d, qd_d, qdd_d) + '
        'kp*e + kd*de) or gravity_compensation (tau = G(q)).',
        constraints='one of: computed_torque, feedforward, gravity_compensation')),
    'kp': (100.0, _descriptor(
        'Position gain, one value or one per joint (chain order); 1/s^2 in computed_torque '
        'mode, N*m/rad (N/m) in feedforward mode.', dynamic_typing=True, constraints='>= 0')),
    'kd': (20.0, _descriptor(
        'Velocity gain, one value or one per joint (chain order); 1/s in computed_torque '
        'mode, N*m*s/rad (N*s/m) in feedforward mode.', dynamic_typing=True,
        constraints='>= 0')),
    'friction_compensation': (False, _descriptor(
        'Add the URDF <dynamics damping friction> torques to the command.')),
    'gravity': ([0.0, 0.0, -9.81], _descriptor(
        'Gravity acceleration in the chain base frame, m/s^2.', dynamic_typing=True,
        constraints='3 finite numbers')),
    'effort_limits': (None, _descriptor(
        'Symmetric effort limits, one per joint (chain order), N*m or N; unset = URDF '
        '<limit effort> (inf where absent). Every command is clamped to them.',
        read_only=True, dynamic_typing=True, constraints='> 0')),
    'joints': (None, _descriptor(
        'Order of the joints in the effort command (as configured in the effort '
        'controller); unset = chain order. Must list every chain joint once.',
        read_only=True, dynamic_typing=True)),
    'armature': (None, _descriptor(
        'Reflected rotor inertia per joint (chain order), kg*m^2 or kg, added as '
        'armature*qdd; unset = zero.', read_only=True, dynamic_typing=True,
        constraints='>= 0')),
    'state_timeout': (0.1, _descriptor(
        'Seconds without a valid joint_states message after which the node stops '
        'commanding and publishes zero effort.', dynamic_typing=True, constraints='> 0')),
    'velocity_filter_cutoff': (50.0, _descriptor(
        'Cut-off frequency (Hz) of the low-pass on finite-difference velocities, used when '
        'joint_states carries no velocity.', dynamic_typing=True, constraints='> 0')),
}


class _ThrottledWarnings:
    """Warn at most once per ``period`` seconds per key, counting what was suppressed."""

    def __init__(self, logger, period=1.0):
        self._logger = logger
        self._period = period
        self._state = {}

    def warn(self, key, text):
        now = time.monotonic()
        last, suppressed = self._state.get(key, (-math.inf, 0))
        if now - last < self._period:
            self._state[key] = (last, suppressed + 1)
            return
        if suppressed:
            text += f' ({suppressed} more since the last warning of this kind)'
        self._logger.warning(text)
        self._state[key] = (now, 0)


def _numeric(param, name):
    """Return a parameter's numeric value; raise ControlParameterError if not numeric."""
    if param.type_ not in _NUMERIC_TYPES:
        raise ControlParameterError(
            f'{name} must be a number or an array of numbers, got {param.value!r}')
    return param.value


def _scalar(param, name):
    value = _numeric(param, name)
    if param.type_ not in (Parameter.Type.INTEGER, Parameter.Type.DOUBLE):
        raise ControlParameterError(f'{name} must be a single number, got {value!r}')
    return float(value)


def _is_unset(param):
    """Return True for a parameter never set, or set to an empty array."""
    if param.type_ == Parameter.Type.NOT_SET:
        return True
    return param.type_.name.endswith('_ARRAY') and len(param.value) == 0


def _seconds(msg_time):
    """Convert a builtin_interfaces Time/Duration to float seconds."""
    return msg_time.sec + 1e-9 * msg_time.nanosec


class ComputedTorqueNode(Node):
    """Computed-torque controller node; see the module docstring for topics and timeout.

    Raises:
        NodeConfigurationError: from the constructor when the robot description given by
            parameter is missing or bad, or a parameter is invalid for the model (the
            error is also logged). ``main`` turns it into exit code 1.
    """

    def __init__(self, node_name=NODE_NAME, **kwargs):
        """Declare parameters, build the model (if given by parameter) and the endpoints.

        ``kwargs`` go to :class:`rclpy.node.Node` (``context``, ``parameter_overrides``,
        ``namespace``, ``cli_args``...).
        """
        super().__init__(node_name, **kwargs)
        try:
            for name, (default, descriptor) in PARAMETERS.items():
                self.declare_parameter(name, default, descriptor)
            # Runtime parameters are checked now even if the model comes later (topic).
            self._config_from(None, None, {k: self.get_parameter_or(k)
                                           for k in RUNTIME_PARAMETERS})
        except (ParameterException, ValueError) as err:
            self.get_logger().error(f'invalid parameter: {err}')
            self.destroy_node()
            raise NodeConfigurationError(f'invalid parameter: {err}') from err

        self._warnings = _ThrottledWarnings(self.get_logger())
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._epoch_ns = self.get_clock().now().nanoseconds
        self.model = None
        self.config = None
        self.trajectory = None
        self.dropped_joint_states = 0
        self.rejected_trajectories = 0
        self.timed_out = False
        self._joints = []
        self._command_index = None
        self._name_cache = (None, None)
        self._velocity_estimator = None
        self._last_valid_state = None
        self._rehold = False
        self._stamp_origin_ns = None

        self._effort_pub = self.create_publisher(
            Float64MultiArray, 'effort_controller/commands', 10)
        # No QoS-event handlers on the diagnostic endpoints: each one is polled by the
        # executor on every wake-up (~8 us apiece in rclpy), which the 1 kHz loop notices.
        self._tracking_error_pub = self.create_publisher(
            JointState, '~/tracking_error', 10, event_callbacks=_NO_PUBLISHER_EVENTS)
        self._desired_pub = self.create_publisher(
            JointTrajectory, '~/desired', 10, event_callbacks=_NO_PUBLISHER_EVENTS)

        try:
            description = self._description_from_parameters()
            if description is None:
                self.get_logger().info(
                    'robot_description and urdf_path are empty: waiting for the '
                    'robot_description topic')
                self._description_sub = self.create_subscription(
                    String, 'robot_description', self._on_robot_description,
                    ROBOT_DESCRIPTION_QOS)
            else:
                self._build(description)
        except NodeConfigurationError as err:
            self.get_logger().error(str(err))
            self.destroy_node()
            raise

        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)
        self._joint_state_sub = self.create_subscription(
            JointState, 'joint_states', self._on_joint_state, JOINT_STATE_QOS)
        self._trajectory_sub = self.create_subscription(
            JointTrajectory, '~/joint_trajectory', self._on_trajectory, 10,
            event_callbacks=_NO_SUBSCRIPTION_EVENTS)
        self._watchdog = None
        self._start_watchdog()

    # ---- configuration ----------------------------------------------------------------------

    def _description_from_parameters(self):
        """URDF XML text from robot_description / urdf_path, or None if both are empty."""
        xml = self.get_parameter('robot_description').value
        if xml.strip():
            return xml
        path = self.get_parameter('urdf_path').value
        if not path.strip():
            return None
        try:
            with open(path, encoding='utf-8') as f:
                return f.read()
        except FileNotFoundError:
            pass
        except OSError as err:
            raise NodeConfigurationError(f'cannot read urdf_path {path!r}: {err}') from err
        try:
            with open(find_resource(path), encoding='utf-8') as f:
                return f.read()
        except (FileNotFoundError, OSError) as err:
            raise NodeConfigurationError(f'cannot read urdf_path {path!r}: {err}') from err

    def _build(self, urdf_xml):
        """Build model and control configuration; raise NodeConfigurationError if invalid."""
        p = {name: self.get_parameter_or(name) for name in PARAMETERS}
        try:
            convention = p['convention'].value
            if convention not in ('dh', 'mdh'):
                raise ControlParameterError(f'convention {convention!r} is not dh or mdh')
            armature = None
            if not _is_unset(p['armature']):
                armature = np.asarray(_numeric(p['armature'], 'armature'), dtype=float)
            model = load_model(urdf_xml, base_link=p['base_link'].value or None,
                               tip_link=p['tip_link'].value or None,
                               convention=convention, armature=armature)
            if _is_unset(p['joints']):
                joints = list(model.joint_names)
            else:
                joints = list(p['joints'].value)
                if (p['joints'].type_ != Parameter.Type.STRING_ARRAY
                        or sorted(joints) != sorted(model.joint_names)):
                    raise ControlParameterError(
                        f'joints {joints} must list each chain joint {model.joint_names} '
                        'exactly once')
            if _is_unset(p['effort_limits']):
                limits = model.effort_limits.copy()
            else:
                limits = check_effort_limits(_numeric(p['effort_limits'], 'effort_limits'),
                                             model.n)
            config = self._config_from(model.n, limits, {k: p[k] for k in RUNTIME_PARAMETERS})
        except ValueError as err:
            # ModelError/URDFError/StateError and ControlParameterError are ValueErrors.
            raise NodeConfigurationError(f'cannot build the robot model: {err}') from err
        self.model = model
        self.config = config
        self._joints = joints
        self._command_index = np.array([model.joint_names.index(j) for j in joints])
        self._velocity_estimator = VelocityEstimator(
            model.n, self.get_parameter('velocity_filter_cutoff').value)
        for note in model.warnings:
            self.get_logger().warning(f'URDF import: {note}')
        self.get_logger().info(
            f'model {model.base_link} -> {model.tip_link}, {model.n} joints {model.joint_names}, '
            f'{convention}; mode {config.mode.value}, effort limits {limits.tolist()}')

    def _config_from(self, n, effort_limits, values):
        """Build the ControlLawConfig from runtime parameter values (name -> Parameter).

        ``n`` None (no model yet) checks everything except the number of gains.
        """
        mode = values['mode']
        if mode.type_ != Parameter.Type.STRING:
            raise ControlParameterError(f'mode must be a string, got {mode.value!r}')
        friction = values['friction_compensation']
        if friction.type_ != Parameter.Type.BOOL:
            raise ControlParameterError(
                f'friction_compensation must be true or false, got {friction.value!r}')
        timeout = _scalar(values['state_timeout'], 'state_timeout')
        if not (math.isfinite(timeout) and timeout > 0.0):
            raise ControlParameterError(f'state_timeout must be > 0 s, got {timeout}')
        check_cutoff(_scalar(values['velocity_filter_cutoff'], 'velocity_filter_cutoff'))
        kp, kd = _numeric(values['kp'], 'kp'), _numeric(values['kd'], 'kd')
        return ControlLawConfig(
            mode=parse_mode(mode.value),
            kp=expand_gain(kp, n or np.size(kp), 'kp'),
            kd=expand_gain(kd, n or np.size(kd), 'kd'),
            gravity=check_gravity(_numeric(values['gravity'], 'gravity')),
            effort_limits=effort_limits,
            friction_compensation=friction.value)

    def _validate_parameters(self, params):
        """On-set callback: refuse invalid runtime values with a reason."""
        values = {name: self.get_parameter_or(name) for name in RUNTIME_PARAMETERS}
        for param in params:
            if param.name in values:
                values[param.name] = param
        try:
            if self.model is not None:
                self._config_from(self.model.n, self.config.effort_limits, values)
            else:
                self._config_from(None, None, values)
        except ValueError as err:
            return SetParametersResult(successful=False, reason=str(err))
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params):
        """Post-set callback: rebuild the control configuration from the new values."""
        names = {p.name for p in params}
        if self.model is not None and names & set(RUNTIME_PARAMETERS):
            old_mode = self.config.mode
            values = {name: self.get_parameter(name) for name in RUNTIME_PARAMETERS}
            self.config = self._config_from(self.model.n, self.config.effort_limits, values)
            if old_mode is ControlMode.GRAVITY_COMPENSATION and self.config.mode is not old_mode:
                # The arm may have been moved by hand: track from where it is now.
                self._rehold = True
            if 'velocity_filter_cutoff' in names:
                self._velocity_estimator = VelocityEstimator(
                    self.model.n, self.get_parameter('velocity_filter_cutoff').value)
            self.get_logger().info(
                f'parameters {sorted(names)} set: mode {self.config.mode.value}, '
                f'kp {self.config.kp.tolist()}, kd {self.config.kd.tolist()}')
        if 'state_timeout' in names:
            self._start_watchdog()

    def _on_robot_description(self, msg):
        if self.model is not None:
            return
        try:
            self._build(msg.data)
        except NodeConfigurationError as err:
            self.get_logger().error(f'{err}; still waiting for a valid robot_description')
            return
        self.destroy_subscription(self._description_sub)

    # ---- time -------------------------------------------------------------------------------

    def _now(self):
        """ROS time (s) relative to the node's start (keeps float precision)."""
        return (self.get_clock().now().nanoseconds - self._epoch_ns) * 1e-9

    def _stamp_seconds(self, stamp):
        """Convert a message stamp to the relative time axis; None for a zero stamp."""
        ns = stamp.sec * 1_000_000_000 + stamp.nanosec
        return None if ns == 0 else (ns - self._epoch_ns) * 1e-9

    def _measurement_time(self, msg, now):
        """Time (s) a joint state was measured: its stamp, or ``now`` if the stamp is zero.

        Stamps are counted from the first stamp seen, so that float seconds keep
        sub-microsecond resolution whatever clock the publisher stamps with.
        """
        ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        if ns == 0:
            return now
        if self._stamp_origin_ns is None:
            self._stamp_origin_ns = ns
        return (ns - self._stamp_origin_ns) * 1e-9

    def _sample_time(self, msg, now):
        """Time (s) at which to sample the desired trajectory for a joint state.

        The state's stamp when it is on this node's clock (within STAMP_TOLERANCE of
        ``now``): the error e = q_d - q then compares positions of the same instant, also
        under simulated time where /clock and /joint_states arrive separately.  Otherwise
        (zero stamp, or a publisher on another clock) the time of receipt.
        """
        t = self._stamp_seconds(msg.header.stamp)
        if t is None or abs(t - now) > STAMP_TOLERANCE:
            return now
        return t

    # ---- joint states -> control law -> effort ------------------------------------------------

    def _chain_index(self, names):
        """Return the indices into ``names`` of the chain joints (cached per name list)."""
        key = tuple(names)
        if self._name_cache[0] == key:
            return self._name_cache[1]
        position = {}
        for i, name in enumerate(names):
            if name in position:
                raise JointStateError(f'joint {name!r} appears twice')
            position[name] = i
        chain = self.model.joint_names
        if not any(name in position for name in chain):
            index = None
        else:
            missing = [name for name in chain if name not in position]
            if missing:
                raise JointStateError(f'joints {missing} missing')
            index = np.array([position[name] for name in chain])
        self._name_cache = (key, index)
        return index

    def _state_from_message(self, msg, now):
        """(q, qd) in chain order from a JointState; None if it has none of our joints.

        Raises:
            JointStateError: missing joints, mismatched lengths, NaN/inf.
        """
        k = len(msg.name)
        for field in ('position', 'velocity', 'effort'):
            size = len(getattr(msg, field))
            if field == 'position' and size != k or size not in (0, k):
                raise JointStateError(f'{field} has {size} values for {k} names')
        index = self._chain_index(msg.name)
        if index is None:
            return None
        q = np.asarray(msg.position, dtype=float)[index]
        if not np.all(np.isfinite(q)):
            raise JointStateError(f'position contains NaN or inf: {q.tolist()}')
        if len(msg.velocity):
            qd = np.asarray(msg.velocity, dtype=float)[index]
            # All NaN: joint_state_broadcaster's filler for a missing velocity interface.
            if not np.all(np.isnan(qd)):
                if not np.all(np.isfinite(qd)):
                    raise JointStateError(f'velocity contains NaN or inf: {qd.tolist()}')
                return q, qd
        return q, self._velocity_estimator.update(q, self._measurement_time(msg, now))

    def _on_joint_state(self, msg):
        if self.model is None:
            return
        now = self._now()
        try:
            state = self._state_from_message(msg, now)
        except JointStateError as err:
            self.dropped_joint_states += 1
            self._warnings.warn('joint_states', f'dropped a joint_states message: {err}')
            return
        if state is None:
            return
        q, qd = state
        if self.timed_out or self._rehold or self.trajectory is None:
            self._resume(q, now)
        q_d, qd_d, qdd_d = self.trajectory.sample(self._sample_time(msg, now))
        try:
            tau = compute_effort(self.model, self.config, q, qd, q_d, qd_d, qdd_d)
        except (NonFiniteEffortError, StateError) as err:
            self.dropped_joint_states += 1
            self._warnings.warn('effort', f'no command for this joint state: {err}')
            return
        self._last_valid_state = time.monotonic_ns()
        order = self._command_index
        tau_cmd = tau[order].tolist()
        self._effort_pub.publish(Float64MultiArray(data=tau_cmd))
        # The diagnostics cost a DDS write each (~0.1 ms): only when someone listens.
        if self._tracking_error_pub.get_subscription_count():
            error = JointState(header=msg.header, name=self._joints)
            error.position = (q_d - q)[order].tolist()
            error.velocity = (qd_d - qd)[order].tolist()
            error.effort = tau_cmd
            self._tracking_error_pub.publish(error)
        if self._desired_pub.get_subscription_count():
            desired = JointTrajectory(header=msg.header, joint_names=self._joints)
            desired.points = [JointTrajectoryPoint(
                positions=q_d[order].tolist(), velocities=qd_d[order].tolist(),
                accelerations=qdd_d[order].tolist())]
            self._desired_pub.publish(desired)

    def _resume(self, q, now):
        """Start (or restart after a timeout / mode change) by holding the measured q."""
        if self.timed_out:
            self.get_logger().info('valid joint_states again: resuming, holding the current '
                                   'position (the previous trajectory is discarded)')
        self.timed_out = False
        self._rehold = False
        self.trajectory = Trajectory.hold(q, now)

    # ---- trajectories -----------------------------------------------------------------------

    def _on_trajectory(self, msg):
        if self.model is None or self.trajectory is None or self.timed_out:
            self.rejected_trajectories += 1
            self._warnings.warn('trajectory', 'rejected a trajectory: no valid joint_states '
                                'yet (the reference starts from the measured position)')
            return
        now = self._now()
        points = [TrajectoryPoint(_seconds(p.time_from_start), p.positions, p.velocities,
                                  p.accelerations) for p in msg.points]
        try:
            trajectory = trajectory_from_points(
                msg.joint_names, points, self.model.joint_names,
                self._stamp_seconds(msg.header.stamp), now, self.trajectory.sample(now))
        except TrajectoryError as err:
            self.rejected_trajectories += 1
            self._warnings.warn('trajectory', f'rejected a trajectory, keeping the previous '
                                f'one: {err}')
            return
        self.trajectory = trajectory
        log = self.get_logger().debug if len(points) == 1 else self.get_logger().info
        log(f'new trajectory: {len(points)} points, {trajectory.times[-1]:.3f} s')

    # ---- timeout and shutdown -----------------------------------------------------------------

    def _start_watchdog(self):
        if self._watchdog is not None:
            self.destroy_timer(self._watchdog)
        timeout = float(self.get_parameter('state_timeout').value)
        period = min(max(timeout / 4.0, 0.005), 0.1)
        self._watchdog = self.create_timer(period, self._check_state_timeout,
                                           clock=self._steady)

    def _check_state_timeout(self):
        if self._last_valid_state is None:
            return
        timeout = float(self.get_parameter('state_timeout').value)
        silence = (time.monotonic_ns() - self._last_valid_state) * 1e-9
        if silence <= timeout:
            return
        if not self.timed_out:
            self.timed_out = True
            self.get_logger().error(
                f'no valid joint_states for {silence:.3f} s (state_timeout {timeout} s): '
                'stopped commanding, publishing zero effort until states return')
        self.publish_zero_effort()

    def publish_zero_effort(self):
        """Publish an all-zero effort command (no-op before the model exists)."""
        if self.model is not None:
            self._effort_pub.publish(Float64MultiArray(data=[0.0] * self.model.n))


def main(args=None):
    """Run the node until Ctrl-C / SIGTERM; return the process exit code.

    Exit code 1 when the robot description or parameters are invalid (logged). On
    Ctrl-C/SIGTERM a final zero-effort command is published before shutting down, for
    the reason given in the module docstring. rclpy's own signal handlers are disabled
    for that: they would shut the context down before the node could publish.
    """
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)

    def _terminate(signum, frame):
        raise KeyboardInterrupt

    previous_sigterm = signal.signal(signal.SIGTERM, _terminate)
    node = None
    try:
        node = ComputedTorqueNode()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        while rclpy.ok():
            # A finite timeout lets Python run the signal handlers between waits.
            executor.spin_once(timeout_sec=0.1)
    except NodeConfigurationError:
        return 1
    except (KeyboardInterrupt, ExternalShutdownException):
        if node is not None and node.context.ok():
            node.publish_zero_effort()
            node.get_logger().info('shutting down: published zero effort')
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
