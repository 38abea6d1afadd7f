"""``sim_arm_node``: a simulated arm behind a ros2_control-like effort interface.

It stands in for the robot plus ``ros2_control`` (``joint_state_broadcaster`` and an
``effort_controllers/JointGroupEffortController`` named ``effort_controller``): it takes
``std_msgs/Float64MultiArray`` efforts on ``/effort_controller/commands`` (``joints``'
order), holds each one (zero-order hold), integrates the forward dynamics (Pinocchio's ABA
(:class:`~ne_dynamics_ros.simulation.simulated_arm.SimulatedArm`, RK4 at ``integration_rate``)),
and publishes ``sensor_msgs/JointState`` (name, position, velocity, effort applied) on
``/joint_states`` at ``publish_rate``. With ``plant: mujoco`` the arm is MuJoCo's
(:class:`~ne_dynamics_ros.simulation.mujoco_arm.MujocoArm`: ``mjcf_path``, ``damping`` and
dry ``friction`` as MuJoCo's, ``timestep``, ``integrator``, ``payload_com``, ...).

How simulated time advances
---------------------------
``lockstep: false`` (default) -- hardware-like, real time. A timer at ``publish_rate``
    integrates from the previous step to *now* (the node clock) and publishes the state
    stamped *now*; a command acts from the instant it arrives (on its arrival the arm is
    first integrated up to then under the command in force before it, zero-order hold), so
    a controller's computation and transport delay is felt as on a real drive. Simulated
    time is the node's clock, as for a real arm, and timer jitter only changes when states
    are sampled (a step is at most five periods long; if the process stalls longer, the
    arm's time falls behind and a warning says so). A controller that answers late is
    simply late, and results depend on the machine's load. Until the first command the arm
    is held still at ``initial_positions`` by its brakes (``brakes``, default true, as a
    real arm waits for its controller); ``brakes: false``: zero effort until then (it
    falls).
``lockstep: true`` -- a sampled-data experiment, deterministic. Every state is exactly
    ``1/publish_rate`` of simulated time after the previous one. The node publishes the state at
    ``t_k`` and waits for the next command, which is the controller's answer to that state;
    on its arrival it applies it over ``[t_k, t_k + 1/publish_rate)`` and publishes
    ``t_(k+1)``. That is a digital controller sampling at ``publish_rate`` with a
    computation delay that is negligible against the sample time (Lee et al. 1982, §5: 0.01
    s sampling, about 3 ms of computation). Simulated time runs as fast as the loop allows.
    The node publishes ``rosgraph_msgs/Clock`` on ``/clock`` before each state and stamps
    states with simulated time, so other nodes run with ``use_sim_time: true``. If no
    command answers within ``lockstep_timeout`` (wall clock) the state is published again
    with a warning; nothing advances meanwhile. No state is published before
    ``/joint_states`` has a subscriber. In-process users (the demo) can hold simulated time
    with :meth:`~ne_dynamics_ros.nodes.sim_arm_own_clock.OwnClockMixin.run_until`.

``command_interface: sim_arm_system`` -- behind ros2_control's hardware plugin of this
    package, ``ne_dynamics_ros_hardware/SimArmSystem`` (the default of
    ``ros2_control.launch.py``; needs ``clock: hardware`` and the plugin's channel as
    ``hardware_channel``). The arm binds the abstract Unix socket
    ``@<hardware_channel>/arm``; every write of the hardware arrives there as one
    datagram and is answered at once with the state the hardware's next ``read()``
    finds (:class:`~ne_dynamics_ros.simulation.hardware_link.HardwareClock`: the
    command in force held since the previous write, the new one carried to the next
    read), on a thread of its own at ``realtime_priority``. The true states go out on
    ``/joint_states`` and each write on ``~/hardware_writes`` (efforts by name, stamped
    with the write), for whoever watches; nothing of the loop itself goes over DDS.

``clock: hardware`` with ``command_interface: joint_state`` -- behind
    ``topic_based_ros2_control``, on the hardware's clock. A real arm paces its driver (UR's
    RTDE, libfranka's 1 kHz callback, KUKA's FRI): the hardware interface's ``read()``
    returns the robot's newest state once per cycle. Every command the hardware writes (one
    per controller_manager cycle, stamped by the hardware) advances the arm by the time
    since the previous write, under the command that was in force over that time (zero-order
    hold: the robot does not wait for a late cycle), takes the new command, carries the arm
    on under it to the hardware's next ``read()`` (``state_at_read``; the cycle's grid
    learnt from joint_state_broadcaster's stamps) and publishes that state at once, stamped
    with that instant; so each ``read()`` finds exactly one new state, the arm's as it is
    then. A cycle that runs late leaves the previous command acting for longer, as on the
    robot (up to ``max_step``: a longer silence is simulated only that long, with a
    warning). No state is published before the hardware writes. ``topic_based_ros2_control``
    takes the oldest state it holds: the node watches what each cycle read
    (``/joint_states_read``, remapped to the broadcaster's ``/joint_states``) and withholds
    a state when a read lagged, so that the queue drains
    (:class:`~ne_dynamics_ros.simulation.hardware_reads.ReadBacklog`).

Lockstep reproduces a sampled experiment: an answer applied one sample late roughly triples
the error of Lee et al.'s PUMA run (docs/simulation.md). Bad commands (wrong length, NaN/inf)
are dropped with a throttled warning; the previous command stays applied (wall-clock mode)
or the state waits for a good one (lockstep). A flange force-torque sensor (``ft_sensor``):
:mod:`ne_dynamics_ros.nodes.sim_arm_sensor`.

Behind ros2_control (``command_interface: joint_state``): the arm is the "robot" of
PickNik's ``topic_based_ros2_control/TopicBasedSystem`` hardware, which publishes the effort
command interfaces as ``sensor_msgs/JointState`` (``effort`` by ``name``) on its
``joint_commands_topic`` every controller_manager cycle and reads the arm's states from its
``joint_states_topic`` (remap ``/effort_controller/commands`` and ``/joint_states`` to them,
as ``ros2_control.launch.py`` does). The hardware writes zero before any controller
commands: the brakes are released by the first command that is not zero, as a real arm's
driver releases them when its controller starts. With ``clock: timer`` (the arm on a timer
of its own) ``publish_rate`` below controller_manager's ``update_rate`` keeps the hardware's
state fresh: the plugin's subscription (best effort, depth 5) gives ``read()`` one queued
message per cycle, so states published at the update rate queue up and arrive up to five
cycles late, and at a lower rate some cycles read nothing new (the broadcaster repeats a
state).
"""
import math
import time

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
import rclpy
from rclpy.clock import Clock as RclClock, ClockType
from rclpy.node import Node
from rclpy.qos import QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy
from rclpy.time import Time
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from ne_dynamics_ros.errors import ModelError
from ne_dynamics_ros.nodes import cdr
from ne_dynamics_ros.nodes.computed_torque.priority import (freeze_collector, own_collector,
                                                            raise_process)
from ne_dynamics_ros.nodes.spin import init_until_signalled, spin_until_signalled
from ne_dynamics_ros.nodes.sim_arm_hardware import HardwareClockMixin
from ne_dynamics_ros.nodes.sim_arm_own_clock import OwnClockMixin
from ne_dynamics_ros.nodes.sim_arm_sensor import FlangeSensorIO
from ne_dynamics_ros.simulation.hardware_link import HardwareLinkError
from ne_dynamics_ros.simulation.hardware_reads import ReadBacklog
from ne_dynamics_ros.simulation.payload_schedule import PayloadSchedule
from ne_dynamics_ros.simulation.mujoco_arm import MujocoArm
from ne_dynamics_ros.simulation.simulated_arm import DEFAULT_GRAVITY, SimulatedArm

MAX_PUBLISH_RATE = 1000.0
#: Values of the ``plant`` parameter.
PLANTS = ('pinocchio', 'mujoco')
#: Values of ``command_interface``: the effort controller's topic, ros2_control's
#: topic-based hardware (JointState commands, efforts by name), or the package's own
#: hardware plugin over its link (:mod:`~ne_dynamics_ros.simulation.hardware_link`).
COMMAND_INTERFACES = ('float64_multi_array', 'joint_state', 'sim_arm_system')
#: Values of ``clock``: a timer of the arm's own, or the hardware's writes.
CLOCKS = ('timer', 'hardware')
COMMAND_TOPIC = '/effort_controller/commands'
STATE_TOPIC = '/joint_states'
#: clock hardware: what the hardware read, as joint_state_broadcaster republishes it
#: (remapped to its ``/joint_states`` by ``ros2_control.launch.py``).
READ_TOPIC = '/joint_states_read'
WARN_PERIOD = 2.0  # seconds between repeats of the same warning


class SimArmConfigError(ModelError):
    """The node's parameters do not describe a simulation it can run."""


def _floats(value, name):
    """Return a parameter value (number or list of numbers) as a list of floats."""
    if value is None:
        return []
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    try:
        out = [float(v) for v in value]
    except (TypeError, ValueError):
        raise SimArmConfigError(f'parameter {name} must be numbers, got {value!r}') from None
    if not all(math.isfinite(v) for v in out):
        raise SimArmConfigError(f'parameter {name} contains NaN or inf: {out}')
    return out


def _float(value, name):
    values = _floats(value, name)
    if len(values) != 1:
        raise SimArmConfigError(f'parameter {name} must be one number, got {value!r}')
    return values[0]


class SimArmNode(OwnClockMixin, HardwareClockMixin, Node):
    """Simulated arm with an effort command interface and a joint-state publisher."""

    def __init__(self, **kwargs):
        super().__init__('sim_arm_node', **kwargs)
        self._declare_parameters()
        self.arm = self._build_arm()
        self.publish_period = 1.0 / self.publish_rate
        self.command = np.zeros(self.arm.n)
        self.commands_received = 0
        self.commands_dropped = 0
        self.states_published = 0
        self.end_time = None
        self._last_step = None
        self._sim_ns = None           # hardware clock: the instant the arm's state is at
        self.late_writes = 0          # hardware clock: silences longer than max_step

        self.state_publisher = self.create_publisher(JointState, STATE_TOPIC, 10)
        self.sensor = FlangeSensorIO(self, self.arm, self._ft_sensor, _floats(
            self._ft_noise, 'ft_noise')) if self._ft_sensor else None
        self._names_block = None      # the joints' names serialized, once
        self.backlog = ReadBacklog()
        self._link_thread = None
        if self.command_interface == 'sim_arm_system':
            try:
                self._start_link()
            except HardwareLinkError as exc:
                raise SimArmConfigError(f'sim_arm_node: {exc}') from exc
        elif self.command_interface == 'joint_state':
            self.create_subscription(JointState, COMMAND_TOPIC, self._on_joint_command, 10)
            if self.clock == 'hardware':
                self.create_subscription(JointState, READ_TOPIC, self._on_read, 10)
        else:
            self.create_subscription(Float64MultiArray, COMMAND_TOPIC, self._on_command, 10)
        if self.lockstep:
            clock_qos = QoSProfile(depth=1, reliability=QoSReliabilityPolicy.RELIABLE,
                                   durability=QoSDurabilityPolicy.VOLATILE)
            self.clock_publisher = self.create_publisher(Clock, '/clock', clock_qos)
            self._awaiting_answer = False
            self._answer = None
            self._last_publish_wall = None
            # A steady clock: the watchdog must run while simulated time stands still.
            self.create_timer(0.02, self._lockstep_watchdog,
                              clock=RclClock(clock_type=ClockType.STEADY_TIME))
        elif self.clock == 'timer':
            self.create_timer(self.publish_period, self._on_timer)
        engine = ('Pinocchio ABA + RK4' if self.plant == 'pinocchio' else
                  f'MuJoCo ({self.arm.integrator})')
        self.get_logger().info(
            f'simulating {self.arm.n} joints {self.arm.joint_names} with {engine} '
            f'at {self.arm.integration_rate:g} Hz; {self._timing_text()}'
            f'; payload {self.arm.payload_mass:g} kg at {self.arm.payload_link}')

    def _timing_text(self):
        if self.lockstep:
            return f'states at {self.publish_rate:g} Hz (lockstep, simulated time on /clock)'
        if self.command_interface == 'sim_arm_system':
            return ("on the hardware's clock: SimArmSystem's link @"
                    f'{self.hardware_channel}/arm, one step and one state per write, up to '
                    f'{self.max_step:g} s')
        if self.clock == 'hardware':
            return ("on the hardware's clock: one step and one state per write, up to "
                    f'{self.max_step:g} s')
        return f'states at {self.publish_rate:g} Hz (wall-clock timer)'

    # -- configuration ------------------------------------------------------------------

    def _declare_parameters(self):
        def declare(name, default, description):
            descriptor = ParameterDescriptor(description=description, dynamic_typing=True,
                                             read_only=True)
            return self.declare_parameter(name, default, descriptor).value

        self._declare_plant_parameters(declare)
        self._robot_description = declare(
            'robot_description', '', 'URDF XML of the arm; if empty, urdf_path is read')
        self._urdf_path = declare('urdf_path', '', 'path to the URDF file')
        self._joints = declare(
            'joints', [''],
            'actuated joints, the order of the effort command array and of the joint '
            'states; default: all movable joints in chain order (others are locked at 0)')
        self._armature = declare(
            'armature', [0.0], 'reflected rotor inertia per joint (kg m^2), or one value')
        self._joint_friction = declare(
            'joint_friction', [0.0], 'extra viscous friction per joint (N m s/rad), or one value')
        self._damping = declare(
            'damping', [0.0], 'viscous friction per joint (N m s/rad), added to joint_friction '
            '(the name ne-dynamics identify writes), or one value')
        self._friction = declare(
            'friction', [0.0], 'Coulomb friction per joint (N m), Fc tanh(qd / 0.01), or one '
            'value')
        self._effort_noise = declare(
            'effort_noise', 0.0, 'standard deviation (N m) of noise added to the published '
            'effort, as a measured effort has')
        self._initial_positions = declare('initial_positions', [0.0],
                                          'initial joint positions (rad or m), or one value')
        self._publish_rate = declare('publish_rate', 100.0,
                                     f'joint state rate, Hz (at most {MAX_PUBLISH_RATE:g})')
        self._integration_rate = declare('integration_rate', 1000.0, 'internal RK4 rate, Hz')
        self._gravity = declare('gravity', list(DEFAULT_GRAVITY),
                                'gravity in the URDF root frame, m/s^2')
        self._effort_limits = declare('effort_limits', [0.0],
                                      'clip applied efforts to +-limit per joint; 0 = no clip')
        self._lockstep = declare('lockstep', False,
                                 'step only when the command answering the last state '
                                 'arrives; publish simulated time on /clock')
        self._brakes = declare('brakes', True,
                               'wall-clock mode: hold the arm at initial_positions (its brakes) '
                               'until the first effort command arrives, as a real arm waits '
                               'for its controller; false: zero effort until then (it falls)')
        self._command_interface = declare(
            'command_interface', 'float64_multi_array',
            'float64_multi_array: std_msgs/Float64MultiArray efforts in joint order (an '
            'effort controller\'s topic); joint_state: sensor_msgs/JointState efforts by name '
            '(ros2_control\'s topic_based_ros2_control hardware); sim_arm_system: the '
            'package\'s ne_dynamics_ros_hardware/SimArmSystem over hardware_channel (needs '
            'clock hardware); with either hardware the brakes wait for a non-zero command')
        self._realtime_priority = declare(
            'realtime_priority', 0,
            'wall-clock mode: SCHED_FIFO priority of the simulation and its DDS threads where '
            'permitted (else a lower nice value); 0: the default scheduling. A real arm\'s '
            'physics never waits for a CPU: above controller_manager\'s 50 keeps the '
            'simulated one from stalling when the controllers share its cores')
        self._declare_clock_parameters(declare)

    def _declare_plant_parameters(self, declare):
        """Declare the engine (``plant``, MuJoCo's own) and the load the controller is not told."""
        self._plant = declare(
            'plant', 'pinocchio', "the engine: 'pinocchio' (ABA + RK4 from the URDF) or "
            "'mujoco' (MuJoCo's import of the URDF, or mjcf_path; friction is MuJoCo's "
            'friction loss, dry)')
        self._mjcf_path = declare('mjcf_path', '', "plant 'mujoco': an MJCF file instead of "
                                  'the URDF (joints named as in the URDF)')
        self._timestep = declare('timestep', 0.0005, "plant 'mujoco': longest MuJoCo step, s")
        self._integrator = declare('integrator', 'implicitfast', "plant 'mujoco': "
                                   'implicitfast, implicit, RK4 or Euler')
        self._payload_com = declare('payload_com', [0.0, 0.0, 0.0], "plant 'mujoco': the "
                                    "payload's centre of mass in payload_link's frame, m")
        self._payload_inertia = declare('payload_inertia', [0.0, 0.0, 0.0], "plant 'mujoco': "
                                        "the payload's principal inertia about its centre of "
                                        'mass, kg m^2')
        self._payload_mass = declare('payload_mass', 0.0,
                                     'point mass (kg) at the tip link, unknown to the controller')
        self._ft_sensor = declare('ft_sensor', '', 'a link with a force-torque sensor (tool0)')
        self._ft_noise = declare('ft_noise', [0.0, 0.0], 'the sensor\'s noise, N and N m')
        self._payload_link = declare('payload_link', '', 'link carrying the payload; '
                                     'default: the tip link')
        self._payload_schedule = declare(
            'payload_schedule', [0.0], 'pick and place: a load picked and released at '
            'payload_link, five numbers per entry (time s of simulated time, mass kg, centre '
            'of mass x, y, z m in the link frame); [0.0] or empty: none')

    def _declare_clock_parameters(self, declare):
        """Declare what paces the arm: its own timer, lockstep, or the hardware's writes."""
        self._hardware_channel = declare(
            'hardware_channel', '', 'command_interface sim_arm_system: the channel of the '
            'hardware plugin (its <param name="channel">); the arm binds the abstract '
            'socket @<channel>/arm')

        self._lockstep_timeout = declare('lockstep_timeout', 1.0,
                                         'lockstep: republish the state after this many '
                                         'wall-clock seconds without an answer')
        self._clock_mode = declare(
            'clock', 'timer',
            "timer: the arm steps and publishes on a timer of its own at publish_rate; "
            "hardware: each command written by ros2_control's topic-based hardware "
            '(command_interface joint_state) advances the arm by the wall time since the '
            'previous write and its state is published at once, one per cycle, as a '
            "robot's own clock paces a real driver")
        self._max_step = declare(
            'max_step', 0.1,
            'clock hardware: the longest time one command acts unseen, s; a longer silence '
            'of the hardware is simulated only that long (with a warning)')
        self._state_at_read = declare(
            'state_at_read', True,
            "clock hardware: publish the arm's state at the hardware's next read() (the "
            "cycle learnt from joint_state_broadcaster's stamps on /joint_states_read), as "
            "a robot's newest state is when its driver reads it; false: the state at the "
            'write (a cycle old when read)')

    def _check_clock(self):
        """Take the clock parameters; raise SimArmConfigError on a bad combination."""
        self.clock = str(self._clock_mode)
        if self.clock not in CLOCKS:
            raise SimArmConfigError(f'clock {self.clock!r} is not one of {CLOCKS}')
        if self.clock == 'hardware' and (self.command_interface == 'float64_multi_array'
                                         or self.lockstep):
            raise SimArmConfigError('clock hardware needs command_interface joint_state or '
                                    'sim_arm_system (the hardware writes one command per '
                                    'cycle) and no lockstep')
        self.hardware_channel = str(self._hardware_channel or '')
        if self.command_interface == 'sim_arm_system' and (
                self.clock != 'hardware' or not self.hardware_channel):
            raise SimArmConfigError('command_interface sim_arm_system needs clock hardware '
                                    'and a hardware_channel')
        self.max_step = _float(self._max_step, 'max_step')
        self.state_at_read = bool(self._state_at_read)
        if not self.max_step > 0:
            raise SimArmConfigError(f'max_step must be > 0 s, got {self.max_step}')

    def _check_loop_settings(self):
        """Check and keep the publishing, the command interface, the clock and the noise."""
        self.publish_rate = _float(self._publish_rate, 'publish_rate')
        if not 0 < self.publish_rate <= MAX_PUBLISH_RATE:
            raise SimArmConfigError(f'publish_rate must be in (0, {MAX_PUBLISH_RATE:g}] Hz, '
                                    f'got {self.publish_rate}')
        self.lockstep = bool(self._lockstep)
        self.command_interface = str(self._command_interface)
        if self.command_interface not in COMMAND_INTERFACES:
            raise SimArmConfigError(f'command_interface {self.command_interface!r} is not one '
                                    f'of {COMMAND_INTERFACES}')
        if self.lockstep and self.command_interface != 'float64_multi_array':
            raise SimArmConfigError('lockstep needs command_interface float64_multi_array '
                                    '(controller_manager runs on its own clock)')
        self._check_clock()
        self.lockstep_timeout = _float(self._lockstep_timeout, 'lockstep_timeout')
        self.effort_noise = _float(self._effort_noise, 'effort_noise')
        if not (self.effort_noise >= 0 and math.isfinite(self.effort_noise)):
            raise SimArmConfigError(f'effort_noise must be >= 0 N m, got {self.effort_noise}')
        self._rng = np.random.default_rng()

    def _build_arm(self):
        description = self._robot_description or ''
        source = description if description.strip() else (self._urdf_path or '')
        if not str(source).strip():
            raise SimArmConfigError('sim_arm_node needs robot_description or urdf_path')
        joints = [j for j in (self._joints or []) if j]
        self._check_loop_settings()
        limits = [v if v > 0 else math.inf for v in _floats(self._effort_limits, 'effort_limits')]
        if all(math.isinf(v) for v in limits):
            limits = None
        self.plant = str(self._plant)
        if self.plant not in PLANTS:
            raise SimArmConfigError(f'plant {self.plant!r} is not one of {PLANTS}')
        try:
            flat = _floats(self._payload_schedule, 'payload_schedule')
            schedule = PayloadSchedule.from_flat([] if flat == [0.0] else flat)
            if self.plant == 'mujoco':
                arm = MujocoArm(
                    None if self._mjcf_path else source, mjcf_path=self._mjcf_path or None,
                    joints=joints or None, armature=_floats(self._armature, 'armature'),
                    damping=self._viscous_friction(),
                    friction=_floats(self._friction, 'friction'),
                    payload_mass=_float(self._payload_mass, 'payload_mass'),
                    payload_link=self._payload_link or None,
                    payload_com=_floats(self._payload_com, 'payload_com'),
                    payload_inertia=_floats(self._payload_inertia, 'payload_inertia'),
                    gravity=_floats(self._gravity, 'gravity'),
                    timestep=_float(self._timestep, 'timestep'),
                    integrator=str(self._integrator), effort_limits=limits,
                    payload_schedule=schedule, ft_sensor=self._ft_sensor or None)
            else:
                arm = SimulatedArm(
                    source, joints=joints or None,
                    armature=_floats(self._armature, 'armature'),
                    payload_mass=_float(self._payload_mass, 'payload_mass'),
                    payload_link=self._payload_link or None,
                    joint_friction=self._viscous_friction(),
                    coulomb_friction=_floats(self._friction, 'friction'),
                    gravity=_floats(self._gravity, 'gravity'),
                    integration_rate=_float(self._integration_rate, 'integration_rate'),
                    effort_limits=limits, payload_schedule=schedule)
            initial = _floats(self._initial_positions, 'initial_positions')
            if len(initial) == 1:
                initial = initial * arm.n
            arm.reset(initial)
        except ModelError as exc:
            raise SimArmConfigError(f'sim_arm_node: {exc}') from exc
        return arm

    # -- messages -----------------------------------------------------------------------

    def _on_command(self, msg):
        data = np.asarray(msg.data, dtype=float)
        if data.shape != (self.arm.n,) or not np.all(np.isfinite(data)):
            self.commands_dropped += 1
            reason = (f'{data.size} values, expected {self.arm.n} ({self.arm.joint_names})'
                      if data.shape != (self.arm.n,) else 'NaN or inf in it')
            self.get_logger().warning(f'dropped effort command: {reason}',
                                      throttle_duration_sec=WARN_PERIOD)
            return
        self._take_command(data)
        self.commands_received += 1
        if self.lockstep and self._awaiting_answer:
            self._awaiting_answer = False
            self._answer = data
            self._advance()

    def _on_joint_command(self, msg):
        """Take a ros2_control hardware command: efforts by joint name (zero: brakes on)."""
        names = list(msg.name)
        effort = np.asarray(msg.effort, dtype=float)
        index = {name: k for k, name in enumerate(names)}
        missing = [j for j in self.arm.joint_names if j not in index]
        if missing or effort.shape != (len(names),) or not np.all(np.isfinite(effort)):
            self.commands_dropped += 1
            reason = (f'no effort for {missing}' if missing else
                      f'{effort.size} efforts for {len(names)} names'
                      if effort.shape != (len(names),) else 'NaN or inf in it')
            self.get_logger().warning(f'dropped joint command: {reason}',
                                      throttle_duration_sec=WARN_PERIOD)
            return
        command = effort[[index[j] for j in self.arm.joint_names]]
        if self.clock == 'hardware':
            self._hardware_write(command, msg.header.stamp.sec * 1_000_000_000
                                 + msg.header.stamp.nanosec)
            return
        if self.commands_received == 0 and not np.any(command):
            self._take_command(command)   # the idle hardware's zero: the brakes stay on
            return
        self._take_command(command)
        self.commands_received += 1

    def destroy_node(self):
        """Say what the hardware read (clock hardware), then destroy the node."""
        if self._link_thread is not None:
            self._stop_link()
        elif self.clock == 'hardware':
            backlog = self.backlog
            self.get_logger().info(
                f'hardware reads: {backlog.reads} matched to a state published, '
                f'{backlog.behind} behind a newer one, {backlog.withheld} states withheld; '
                f'{self.late_writes} writes after more than {self.max_step:g} s')
        return super().destroy_node()

    def _viscous_friction(self):
        """joint_friction + damping per joint (either may be one value for all)."""
        extra = np.asarray(_floats(self._joint_friction, 'joint_friction'), dtype=float)
        damping = np.asarray(_floats(self._damping, 'damping'), dtype=float)
        if extra.size != damping.size and 1 not in (extra.size, damping.size):
            raise SimArmConfigError(f'joint_friction ({extra.size} values) and damping '
                                    f'({damping.size} values) do not match')
        return (extra + damping).tolist()

    def _state_effort(self):
        """Return the (n,) effort the arm reports: applied, plus ``effort_noise``."""
        effort = self.arm.effort
        if self.effort_noise > 0:
            effort = effort + self._rng.normal(0.0, self.effort_noise, effort.shape)
        return effort

    def _publish_state(self, now=None, effort=None):
        """Publish the arm's state stamped ``now`` (lockstep: the arm's time, and /clock).

        Serialized here (:func:`~ne_dynamics_ros.nodes.cdr.joint_state_bytes`), not by
        rclpy from a message: at 500 Hz the message's conversion was a tenth of the arm's
        time beside the stack (py-spy, 2026-12-02).
        """
        if self.lockstep:
            stamp = Time(nanoseconds=round(self.arm.time * 1e9)).to_msg()
            self.clock_publisher.publish(Clock(clock=stamp))
            self._awaiting_answer = True
            self._last_publish_wall = time.monotonic()
        else:
            stamp = now.to_msg()
        if self._names_block is None:
            self._names_block = cdr.joint_names_block(list(self.arm.joint_names))
        self.state_publisher.publish(cdr.joint_state_bytes(
            stamp.sec, stamp.nanosec, b'', self._names_block, self.arm.position.tolist(),
            self.arm.velocity.tolist(),
            (self._state_effort() if effort is None else effort).tolist()))
        self.states_published += 1
        if self.sensor is not None:
            self.sensor.publish(stamp)


def main(args=None):
    """Run ``sim_arm_node`` until SIGINT or SIGTERM; exit 1 on a bad configuration."""
    stop = init_until_signalled(args)
    try:
        node = SimArmNode()
    except SimArmConfigError as exc:
        rclpy.logging.get_logger('sim_arm_node').fatal(str(exc))
        rclpy.try_shutdown()
        return 1
    if int(node._realtime_priority) > 0:
        node.get_logger().info('simulation: ' + raise_process(node._realtime_priority,
                                                              'simulation thread'))
    own_collector()
    freeze_collector()      # no full collection walks the set-up objects again
    return spin_until_signalled(node, stop)


if __name__ == '__main__':
    raise SystemExit(main())
