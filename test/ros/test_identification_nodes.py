"""The identified model and the excitation over DDS: the nodes load what identify wrote.

The recording and the identification are the session fixtures of
``test/identification_fixtures.py`` (the simulated PUMA 560 with a hidden payload).
"""
import numpy as np
import pytest
import yaml

from node_harness import SETTLE

from ne_dynamics_ros.identification.excitation import FourierTrajectory
from ne_dynamics_ros import load_model


def test_parameter_yaml_loads_in_both_nodes(ros_context, identified):
    from ne_dynamics_ros.nodes.computed_torque_node import ComputedTorqueNode
    from ne_dynamics_ros.nodes.sim_arm_node import SimArmNode
    _, _, urdf, params = identified
    values = yaml.safe_load(params.read_text())['/**']['ros__parameters']
    args = ['--ros-args', '--params-file', str(params), '-p', f'urdf_path:={urdf}',
            '-p', 'tip_link:=flange', '-p', f'discovery_settle:={SETTLE.value}']
    node = ComputedTorqueNode(context=ros_context, cli_args=args)
    try:
        model = node.controller.model
        assert node.controller.settings.friction_compensation
        np.testing.assert_allclose(model.armature, values['armature'])
        np.testing.assert_allclose(model.damping, values['damping'])
        np.testing.assert_allclose(model.friction, values['friction'])
        # the identified friction shape: v_s at measured velocities, the offsets
        np.testing.assert_allclose(model.coulomb_velocity, values['friction_velocity'])
        np.testing.assert_allclose(model.friction_offset, values['friction_offset'])
        assert node.controller.joints == values['joints']
        # the recommended gains come with the model, and the node takes them
        for name in ('kp', 'kd', 'ki', 'integral_limit'):
            np.testing.assert_allclose(getattr(node.controller.settings, name),
                                       values[name])
    finally:
        node.destroy_node()
    sim = SimArmNode(context=ros_context, cli_args=['--ros-args', '--params-file', str(params),
                                                    '-p', f'urdf_path:={urdf}'])
    try:
        np.testing.assert_allclose(sim.arm.joint_friction, values['damping'])
        np.testing.assert_allclose(sim.arm.coulomb_friction, values['friction'])
        np.testing.assert_allclose(sim.arm.model.armature[sim.arm._idx_v], values['armature'])
        assert sim.arm.joint_names == values['joints']
    finally:
        sim.destroy_node()


def test_trajectory_source_plays_an_excitation_file(ros_context, tmp_path):
    """profile: excitation: a move from the measured start to q0, then the Fourier series."""
    import time
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory
    from ne_dynamics_ros.nodes.trajectory_source_node import (
        TrajectorySourceError, TrajectorySourceNode)
    excitation = FourierTrajectory(('a', 'b'), 2.0, np.array([0.1, -0.2]),
                                   np.array([[0.3, -0.3], [0.2, -0.2]]),
                                   np.array([[0.2, -0.1], [0.1, -0.05]]))
    path = tmp_path / 'exc.yaml'
    path.write_text(yaml.safe_dump(excitation.to_dict()))
    executor = SingleThreadedExecutor(context=ros_context)
    arm = Node('fake_arm_exc', context=ros_context)
    states = arm.create_publisher(JointState, '/joint_states', 10)
    source = TrajectorySourceNode(context=ros_context, parameter_overrides=[
        Parameter('profile', value='excitation'), Parameter('file', value=str(path)),
        Parameter('periods', value=2), Parameter('duration', value=0.5),
        Parameter('sample_period', value=0.01), Parameter('excitation_law', value='unchanged')])
    listener = Node('listener_exc', context=ros_context)
    received = []
    qos = QoSProfile(depth=1, reliability=QoSReliabilityPolicy.RELIABLE,
                     durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)
    listener.create_subscription(JointTrajectory, '/computed_torque_node/joint_trajectory',
                                 received.append, qos)
    nodes = [arm, source, listener]
    for node in nodes:
        executor.add_node(node)
    try:
        deadline = time.monotonic() + 10.0
        while not received and time.monotonic() < deadline:
            states.publish(JointState(name=['b', 'a'], position=[0.4, 0.0]))
            executor.spin_once(timeout_sec=0.05)
    finally:
        for node in nodes:
            executor.remove_node(node)
            node.destroy_node()
        executor.shutdown()
    assert len(received) == 1
    msg = received[0]
    assert msg.joint_names == ['a', 'b']
    times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                      for p in msg.points])
    q = np.array([p.positions for p in msg.points])
    assert np.all(np.diff(times) > 0) and times[-1] == pytest.approx(0.5 + 2 * 2.0)
    np.testing.assert_allclose(q[0], [0.0, 0.4])                       # the measured start
    after = times >= 0.5 - 1e-9
    expected = excitation.evaluate(times[after] - 0.5)[0]
    np.testing.assert_allclose(q[after], expected, atol=1e-12)
    np.testing.assert_allclose(q[-1], excitation.q0, atol=1e-9)
    with pytest.raises(TrajectorySourceError, match='needs the parameter file'):
        TrajectorySourceNode(context=ros_context, parameter_overrides=[
            Parameter('profile', value='excitation')])
    (tmp_path / 'bad.yaml').write_text('profile: quintic\n')
    with pytest.raises(TrajectorySourceError, match='profile: excitation'):
        TrajectorySourceNode(context=ros_context, parameter_overrides=[
            Parameter('profile', value='excitation'),
            Parameter('file', value=str(tmp_path / 'bad.yaml'))])


def test_trajectory_source_plays_the_excitation_under_its_pd_then_restores_the_law(
        ros_context, tmp_path):
    """excitation_law feedforward_pd (default): the controller runs mode feedforward with the
    file's kp, kd while the excitation plays, and its own law again once it has ended."""
    import threading
    import time
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState
    from references import UR5E_URDF
    from ne_dynamics_ros.identification.excitation import excitation_gains
    from ne_dynamics_ros.nodes.computed_torque_node import ComputedTorqueNode
    from ne_dynamics_ros.nodes.trajectory_source_node import (
        _publish_once, TrajectorySourceError, TrajectorySourceNode)
    model = load_model(str(UR5E_URDF))
    kp, kd = excitation_gains(model)
    np.testing.assert_allclose(kp, [300, 300, 300, 56, 56, 56])     # 150 or 28 N m / 0.5 rad
    np.testing.assert_allclose(kd, 0.1 * kp)
    n = model.n
    excitation = FourierTrajectory(tuple(model.joint_names), 1.0, np.zeros(n),
                                   np.zeros((n, 2)), np.zeros((n, 2)))
    bare = tmp_path / 'bare.yaml'
    bare.write_text(yaml.safe_dump(excitation.to_dict()))
    with pytest.raises(TrajectorySourceError, match='no play section'):
        TrajectorySourceNode(context=ros_context, parameter_overrides=[
            Parameter('profile', value='excitation'), Parameter('file', value=str(bare))])
    path = tmp_path / 'exc.yaml'
    path.write_text(yaml.safe_dump(excitation.with_gains(kp, kd).to_dict()))
    assert FourierTrajectory.from_dict(yaml.safe_load(path.read_text())).kp.tolist() == \
        kp.tolist()

    controller = ComputedTorqueNode(context=ros_context, parameter_overrides=[
        Parameter('urdf_path', value=str(UR5E_URDF)), Parameter('state_timeout', value=5.0),
        SETTLE])
    arm = Node('fake_arm_law', context=ros_context)
    states = arm.create_publisher(JointState, '/joint_states', 10)
    background = SingleThreadedExecutor(context=ros_context)
    for node in (controller, arm):
        background.add_node(node)
    modes, stop = [], threading.Event()

    def spin():
        while not stop.is_set():
            msg = JointState(name=list(model.joint_names), position=[0.0] * n,
                             velocity=[0.0] * n)
            msg.header.stamp = arm.get_clock().now().to_msg()
            states.publish(msg)
            background.spin_once(timeout_sec=0.01)
            mode = controller.get_parameter('mode').value
            if not modes or modes[-1][0] != mode:
                modes.append((mode, np.atleast_1d(controller.get_parameter('kp').value)))

    thread = threading.Thread(target=spin)
    thread.start()
    source = TrajectorySourceNode(context=ros_context, parameter_overrides=[
        Parameter('profile', value='excitation'), Parameter('file', value=str(path)),
        Parameter('duration', value=0.2), Parameter('start', value=[0.0] * n),
        Parameter('joint_names', value=list(model.joint_names))])
    try:
        started = time.monotonic()
        assert _publish_once(source, wait_timeout=20.0, linger=0.2) == 0
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        thread.join()
        for node in (controller, arm, source):
            node.destroy_node()
        background.shutdown()
    # computed torque, then the excitation's PD, then computed torque with Lee's gains again
    assert [m for m, _ in modes] == ['computed_torque', 'feedforward', 'computed_torque']
    np.testing.assert_allclose(modes[1][1], kp)
    np.testing.assert_allclose(modes[2][1], [100.0])
    assert elapsed >= 1.2            # restored only after the 0.2 s move and the 1 s period
