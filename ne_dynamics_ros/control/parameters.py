"""Every parameter of ``computed_torque_node``, declared once.

One table (:data:`PARAMETERS`, in the order the docs list them) of
:class:`~ne_dynamics_ros.control.config.spec.ParameterSpec` rows: name, type, default,
unit, the constraint in words, the description, whether it may change at run time, and
the function that checks a value. The node's own rows are here; each law's rows are in
its module (:attr:`~ne_dynamics_ros.control.laws.base.Law.parameters`), listed after the
gains in the registry's order. From the table are built:

* the node's parameter descriptors and its on-set validation
  (:mod:`ne_dynamics_ros.nodes.computed_torque.ros_parameters`);
* the controller's settings validation (:meth:`~ne_dynamics_ros.control.controller.
  ControllerSettings.from_values` checks each run-time setting with the check here);
* the parameter table of the docs (:func:`markdown_table`, written by ``docs/conf.py``).

As generate_parameter_library does for ros2_controllers, but in Python. Pure module (no
ROS import). A ``None`` default means "not set: the model's value" (the URDF's limits,
chain order, no armature).
"""
import math

from ne_dynamics_ros.control.config.spec import ParameterSpec
from ne_dynamics_ros.control.laws.registry import (DEFAULT_MODE, LAW_CLASSES, LAW_PARAMETERS,
                                                   parse_mode)
from ne_dynamics_ros.errors import ControlParameterError
from ne_dynamics_ros.control.config.parameter_checks import (
    checked_byte_count, checked_cutoff, checked_debounce, checked_delay,
    checked_drive_values,
    checked_effort_limits, checked_flag, checked_fraction, checked_friction_offset,
    checked_friction_velocity, checked_gains, checked_gravity, checked_integral_limit,
    checked_joint_names, checked_ki, checked_non_negative,
    checked_non_negative_or_inf, checked_one_of, checked_positive,
    checked_latency, checked_priority, checked_text, checked_thresholds)

#: The rclpy executors the node can spin on (the ``executor`` parameter).
EXECUTORS = ('events', 'single_threaded')
CONVENTIONS = ('dh', 'mdh')
DYNAMICS_BACKENDS = ('generated', 'recursive')
#: Default bound of a trajectory message, bytes: the largest trajectory the node accepts
#: (100 000 points with every field for 7 joints) fits.
MAX_TRAJECTORY_BYTES = 32 * 1024 * 1024


def checked_mode(value, n, name):
    """Check a ``mode``: one of the control modes."""
    if not isinstance(value, str):
        raise ControlParameterError(f'{name} must be a string, got {value!r}')
    return parse_mode(value)


#: The parameters of computed_torque_node, in the order the docs list them.
PARAMETERS = (
    ParameterSpec('robot_description', 'string', '',
                  'URDF XML of the robot. If empty, urdf_path is used; if both are empty the '
                  'node waits for the robot_description topic.', check=checked_text),
    ParameterSpec('urdf_path', 'string', '',
                  'Path of a URDF file (absolute, relative to the working directory, or '
                  'relative to the share directory of ne_dynamics_ros, e.g. '
                  'config/puma560.urdf).', check=checked_text),
    ParameterSpec('base_link', 'string', '', 'First link of the chain; empty = URDF root '
                  'link.', check=checked_text),
    ParameterSpec('tip_link', 'string', '', 'Last link of the chain; empty = the single tip '
                  'of the movable tree.', check=checked_text),
    ParameterSpec('convention', 'string', 'mdh',
                  'Frame convention of the Newton-Euler recursion: mdh (Craig 2005) or dh '
                  '(Luh-Walker-Paul, Lee et al. 1982 eqs 3.21-3.27). Both give the same '
                  'torques.',
                  constraints='one of: dh, mdh', check=checked_one_of(CONVENTIONS)),
    ParameterSpec('dynamics_backend', 'string', 'generated',
                  'How the inverse dynamics are computed: generated (the robot-specific '
                  'straight-line program of Renaud 1987, checked against the recursion when '
                  'configured; configuring fails on a mismatch) or recursive (the '
                  'Newton-Euler recursion).', constraints='one of: generated, recursive',
                  check=checked_one_of(DYNAMICS_BACKENDS)),
    ParameterSpec('executor', 'string', 'events',
                  'rclpy executor of the node when run as a program: events '
                  '(rclpy.experimental.EventsExecutor, written in C++: about half the '
                  'per-message overhead here) or single_threaded '
                  '(rclpy.executors.SingleThreadedExecutor).',
                  constraints='one of: events, single_threaded', check=checked_one_of(EXECUTORS)),
    ParameterSpec('realtime_priority', 'integer', 50,
                  'SCHED_FIFO priority of the threads that answer /joint_states and command '
                  'on state loss, when the node runs as a program (ros2_control\'s controller '
                  'manager uses 50); where the OS refuses it (no realtime group or ulimit -r, '
                  'no CAP_SYS_NICE) a lower nice value, else the default; logged at start. '
                  'The trajectory receiver stays at the default policy, below them. 0: leave '
                  'the scheduling alone.', constraints='0 to 99', check=checked_priority),
    ParameterSpec('cpu_dma_latency', 'integer', 0,
                  'The CPUs\' wake-up latency the node asks of Linux while it runs as a program '
                  '(PM QoS, /dev/cpu_dma_latency, as cyclictest does): no idle state slower to '
                  'leave is used, so a state or a timer wakes the control path without a deep '
                  'idle state\'s exit in the way (0: idle CPUs poll; they draw more power). '
                  'Where the OS refuses it (the device is root\'s) nothing changes; logged at '
                  'start. -1: leave it alone.', unit='us', constraints='-1 or more',
                  check=checked_latency),
    ParameterSpec('autostart', 'bool', True,
                  'Configure and activate at start-up (ros2 run, the demo, the simulated '
                  'arms). false: the node starts unconfigured and waits for ros2 lifecycle '
                  'set configure / activate (a real arm, after switching its controllers).',
                  check=checked_flag),
    ParameterSpec('mode', 'string', DEFAULT_MODE,
                  'Control law: ' + '; '.join(f'{law.name} ({law.summary})'
                                              for law in LAW_CLASSES) + '.',
                  constraints='one of: ' + ', '.join(law.name for law in LAW_CLASSES),
                  runtime=True, check=checked_mode),
    ParameterSpec('kp', 'double_array', 100.0,
                  'Position gain, one value or one per joint (chain order); 1/s^2 in '
                  'computed_torque mode, N*m/rad (N/m) in feedforward mode.',
                  unit='1/s^2 or N*m/rad', constraints='>= 0', runtime=True, check=checked_gains),
    ParameterSpec('kd', 'double_array', 20.0,
                  'Velocity gain, one value or one per joint (chain order); 1/s in '
                  'computed_torque mode, N*m*s/rad (N*s/m) in feedforward mode.',
                  unit='1/s or N*m*s/rad', constraints='>= 0', runtime=True, check=checked_gains),
    ParameterSpec('ki', 'double_array', 0.0,
                  'Integral gain, one value or one per joint (chain order), in every mode but '
                  'gravity_compensation: ki * integral of (q_d - q) dt is added to the '
                  'command; reset when the reference restarts (hold, timeout, new '
                  'trajectory), frozen on a joint while its command saturates. 0 (default): '
                  "Lee et al.'s law as published.", unit='N*m/(rad*s)', constraints='>= 0',
                  runtime=True, check=checked_ki),
    ParameterSpec('integral_limit', 'double_array', math.inf,
                  'Bound of the integral torque, one value or one per joint; .inf: none '
                  'beyond the freeze while saturated.', unit='N*m', constraints='> 0',
                  runtime=True, check=checked_integral_limit),
    *LAW_PARAMETERS,
    ParameterSpec('friction_compensation', 'bool', False,
                  'Add the URDF <dynamics damping friction> torques to the command, evaluated '
                  'at the desired velocity (so that dry friction is compensated as soon as '
                  'the reference moves), at the measured velocity in gravity_compensation '
                  'mode.', runtime=True, check=checked_flag),
    ParameterSpec('coulomb_velocity', 'double', 0.003,
                  'Velocity scale v_s of the Coulomb friction compensated at the desired '
                  'velocity: Fc*tanh(qd_d/v_s). The reference is noise-free, so the sign can '
                  "be sharp (the model's 0.01 rad/s is kept at measured velocities).",
                  unit='rad/s', constraints='> 0', runtime=True, check=checked_positive),
    ParameterSpec('hardware_compensates_gravity', 'bool', False,
                  'The hardware adds g(q) itself (Universal Robots direct torque control): '
                  'leave gravity out of the command in every mode.', check=checked_flag),
    ParameterSpec('hardware_compensates_friction', 'bool', False,
                  'The hardware adds its own friction model (UR direct torque control by '
                  'default): never add the URDF friction, whatever friction_compensation '
                  'says.', check=checked_flag),
    ParameterSpec('gravity', 'double_array', [0.0, 0.0, -9.81],
                  'Gravity acceleration in the chain base frame.', unit='m/s^2',
                  constraints='3 finite numbers', runtime=True, check=checked_gravity),
    ParameterSpec('effort_limits', 'double_array', None,
                  'Symmetric effort limits, one per joint (chain order); unset = URDF <limit '
                  'effort> (inf where absent). Every command is clamped to them.',
                  unit='N*m or N', constraints='> 0', check=checked_effort_limits),
    ParameterSpec('effort_margin', 'double', 0.1,
                  'Share of each effort limit left for the feedback when a trajectory is '
                  'checked against the limits before it becomes the reference: the effort '
                  'the model needs along it must stay within effort_limits*(1-effort_margin).',
                  constraints='0 <= value < 1', runtime=True, check=checked_fraction),
    ParameterSpec('infeasible_trajectory', 'string', 'reject',
                  'A trajectory (goal or topic) needing more effort than effort_limits less '
                  'effort_margin: reject (refused before any motion, with the joint, the time '
                  'from start, the effort needed and the limit) or scale (played slower by '
                  "the smallest uniform stretch that fits, Hollerbach's dynamic time "
                  'scaling; refused when gravity alone exceeds a limit).',
                  constraints='one of: reject, scale', runtime=True,
                  check=checked_one_of(('reject', 'scale'))),
    ParameterSpec('effort_check_rate', 'double', 500.0,
                  'Samples per second at which a trajectory is checked against the effort '
                  'limits (the rate of joint_states, which sets the control rate); 0: no '
                  'check.', unit='Hz', constraints='>= 0', runtime=True,
                  check=checked_non_negative),
    ParameterSpec('joints', 'string_array', None,
                  'Order of the joints in the effort command (as configured in the effort '
                  'controller); unset = chain order. Must list every chain joint once.',
                  check=checked_joint_names),
    ParameterSpec('ros2_control.controller_manager', 'string', '',
                  'The controller_manager the effort command goes through (e.g. '
                  '/controller_manager); empty: none. Set: activate switches to '
                  'ros2_control.effort_controller (from ros2_control.hold_controller), '
                  'deactivate switches back instead of commanding zero, and while the effort '
                  'controller is not active (its ~/activity) the node commands nothing, says '
                  'so on /diagnostics and holds the position measured when it returns.',
                  check=checked_text),
    ParameterSpec('ros2_control.effort_controller', 'string', 'effort_controller',
                  'The JointGroupEffortController taking the command '
                  '(ros2_control.controller_manager set).', check=checked_text),
    ParameterSpec('ros2_control.hold_controller', 'string', '',
                  'The controller that holds the arm while the node does not command it (a '
                  'joint_trajectory_controller on the effort interfaces, as '
                  'ros2_control.launch.py loads); empty: none, deactivate commands zero.',
                  check=checked_text),
    ParameterSpec('armature', 'double_array', None,
                  'Reflected rotor inertia per joint (chain order), added as armature*qdd; '
                  'unset = zero.', unit='kg*m^2 or kg', constraints='>= 0',
                  check=checked_drive_values),
    ParameterSpec('damping', 'double_array', None,
                  'Viscous friction per joint (chain order), replacing the URDF <dynamics '
                  'damping> (e.g. from ne-dynamics identify); unset = the URDF values.',
                  unit='N*m*s/rad or N*s/m', constraints='>= 0', check=checked_drive_values),
    ParameterSpec('friction', 'double_array', None,
                  'Coulomb friction per joint (chain order), replacing the URDF <dynamics '
                  'friction>; unset = the URDF values.', unit='N*m or N', constraints='>= 0',
                  check=checked_drive_values),
    ParameterSpec('friction_velocity', 'double_array', None,
                  'Identified velocity scale v_s of each joint\'s Coulomb friction '
                  'Fc*tanh(qd/v_s) at measured velocities (chain order, from ne-dynamics '
                  'identify): the momentum observer and gravity_compensation/comply use it; '
                  'the noise-free reference keeps coulomb_velocity. Unset = 0.01.',
                  unit='rad/s or m/s', constraints='> 0', check=checked_friction_velocity),
    ParameterSpec('friction_offset', 'double_array', None,
                  'Constant effort per joint added to the friction model (chain order, '
                  'identified by ne-dynamics identify: a drive\'s or torque sensor\'s offset); '
                  'unset = zero.', unit='N*m or N', constraints='finite',
                  check=checked_friction_offset),
    ParameterSpec('delay_compensation', 'double', 0.0,
                  'Loop delay T the control law predicts across: from a state stamped t the '
                  'command is computed for t + T (the reference sampled there, the state '
                  'carried forward with its tracking error growing at its present rate), '
                  'for a loop whose commands act T after the state was measured (through '
                  'controller_manager: the node\'s "loop delay" on /diagnostics). The '
                  'published error and the goal\'s tolerances stay those of the state. '
                  '0: no prediction.', unit='s', constraints='0 <= value <= 0.1',
                  runtime=True, check=checked_delay),
    ParameterSpec('delay_prediction', 'string', 'model',
                  'How the state is carried across delay_compensation: model (the model\'s '
                  'forward dynamics under the command in force: M(q)^-1 (tau - C qd - g - '
                  'friction), with the gravity and friction the hardware leaves to the '
                  'command) or error_rate (the tracking error growing at its present rate). '
                  'The first state of a run, with no command in force yet, uses error_rate.',
                  constraints='one of: model, error_rate', runtime=True,
                  check=checked_one_of(('model', 'error_rate'))),
    ParameterSpec('state_timeout', 'double', 0.1,
                  'Seconds without a valid joint_states message after which the node stops '
                  'following the reference: it aborts the goal and commands what '
                  'state_loss_policy says, then zero effort.', unit='s', constraints='> 0',
                  runtime=True, check=checked_positive),
    ParameterSpec('state_loss_policy', 'string', 'hold_gravity',
                  'What the node commands for state_loss_hold seconds after a state timeout: '
                  'hold_gravity (g(q) of the model, the adaptive load included, at the last '
                  'measured position: no PD, no motion feed-forward), hold_last (the last '
                  'command) or zero (zero effort at once). Then zero effort until states '
                  'return.', constraints='one of: hold_gravity, hold_last, zero', runtime=True,
                  check=checked_one_of(('hold_gravity', 'hold_last', 'zero'))),
    ParameterSpec('state_loss_hold', 'double', 1.0,
                  'Seconds after a state timeout during which state_loss_policy holds (3x '
                  'the longest pause measured on this machine, a 335 ms DDS discovery '
                  'stall), then zero effort.', unit='s', constraints='>= 0', runtime=True,
                  check=checked_non_negative),
    ParameterSpec('contact.threshold', 'double_array', None,
                  'External effort (the momentum observer\'s r) beyond which a joint is in '
                  'contact: one value or one per joint (chain order); unset: no detection '
                  '(r is still published). ne-dynamics identify writes it from the '
                  'recording\'s residual.', unit='N*m or N', constraints='> 0 (.inf: off)',
                  runtime=True, check=checked_thresholds),
    ParameterSpec('contact.debounce', 'integer', 3,
                  'States in a row over contact.threshold before a contact is reported.',
                  constraints='integer 1..1000', runtime=True, check=checked_debounce),
    ParameterSpec('contact.reaction', 'string', 'hold',
                  'On a contact: hold (abort the goal, drop the trajectory, hold the '
                  'position measured then), comply (abort, command gravity and friction '
                  'compensation only: the arm yields) or ignore (report only). Resuming '
                  'takes a new goal or trajectory.', constraints='one of: hold, comply, ignore',
                  runtime=True, check=checked_one_of(('hold', 'comply', 'ignore'))),
    ParameterSpec('contact.sustained_time', 'double', 0.2,
                  'The second contact level: the observer\'s r low-pass filtered over this '
                  'time constant; a joint whose filtered r exceeds its Coulomb friction plus '
                  'contact.sustained_level of the margin above it (up to contact.threshold) '
                  'is in contact: a push held 0.3-3 s below the threshold. 0: threshold '
                  'only.', unit='s', constraints='>= 0', runtime=True,
                  check=checked_non_negative),
    ParameterSpec('contact.sustained_level', 'double', 0.6,
                  'The second contact level\'s share of the margin between a joint\'s '
                  'Coulomb friction and its contact.threshold (the friction band itself '
                  'never counts: a stuck joint shows up to that much).',
                  constraints='>= 0 and < 1', runtime=True, check=checked_fraction),
    ParameterSpec('contact.observer_gain', 'double', 60.0,
                  'K_O, the momentum observer\'s bandwidth: r follows the external effort '
                  'with a first-order lag of 1/K_O s (60: 90 % in 38 ms).', unit='1/s',
                  constraints='> 0', runtime=True, check=checked_positive),
    ParameterSpec('external_wrench_frame', 'string', 'tip',
                  'The frame ~/external_wrench is published in: tip (the tip link\'s: the '
                  'wrench a sensor at the flange would read) or base (the base link\'s). '
                  'Either way the force acts at the tip link\'s origin and the moment is '
                  'about it.', constraints='one of: tip, base', runtime=True,
                  check=checked_one_of(('tip', 'base'))),
    ParameterSpec('position_limit_margin', 'double', 0.2,
                  'A joint_states position beyond a URDF joint limit by more than this is '
                  'dropped as a glitch (.inf: no check).', unit='rad or m',
                  constraints='>= 0', runtime=True, check=checked_non_negative_or_inf),
    ParameterSpec('max_trajectory_bytes', 'integer', MAX_TRAJECTORY_BYTES,
                  'Serialized size beyond which a trajectory message is dropped unread by '
                  'the trajectory receiver process (which takes every message, so that the '
                  'control path never does). The default holds the largest trajectory the '
                  'node accepts (100 000 points with every field for 7 joints).',
                  unit='bytes', constraints='integer > 0', check=checked_byte_count),
    ParameterSpec('allow_partial_joints_goal', 'bool', False,
                  'Accept FollowJointTrajectory goals that name only some of the joints (as '
                  'joint_trajectory_controller): the others hold the reference in force at '
                  'receipt. false: such goals are rejected.', check=checked_flag),
    ParameterSpec('allow_nonzero_velocity_at_trajectory_end', 'bool', False,
                  'Accept goals whose last point gives a non-zero velocity (as '
                  'joint_trajectory_controller; false rejects them).', check=checked_flag),
    ParameterSpec('action_monitor_rate', 'double', 20.0,
                  'Rate of the FollowJointTrajectory feedback (desired, actual, error).',
                  unit='Hz', constraints='> 0', check=checked_positive),
    ParameterSpec('constraints.stopped_velocity_tolerance', 'double', 0.01,
                  'Goal velocity tolerance of every joint: after the last point, |qd| must '
                  'be within it for the goal to succeed (0: not checked). Per-joint '
                  'constraints.<joint>.trajectory (path) and constraints.<joint>.goal '
                  '(final) position tolerances, default 0 = not checked, are declared for '
                  'the chain\'s joints when configured (as joint_trajectory_controller).',
                  unit='rad/s', constraints='>= 0', check=checked_non_negative),
    ParameterSpec('constraints.goal_time', 'double', 0.0,
                  'Time after the last point within which the goal tolerances must be met, '
                  'else GOAL_TOLERANCE_VIOLATED; 0: wait indefinitely (as '
                  'joint_trajectory_controller).', unit='s', constraints='>= 0',
                  check=checked_non_negative),
    ParameterSpec('controller_state_rate', 'double', 0.0,
                  'Rate of ~/controller_state (control_msgs/JointTrajectoryControllerState) '
                  'while someone subscribes; 0: every command, as joint_trajectory_controller.',
                  unit='Hz', constraints='>= 0', check=checked_non_negative),
    ParameterSpec('activation_timeout', 'double', 10.0,
                  'Longest wait of activate for the trajectory receiver process and the '
                  'action server to be up and discovered; activate fails with the reason '
                  'after it.', unit='s', constraints='> 0', check=checked_positive),
    ParameterSpec('discovery_settle', 'double', 3.5,
                  'How long the trajectory receiver process (a DDS participant of its own) '
                  'must have been on the graph before activate completes. Fast DDS '
                  'announces participants every 3 s; a peer that missed the first '
                  'announcements discovers it then, and the exchange of samples with this '
                  'node paused about 335 ms meanwhile (a state timeout while commanding). '
                  'Measured: 3 of 12 starts with such a pause after activation without it, '
                  '0 of 12 with 3.5 s.', unit='s', constraints='>= 0',
                  check=checked_non_negative),
    ParameterSpec('velocity_filter_cutoff', 'double', 50.0,
                  'Cut-off frequency of the low-pass on finite-difference velocities, used '
                  'when joint_states carries no velocity.', unit='Hz', constraints='> 0',
                  runtime=True, check=checked_cutoff),
)

#: name -> spec.
BY_NAME = {spec.name: spec for spec in PARAMETERS}
#: The parameters that may change at run time: the controller's settings.
RUNTIME = tuple(spec.name for spec in PARAMETERS if spec.runtime)


def check(name, value, n=None):
    """Check ``value`` for the parameter ``name``; return it normalised.

    Raises:
        ControlParameterError: an unknown name, or a bad value (the message names it).
    """
    spec = BY_NAME.get(name)
    if spec is None:
        raise ControlParameterError(f'unknown parameter {name!r}')
    if spec.check is None:
        return value
    return spec.check(value, n, name)


def defaults(runtime_only=False):
    """Return {name: default} of every parameter (or of the run-time ones)."""
    return {s.name: s.default for s in PARAMETERS if s.runtime or not runtime_only}


def markdown_table():
    """Return the docs' parameter table (Markdown), generated from :data:`PARAMETERS`."""
    def cell(text):
        return str(text).replace('|', '\\|')

    def shown(value):
        if value is None:
            return 'unset'
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, float) and math.isinf(value):
            return '.inf'
        if isinstance(value, str):
            return f'"{value}"' if value else '""'
        return str(value)

    lines = ['| parameter | default | unit | constraints | run time | description |',
             '|---|---|---|---|---|---|']
    for s in PARAMETERS:
        lines.append(f'| `{s.name}` | `{cell(shown(s.default))}` | {cell(s.unit)} | '
                     f'{cell(s.constraints)} | {"yes" if s.runtime else "read-only"} | '
                     f'{cell(s.description)} |')
    return '\n'.join(lines) + '\n'


__all__ = ['BY_NAME', 'check', 'defaults', 'markdown_table', 'ParameterSpec', 'PARAMETERS',
           'RUNTIME']
