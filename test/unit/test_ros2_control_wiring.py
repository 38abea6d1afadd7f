"""The ros2_control wiring made from a URDF (ne_dynamics_ros.tools.ros2_control).

The ``<ros2_control>`` block is read back with ElementTree and compared with the URDF's
own ``<limit effort>`` read the same way (not through the package's model); the URDF with
the block still loads to the same chain; the controllers' YAML is parsed back; the
hold controller's PID is critically damped in joint units; ros2_control is found the way
a ROS install and the bootstrap lay it out, and not found with the reason.
"""
import os
import pathlib
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml
from references import PUMA560_URDF, UR5E_URDF

from ne_dynamics_ros import load_model
from ne_dynamics_ros.tools import cli
from ne_dynamics_ros.tools import ros2_control as r2c


def urdf_limits(path):
    root = ET.parse(path).getroot()
    return {j.get('name'): float(j.find('limit').get('effort')) for j in root.iter('joint')
            if j.get('type') in ('revolute', 'continuous', 'prismatic')}


@pytest.mark.parametrize('urdf', [PUMA560_URDF, UR5E_URDF], ids=['puma560', 'ur5e'])
def test_the_block_names_every_joint_with_its_urdf_effort_limits(urdf):
    model = load_model(str(urdf))
    order = list(reversed(model.joint_names))          # a hardware order of its own
    limits = [model.effort_limits[model.joint_names.index(j)] for j in order]
    block = ET.fromstring(r2c.ros2_control_block(order, limits))
    assert block.find('hardware/plugin').text == r2c.TOPIC_BASED_SYSTEM
    params = {p.get('name'): p.text for p in block.findall('hardware/param')}
    assert params['trigger_joint_command_threshold'] == '-1'
    joints = block.findall('joint')
    assert [j.get('name') for j in joints] == order
    expected = urdf_limits(urdf)
    for joint in joints:
        command = joint.find('command_interface')
        assert command.get('name') == 'effort'
        bounds = {p.get('name'): float(p.text) for p in command.findall('param')}
        assert bounds == {'min': -expected[joint.get('name')],
                          'max': expected[joint.get('name')]}
        assert [s.get('name') for s in joint.findall('state_interface')] == [
            'position', 'velocity', 'effort']
    text = r2c.urdf_with_ros2_control(pathlib.Path(urdf).read_text(), r2c.ros2_control_block(
        order, limits))
    again = load_model(text)
    assert again.joint_names == model.joint_names
    np.testing.assert_array_equal(again.effort_limits, model.effort_limits)


def test_the_block_for_sim_arm_system_names_its_channel():
    block = ET.fromstring(r2c.ros2_control_block(
        ['joint_1'], [10.0], plugin=r2c.SIM_ARM_SYSTEM,
        hardware_parameters=r2c.sim_arm_system_parameters('ne_dynamics_ros/run_1')))
    assert block.find('hardware/plugin').text == 'ne_dynamics_ros_hardware/SimArmSystem'
    assert {p.get('name'): p.text for p in block.findall('hardware/param')} == {
        'channel': 'ne_dynamics_ros/run_1'}
    for channel in ('', 'x' * 97):
        with pytest.raises(r2c.Ros2ControlError, match='1-96 bytes'):
            r2c.sim_arm_system_parameters(channel)


def test_sim_arm_system_is_found_by_its_pluginlib_entry(tmp_path):
    index = tmp_path / 'ws' / r2c.PLUGIN_INDEX
    assert r2c.find_sim_arm_system({'AMENT_PREFIX_PATH': str(tmp_path / 'ws')}) is None
    index.mkdir(parents=True)
    (index / 'ne_dynamics_ros_hardware').write_text('share/x.xml')
    path = os.pathsep.join([str(tmp_path / 'other'), str(tmp_path / 'ws')])
    assert r2c.find_sim_arm_system({'AMENT_PREFIX_PATH': path}) == tmp_path / 'ws'
    assert r2c.find_sim_arm_system({}) is None


def test_a_urdf_with_its_own_block_or_without_an_end_is_refused():
    text = PUMA560_URDF.read_text()
    block = r2c.ros2_control_block(['joint_1'], [10.0])
    with pytest.raises(r2c.Ros2ControlError, match='already has a <ros2_control>'):
        r2c.urdf_with_ros2_control(r2c.urdf_with_ros2_control(text, block), block)
    with pytest.raises(r2c.Ros2ControlError, match='</robot>'):
        r2c.urdf_with_ros2_control('<robot name="a">', block)


@pytest.mark.parametrize('joints, limits, match', [
    ([], [], 'no movable joints'), (['a', 'a'], [1.0, 1.0], 'repeated'),
    (['a'], [0.0], 'effort_limits'), (['a', 'b'], [1.0], 'effort_limits')])
def test_bad_block_inputs_are_refused(joints, limits, match):
    with pytest.raises(r2c.Ros2ControlError, match=match):
        r2c.ros2_control_block(joints, limits)


def test_the_controllers_yaml_wires_the_three_controllers():
    model = load_model(str(UR5E_URDF))
    command = model.joint_names[3:] + model.joint_names[:3]
    gains = r2c.hold_gains(model, 500)
    document = yaml.safe_load(r2c.controllers_yaml(model.joint_names, 500, gains, command))
    manager = document['controller_manager']['ros__parameters']
    assert manager['update_rate'] == 500
    assert manager['effort_controller']['type'] == \
        'effort_controllers/JointGroupEffortController'
    assert manager['hold_controller']['type'] == \
        'joint_trajectory_controller/JointTrajectoryController'
    assert document['effort_controller']['ros__parameters']['joints'] == command
    hold = document['hold_controller']['ros__parameters']
    assert hold['command_interfaces'] == ['effort']
    assert set(hold['gains']) == set(model.joint_names)
    with pytest.raises(r2c.Ros2ControlError, match='each once'):
        r2c.controllers_yaml(model.joint_names, 500, gains, command[:-1])
    with pytest.raises(r2c.Ros2ControlError, match='whole number'):
        r2c.controllers_yaml(model.joint_names, 500.5)


def test_the_trajectory_controller_for_jtc_feedforward_takes_the_controllers_order():
    model = load_model(str(UR5E_URDF))
    command = model.joint_names[3:] + model.joint_names[:3]
    gains = r2c.hold_gains(model, 500, delay=0.002)
    document = yaml.safe_load(r2c.controllers_yaml(model.joint_names, 500, None, command,
                                                   trajectory_gains=gains))
    assert document['controller_manager']['ros__parameters'][
        'joint_trajectory_controller']['type'] == \
        'joint_trajectory_controller/JointTrajectoryController'
    jtc = document['joint_trajectory_controller']['ros__parameters']
    assert jtc['joints'] == command and jtc['command_interfaces'] == ['effort']
    assert jtc['gains'] == {name: gains[name] for name in command}
    assert 'hold_controller' not in document
    passed = yaml.safe_load(r2c.controllers_yaml(
        model.joint_names, 500, None, command, trajectory_gains=gains,
        trajectory_interfaces=('position', 'effort')))['joint_trajectory_controller'][
        'ros__parameters']
    assert passed['command_interfaces'] == ['position', 'effort'] and 'gains' not in passed
    with pytest.raises(r2c.Ros2ControlError, match='command interfaces'):
        r2c.controllers_yaml(model.joint_names, 500, trajectory_gains=gains,
                             trajectory_interfaces=('velocity',))


def test_a_position_and_effort_block_for_a_drive_with_its_own_position_loop():
    block = ET.fromstring(r2c.ros2_control_block(['j1', 'j2'], [10.0, 5.0],
                                                 command_interfaces=('position', 'effort')))
    for joint in block.findall('joint'):
        assert [c.get('name') for c in joint.findall('command_interface')] == [
            'position', 'effort']
    with pytest.raises(r2c.Ros2ControlError, match='command_interfaces'):
        r2c.ros2_control_block(['j1'], [1.0], command_interfaces=('velocity',))


def test_the_hold_pid_is_critically_damped_on_the_lightest_inertia():
    model = load_model(str(UR5E_URDF))
    inertias = np.array([np.diag(model.mass_matrix(q)) for q in np.random.default_rng(
        1).uniform(-np.pi, np.pi, (256, model.n))])
    for joint, pid in r2c.hold_gains(model, 500).items():
        j = model.joint_names.index(joint)
        # d^2 = 4 p M (critical damping of M e'' + d e' + p e = 0) at the lightest M,
        # within the 4 digits kept and the configurations drawn here and by the rule
        lightest = inertias[:, j].min()
        assert pid['d'] ** 2 / (4 * pid['p']) == pytest.approx(lightest, rel=0.15)
        # nowhere faster than the rule's bandwidth (50 rad/s at 500 Hz)
        assert np.sqrt(pid['p'] / inertias[:, j].min()) <= 50.0 * 1.08
        assert pid['i_clamp'] == pytest.approx(0.1 * model.effort_limits[j], rel=1e-3)
        assert pid['u_clamp_max'] == -pid['u_clamp_min'] == pytest.approx(
            model.effort_limits[j])


def fake_prefix(folder):
    program = folder / 'lib' / 'controller_manager' / 'ros2_control_node'
    program.parent.mkdir(parents=True)
    program.write_text('')
    return folder


def test_ros2_control_is_found_on_a_ros_install_first(tmp_path, monkeypatch):
    system = fake_prefix(tmp_path / 'opt_ros')
    monkeypatch.setattr(sys, 'prefix', str(tmp_path / 'venv'))
    prefix, extra = r2c.find_ros2_control({'AMENT_PREFIX_PATH': f'/nowhere{os.pathsep}{system}'})
    assert prefix == system and extra == {}


def test_the_bundled_build_is_found_with_its_environment(tmp_path, monkeypatch):
    venv = tmp_path / 'venv'
    bundled = fake_prefix(venv / 'ros2_control' / 'install')
    monkeypatch.setattr(sys, 'prefix', str(venv))
    prefix, extra = r2c.find_ros2_control({'LD_LIBRARY_PATH': '/usr/local/lib'})
    assert prefix == bundled
    assert extra['LD_LIBRARY_PATH'].split(os.pathsep)[0] == str(bundled / 'lib')
    assert extra['LD_LIBRARY_PATH'].endswith('/usr/local/lib')
    assert extra['AMENT_PREFIX_PATH'].split(os.pathsep)[:2] == [str(bundled), str(venv)]


def test_without_ros2_control_the_reason_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, 'prefix', str(tmp_path / 'venv'))
    prefix, why = r2c.find_ros2_control({})
    assert prefix is None and 'bootstrap' in why and str(tmp_path / 'venv') in why
    prefix, why = r2c.find_ros2_control({'NE_DYNAMICS_ROS2_CONTROL': str(tmp_path)})
    assert prefix is None and 'NE_DYNAMICS_ROS2_CONTROL' in why


def test_the_command_writes_both_files_or_nothing(tmp_path, capsys):
    out, controllers = tmp_path / 'arm.urdf', tmp_path / 'controllers.yaml'
    assert cli.main(['ros2-control', str(PUMA560_URDF), '--output', str(out),
                     '--controllers', str(controllers), '--joints', 'joint_2', 'joint_1',
                     'joint_3', 'joint_4', 'joint_5', 'joint_6']) == 0
    block = ET.parse(out).getroot().find('ros2_control')
    assert [j.get('name') for j in block.findall('joint')][:2] == ['joint_2', 'joint_1']
    assert yaml.safe_load(controllers.read_text())['effort_controller'][
        'ros__parameters']['joints'][:2] == ['joint_2', 'joint_1']
    # an unknown joint: exit 2, the files untouched
    before = out.read_bytes()
    assert cli.main(['ros2-control', str(PUMA560_URDF), '--output', str(out),
                     '--joints', 'joint_1', 'elbow']) == 2
    assert 'elbow' in capsys.readouterr().err and out.read_bytes() == before
    # the input is never the output
    assert cli.main(['ros2-control', str(out), '--output', str(out)]) == 2
    assert out.read_bytes() == before


def test_the_command_writes_a_trajectory_controller_for_position_and_effort(tmp_path):
    out, controllers = tmp_path / 'arm.urdf', tmp_path / 'controllers.yaml'
    assert cli.main(['ros2-control', str(PUMA560_URDF), '--output', str(out),
                     '--controllers', str(controllers),
                     '--trajectory-controller', 'position+effort']) == 0
    joint = ET.parse(out).getroot().find('ros2_control/joint')
    assert [c.get('name') for c in joint.findall('command_interface')] == [
        'position', 'effort']
    jtc = yaml.safe_load(controllers.read_text())['joint_trajectory_controller'][
        'ros__parameters']
    assert jtc['command_interfaces'] == ['position', 'effort']


def test_the_latency_chain_counts_the_cycles_from_controller_managers_stamps():
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / 'benchmarks'))
    from ros2_control_loop import cycle_latency, summary
    period = 0.002
    # the broadcaster stamps cycle k at k T + 0.05 ms; the command of state k reaches the
    # forward controller's buffer d_k cycles later (1 mostly, 2 every tenth state, 3
    # once); each cycle writes what the buffer holds last, so a command overtaken in the
    # buffer is never written; the hardware stamps its write at j T + 0.3 ms
    delays = {k: (2 if k % 10 == 5 else 1) for k in range(100)}
    delays[77] = 3
    states = [(k * period + 5e-5, (float(k), -float(k))) for k in range(100)]
    writes, held = [], (0.0, 0.0)
    for j in range(1, 104):
        arrived = [k for k in range(100) if k + delays[k] == j]
        if arrived:
            held = states[max(arrived)][1]
        writes.append((j * period + 3e-4, held))
    # by hand: state 5 (d 2) arrives with state 6 (d 1) at cycle 7 and is overtaken,
    # likewise 15, 25, ... (10 states); 77 (d 3) arrives at 80 with 79: 78 written at 79,
    # 77 overtaken by 79
    overtaken = {k for k in range(100) if k % 10 == 5} | {77}
    result = cycle_latency(states, writes, period)
    assert result['never'] == len(overtaken)
    assert result['cycles'] == [delays[k] for k in range(100) if k not in overtaken]
    row = summary(result)
    assert row['commands'] == 100 and row['never'] == pytest.approx(0.11)
    assert row['next_cycle'] == pytest.approx(0.89) and row['later'] == 0.0


def test_the_arms_own_error_takes_out_the_broadcasters_late_stamp():
    """A closed form: the arm at q(t) = 0.3 sin(2 t) (its states every 2 ms), a reference
    it follows 1e-5 rad behind, and each state stamped 20-120 us after the instant it was
    the arm's (as joint_state_broadcaster stamps its update): the node's error is off by
    q' dt (up to 7e-5 rad here), the arm's own error is 1e-5 rad again."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / 'benchmarks'))
    from ros2_control_loop import arm_errors
    joints = ['a', 'b']

    def arm(t):
        return np.array([0.3 * np.sin(2 * t), -0.3 * np.sin(2 * t)])

    def desired(t):
        return arm(t) + np.array([1e-5, -1e-5])
    truth = [(k * 0.002, 0.0, arm(k * 0.002)) for k in range(600)]
    lag = 20e-6 + 100e-6 * (np.arange(500) % 7) / 6
    read_at = 0.1 + 0.002 * np.arange(500)
    stamps = read_at + lag
    broadcast = [(t, ['b', 'a'], arm(r)[::-1].tolist()) for t, r in zip(stamps, read_at)]
    tracking = [(t, desired(t) - arm(r), None) for t, r in zip(stamps, read_at)]
    node = np.array([e for _, e, _ in tracking])
    assert np.abs(np.abs(node) - 1e-5).max() > 5e-5          # the late stamp shows
    at, own = arm_errors(tracking, broadcast, truth, joints)
    np.testing.assert_allclose(at, stamps)
    np.testing.assert_allclose(own, np.tile([1e-5, -1e-5], (500, 1)), atol=2e-9)


def test_the_moves_statistics_count_only_the_stalls_inside_the_moves():
    """Median of the moves' worst (not decided by one move) and the machine's stalls
    that fell inside a move, counted by length; a stall between moves is not counted."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / 'benchmarks'))
    from machine_stalls import stalls_within
    from ros2_control_loop import move_statistics
    # three moves of 2 s: the node's worst 1, 5, 2 (e-5 rad), the arm's 1, 9, 3 (one
    # without); stalls of 1.5 ms in the first, 2.5 ms between the first two, 3 ms in
    # the last, 0.7 ms in the second
    moves = [(10.0, 12.0, 1e-5, 1e-5), (13.0, 15.0, 5e-5, None), (16.0, 18.0, 2e-5, 3e-5)]
    stalls = [(11.0, 0.0015), (12.5, 0.0025), (14.0, 0.0007), (17.5, 0.003)]
    got = move_statistics(moves, stalls)
    assert got['median_rad'] == pytest.approx(2e-5)
    assert got['arm_median_rad'] == pytest.approx(2e-5)       # of 1 and 3
    assert (got['stalls_1ms'], got['stalls_2ms']) == (2, 1)
    assert got['stall_max_ms'] == pytest.approx(3.0) and got['seconds'] == pytest.approx(6.0)
    between = stalls_within(stalls, [(12.0, 14.5)])
    assert (between['stalls_1ms'], between['stalls_2ms']) == (1, 1)
    assert between['stall_max_ms'] == pytest.approx(2.5)
    assert stalls_within(stalls, [(18.5, 20.0)])['stall_max_ms'] == 0.0
    # the moves the machine did not stop (no stall over 2 ms inside): the first two
    assert got['clean_moves'] == 2
    assert got['clean_worst_rad'] == pytest.approx(5e-5)
    assert got['clean_arm_worst_rad'] == pytest.approx(1e-5)   # the second has none
    empty = move_statistics([], stalls)
    assert empty['median_rad'] is None and empty['stalls_1ms'] == 0
    assert empty['clean_moves'] == 0 and empty['clean_arm_worst_rad'] is None


def test_moves_that_cannot_start_end_the_run_and_say_why():
    """A probe that finds no fresh state of the arm ends the moves at once, and the
    reason is returned with what the probe held (it used to end them without a word)."""
    import threading
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / 'benchmarks'))
    from ros2_control_loop import _moves, UR5E

    class Publisher:
        sent = []

        def get_subscription_count(self):
            return 1

        def publish(self, msg):
            self.sent.append(msg)

    class StarvedProbe:
        lock = threading.RLock()
        tracking, broadcast, truth = [], [], []
        trajectory_publisher = Publisher()

        def position_now(self):
            raise AssertionError('no state of the arm within 0.05 s of now in 5.0 s '
                                 '(newest 0.703 s old)')

        def counts(self):
            return 'truth 3, commands 0'

    worst, oscillations, arm_worst, per_move, ended = _moves(StarvedProbe(), 10, UR5E)
    assert (worst, oscillations, arm_worst, per_move) == (0.0, 0, 0.0, [])
    assert ended == ('move 1 of 10 not started: no state of the arm within 0.05 s of now '
                     'in 5.0 s (newest 0.703 s old) (truth 3, commands 0)')
    assert Publisher.sent == []
