"""Activation means ready: nothing joins the DDS graph once commands flow (issue 29).

Before, the node commanded before its trajectory receiver process had joined the graph;
when that process joined late, the process publishing ``/joint_states`` stalled for
335 ms while Fast DDS discovered it, the node's state timeout tripped and it sent zero
effort (``../shared/NOTES.md``), and a trajectory sent right after "activated" was lost.

Here the node is started 20 times, as ``ros2 run`` starts it, while another process
streams valid PUMA states at 1 kHz and records every effort command it receives (the
stall run's streamer, ``benchmarks/bench_node.py``). From each start's first command to
its Ctrl-C: no gap over 20 ms, no zero command; and a trajectory published as soon as
the node logs its activation is installed every time.
"""
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import rclpy
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from conftest import CONFIG_DIR, PUMA560_URDF, REPO_ROOT

STARTS = 20
GAP_BOUND = 0.020          # s
Q0 = [0.1, -0.3, 0.4, 0.2, -0.5, 0.3]      # the streamer's position
JOINTS = [f'joint_{i}' for i in range(1, 7)]


class Output:
    """A process's output lines, read live with their monotonic arrival times."""

    def __init__(self, process):
        self.lines = []
        threading.Thread(target=self._read, args=(process,), daemon=True).start()

    def _read(self, process):
        for line in process.stdout:
            self.lines.append((time.monotonic(), line))

    def wait_for(self, text, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, line in list(self.lines):
                if text in line:
                    return t
            time.sleep(0.005)
        return None

    def text(self):
        return ''.join(line for _, line in self.lines[-30:])


def stream_gap(sent, t, before=0.5):
    """The states' worst publishing gap in the ``before`` s up to ``t``."""
    window = sent[(sent >= t - before) & (sent <= t)]
    return float(np.diff(window).max()) if window.size > 1 else before


def test_twenty_starts_never_gap_never_zero_never_lose_a_trajectory(
        ros_context, domain_id, tmp_path):
    env = dict(os.environ, PYTHONUNBUFFERED='1', RCUTILS_COLORIZED_OUTPUT='0')
    sent_file = tmp_path / 'sent.txt'
    streamer = subprocess.Popen(
        [sys.executable, str(REPO_ROOT / 'benchmarks' / 'bench_node.py'), '--serve-stream',
         str(sent_file), '--stream-rate', '1000'], env=env, stdin=subprocess.PIPE, text=True)
    node = rclpy.create_node('activation_test_sender', context=ros_context)
    publisher = node.create_publisher(JointTrajectory,
                                      '/computed_torque_node/joint_trajectory', 10)
    trajectory = JointTrajectory(joint_names=JOINTS)
    # two points: the node logs 'new trajectory' at info level for more than one
    trajectory.points = [JointTrajectoryPoint(positions=[v + 0.01 * k for v in Q0])
                         for k in (1, 2)]
    trajectory.points[0].time_from_start.sec = 1
    trajectory.points[1].time_from_start.sec = 2
    windows, lost = [], []
    try:
        time.sleep(2.0)                     # the streamer is up and publishing
        for start in range(STARTS):
            process = subprocess.Popen(
                [sys.executable, '-m', 'ne_dynamics_ros.nodes.computed_torque_node',
                 '--ros-args', '--params-file', str(CONFIG_DIR / 'puma560.yaml'),
                 '-p', f'urdf_path:={PUMA560_URDF}',
                 # a state timeout shows as a zero command (not a held gravity one)
                 '-p', 'state_loss_policy:=zero'],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            output = Output(process)
            activated = output.wait_for('activated: holding', 30)
            assert activated is not None, output.text()
            deadline = time.monotonic() + 5
            while publisher.get_subscription_count() < 1:     # the sender's own discovery
                assert time.monotonic() < deadline, 'the sender never matched'
                time.sleep(0.001)
            publisher.publish(trajectory)
            if output.wait_for('new trajectory', 3) is None:
                lost.append((start, output.text()))
            time.sleep(1.5)
            stopped = time.monotonic()
            process.send_signal(signal.SIGINT)
            assert process.wait(15) == 0, output.text()
            windows.append((activated, stopped, start, output))
            # the next start's participants must not meet this one's leftovers
            time.sleep(0.5)
    finally:
        streamer.communicate('', timeout=60)
        node.destroy_node()
    sent = np.loadtxt(sent_file, ndmin=1)
    received = np.loadtxt(f'{sent_file}.efforts', ndmin=2)
    times, zeros = received[:, 0], received[:, 1] > 0
    worst, excused = [], []
    previous_stop = -np.inf
    for activated, stopped, start, output in windows:
        # from the first command of this start (the previous one's zero on Ctrl-C is
        # long before) to Ctrl-C
        inside = (times >= max(activated - 1.0, previous_stop + 0.3)) & (times <= stopped)
        previous_stop = stopped
        commands = times[inside]
        assert commands.size > 500, f'start {start}: {commands.size} commands'
        bounds = np.concatenate([commands, [stopped]])
        gaps = np.diff(bounds)
        for k in np.flatnonzero(gaps > GAP_BOUND):
            # a pause of the states themselves (the streaming process starved of the two
            # cores) is not the node's: its gap must show in the stream
            own = stream_gap(sent, bounds[k + 1], gaps[k] + 0.1)
            assert own >= gaps[k] - GAP_BOUND, (
                f'start {start}: no command for {1e3 * gaps[k]:.1f} ms from '
                f'{bounds[k] - activated:.3f} s after the activation was logged, while the '
                f'states paused at most {1e3 * own:.1f} ms; the node said:\n{output.text()}')
            excused.append((start, round(1e3 * gaps[k], 1), round(1e3 * own, 1)))
        worst.append(float(gaps.max()))
        for t in times[inside & zeros]:
            own = stream_gap(sent, t, 0.3)
            # a state timeout (0.1 s) is legitimate when the states themselves paused
            assert own >= 0.05, (
                f'start {start}: a zero command {t - activated:.3f} s after the activation '
                f'was logged (first command at {commands[0] - activated:.3f} s, Ctrl-C at '
                f'{stopped - activated:.3f} s), while the states paused at most '
                f'{1e3 * own:.1f} ms; the node said:\n{output.text()}')
            excused.append((start, 'zero', round(1e3 * own, 1)))
    # the machine may starve the streaming process now and then, not in most starts
    assert len({start for start, *_ in excused}) <= 2, excused
    print(f'worst gaps per start (ms): {[round(1e3 * g, 1) for g in worst]}; excused by '
          f'pauses of the states themselves: {excused}')
    assert not lost, lost[0]


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
