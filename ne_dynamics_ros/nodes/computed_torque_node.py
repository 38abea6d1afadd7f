"""ROS 2 node ``computed_torque_node``: joint states + reference trajectory -> effort commands.

The node is an adapter: it declares and validates parameters, converts messages to arrays
and back, publishes, logs (throttled) and shuts down cleanly. Every decision (the law,
001_ccc6fd40c72dea18.txt eqs 4.1, 4.4; trajectory replacement and sampling; holding;
velocity estimation; the state timeout; clamping and the NaN/inf guard) is made by
:class:`ne_dynamics_ros.control.controller.ComputedTorqueController`, which imports no ROS.

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
subscribes to them (each costs a DDS write); a new subscriber is noticed within the
watchdog period (state_timeout / 4, between 5 ms and 0.1 s).

Threads and processes: ``joint_states`` are answered on the executor's thread (the
control path; :func:`main` spins on rclpy's C++ ``EventsExecutor`` unless ``executor``
says ``single_threaded``). The state-timeout watchdog runs on a thread of its own, so no
Python callback, however long, can keep it from publishing. Trajectories never enter this
process as messages: a child process (:mod:`ne_dynamics_ros.nodes.trajectory_receiver`,
node ``<name>_trajectory_receiver`` in the same namespace, which ``ros2 topic info``
lists as the subscriber of ``~/joint_trajectory``) takes them, drops those over
``max_trajectory_bytes`` unread, reads the others with NumPy, checks their joints
against the chain, and passes columns of numbers over a socket to a third thread here,
which checks and interpolates them with a fixed number of NumPy operations whatever
their length and swaps the reference. Why: rclpy takes a message whole on the executor's
thread, holding the GIL, before any callback can look at its size, and Fast DDS
reassembles it on the process's own threads; measured with ``benchmarks/bench_node.py
--stall`` (issue 25), an rclpy node that only took trajectory bytes went 7-18 ms without
answering a state for a 4.4 MB trajectory and 95-134 ms for a 40 MB message (69-143 ms
with the subscription on a second executor thread), against 4 and 6 ms with the
subscription in a child process. The child lives as long as the node and exits when it
closes the socket (or dies). Trajectories are read and installed in the order they
arrive; should more than 10 wait to be read (the subscription's depth), the oldest is
dropped unread and counted.

Messages as bytes: ``joint_states`` is taken as serialized CDR bytes and read by
:mod:`ne_dynamics_ros.nodes.cdr` in Python, cheaper than rclpy's conversion into Python
objects (about 7 against 40 us), which cost more than the control law. An encoding other
than little-endian CDR goes to rclpy's deserializer; bytes neither can read are dropped
with a warning. The effort command and ``~/tracking_error`` are published as bytes
written there too. NumPy floating-point warnings raised while handling a message become
the node's own throttled warnings.

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
import gc
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
import rclpy
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSDurabilityPolicy, QoSHistoryPolicy, QoSProfile, QoSReliabilityPolicy
from rclpy.serialization import deserialize_message
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ne_dynamics_ros.control.controller import (
    Command, ComputedTorqueController, ControllerSettings, DEFAULT_SETTINGS,
    JointStateSample, MAX_STATE_JOINTS, SkipReason)
from ne_dynamics_ros.control.trajectory import TrajectoryError
from ne_dynamics_ros.nodes.cdr import (
    CdrError, float64_multi_array_bytes, joint_names_block, joint_state_bytes,
    JointStateFields, JointStateReader, UnsupportedEncoding)
from ne_dynamics_ros.nodes.trajectory_receiver import (
    message_frame, trajectory_fields, TrajectoryReceiver)
from ne_dynamics_ros.resources import find_resource

NODE_NAME = 'computed_torque_node'
#: Values of the ``executor`` parameter (see :func:`make_executor`).
EXECUTORS = ('events', 'single_threaded')

#: Default of ``max_trajectory_bytes``, the serialized size beyond which a trajectory
#: message is dropped without being read: 32 MiB holds the largest trajectory the node
#: can accept, the 100 000 points of
#: :data:`~ne_dynamics_ros.control.trajectory.MAX_POINTS` giving positions, velocities,
#: accelerations and efforts for a 7-joint arm (26 MB; 23 MB for six joints, whose
#: installation ``bench_node.py --stall`` measures against the 20 ms bound).
MAX_TRAJECTORY_BYTES = 32 * 1024 * 1024
#: The GIL switch interval set by :func:`main`, s: the thread that installs a
#: trajectory delays the control path by at most about this much at a time between its
#: NumPy operations (Python's default is 5 ms).
SWITCH_INTERVAL = 0.0005

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
#: Parameters that can be changed while running (the others are read-only); they are
#: the controller's run-time settings.
RUNTIME_PARAMETERS = tuple(DEFAULT_SETTINGS)
_SKIP_WARNINGS = {SkipReason.INVALID_STATE: 'dropped a joint_states message: ',
                  SkipReason.NO_VALID_EFFORT: 'no command for this joint state: '}


class NodeConfigurationError(ValueError):
    """The node cannot start: bad or missing robot description or parameters."""


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
    'dynamics_backend': ('generated', _descriptor(
        'How the inverse dynamics are computed: generated (the robot-specific straight-line '
        'program of Renaud 004, checked against the recursion at start-up; the node '
        'refuses to start on a mismatch) or recursive (the Newton-Euler recursion).',
        read_only=True, constraints='one of: generated, recursive')),
    'executor': ('events', _descriptor(
        'rclpy executor of the node when run as a program: events (rclpy.experimental.'
        'EventsExecutor, written in C++: about half the per-message overhead here) or '
        'single_threaded (rclpy.executors.SingleThreadedExecutor).', read_only=True,
        constraints='one of: events, single_threaded')),
    'mode': (DEFAULT_SETTINGS['mode'], _descriptor(
        'Control law: computed_torque (tau = RNEA(q, qd, qdd_d + kd*(qd_d - qd) + '
        'kp*(q_d - q)), 001 eqs 4.1, 4.4), feedforward (tau = RNEA(q_d, qd_d, qdd_d) + '
        'kp*e + kd*de) or gravity_compensation (tau = G(q)).',
        constraints='one of: computed_torque, feedforward, gravity_compensation')),
    'kp': (DEFAULT_SETTINGS['kp'], _descriptor(
        'Position gain, one value or one per joint (chain order); 1/s^2 in computed_torque '
        'mode, N*m/rad (N/m) in feedforward mode.', dynamic_typing=True, constraints='>= 0')),
    'kd': (DEFAULT_SETTINGS['kd'], _descriptor(
        'Velocity gain, one value or one per joint (chain order); 1/s in computed_torque '
        'mode, N*m*s/rad (N*s/m) in feedforward mode.', dynamic_typing=True,
        constraints='>= 0')),
    'ki': (DEFAULT_SETTINGS['ki'], _descriptor(
        'Integral gain, one value or one per joint (chain order), N*m/(rad*s) (N/(m*s)) in '
        'every mode but gravity_compensation: ki * integral of (q_d - q) dt is added to the '
        'command; reset when the reference restarts (hold, timeout, new trajectory), frozen '
        'on a joint while its command saturates. 0 (default): Lee et al.\'s law as '
        'published.', dynamic_typing=True, constraints='>= 0')),
    'integral_limit': (DEFAULT_SETTINGS['integral_limit'], _descriptor(
        'Bound of the integral torque, one value or one per joint, N*m (N); .inf: none '
        'beyond the freeze while saturated.', dynamic_typing=True, constraints='> 0')),
    'friction_compensation': (DEFAULT_SETTINGS['friction_compensation'], _descriptor(
        'Add the URDF <dynamics damping friction> torques to the command, evaluated at the '
        'desired velocity (so that dry friction is compensated as soon as the reference '
        'moves), at the measured velocity in gravity_compensation mode.')),
    'coulomb_velocity': (DEFAULT_SETTINGS['coulomb_velocity'], _descriptor(
        'Velocity scale v_s, rad/s (m/s), of the Coulomb friction compensated at the '
        'desired velocity: Fc*tanh(qd_d/v_s). The reference is noise-free, so the sign '
        'can be sharp (the model\'s 0.01 rad/s is kept at measured velocities).',
        dynamic_typing=True, constraints='> 0')),
    'hardware_compensates_gravity': (False, _descriptor(
        'The hardware adds g(q) itself (Universal Robots direct torque control): leave '
        'gravity out of the command in every mode. Fixed at start-up.', read_only=True)),
    'hardware_compensates_friction': (False, _descriptor(
        'The hardware adds its own friction model (UR direct torque control by default): '
        'never add the URDF friction, whatever friction_compensation says. Fixed at '
        'start-up.', read_only=True)),
    'gravity': (list(DEFAULT_SETTINGS['gravity']), _descriptor(
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
    'damping': (None, _descriptor(
        'Viscous friction per joint (chain order), N*m*s/rad or N*s/m, replacing the URDF '
        '<dynamics damping> (e.g. from ne-dynamics identify); unset = the URDF values.',
        read_only=True, dynamic_typing=True, constraints='>= 0')),
    'friction': (None, _descriptor(
        'Coulomb friction per joint (chain order), N*m or N, replacing the URDF <dynamics '
        'friction>; unset = the URDF values.', read_only=True, dynamic_typing=True,
        constraints='>= 0')),
    'state_timeout': (DEFAULT_SETTINGS['state_timeout'], _descriptor(
        'Seconds without a valid joint_states message after which the node stops '
        'commanding and publishes zero effort.', dynamic_typing=True, constraints='> 0')),
    'position_limit_margin': (DEFAULT_SETTINGS['position_limit_margin'], _descriptor(
        'rad (m for prismatic joints): a joint_states position beyond a URDF joint limit by '
        'more than this is dropped as a glitch (.inf: no check).', dynamic_typing=True,
        constraints='>= 0')),
    'max_trajectory_bytes': (MAX_TRAJECTORY_BYTES, _descriptor(
        'Serialized size (bytes) beyond which a trajectory message is dropped unread by '
        'the trajectory receiver process (which takes every message, so that the control '
        'path never does). The default holds the largest trajectory the node accepts '
        '(100 000 points with every field for 7 joints).',
        read_only=True, constraints='integer > 0')),
    'velocity_filter_cutoff': (DEFAULT_SETTINGS['velocity_filter_cutoff'], _descriptor(
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


def _unset_to_none(param):
    """Return a parameter's value; None if never set or set to an empty array."""
    if param.type_ == Parameter.Type.NOT_SET:
        return None
    if param.type_.name.endswith('_ARRAY') and len(param.value) == 0:
        return None
    return param.value


def _stamp_ns(fields):
    """Return the ``header.stamp`` of read message fields as integer nanoseconds."""
    return fields.sec * 1_000_000_000 + fields.nanosec


def _joint_state_fields(msg):
    """Return the :class:`JointStateFields` of a ``sensor_msgs/JointState`` object."""
    stamp = msg.header.stamp
    return JointStateFields(stamp.sec, stamp.nanosec,
                            msg.header.frame_id.encode('utf-8', 'replace'), tuple(msg.name),
                            msg.position, msg.velocity, msg.effort)


class _FloatingPointErrors:
    """Collect NumPy floating-point errors (``np.errstate(all='call')``) instead of warning."""

    def __init__(self):
        self.kinds = set()

    def __call__(self, kind, flag):
        self.kinds.add(kind)

    def context(self):
        """Return an ``np.errstate`` that reports here (NumPy keeps it per thread)."""
        return np.errstate(all='call', call=self)

    def take(self):
        """Return the sorted kinds seen since the last call and forget them."""
        kinds, self.kinds = sorted(self.kinds), set()
        return kinds


class _RosLogHandler(logging.Handler):
    """Forward Python ``logging`` records to a ROS logger."""

    def __init__(self, ros_logger):
        super().__init__()
        self._ros_logger = ros_logger

    def emit(self, record):
        message = record.getMessage()
        if record.levelno >= logging.ERROR:
            self._ros_logger.error(message)
        elif record.levelno >= logging.WARNING:
            self._ros_logger.warning(message)
        else:
            self._ros_logger.info(message)


class ComputedTorqueNode(Node):
    """Computed-torque controller node; see the module docstring for topics and timeout.

    ``controller`` is the :class:`ComputedTorqueController` (None until the robot
    description has arrived).

    Raises:
        NodeConfigurationError: from the constructor when the robot description given by
            parameter is missing or bad, or a parameter is invalid for the model (the
            error is also logged). ``main`` turns it into exit code 1.
    """

    def __init__(self, node_name=NODE_NAME, **kwargs):
        """Declare parameters, build the controller (if the URDF is given) and the endpoints.

        ``kwargs`` go to :class:`rclpy.node.Node` (``context``, ``parameter_overrides``,
        ``namespace``, ``cli_args``...).
        """
        super().__init__(node_name, **kwargs)
        # the package's Python log lines (e.g. the URDF loader's summary of ignored vendor
        # tags) go to this node's ROS logger
        self._log_bridge = _RosLogHandler(self.get_logger())
        logging.getLogger('ne_dynamics_ros').addHandler(self._log_bridge)
        logging.getLogger('ne_dynamics_ros').setLevel(logging.INFO)
        try:
            for name, (default, descriptor) in PARAMETERS.items():
                self.declare_parameter(name, default, descriptor)
            # Run-time parameters are checked now even if the model comes later (topic).
            ControllerSettings.from_values(self._runtime_values())
            if self.get_parameter('executor').value not in EXECUTORS:
                raise ValueError(f'executor {self.get_parameter("executor").value!r} is not '
                                 f'one of {EXECUTORS}')
            self._max_trajectory_bytes = self.get_parameter('max_trajectory_bytes').value
            if type(self._max_trajectory_bytes) is not int or self._max_trajectory_bytes <= 0:
                raise ValueError(f'max_trajectory_bytes must be an integer > 0, got '
                                 f'{self._max_trajectory_bytes!r}')
        except (ParameterException, ValueError) as err:
            self.get_logger().error(f'invalid parameter: {err}')
            self.destroy_node()
            raise NodeConfigurationError(f'invalid parameter: {err}') from err

        self._warnings = _ThrottledWarnings(self.get_logger())
        self._fp_errors = _FloatingPointErrors()
        self._stopping = threading.Event()
        self._command_lock = threading.Lock()
        self._threads = []
        self._receiver = None
        #: Trajectory messages dropped before the controller saw them (too large,
        #: undeserializable, superseded while waiting); the controller counts its own.
        self.dropped_trajectories = 0
        #: Trajectory messages that became the reference.
        self.accepted_trajectories = 0
        self.controller = None
        self._effort_pub = self.create_publisher(
            Float64MultiArray, 'effort_controller/commands', 10)
        self._state_reader = JointStateReader(MAX_STATE_JOINTS)
        #: controller.joints serialized once for ~/tracking_error (set by _build)
        self._joints_block = None
        #: (~/tracking_error, ~/desired) have subscribers; refreshed by the watchdog thread
        self._diagnostics_wanted = (False, False)
        self._ros_clock = self.get_clock()
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
        # Raw bytes, read by ne_dynamics_ros.nodes.cdr: rclpy's own conversion of a
        # JointState into Python objects costs more than the control law.
        self._joint_state_sub = self.create_subscription(
            JointState, 'joint_states', self._on_joint_state_bytes, JOINT_STATE_QOS,
            raw=True)
        # Trajectories are taken and read by a process of their own (see
        # ne_dynamics_ros.nodes.trajectory_receiver): no message, however large, is ever
        # copied in this process before the node sees it; what arrives here are columns.
        self._receiver = TrajectoryReceiver(
            self.resolve_topic_name('~/joint_trajectory'), self.get_name(),
            self.get_namespace(), self.context.get_domain_id(), self._max_trajectory_bytes,
            chain_joint_names=(None if self.controller is None
                               else self.controller.model.joint_names))
        self._threads = [
            threading.Thread(target=self._run_watchdog, name='state_timeout_watchdog',
                             daemon=True),
            threading.Thread(target=self._receive_trajectories, name='trajectory_reception',
                             daemon=True)]
        for thread in self._threads:
            thread.start()

    # ---- configuration ----------------------------------------------------------------------

    def destroy_node(self):
        """Stop the node's threads, detach the log bridge, then destroy the node."""
        if hasattr(self, '_stopping'):
            self.stop_threads()
        logging.getLogger('ne_dynamics_ros').removeHandler(self._log_bridge)
        return super().destroy_node()

    def _runtime_values(self, changes=()):
        """Run-time parameter values by name, with the ``Parameter`` list ``changes`` applied."""
        values = {name: self.get_parameter_or(name).value for name in RUNTIME_PARAMETERS}
        values.update((p.name, p.value) for p in changes if p.name in values)
        return values

    def _description_from_parameters(self):
        """URDF XML text from robot_description / urdf_path, or None if both are empty."""
        xml = self.get_parameter('robot_description').value
        if xml.strip():
            return xml
        path = self.get_parameter('urdf_path').value
        if not path.strip():
            return None
        from ne_dynamics_ros.dynamics.urdf_import import read_urdf_text
        if not os.path.exists(path):
            if os.path.isabs(path):
                raise NodeConfigurationError(f'urdf_path {path!r}: no such file')
            try:
                path = str(find_resource(path))      # a path inside the package's share
            except FileNotFoundError as err:
                raise NodeConfigurationError(
                    f'urdf_path {path!r} not found: tried {os.path.abspath(path)!r}, then '
                    f'{err}') from None
        try:
            return read_urdf_text(path)              # encoding as declared, size bound
        except ValueError as err:
            raise NodeConfigurationError(f'cannot read urdf_path {path!r}: {err}') from None

    def _build(self, urdf_xml):
        """Build the controller from the URDF and the parameters.

        Raises:
            NodeConfigurationError: the URDF or a parameter is unusable.
        """
        p = {name: self.get_parameter_or(name) for name in PARAMETERS}
        try:
            controller = ComputedTorqueController.from_urdf(
                urdf_xml, base_link=p['base_link'].value or None,
                tip_link=p['tip_link'].value or None, convention=p['convention'].value,
                armature=_unset_to_none(p['armature']), damping=_unset_to_none(p['damping']),
                friction=_unset_to_none(p['friction']), settings=self._runtime_values(),
                hardware_compensates_gravity=p['hardware_compensates_gravity'].value,
                hardware_compensates_friction=p['hardware_compensates_friction'].value,
                joints=_unset_to_none(p['joints']),
                effort_limits=_unset_to_none(p['effort_limits']),
                dynamics_backend=p['dynamics_backend'].value)
        except ValueError as err:
            # ModelError/URDFError/StateError and ControlParameterError are ValueErrors.
            raise NodeConfigurationError(f'cannot build the robot model: {err}') from err
        self._joints_block = joint_names_block(controller.joints)
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

    def _validate_parameters(self, params):
        """On-set callback: refuse invalid run-time values with a reason."""
        values = self._runtime_values(params)
        try:
            if self.controller is not None:
                self.controller.validate(**values)
            else:
                ControllerSettings.from_values(values)
        except ValueError as err:
            return SetParametersResult(successful=False, reason=str(err))
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params):
        """Post-set callback: hand the new run-time values to the controller."""
        names = {p.name for p in params}
        if self.controller is not None and names & set(RUNTIME_PARAMETERS):
            changed = {k: v for k, v in self._runtime_values().items() if k in names}
            settings = self.controller.reconfigure(**changed)
            self.get_logger().info(
                f'parameters {sorted(names)} set: mode {settings.mode.value}, '
                f'kp {settings.kp.tolist()}, kd {settings.kd.tolist()}')

    def _on_robot_description(self, msg):
        if self.controller is not None:
            return
        try:
            self._build(msg.data)
        except NodeConfigurationError as err:
            self.get_logger().error(f'{err}; still waiting for a valid robot_description')
            return
        self.destroy_subscription(self._description_sub)
        if self._receiver is not None:
            self._receiver.set_chain(self.controller.model.joint_names)

    # ---- joint states -> controller -> effort ---------------------------------------------

    def _on_joint_state_bytes(self, data):
        """Executor thread: one serialized ``joint_states`` message (the control path)."""
        controller = self.controller
        if controller is None:
            return
        try:
            state = self._state_reader.read(data)
        except UnsupportedEncoding:
            # not little-endian plain CDR: rclpy's deserializer reads every encoding
            try:
                msg = deserialize_message(data, JointState)
            except Exception as err:  # noqa: BLE001 - whatever rclpy raises, drop it
                self._skip(controller.reject_state(
                    f'cannot deserialize it: {type(err).__name__}: {err}'))
                return
            state = _joint_state_fields(msg)
        except CdrError as err:
            self._skip(controller.reject_state(str(err)))
            return
        self._answer(controller, state)

    def _on_joint_state(self, msg):
        """Answer a ``sensor_msgs/JointState`` object as the subscription answers its bytes."""
        controller = self.controller
        if controller is not None:
            self._answer(controller, _joint_state_fields(msg))

    def _now_ns(self):
        """ROS time now, ns: the system clock unless simulated time (/clock) is active."""
        clock = self._ros_clock
        return clock.now().nanoseconds if clock.ros_time_is_active else time.time_ns()

    def _answer(self, controller, state):
        """Command (and diagnose) one joint state, a :class:`JointStateFields`."""
        # one lock for "decide, then publish" here and in the watchdog: the watchdog's zero
        # command can never overtake a command of a state that ended the timeout
        with self._command_lock, self._fp_errors.context():
            out = controller.update(self._now_ns(), JointStateSample(
                state.names, state.position, state.velocity, state.effort, _stamp_ns(state),
                time.monotonic_ns()))
            commanded = out.__class__ is Command
            if commanded:
                self._effort_pub.publish(float64_multi_array_bytes(out.effort_values))
        if self._fp_errors.kinds:
            self._warn_floating_point(self._fp_errors, 'answering a joint_states message (the '
                                      'command, if any, was checked finite and within the '
                                      'limits)')
        if not commanded:
            self._skip(out)
            return
        if out.resumed:
            self.get_logger().info('valid joint_states again: resuming, holding the current '
                                   'position (the previous trajectory is discarded)')
        # The diagnostics cost a DDS write each: only when someone listens (the watchdog
        # thread refreshes who listens, see _run_watchdog).
        if self._diagnostics_wanted[0]:
            self._tracking_error_pub.publish(joint_state_bytes(
                state.sec, state.nanosec, state.frame_id, self._joints_block,
                out.position_error_values, out.velocity_error_values, out.effort_values))
        if self._diagnostics_wanted[1]:
            q_d, qd_d, qdd_d = out.desired_values
            desired = JointTrajectory(joint_names=controller.joints)
            desired.header.stamp.sec = state.sec
            desired.header.stamp.nanosec = state.nanosec
            desired.header.frame_id = state.frame_id.decode('utf-8', 'replace')
            desired.points = [JointTrajectoryPoint(positions=q_d, velocities=qd_d,
                                                   accelerations=qdd_d)]
            self._desired_pub.publish(desired)

    def _skip(self, out):
        """Warn (throttled) of a :class:`NoCommand`, unless the state was not ours."""
        if out.reason in _SKIP_WARNINGS:         # not NOT_CONTROLLED, not INACTIVE
            self._warnings.warn(out.reason.value, _SKIP_WARNINGS[out.reason] + out.message)

    def _warn_floating_point(self, errors, doing):
        """Warn (throttled) of the floating-point errors ``errors`` collected while ``doing``."""
        kinds = errors.take()
        if kinds:
            self._warnings.warn('floating_point',
                                f'floating-point {", ".join(kinds)} while {doing}')

    def _on_trajectory_bytes(self, data):
        """Read, check and install one serialized trajectory in this thread.

        What the receiving process does with each message (:func:`message_frame`), done
        here: for a caller that holds message bytes in this process.
        """
        controller = self.controller
        header, arrays = message_frame(data, self._max_trajectory_bytes,
                                       None if controller is None
                                       else controller.model.joint_names)
        self._handle_frame(header, arrays, self.get_clock().now().nanoseconds)

    def _receive_trajectories(self):
        """Trajectory thread: handle the receiving process's frames until it ends."""
        receiver = self._receiver
        for header, arrays in receiver.frames():
            if header['kind'] == 'ready':
                self.get_logger().debug('trajectory receiver subscribed')
                continue
            # the time the receiving process took the message, on this node's clock
            age = max(0, time.monotonic_ns() - header['received_monotonic_ns'])
            try:
                self._handle_frame(header, arrays,
                                   self.get_clock().now().nanoseconds - age)
            except Exception as err:  # noqa: BLE001 - a bad frame must not end the thread
                self.dropped_trajectories += 1
                self._warnings.warn('trajectory', f'dropped a trajectory message: '
                                    f'{type(err).__name__}: {err}')
        if not self._stopping.is_set():
            try:
                code = receiver.process.wait(1.0)
            except subprocess.TimeoutExpired:
                code = None
            self.get_logger().error(
                f'the trajectory receiver process ended (exit code {code}): no trajectory '
                'is received any more; the reference in force stays')

    def _handle_frame(self, header, arrays, received_ns):
        """Count, warn about or install one frame of :func:`message_frame`."""
        kind = header['kind']
        if kind == 'dropped':
            self.dropped_trajectories += 1
            self._warnings.warn('trajectory_superseded' if header.get('superseded')
                                else 'trajectory', header['reason'])
        elif kind == 'rejected':
            if self.controller is None:
                self._warnings.warn('trajectory', 'rejected a trajectory: no robot model yet')
                return
            err = self.controller.reject_trajectory(header['reason'])
            self._warnings.warn('trajectory', f'rejected a trajectory, keeping the previous '
                                f'one: {err}')
        elif kind == 'trajectory':
            self._install(trajectory_fields(header, arrays), received_ns)

    def _install(self, fields, received_ns):
        """Check, interpolate and install one :class:`JointTrajectoryFields` (any thread).

        ``received_ns``: when it arrived, on the node's clock.
        """
        if self.controller is None:
            self._warnings.warn('trajectory', 'rejected a trajectory: no robot model yet')
            return
        fp_errors = _FloatingPointErrors()
        try:
            with fp_errors.context():
                prepared = self.controller.prepare_trajectory(
                    fields.joint_names, fields.points, _stamp_ns(fields), received_ns)
            trajectory = self.controller.install_trajectory(prepared)
        except TrajectoryError as err:
            self._warnings.warn('trajectory', f'rejected a trajectory, keeping the previous '
                                f'one: {err}')
            return
        finally:
            self._warn_floating_point(fp_errors, 'preparing a trajectory')
        self.accepted_trajectories += 1
        count = len(trajectory.times)
        log = self.get_logger().debug if count == 1 else self.get_logger().info
        log(f'new trajectory: {count} points, {trajectory.times[-1]:.3f} s')

    # ---- timeout and shutdown -----------------------------------------------------------------

    def _watchdog_period(self):
        timeout = float(self.get_parameter('state_timeout').value)
        return min(max(timeout / 4.0, 0.005), 0.1)

    def _run_watchdog(self):
        """Watchdog thread: check the state timeout every period until the node stops."""
        while not self._stopping.wait(self._watchdog_period()):
            try:
                self._check_state_timeout()
                # off the control path: whether anyone subscribes to the diagnostics
                self._diagnostics_wanted = (
                    self._tracking_error_pub.get_subscription_count() > 0,
                    self._desired_pub.get_subscription_count() > 0)
            except Exception as err:  # noqa: BLE001 - e.g. the context shut down meanwhile
                if self._stopping.is_set() or not self.context.ok():
                    return
                self._warnings.warn('watchdog', f'watchdog: {type(err).__name__}: {err}')

    def _check_state_timeout(self):
        if self.controller is None:
            return
        with self._command_lock:
            timeout = self.controller.check_timeout(time.monotonic_ns())
            if timeout is None:
                return
            self._effort_pub.publish(float64_multi_array_bytes(timeout.effort.tolist()))
        if timeout.started:
            self.get_logger().error(
                f'no valid joint_states for {timeout.silence:.3f} s (state_timeout '
                f'{self.controller.settings.state_timeout} s): stopped commanding, publishing '
                'zero effort until states return')

    def stop_threads(self, timeout=2.0):
        """Stop the watchdog, the trajectory receiver and its thread (idempotent)."""
        self._stopping.set()
        if self._receiver is not None:
            self._receiver.close()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout)

    def drop_summary(self):
        """One line: what the node refused since it started (logged on shutdown)."""
        c = self.controller
        return (f'{c.dropped_joint_states if c else 0} joint_states messages dropped, '
                f'{c.rejected_trajectories if c else 0} trajectories rejected, '
                f'{self.dropped_trajectories} trajectory messages dropped unread, '
                f'{self.accepted_trajectories} trajectories accepted')

    def publish_zero_effort(self):
        """Publish an all-zero effort command (no-op before the model exists)."""
        if self.controller is not None:
            self._effort_pub.publish(
                float64_multi_array_bytes(self.controller.zero_effort().tolist()))


def make_executor(kind, context=None):
    """Return the rclpy executor named by the ``executor`` parameter.

    ``events``: ``rclpy.experimental.EventsExecutor`` (C++; shipped with Jazzy's rclpy);
    ``single_threaded``: ``rclpy.executors.SingleThreadedExecutor``.

    Raises:
        NodeConfigurationError: an unknown kind.
    """
    if kind == 'events':
        from rclpy.experimental import EventsExecutor
        return EventsExecutor(context=context)
    if kind == 'single_threaded':
        return SingleThreadedExecutor(context=context)
    raise NodeConfigurationError(f'executor {kind!r} is not one of {EXECUTORS}')


def main(args=None):
    """Run the node until Ctrl-C / SIGTERM; return the process exit code.

    Exit code 1 when the robot description or parameters are invalid (logged). On
    Ctrl-C/SIGTERM a final zero-effort command is published before shutting down, for
    the reason given in the module docstring. rclpy's own signal handlers are disabled
    for that: they would shut the context down before the node could publish. Signals
    after the first are ignored (``ros2 launch`` forwards Ctrl-C a second time); after a
    signal-ended run SIGINT and SIGTERM stay ignored until the process exits, otherwise
    the previous handlers are restored.
    """
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    sys.setswitchinterval(SWITCH_INTERVAL)
    interrupted = []
    executor = None

    def _terminate(signum, frame):
        # Ctrl-C in a terminal reaches the whole process group: ros2 launch forwards it a
        # second time. Only the first one stops the node; later ones must not interrupt
        # the zero-effort command and the clean shutdown.
        if interrupted:
            return
        interrupted.append(signum)
        if executor is None:
            raise KeyboardInterrupt             # still starting: abandon the start
        # Spinning: only ask the loop to stop. An exception raised here could land inside
        # rclpy's C++ message conversion, which turns it into a RuntimeError.
        executor.wake()

    previous_sigterm = signal.signal(signal.SIGTERM, _terminate)
    previous_sigint = signal.signal(signal.SIGINT, _terminate)
    node = None
    try:
        node = ComputedTorqueNode()
        spinning = make_executor(node.get_parameter('executor').value)
        spinning.add_node(node)
        executor = spinning
        while rclpy.ok() and not interrupted:
            # A finite timeout lets Python run the signal handlers between waits.
            executor.spin_once(timeout_sec=0.1)
        if interrupted:
            raise KeyboardInterrupt
    except NodeConfigurationError:
        return 1
    except (KeyboardInterrupt, ExternalShutdownException):
        if node is not None and node.context.ok():
            node.stop_threads()       # no watchdog publishing after the final zero command
            node.publish_zero_effort()
            node.get_logger().info('shutting down: published zero effort; '
                                   + node.drop_summary())
    finally:
        # Tear down while our handlers still swallow late signals (ros2 launch forwards a
        # second SIGINT): the executor first, so that no C++ executor calls back into
        # Python afterwards, where a KeyboardInterrupt would abort the process.
        signalled = bool(interrupted)
        interrupted.append(None)            # from here on every signal is swallowed
        if executor is not None:
            executor.shutdown()
            executor.remove_node(node)
        executor = spinning = None
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        gc.collect()
        # After a signal the process is on its way out: a forwarded second Ctrl-C must
        # not turn into a KeyboardInterrupt traceback while the interpreter exits.
        signal.signal(signal.SIGTERM, signal.SIG_IGN if signalled else previous_sigterm)
        signal.signal(signal.SIGINT, signal.SIG_IGN if signalled else previous_sigint)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
