"""Activation means ready: nothing joins the DDS graph once commands flow (issue 29).

Before, the node commanded before its trajectory receiver process had joined the graph;
when that process joined late, the process publishing ``/joint_states`` stalled for
335 ms while Fast DDS discovered it, the node's state timeout tripped and it sent zero
effort, and a trajectory sent right after "activated" was lost.

Here the node is started three times, as ``ros2 run`` starts it, while another process
streams valid PUMA states at 1 kHz and records every effort command it receives
(``benchmarks/node_starts.py``; ``bench_node.py --starts 20`` is the long soak). From
each start's first command to its Ctrl-C: no gap over 20 ms, no zero command that the
states' own stream does not explain; and a trajectory published as soon as the node
logs its activation is installed every time.
"""
import os
import sys

from references import PUMA560_URDF, REPO_ROOT

from ne_dynamics_ros.nodes import transport

sys.path.insert(0, str(REPO_ROOT / 'benchmarks'))
import node_starts  # noqa: E402 - the benchmark's procedure: one way to start and judge

STARTS = 3


def test_starts_never_gap_never_zero_never_lose_a_trajectory(ros_context, domain_id,
                                                             tmp_path):
    result = node_starts.run_starts(STARTS, ros_context, tmp_path)
    rows = result['starts']
    assert len(rows) == STARTS
    for row in rows:
        assert row['commands'] > 500, (row['start'], row['commands'], row['node_said'])
        assert row['trajectory_installed'], row['node_said']
        if not any(os.environ.get(name) for name in transport.USER_CHOICES):
            # the gaps of up to 0.33 s this test caught were Fast DDS's shared memory
            assert 'DDS transports: UDPv4 only' in row['node_said'], row['node_said']
    assert not result['unexcused'], result['unexcused'][0]
    # the machine may starve the streaming process now and then, not in most starts
    assert len({start for start, *_ in result['excused']}) <= 1, result['excused']
    print(f'worst gaps per start (ms): {[row["worst_gap_ms"] for row in rows]}; excused: '
          f'{result["excused"]}')


def test_activate_fails_with_the_reason_when_the_receiver_never_gets_ready(ros_context):
    from ne_dynamics_ros.nodes.computed_torque_node import ComputedTorqueNode
    from rclpy.parameter import Parameter

    node = ComputedTorqueNode(context=ros_context, parameter_overrides=[
        Parameter('urdf_path', value=str(PUMA560_URDF)),
        Parameter('autostart', value=False),
        Parameter('activation_timeout', value=0.5)])
    try:
        node.trigger_configure()
        assert node.lifecycle_state == 'inactive'
        assert node.intake.ready.wait(20)
        node.intake.ready.clear()            # as if the receiver process never started
        node._receiver.process.kill()
        node.trigger_activate()
        assert node.lifecycle_state == 'inactive'
        assert 'not ready after 0.5 s (activation_timeout)' in node.configure_error
    finally:
        node.destroy_node()
