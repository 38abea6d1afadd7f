"""sim_arm_node over real rclpy: joint states at the rate, commands applied, bad ones dropped."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pinocchio as pin
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from dds import spin_until as _spin_until
from references import PUMA560_URDF, REPO_ROOT, UR5E_URDF
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm
from ne_dynamics_ros.nodes.sim_arm_node import SimArmConfigError, SimArmNode

UR5E_JOINTS = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint',
               'wrist_1_joint', 'wrist_2_joint', 'wrist_3_joint']


class Probe(Node):
    """Records joint states and /clock, publishes effort commands."""

    def __init__(self, context, answer=None):
        super().__init__('probe', context=context)
        self.states = []
        self.clock = []
        self.answer = answer
        self.commands = self.create_publisher(Float64MultiArray, '/effort_controller/commands',
                                              10)
        self.create_subscription(JointState, '/joint_states', self._on_state, 100)
        self.create_subscription(Clock, '/clock', self._on_clock, 100)

    def _on_state(self, msg):
        self.states.append((time.monotonic(), msg))
        if self.answer is not None:
            self.send(self.answer(msg))

    def _on_clock(self, msg):
        self.clock.append(msg.clock.sec + 1e-9 * msg.clock.nanosec)

    def send(self, values):
        self.commands.publish(Float64MultiArray(data=[float(v) for v in values]))


def _stamp(msg):
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def _spin_for(executor, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.01)


@pytest.fixture
def make_system(ros_context):
    """Build a SimArmNode with parameter overrides plus a Probe on one executor."""
    executor = SingleThreadedExecutor(context=ros_context)
    nodes = []

    def make(answer=None, **parameters):
        parameters.setdefault('urdf_path', str(UR5E_URDF))
        sim = SimArmNode(context=ros_context, parameter_overrides=[
            Parameter(name, value=value) for name, value in parameters.items()])
        probe = Probe(ros_context, answer)
        for node in (sim, probe):
            nodes.append(node)
            executor.add_node(node)
        return sim, probe, executor

    yield make
    for node in nodes:
        executor.remove_node(node)
        node.destroy_node()
    executor.shutdown()


def test_publishes_joint_states_at_the_rate(make_system):
    # without brakes, so that the arm's time runs before any command
    sim, probe, executor = make_system(publish_rate=100.0, gravity=[0.0, 0.0, 0.0],
                                       brakes=False)
    # every state as published: (its stamp in ns, the simulated time then)
    published = []
    publish_state = sim._publish_state

    def recorded(now=None):
        publish_state(now)
        published.append((now.nanoseconds, sim.arm.time))

    sim._publish_state = recorded
    _spin_until(executor, lambda: len(probe.states) > 5, 10.0)
    wall = time.time()
    _spin_for(executor, 1.0)
    msg = probe.states[-1][1]
    assert list(msg.name) == UR5E_JOINTS
    assert len(msg.position) == len(msg.velocity) == len(msg.effort) == 6
    stamps = [_stamp(m) for _, m in probe.states]
    assert all(b > a for a, b in zip(stamps, stamps[1:]))
    # the stamps are the node's (wall) clock: after the spin began, before it ended
    assert wall <= stamps[-1] <= time.time()
    # the timer's period, whatever the machine's load: never faster, and mostly on time
    # (a late callback shows as one longer interval, not as many)
    intervals = 1e-9 * np.diff([stamp for stamp, _ in published])
    assert np.all(intervals > 0.0)
    assert abs(np.median(intervals) - 0.01) < 1e-3, np.median(intervals)
    # Without lockstep simulated time runs with the node's (wall) clock: each step is the
    # time since the previous state, but at most 5 periods (a stalled node falls behind)
    steps = np.diff([arm_time for _, arm_time in published])
    np.testing.assert_allclose(steps, np.minimum(intervals, 0.05), rtol=0, atol=1e-9)


@pytest.mark.parametrize('plant', ['pinocchio', 'mujoco'])
def test_the_brakes_hold_the_arm_until_the_first_command(make_system, plant):
    """By default the arm waits for its controller where it was put; without brakes it
    falls under gravity meanwhile."""
    start = [0.0, -1.0, 1.0, -1.57, -1.57, 0.0]
    held, probe, executor = make_system(publish_rate=100.0, plant=plant,
                                        initial_positions=start)
    _spin_until(executor, lambda: len(probe.states) > 30, 10.0)
    np.testing.assert_array_equal(probe.states[-1][1].position, start)
    np.testing.assert_array_equal(probe.states[-1][1].velocity, np.zeros(6))
    falling, probe, executor = make_system(publish_rate=100.0, plant=plant,
                                           initial_positions=start, brakes=False)
    _spin_until(executor, lambda: falling.arm.time > 0.3, 10.0)
    assert np.abs(falling.arm.position - start).max() > 0.01


@pytest.mark.parametrize('plant', ['pinocchio', 'mujoco'])
def test_applies_commands_with_zero_order_hold(make_system, plant):
    sim, probe, executor = make_system(publish_rate=200.0, gravity=[0.0, 0.0, 0.0],
                                       plant=plant)
    assert type(sim.arm).__name__ == {'pinocchio': 'SimulatedArm', 'mujoco': 'MujocoArm'}[plant]
    _spin_until(executor, lambda: probe.states and probe.commands.get_subscription_count(),
                10.0)
    command = [3.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    probe.send(command)
    _spin_until(executor, lambda: sim.commands_received == 1, 5.0)
    # 0.3 s of the arm's own time (a stalled test process would give it less of the wall
    # clock's: the arm simulates at most 5 periods of a late step, 2026-12-07), then a state
    start = sim.arm.time
    _spin_until(executor, lambda: sim.arm.time - start >= 0.3, 10.0)
    count = len(probe.states)
    _spin_until(executor, lambda: len(probe.states) > count, 5.0)
    last = probe.states[-1][1]
    np.testing.assert_allclose(last.effort, command)       # held, not consumed
    assert last.velocity[0] > 0.1 and last.position[0] > 0.0


@pytest.mark.parametrize('plant', ['pinocchio', 'mujoco'])
def test_a_command_acts_from_its_arrival_not_from_the_state_before_it(make_system, plant):
    """On its own timer the arm is causal: a command sent mid-period acts from then on,
    not over the whole period since the state before it (which would make any controller
    on this arm look as if it answered in no time). At 4 Hz, from rest without gravity,
    the joint's speed at the next state is its acceleration times the time since the
    command was sent (within 10 ms), not times the period."""
    sim, probe, executor = make_system(publish_rate=4.0, gravity=[0.0, 0.0, 0.0],
                                       plant=plant)
    _spin_until(executor, lambda: len(probe.states) > 1 and
                probe.commands.get_subscription_count(), 10.0)
    count = len(probe.states)
    _spin_until(executor, lambda: len(probe.states) > count, 5.0)
    before = probe.states[-1][1]
    _spin_for(executor, 0.1)
    command = [5.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    sent = probe.get_clock().now().nanoseconds * 1e-9
    probe.send(command)
    _spin_until(executor, lambda: any(_stamp(m) > sent for _, m in probe.states), 5.0)
    after = next(m for _, m in probe.states if _stamp(m) > sent)
    acceleration = sim.arm.acceleration(before.position, np.zeros(6), command)[0]
    acted = after.velocity[0] / acceleration
    assert _stamp(after) - sent - 0.01 < acted <= _stamp(after) - sent + 1e-3
    assert acted < 0.8 * (_stamp(after) - _stamp(before))


def test_drops_bad_commands_and_keeps_the_last_good_one(make_system):
    sim, probe, executor = make_system(publish_rate=100.0)
    _spin_until(executor, lambda: probe.states and probe.commands.get_subscription_count(),
                10.0)
    good = [1.0, -2.0, 0.5, 0.1, 0.0, 0.0]
    probe.send(good)
    _spin_until(executor, lambda: sim.commands_received == 1, 5.0)
    probe.send([1.0, 2.0])                                  # wrong length
    probe.send([float('nan')] * 6)                          # NaN
    probe.send([1.0, float('inf'), 0, 0, 0, 0])             # inf
    _spin_until(executor, lambda: sim.commands_dropped == 3, 5.0)
    count = len(probe.states)
    _spin_until(executor, lambda: len(probe.states) > count + 3, 5.0)
    assert sim.commands_received == 1
    np.testing.assert_allclose(sim.command, good)
    assert all(np.all(np.isfinite(m.position)) for _, m in probe.states)
    np.testing.assert_allclose(probe.states[-1][1].effort, good)


def test_lockstep_steps_once_per_answer_on_simulated_time(make_system):
    command = np.array([0.5, 20.0, 5.0, 0.2, 0.1, 0.05])
    sim, probe, executor = make_system(answer=lambda msg: command, publish_rate=100.0,
                                       lockstep=True, initial_positions=[0.1] * 6)
    sim.run_until(0.5)
    _spin_until(executor, lambda: len(probe.states) >= 51, 10.0)
    _spin_for(executor, 0.2)                                # nothing beyond the end time
    stamps = np.array([_stamp(m) for _, m in probe.states])
    np.testing.assert_allclose(stamps, np.arange(51) * 0.01, atol=1e-9)
    np.testing.assert_allclose(sorted(set(probe.clock)), np.arange(51) * 0.01, atol=1e-9)
    # Exactly what the plant gives with the command held over every 0.01 s sample.
    reference = SimulatedArm(str(UR5E_URDF), initial_positions=[0.1] * 6)
    for _ in range(50):
        reference.step(command, 0.01)
    np.testing.assert_allclose(probe.states[-1][1].position, reference.position, atol=1e-12)
    np.testing.assert_allclose(probe.states[-1][1].velocity, reference.velocity, atol=1e-12)


def test_lockstep_waits_for_an_answer(make_system):
    sim, probe, executor = make_system(publish_rate=100.0, lockstep=True,
                                       lockstep_timeout=0.2)
    _spin_until(executor, lambda: probe.states, 10.0)
    _spin_for(executor, 0.5)          # no answers: the state is republished, time stands
    assert {_stamp(m) for _, m in probe.states} == {0.0}
    assert len(probe.states) >= 2
    probe.send(np.zeros(6))
    _spin_until(executor, lambda: any(_stamp(m) > 0 for _, m in probe.states), 5.0)
    assert max(_stamp(m) for _, m in probe.states) == pytest.approx(0.01)


def test_bad_parameters_are_refused(ros_context):
    with pytest.raises(SimArmConfigError, match='publish_rate'):
        SimArmNode(context=ros_context, parameter_overrides=[
            Parameter('urdf_path', value=str(UR5E_URDF)), Parameter('publish_rate', value=5000.0)])
    with pytest.raises(SimArmConfigError, match='armature'):
        SimArmNode(context=ros_context, parameter_overrides=[
            Parameter('urdf_path', value=str(UR5E_URDF)), Parameter('armature', value=[1.0, 2.0])])
    with pytest.raises(SimArmConfigError, match='robot_description or urdf_path'):
        SimArmNode(context=ros_context)


def test_missing_urdf_exits_nonzero_with_a_message(domain_id):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO_ROOT), os.environ.get('PYTHONPATH', '')]))
    result = subprocess.run(
        [sys.executable, '-m', 'ne_dynamics_ros.nodes.sim_arm_node', '--ros-args',
         '-p', 'urdf_path:=/nonexistent/arm.urdf'],
        capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 1
    assert "URDF file not found: '/nonexistent/arm.urdf'" in result.stdout + result.stderr


@pytest.mark.parametrize('signals', [1, 2, 5])
def test_ctrl_c_ends_cleanly_however_many_sigints(domain_id, signals):
    """ros2 launch forwards a second SIGINT to a process that got the terminal's: the
    node must end with code 0 and no traceback, whenever the signals arrive."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO_ROOT), os.environ.get('PYTHONPATH', '')]), PYTHONUNBUFFERED='1')
    process = subprocess.Popen(
        [sys.executable, '-m', 'ne_dynamics_ros.nodes.sim_arm_node', '--ros-args',
         '-p', f'urdf_path:={PUMA560_URDF}', '-p', 'publish_rate:=500.0'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    first = process.stdout.readline()
    assert 'simulating' in first, first
    for _ in range(signals):
        process.send_signal(signal.SIGINT)
        time.sleep(0.001)
    output = process.communicate(timeout=30)[0]
    assert process.returncode == 0, output
    assert 'Traceback' not in output and 'KeyboardInterrupt' not in output, output


def test_the_mujoco_plant_in_lockstep_matches_the_pinocchio_plant(make_system):
    """The same answers to each state, 0.5 s at 100 Hz, MuJoCo with RK4 at 1 kHz against
    Pinocchio ABA + RK4 at 1 kHz: the same trajectory to 1e-6 rad."""
    command = np.array([0.5, 20.0, 5.0, 0.2, 0.1, 0.05])
    runs = {}
    for plant in ('pinocchio', 'mujoco'):
        sim, probe, executor = make_system(
            answer=lambda msg: command, publish_rate=100.0, lockstep=True,
            initial_positions=[0.1] * 6, plant=plant, integrator='RK4', timestep=0.001,
            armature=[0.1] * 6)
        sim.run_until(0.5)
        _spin_until(executor, lambda: len(probe.states) >= 51, 10.0)
        runs[plant] = np.array([m.position for _, m in probe.states[:51]])
        executor.remove_node(probe)
        executor.remove_node(sim)
    np.testing.assert_allclose(runs['mujoco'], runs['pinocchio'], rtol=0, atol=1e-6)


@pytest.mark.parametrize('parameters, match', [
    ({'plant': 'bullet'}, 'plant'),
    ({'plant': 'mujoco', 'payload_mass': 1.0, 'payload_link': 'nowhere'}, 'nowhere'),
    ({'plant': 'mujoco', 'integrator': 'leapfrog'}, 'integrator'),
    ({'payload_schedule': [0.0, 1.0, 0.0, 0.0]}, 'payload_schedule'),
    ({'plant': 'mujoco', 'payload_schedule': [1.0, 1.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0,
                                              0.0]}, 'not after'),
])
def test_bad_plant_settings_are_refused(ros_context, parameters, match):
    parameters = dict(parameters, urdf_path=str(UR5E_URDF))
    with pytest.raises(SimArmConfigError, match=match):
        SimArmNode(context=ros_context, parameter_overrides=[
            Parameter(name, value=value) for name, value in parameters.items()])


@pytest.mark.parametrize('plant', ['pinocchio', 'mujoco'])
def test_a_payload_schedule_reaches_the_plant(ros_context, plant):
    sim = SimArmNode(context=ros_context, parameter_overrides=[
        Parameter('urdf_path', value=str(UR5E_URDF)), Parameter('plant', value=plant),
        Parameter('payload_schedule', value=[0.5, 2.0, 0.0, 0.0, 0.05, 2.5, 0.0, 0.0, 0.0,
                                             0.0])])
    try:
        entries = sim.arm.payload_schedule.entries
        assert [(t, m) for t, m, _ in entries] == [(0.5, 2.0), (2.5, 0.0)]
    finally:
        sim.destroy_node()


@pytest.mark.parametrize('parameters, match', [
    ({'clock': 'robot'}, 'clock'),
    ({'clock': 'hardware'}, 'command_interface joint_state'),
    ({'command_interface': 'sim_arm_system'}, 'needs clock hardware'),
    ({'command_interface': 'sim_arm_system', 'clock': 'hardware'}, 'hardware_channel'),
    ({'command_interface': 'sim_arm_system', 'clock': 'timer',
      'hardware_channel': 'test/unused'}, 'needs clock hardware'),
    ({'clock': 'hardware', 'command_interface': 'joint_state', 'max_step': 0.0}, 'max_step'),
])
def test_bad_clock_settings_are_refused(ros_context, parameters, match):
    parameters = dict(parameters, urdf_path=str(UR5E_URDF))
    with pytest.raises(SimArmConfigError, match=match):
        SimArmNode(context=ros_context, parameter_overrides=[
            Parameter(name, value=value) for name, value in parameters.items()])


def test_on_the_hardwares_clock_each_write_steps_the_arm_and_publishes_one_state(
        ros_context):
    # the hardware's writes (topic_based_ros2_control: JointState, efforts by name,
    # stamped); no broadcaster here, so each state is the arm at its write's stamp
    sim = SimArmNode(context=ros_context, parameter_overrides=[
        Parameter('urdf_path', value=str(UR5E_URDF)), Parameter('clock', value='hardware'),
        Parameter('command_interface', value='joint_state'),
        Parameter('initial_positions', value=[0.1] * 6),
        # a write's stamp counts when it came at most max_step before its arrival: with
        # 0.1 s and the stamps 80 ms back, a 36 ms round trip under CI's load ran out
        Parameter('max_step', value=1.0)])
    hardware = Node('hardware', context=ros_context)
    states = []
    hardware.create_subscription(JointState, '/joint_states', states.append, 100)
    writer = hardware.create_publisher(JointState, '/effort_controller/commands', 10)
    executor = SingleThreadedExecutor(context=ros_context)
    for node in (sim, hardware):
        executor.add_node(node)
    try:
        _spin_until(executor, lambda: writer.get_subscription_count() > 0, 10.0)
        _spin_for(executor, 0.3)
        assert states == []                    # nothing before the hardware writes
        names = list(reversed(UR5E_JOINTS))    # by name, in any order
        commands = [np.array([0.5, 20.0 + k, 5.0, 0.2, 0.1, 0.05]) for k in range(10)]
        base = time.time_ns() - 200_000_000     # stamps 2 ms apart, in the recent past
        for k, command in enumerate(commands):
            msg = JointState(name=names, effort=command[::-1].tolist())
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(
                base + k * 2_000_000, 1_000_000_000)
            writer.publish(msg)
            _spin_until(executor, lambda: len(states) == k + 1, 5.0)
        stamps = np.array([m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec
                           for m in states])
        np.testing.assert_array_equal(stamps - base, np.arange(10) * 2_000_000)
        # each write: the command before it held over the 2 ms since the previous write
        reference = SimulatedArm(str(UR5E_URDF), initial_positions=[0.1] * 6)
        for command in commands[:-1]:
            reference.step(command, 0.002)
        np.testing.assert_allclose(states[-1].position, reference.position, atol=1e-12)
        # the effort reported is the one that acted up to the state
        np.testing.assert_allclose(states[-1].effort, commands[-2], atol=0)
        assert sim.late_writes == 0
    finally:
        for node in (sim, hardware):
            executor.remove_node(node)
            node.destroy_node()
        executor.shutdown()


def test_behind_sim_arm_system_each_write_is_answered_with_the_state_of_the_next_read(
        ros_context):
    # the plugin's side played by a socket of the test's: commands in the hardware's
    # order (reversed), reads every 2 ms and each write 0.3 ms after its read
    import socket
    import uuid
    from ne_dynamics_ros.simulation import hardware_link as link
    channel = f'test/{uuid.uuid4().hex}'
    sim = SimArmNode(context=ros_context, parameter_overrides=[
        Parameter('urdf_path', value=str(UR5E_URDF)), Parameter('clock', value='hardware'),
        Parameter('command_interface', value='sim_arm_system'),
        Parameter('hardware_channel', value=channel),
        Parameter('initial_positions', value=[0.1] * 6)])
    observer = Node('observer', context=ros_context)
    truth, writes = [], []
    observer.create_subscription(JointState, '/joint_states', truth.append, 100)
    observer.create_subscription(JointState, '/sim_arm_node/hardware_writes', writes.append,
                                 100)
    executor = SingleThreadedExecutor(context=ros_context)
    for node in (sim, observer):
        executor.add_node(node)
    hardware = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    hardware.bind(link.abstract_address(channel, 'hardware'))
    hardware.settimeout(5.0)
    arm = link.abstract_address(channel, 'arm')
    names = list(reversed(UR5E_JOINTS))
    try:
        hardware.sendto(b'NECM garbage', arm)
        hardware.sendto(link.pack_command(1, 0, 0, [1.0] * 6, ['a'] * 6), arm)
        period, lag = 2_000_000, 300_000
        base = time.time_ns() - 50_000_000
        commands = [np.zeros(6)] + [np.array([0.5, 20.0 + k, 5.0, 0.2, 0.1, 0.05])
                                    for k in range(6)]
        states = []
        for k, command in enumerate(commands):
            read_ns = base + k * period
            hardware.sendto(link.pack_command(k + 1, read_ns, read_ns + lag, command[::-1],
                                              names), arm)
            states.append(link.parse_state(hardware.recv(4096)))
        assert sim.commands_dropped == 2               # garbage and the wrong joints
        assert [s[0] for s in states] == list(range(1, len(commands) + 1))
        # brakes on at the zero command: the initial pose, stamped at its write
        assert states[0][1] == base + lag
        np.testing.assert_array_equal(states[0][2], [0.1] * 6)
        # then each state is the arm at the next read: the first command acts from its
        # write to the next read, each later one after the rest of its predecessor's hold
        assert [s[1] for s in states[1:]] == [base + (k + 1) * period
                                              for k in range(1, len(commands))]
        reference = SimulatedArm(str(UR5E_URDF), initial_positions=[0.1] * 6)
        reference.step(commands[1], (period - lag) * 1e-9)
        for k in range(2, len(commands)):
            reference.step(commands[k - 1], lag * 1e-9)
            reference.step(commands[k], (period - lag) * 1e-9)
        np.testing.assert_allclose(states[-1][2], reference.position[::-1], atol=1e-12)
        np.testing.assert_allclose(states[-1][3], reference.velocity[::-1], atol=1e-12)
        # with the acceleration the command just taken gives there (the plugin carries a
        # state to a read that comes at another instant with it)
        np.testing.assert_allclose(states[-1][4], reference.acceleration(
            reference.position, reference.velocity, commands[-1])[::-1], rtol=1e-9,
            atol=1e-9)
        # and the inverse inertia the carry answers new commands with: Pinocchio's M(q)
        # inverted, at the state of the first answer after the brakes opened
        model = pin.buildModelFromUrdf(str(UR5E_URDF))
        inertia = pin.crba(model, model.createData(), states[1][2][::-1])
        np.testing.assert_allclose(states[1][6], np.linalg.inv(inertia)[::-1, ::-1],
                                   rtol=1e-7, atol=1e-9)
        # observers see the truth (arm order, the state's stamp) and each write
        _spin_until(executor, lambda: len(truth) >= len(commands)
                    and len(writes) >= len(commands), 5.0)
        assert _stamp(truth[-1]) == pytest.approx(states[-1][1] * 1e-9, abs=1e-6)
        np.testing.assert_allclose(truth[-1].position, reference.position, atol=1e-12)
        np.testing.assert_allclose(writes[-1].effort, commands[-1], atol=0)
        # writes that waited are stepped and the newest valid one answered, a malformed
        # datagram behind it notwithstanding
        read_ns = base + len(commands) * period
        for seq in (len(commands) + 1, len(commands) + 2):
            hardware.sendto(link.pack_command(seq, read_ns, read_ns + lag, commands[-1][::-1],
                                              names), arm)
        hardware.sendto(b'NECM garbage', arm)
        answered = link.parse_state(hardware.recv(4096))
        if answered[0] == len(commands) + 1:         # the thread took the first alone
            answered = link.parse_state(hardware.recv(4096))
        assert answered[0] == len(commands) + 2
        deadline = time.monotonic() + 5.0           # the garbage, on the link's thread
        while sim.commands_dropped < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sim.commands_dropped == 3
    finally:
        hardware.close()
        for node in (sim, observer):
            executor.remove_node(node)
            node.destroy_node()
        executor.shutdown()


@pytest.mark.parametrize('plant', ['pinocchio', 'mujoco'])
def test_a_flange_sensor_is_published_as_ur_publishes_it_and_takes_pushes(make_system, plant):
    # the UR5e with a 1.5 kg tool at tool0 and its sensor there, held by its brakes: each
    # state comes with the sensor's reading on force_torque_sensor_broadcaster/wrench in
    # tool0's frame, the arm's own (MujocoArm / SimulatedArm.flange_wrench, tested against
    # the closed form in test/unit); a push on ~/applied_wrench reaches the arm, on the
    # Pinocchio plant at once in the reading (20 N along the base's x, in tool0's axes);
    # a torque or another frame is refused and the push in force stays
    from geometry_msgs.msg import WrenchStamped
    from ne_dynamics_ros import load_model
    from ne_dynamics_ros.dynamics.kinematics import tip_pose
    sim, probe, executor = make_system(publish_rate=100.0, plant=plant, ft_sensor='tool0',
                                       payload_mass=1.5, payload_link='tool0',
                                       initial_positions=[0.2, -1.4, 1.4, -1.5, -1.5, 0.1])
    readings = []
    probe.create_subscription(WrenchStamped, '/force_torque_sensor_broadcaster/wrench',
                              readings.append, 10)
    push = probe.create_publisher(WrenchStamped, '/sim_arm_node/applied_wrench', 10)
    _spin_until(executor, lambda: len(readings) > 3 and push.get_subscription_count(), 10.0)

    def force(message):
        return np.array([message.wrench.force.x, message.wrench.force.y,
                         message.wrench.force.z])
    assert readings[-1].header.frame_id == 'tool0'
    np.testing.assert_allclose(force(readings[-1]), sim.arm.flange_wrench()[0], atol=1e-9)
    message = WrenchStamped()
    message.wrench.force.x = 20.0
    push.publish(message)
    _spin_until(executor, lambda: sim.arm._push is not None, 5.0)   # noqa: SLF001
    if plant == 'pinocchio':
        R = tip_pose(load_model(str(UR5E_URDF), tip_link='tool0'), sim.arm.position)[:3, :3]
        _spin_until(executor, lambda: np.allclose(
            force(readings[-1]), R.T @ [20.0, 0.0, -9.81 * 1.5], atol=1e-9), 5.0)
    pushed = sim.arm._push                                          # noqa: SLF001
    for field, value in (('torque', 1.0), ('frame', 'camera')):
        bad = WrenchStamped()
        if field == 'torque':
            bad.wrench.torque.z = value
        else:
            bad.header.frame_id = value
        push.publish(bad)
    _spin_for(executor, 0.3)
    assert sim.arm._push is pushed                                  # noqa: SLF001
