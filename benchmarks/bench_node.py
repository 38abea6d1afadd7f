#!/usr/bin/env python3
"""Benchmark: latency of computed_torque_node from /joint_states to the effort command.

Setup: the node runs in its own process (``python -m ne_dynamics_ros.nodes.computed_torque_node``,
PUMA 560 URDF + config/puma560.yaml, computed_torque mode), as it would be deployed. This
benchmark process publishes ``sensor_msgs/JointState`` on ``/joint_states`` at ``--rate``
Hz (default 1 kHz) for ``--duration`` s (default 30) from one thread, and receives
``/effort_controller/commands`` and ``~/tracking_error`` on a second thread. Both
processes talk over Fast DDS on a private ROS_DOMAIN_ID, discovery limited to localhost.

Per state message: latency = time the effort command is received here - time the state
was published (both ``time.monotonic_ns``). Effort messages carry no stamp, so each
received effort is matched to the state it answers by value: every state has a distinct
q, and the expected effort of each state is computed afterwards with the same law
(``load_model`` + ``compute_effort``, the reference being the held first position);
efforts arrive in order, so a forward scan pairs them. A state is "without reply" if no
effort matching it arrived by the end (1 s grace after the last publish).

By default nothing subscribes to the node's ``~/tracking_error`` and ``~/desired``, which
the node then does not publish (as in a deployment without rqt_plot);
``--with-diagnostics`` subscribes to both to measure their cost.

``--baseline`` replaces the node by a minimal rclpy node (same QoS, same executor, chosen
by ``--executor``: ``events`` by default, the node's default, or ``single_threaded``)
that only copies each state's positions into a Float64MultiArray: the floor that rclpy
and Fast DDS set on this machine, for comparison.

Reported: p50, p99, max, mean latency; states published, answered, without reply; the
achieved publish rate. Receipt times include this process's executor (rclpy) overhead.

Soak (``--soak SECONDS``, e.g. ``--soak 600``): the node, then the baseline, each for
SECONDS of /joint_states at ``--rate`` while a trajectory stream arrives (every second a
100-point, 1 s trajectory along a slow sine, on the node's ``~/joint_trajectory``; the
baseline subscribes to it too and ignores it). Replies are matched by stamp: both nodes
publish a ``sensor_msgs/JointState`` stamped like the state they answer (the node's
``~/tracking_error``, the baseline an echo on the same topic) besides the effort command.
Reported per ``--window`` seconds (default 60): p50/p99 latency and states without
reply, and each process's resident memory (VmRSS) at the window's end; then start and end
memory, the CPU time (user + system) each process used per state, and the p99 ratio
node/baseline.

Modes (``--modes [--soak 30]``): what adaptive and Cartesian impedance cost per control
step. The node in ``computed_torque``, ``adaptive`` then ``cartesian_impedance`` mode,
each ``--soak`` s of the soak's stream (refused as trajectories in cartesian_impedance,
which holds the pose), with the CPU time its process used per state; and, in process, the
controller's ``update`` alone on Lee et al.'s PUMA move closed on the Pinocchio plant (2
kg at the flange the model lacks), mean and p99 µs, as the node runs it without a contact
threshold (no momentum observer) and with the observer read on every state; each with its
ratio to computed_torque (adaptive: < 1.30; cartesian_impedance: < 1.50).

Load (``--stall R --load N``): the stall run with N CPU-bound processes beside the node
(two per core is a busy robot PC) and the states streamed from a process at SCHED_FIFO
where permitted (as joint_state_broadcaster's realtime thread); it prints the priority the
node's control path got (``realtime_priority``) and the worst gap of the run.

Starts (``--starts N``): the node started N times as ``ros2 run`` starts it while states
stream at 1 kHz (:mod:`node_starts`): per start the worst gap between effort commands,
the zero commands, and whether a trajectory sent when it logs its activation was
installed (issue 29's soak; ``test/ros/test_activation.py`` runs three).

ros2_control (``--ros2-control [--load 4] [--r2c-runs 10]``): the loop through the real
controller_manager (:mod:`ros2_control_loop`): commands written 1, 2 or more update
cycles after their state, from controller_manager's own stamps, at 500 Hz and 1 kHz,
with and without ``realtime_priority``; 0.3 rad moves through the stack (shipped wiring
and states at the update rate) beside the direct topic. ``--r2c-starts N`` instead: N
starts with the node together with, after and before the controllers.

Usage: python benchmarks/bench_node.py [--duration 30] [--rate 1000] [--with-diagnostics]
       [--json]
       python benchmarks/bench_node.py --modes [--soak 30]
       python benchmarks/bench_node.py --soak 600 [--window 60] [--rate 1000] [--json]
       python benchmarks/bench_node.py --starts 20
       python benchmarks/bench_node.py --stall 2 --load 4
       python benchmarks/bench_node.py --ros2-control [--load 4] [--r2c-runs 10]
"""
import argparse
import gc
import json
import math
import os
import pathlib
import random
import subprocess
import sys
import threading
import time

import numpy as np

from ros2_control_loop import WIRINGS

ROOT = pathlib.Path(__file__).resolve().parent.parent
PUMA_JOINTS = [f'joint_{i}' for i in range(1, 7)]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--duration', type=float, default=30.0,
                        help='seconds of publishing at --rate (default 30)')
    parser.add_argument('--rate', type=float, default=1000.0,
                        help='joint state rate in Hz (default 1000)')
    parser.add_argument('--urdf', default=str(ROOT / 'config' / 'puma560.urdf'))
    parser.add_argument('--params-file', default=str(ROOT / 'config' / 'puma560.yaml'))
    parser.add_argument('--domain-id', type=int, default=None,
                        help='ROS_DOMAIN_ID to use (default: random in 150..229)')
    parser.add_argument('--with-diagnostics', action='store_true',
                        help='also subscribe to ~/tracking_error and ~/desired')
    parser.add_argument('--baseline', action='store_true',
                        help='measure a minimal echo node instead of computed_torque_node')
    parser.add_argument('--soak', type=float, default=None, metavar='SECONDS',
                        help='soak test: node then baseline, SECONDS each, with a '
                             'trajectory stream; per-window latency and memory')
    parser.add_argument('--window', type=float, default=60.0,
                        help='soak: seconds per reported window (default 60)')
    parser.add_argument('--executor', choices=('events', 'single_threaded'), default='events',
                        help='rclpy executor of both the node and the baseline (default '
                             'events, the node\'s default)')
    parser.add_argument('--stall', type=int, default=None, metavar='ROUNDS',
                        help='stall run: ROUNDS rounds of long trajectories (2 000, 20 000 '
                             'and 50 000 points) and one message over max_trajectory_bytes '
                             'while states stream at 500 Hz; worst gaps between effort '
                             'commands')
    parser.add_argument('--load', type=int, default=0, metavar='N',
                        help='stall run: N CPU-bound processes beside the node (two per core '
                        'is a busy robot PC), and the states streamed from a process at '
                        'SCHED_FIFO where permitted, as joint_state_broadcaster\'s realtime '
                        'thread')
    parser.add_argument('--pause', type=float, default=1.5, metavar='S',
                        help='stall run: seconds of steady streaming before each message '
                        '(the "steady" window; default 1.5)')
    parser.add_argument('--oversized-mb', type=float, default=40.0,
                        help='stall run: size of the message over the bound, MB (default 40)')
    parser.add_argument('--sizes', type=int, nargs='+', default=list(STALL_SIZES),
                        metavar='POINTS', help='stall run: points of the valid trajectories '
                        '(default 2000 20000 50000)')
    parser.add_argument('--largest-points', type=int, default=None, metavar='POINTS',
                        help='stall run: points of the largest trajectory, every field given '
                        '(default MAX_POINTS, the most the node accepts)')
    parser.add_argument('--no-goals', action='store_true',
                        help='stall run: no FollowJointTrajectory goals (default: the same '
                        'sizes as goals, and one of MAX_POINTS + 1 points, after the topic '
                        'messages of each round)')
    parser.add_argument('--node-arg', action='append', default=[], metavar='NAME:=VALUE',
                        help='an extra -p parameter of the node (repeatable)')
    parser.add_argument('--modes', action='store_true',
                        help='cost per control step of computed_torque, adaptive and '
                        'cartesian_impedance mode: '
                        'the node in each for --soak s (default 30) and the controller in '
                        'process on the closed loop')
    parser.add_argument('--starts', type=int, default=None, metavar='N',
                        help='start the node N times (as ros2 run does) while states stream '
                        'at 1 kHz: per start the worst gap between commands, the zero '
                        'commands and whether a trajectory sent at activation was installed')
    parser.add_argument('--serve-baseline', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--serve-stream', metavar='FILE', help=argparse.SUPPRESS)
    parser.add_argument('--stream-fifo', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--stream-rate', type=float, default=STALL_RATE,
                        help=argparse.SUPPRESS)
    parser.add_argument('--ros2-control', action='store_true',
                        help='the loop through the real controller_manager: latency in '
                        'update cycles, tracking beside the direct topic (--load N too)')
    parser.add_argument('--r2c-arms', nargs='*',
                        default=['ur5e:pinocchio', 'ur5e:mujoco', 'puma560:pinocchio'],
                        metavar='ROBOT:PLANT', help='arms of the tracking comparison')
    parser.add_argument('--r2c-wirings', nargs='*', default=list(WIRINGS), choices=WIRINGS,
                        metavar='WIRING', help='--ros2-control: the wirings tracked, of '
                        f'{", ".join(WIRINGS)} (default all)')
    parser.add_argument('--r2c-rates', type=int, nargs='*', default=[500, 1000],
                        metavar='HZ', help='--ros2-control: update rates (default 500 1000)')
    parser.add_argument('--r2c-moves', type=int, default=4, metavar='N',
                        help='--ros2-control: moves per latency configuration (default 4)')
    parser.add_argument('--r2c-runs', type=int, default=10, metavar='N',
                        help='--ros2-control: moves per wiring (default 10)')
    parser.add_argument('--r2c-starts', type=int, default=0, metavar='N',
                        help='--ros2-control: instead, N starts in each order (the node '
                        'with, after and before the controllers)')
    parser.add_argument('--json', action='store_true', help='print the result as JSON')
    return parser.parse_args(argv)


def serve_baseline(executor_kind):
    """Run the minimal echo node of ``--baseline``: positions in, same numbers out."""
    import rclpy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory

    from ne_dynamics_ros.nodes.computed_torque_node import JOINT_STATE_QOS, make_executor

    rclpy.init()
    node = rclpy.create_node('computed_torque_node')
    pub = node.create_publisher(Float64MultiArray, 'effort_controller/commands', 10)
    echo = node.create_publisher(JointState, '~/tracking_error', 10)

    def answer(msg):
        pub.publish(Float64MultiArray(data=msg.position))
        if echo.get_subscription_count():
            echo.publish(JointState(header=msg.header, name=msg.name, position=msg.position))

    node.create_subscription(JointState, 'joint_states', answer, JOINT_STATE_QOS)
    # taken as bytes and not read: the floor of what any subscriber pays for a trajectory
    node.create_subscription(JointTrajectory, '~/joint_trajectory', lambda data: print(
        f'received trajectory {len(data)} bytes', flush=True), 10, raw=True)
    executor = make_executor(executor_kind)
    executor.add_node(node)
    try:
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def start_node(args, env):
    if args.baseline:
        return subprocess.Popen([sys.executable, __file__, '--serve-baseline', '--executor',
                                 args.executor], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    cmd = [sys.executable, '-m', 'ne_dynamics_ros.nodes.computed_torque_node', '--ros-args',
           '--params-file', args.params_file, '-p', f'urdf_path:={args.urdf}',
           '-p', 'state_timeout:=5.0', '-p', f'executor:={args.executor}',
           # the soak's states do not follow its trajectories: the way in from the state
           # held to the first point is beyond the PUMA's effort limits, and the node's
           # check (issue 33) refuses it; scaled, each is played (stretched), as the soak
           # means it to be (the check runs on the trajectory thread, off the control path)
           '-p', 'infeasible_trajectory:=scale',
           '--log-level', 'warn']
    for extra in getattr(args, 'node_arg', ()):
        cmd[-2:-2] = ['-p', extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def spin_in_thread(node, context, executor_kind):
    """Spin ``node`` on its own executor in a daemon thread: (executor, stop event, thread).

    The benchmark's own receiving side uses the same kind of executor as the node under
    test (``--executor``): on two cores, a heavier load generator slows whatever it
    measures.
    """
    from ne_dynamics_ros.nodes.computed_torque_node import make_executor

    executor = make_executor(executor_kind, context=context)
    executor.add_node(node)
    stop = threading.Event()

    def spin():
        while not stop.is_set() and context.ok():
            executor.spin_once(timeout_sec=0.05)

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    return executor, stop, spinner


def tear_down(node_proc, bench, context, executor, stop, spinner):
    """Stop spinning, Ctrl-C the node (it publishes zero effort and exits), shut down."""
    import rclpy

    stop.set()
    spinner.join(timeout=2.0)
    node_proc.send_signal(2)
    try:
        node_proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        node_proc.kill()
    executor.shutdown(timeout_sec=1.0)
    bench.destroy_node()
    rclpy.shutdown(context=context)


def warm_up(node_proc, answers, publish_state, rate, seconds):
    """Publish states until ``answers()`` is non-empty, then for ``seconds`` at ``rate``.

    Raises:
        RuntimeError: the node exited, or did not answer within 30 s.
    """
    deadline = time.monotonic() + 30.0
    while not answers():
        if node_proc.poll() is not None:
            raise RuntimeError('node exited:\n' + node_proc.communicate()[0])
        if time.monotonic() > deadline:
            raise RuntimeError('node did not answer within 30 s')
        publish_state()
        time.sleep(0.05)
    warmup_end = time.monotonic() + seconds
    while time.monotonic() < warmup_end:
        publish_state()
        time.sleep(1.0 / rate)


def match_efforts(args, receipts, states, q_hold, window=2000):
    """Receipt time (ns) of the effort answering each state, -1 where none did.

    The expected effort of every state is computed with the node's law and parameters;
    received efforts are in publishing order, so one forward scan (looking at most
    ``window`` states ahead) pairs them.
    """
    import yaml

    from ne_dynamics_ros import load_model
    from ne_dynamics_ros.control.laws import compute_effort, ControlMode, JointGains

    params = yaml.safe_load(pathlib.Path(args.params_file).read_text())[
        'computed_torque_node']['ros__parameters']
    model = load_model(args.urdf, armature=params.get('armature'))
    config = JointGains(
        mode=ControlMode(params.get('mode', 'computed_torque')),
        kp=np.full(model.n, float(params.get('kp', 100.0))),
        kd=np.full(model.n, float(params.get('kd', 20.0))),
        gravity=np.array(params.get('gravity', [0.0, 0.0, -9.81])),
        effort_limits=model.effort_limits)
    zero = np.zeros(model.n)
    if args.baseline:
        expected = np.array([q for q, _ in states])
    else:
        expected = np.array([compute_effort(model, config, q, qd, q_hold, zero, zero)
                             for q, qd in states])
    answered_at = np.full(len(states), -1, dtype=np.int64)
    j = 0
    for t, tau in receipts:
        close = np.all(np.isclose(expected[j:j + window], tau, rtol=1e-9, atol=1e-9), axis=1)
        hits = np.flatnonzero(close)
        if hits.size:             # else: an effort answering no state of the run
            j += int(hits[0])
            answered_at[j] = t
            j += 1
    return answered_at


def isolate(args):
    """Put this process and its children on a private domain, discovery on this host only.

    Returns the ROS_DOMAIN_ID (``--domain-id``, or random in 150..229).
    """
    domain_id = args.domain_id if args.domain_id is not None else random.randint(150, 229)
    os.environ['ROS_DOMAIN_ID'] = str(domain_id)
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ.pop('ROS_LOCALHOST_ONLY', None)
    return domain_id


def percentile(values, p):
    return float(np.percentile(values, p)) if len(values) else float('nan')


def run(args):
    domain_id = isolate(args)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), os.environ.get('PYTHONPATH', '')]))

    import rclpy
    from builtin_interfaces.msg import Time
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory

    from ne_dynamics_ros.nodes.computed_torque_node import JOINT_STATE_QOS

    node_proc = start_node(args, env)
    context = rclpy.context.Context()
    rclpy.init(context=context, domain_id=domain_id)
    bench = rclpy.create_node('bench_node', context=context)
    received = []      # (receipt time ns, effort)
    lock = threading.Lock()

    def on_effort(msg):
        t = time.monotonic_ns()
        with lock:
            received.append((t, np.array(msg.data)))

    bench.create_subscription(Float64MultiArray, '/effort_controller/commands', on_effort,
                              10000)
    if args.with_diagnostics:
        bench.create_subscription(JointState, '/computed_torque_node/tracking_error',
                                  lambda msg: None, 10000)
        bench.create_subscription(JointTrajectory, '/computed_torque_node/desired',
                                  lambda msg: None, 10000)
    pub = bench.create_publisher(JointState, '/joint_states', JOINT_STATE_QOS)
    executor, stop, spinner = spin_in_thread(bench, context, args.executor)

    q0 = np.array([0.0, -0.5, -0.8, 0.1, 0.4, -0.2])      # inside the PUMA joint limits

    def state_at(phase):
        # Distinct for every state of a run: a 0.5 Hz wave plus a slow drift of q.
        q = q0 + 0.1 * np.sin(phase + np.arange(6)) + 1e-3 * phase
        return q, 0.1 * np.cos(phase + np.arange(6))

    def make_state(t_ns, phase):
        msg = JointState(name=PUMA_JOINTS)
        msg.header.stamp = Time(sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000)
        q, qd = state_at(phase)
        msg.position = q.tolist()
        msg.velocity = qd.tolist()
        return msg

    try:
        # Wait for the node: discovery and a first answer (warm-up, not counted).
        warm_up(node_proc, lambda: received, lambda: pub.publish(
            make_state(time.monotonic_ns(), 0.0)), args.rate, 1.0)
        drained = len(received) - 1
        while len(received) != drained:      # let the warm-up replies arrive
            drained = len(received)
            time.sleep(0.3)
        with lock:
            received.clear()

        count = int(round(args.duration * args.rate))
        period_ns = int(round(1e9 / args.rate))
        sent = np.empty(count, dtype=np.int64)
        phases = 2.0 * np.pi * 0.5 * np.arange(count) / args.rate
        start = time.monotonic_ns()
        for i in range(count):
            target = start + i * period_ns
            delay = (target - time.monotonic_ns()) * 1e-9
            if delay > 0:
                time.sleep(delay)
            t = time.monotonic_ns()
            msg = make_state(t, phases[i])
            sent[i] = t
            pub.publish(msg)
        publish_span = (time.monotonic_ns() - start) * 1e-9
        time.sleep(1.0)
    finally:
        tear_down(node_proc, bench, context, executor, stop, spinner)

    with lock:
        receipts = list(received)
    answered_at = match_efforts(args, receipts, [state_at(p) for p in phases], state_at(0.0)[0])
    replied = answered_at >= 0
    latency_us = (answered_at[replied] - sent[replied]) * 1e-3
    setup = ('node in a separate process (python -m ne_dynamics_ros.nodes.computed_torque_node, '
             'PUMA 560, computed_torque)')
    if args.baseline:
        setup = 'BASELINE: minimal rclpy echo node in a separate process (no control law)'
    return {
        'setup': setup + '; publisher and receiver threads in this process',
        'domain_id': domain_id,
        'rate_hz': args.rate,
        'duration_s': args.duration,
        'published': int(count),
        'achieved_rate_hz': count / publish_span,
        'diagnostics_subscribed': bool(args.with_diagnostics),
        'efforts_received': len(receipts),
        'answered': int(replied.sum()),
        'without_reply': int(count - replied.sum()),
        'latency_us': {
            'p50': percentile(latency_us, 50), 'p99': percentile(latency_us, 99),
            'max': float(latency_us.max()) if len(latency_us) else float('nan'),
            'mean': float(latency_us.mean()) if len(latency_us) else float('nan'),
        },
    }


def rss_mib(pid):
    """Resident memory (VmRSS) of a process, MiB; NaN if it is gone."""
    try:
        with open(f'/proc/{pid}/status', encoding='ascii') as status:
            for line in status:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float('nan')


def cpu_seconds(pid):
    """User + system CPU time a process has used so far, s (NaN if it is gone)."""
    try:
        with open(f'/proc/{pid}/stat', encoding='ascii') as stat:
            fields = stat.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
    except (OSError, IndexError, ValueError):
        return float('nan')


def soak_one(args, baseline, domain_id):
    """One soak run (the node, or the baseline); per-window latency, replies and memory."""
    import rclpy
    from builtin_interfaces.msg import Duration, Time
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from ne_dynamics_ros.nodes.computed_torque_node import JOINT_STATE_QOS

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), os.environ.get('PYTHONPATH', '')]))
    node_proc = start_node(argparse.Namespace(**dict(vars(args), baseline=baseline)), env)
    context = rclpy.context.Context()
    rclpy.init(context=context, domain_id=domain_id)
    bench = rclpy.create_node('bench_soak', context=context)
    receipts = {}                     # state stamp (ns) -> receipt time (ns)

    def on_reply(msg):
        receipts[msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec] = \
            time.time_ns()

    bench.create_subscription(JointState, '/computed_torque_node/tracking_error', on_reply,
                              10000)
    pub = bench.create_publisher(JointState, '/joint_states', JOINT_STATE_QOS)
    trajectory_pub = bench.create_publisher(
        JointTrajectory, '/computed_torque_node/joint_trajectory', 10)
    executor, stop, spinner = spin_in_thread(bench, context, args.executor)
    q0 = np.array([0.0, 0.5, -1.0, 0.1, 0.4, -0.2])
    # the trajectory stream: every second the same 1 s, 100-point sine (start on receipt)
    trajectory = JointTrajectory(joint_names=PUMA_JOINTS)
    for k in range(100):
        t = 0.01 * (k + 1)
        w = 2.0 * np.pi * 0.5
        trajectory.points.append(JointTrajectoryPoint(
            positions=(q0 + 0.05 * np.sin(w * t)).tolist(),
            velocities=[0.05 * w * np.cos(w * t)] * 6,
            accelerations=[-0.05 * w * w * np.sin(w * t)] * 6,
            time_from_start=Duration(sec=0, nanosec=int(round(t * 1e9)) % 1_000_000_000)
            if t < 1.0 else Duration(sec=1, nanosec=0)))
    trajectory_bytes = serialize_message(trajectory)

    def make_state(stamp_ns, phase):
        msg = JointState(name=PUMA_JOINTS, position=(q0 + 0.05 * np.sin(phase)).tolist(),
                         velocity=[0.05 * np.cos(phase)] * 6)
        msg.header.stamp = Time(sec=stamp_ns // 1_000_000_000,
                                nanosec=stamp_ns % 1_000_000_000)
        return msg

    per_window = int(round(args.window * args.rate))
    count = int(round(args.soak * args.rate))
    sent = np.zeros(count, dtype=np.int64)
    rss, cpu = [], []
    try:
        warm_up(node_proc, lambda: receipts, lambda: pub.publish(
            make_state(time.time_ns(), 0.0)), args.rate, 2.0)
        time.sleep(0.5)
        rss_start = rss_mib(node_proc.pid)
        cpu_start = cpu_seconds(node_proc.pid)
        period_ns = int(round(1e9 / args.rate))
        start = time.monotonic_ns()
        for i in range(count):
            delay = (start + i * period_ns - time.monotonic_ns()) * 1e-9
            if delay > 0:
                time.sleep(delay)
            if i % int(args.rate) == 0:
                trajectory_pub.publish(trajectory_bytes)
            stamp_ns = time.time_ns()
            pub.publish(make_state(stamp_ns, 2.0 * np.pi * 0.3 * i / args.rate))
            sent[i] = stamp_ns
            if (i + 1) % per_window == 0:
                rss.append(rss_mib(node_proc.pid))
                cpu.append(cpu_seconds(node_proc.pid))
        time.sleep(1.0)
        rss_end = rss_mib(node_proc.pid)
        cpu_used = cpu_seconds(node_proc.pid) - cpu_start
    finally:
        tear_down(node_proc, bench, context, executor, stop, spinner)

    # latency of each state published, us; NaN: no reply
    latency = np.array([(receipts[s] - s) * 1e-3 if s in receipts else np.nan for s in sent])
    answered = ~np.isnan(latency)
    windows = []
    for w in range(count // per_window):
        part = latency[w * per_window:(w + 1) * per_window]
        replied = part[~np.isnan(part)]
        windows.append({'window': w + 1,
                        'p50_us': percentile(replied, 50),
                        'p99_us': percentile(replied, 99),
                        'without_reply': int(part.size - replied.size),
                        'rss_mib': rss[w],
                        'cpu_us_per_state': (cpu[w] - (cpu[w - 1] if w else cpu_start))
                        / per_window * 1e6})
    all_latency = latency[answered]
    # the states of the 20 ms after each trajectory message against all the others
    after = (np.arange(count) % int(args.rate)) < int(round(0.02 * args.rate))
    tail = latency >= (np.percentile(all_latency, 99) if all_latency.size else math.nan)
    split = {}
    for label, mask in (('after_trajectory', after), ('other', ~after)):
        lat = latency[mask & answered]
        split[label] = {'p50_us': percentile(lat, 50), 'p99_us': percentile(lat, 99),
                        'share_of_slowest_1pct': (float((tail & mask).sum() / tail.sum())
                                                  if tail.any() else 0.0)}
    return {'rss_start_mib': rss_start, 'rss_end_mib': rss_end, 'windows': windows,
            'cpu_us_per_state': cpu_used / count * 1e6, 'split': split,
            'p50_us': percentile(all_latency, 50), 'p99_us': percentile(all_latency, 99),
            'without_reply': int(count - len(all_latency)), 'published': count}


def run_soak(args):
    """Run the soak: node then baseline, each ``args.soak`` s, in one run."""
    domain_id = isolate(args)
    results = {}
    for name, baseline in (('node', False), ('baseline', True)):
        print(f'soak: {name}, {args.soak:g} s at {args.rate:g} Hz ...', file=sys.stderr,
              flush=True)
        results[name] = soak_one(args, baseline, domain_id)
    results['p99_ratio'] = results['node']['p99_us'] / results['baseline']['p99_us']
    results['setup'] = (f'/joint_states at {args.rate:g} Hz for {args.soak:g} s each, a '
                        '100-point trajectory every second; PUMA 560 computed_torque_node '
                        f'(config/puma560.yaml) then the rclpy echo baseline, both on the '
                        f'{args.executor} executor; replies matched by stamp '
                        '(~/tracking_error)')
    return results


def print_soak(result, window):
    node, base = result['node'], result['baseline']
    print(result['setup'])
    print(f'{"window":>8} | {"node p50":>9} {"p99":>8} {"no reply":>8} {"RSS MiB":>8} '
          f'{"CPU us":>6} | {"base p50":>9} {"p99":>8} {"no reply":>8} {"RSS MiB":>8} '
          f'{"CPU us":>6}')
    for a, b in zip(node['windows'], base['windows']):
        print(f'{a["window"] * window:>7g}s | {a["p50_us"]:>7.0f}us {a["p99_us"]:>6.0f}us '
              f'{a["without_reply"]:>8d} {a["rss_mib"]:>8.1f} '
              f'{a.get("cpu_us_per_state", math.nan):>6.0f} | {b["p50_us"]:>7.0f}us '
              f'{b["p99_us"]:>6.0f}us {b["without_reply"]:>8d} {b["rss_mib"]:>8.1f} '
              f'{b.get("cpu_us_per_state", math.nan):>6.0f}')
    for name, r in (('node', node), ('baseline', base)):
        print(f'{name}: RSS {r["rss_start_mib"]:.1f} -> {r["rss_end_mib"]:.1f} MiB; CPU '
              f'{r["cpu_us_per_state"]:.0f} us per state; p50 '
              f'{r["p50_us"]:.0f} us, p99 {r["p99_us"]:.0f} us; {r["without_reply"]} of '
              f'{r["published"]} without reply')
        for label, part in r['split'].items():
            print(f'  {name} states {label.replace("_", " ")}: p50 {part["p50_us"]:.0f} us, '
                  f'p99 {part["p99_us"]:.0f} us, {100 * part["share_of_slowest_1pct"]:.0f} % '
                  'of the slowest 1 %')
    print(f'p99 node / baseline: {result["p99_ratio"]:.2f} (goal <= 1.2)')


# ---- modes: what adaptive mode costs per control step -------------------------------------

def _modes():
    from ne_dynamics_ros.control.laws.registry import LAW_CLASSES
    return tuple(law.name for law in LAW_CLASSES)


#: every mode of the registry (a new law is measured as soon as it is registered)
MODES = _modes()
#: the bound of each mode's cost per control step, as a ratio to computed_torque's
COST_GOALS = {'adaptive': 1.30, 'cartesian_impedance': 1.50, 'joint_impedance': 1.10}


def step_cost(mode, rate=500.0, duration=4.0, observer_read=False):
    """Return the controller's mean and p99 wall time per answered state in process, µs.

    The PUMA move of Lee et al. (1982), §5, at ``rate`` on the Pinocchio plant with 2 kg
    at the flange the model lacks, run in lockstep
    (:func:`~ne_dynamics_ros.simulation.closed_loop.run_lockstep`); only the
    controller's ``update`` is timed, the plant is not. ``observer_read`` False: as the
    node runs it while nobody reads ``~/external_effort`` (no contact threshold in
    ``config/puma560.yaml``), True: the momentum observer on every state too.
    """
    from ne_dynamics_ros.control import ComputedTorqueController
    from ne_dynamics_ros.control.laws.registry import law_class
    from ne_dynamics_ros.simulation.closed_loop import profile_trajectory, run_lockstep
    from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm
    import yaml
    params = yaml.safe_load((ROOT / 'config' / 'puma560.yaml').read_text())[
        'computed_torque_node']['ros__parameters']
    urdf = str(ROOT / 'config' / 'puma560.urdf')
    start, goal = np.radians([90, 0, 90, 0, 0, 0.0]), np.radians([45, 30, 0, 45, 60, 90.0])
    controller = ComputedTorqueController.from_urdf(
        urdf, tip_link='flange', armature=params['armature'],
        settings={'mode': mode, 'kp': 1600.0, 'kd': 80.0, 'state_timeout': 10.0,
                  'position_limit_margin': math.inf})
    controller.external_effort_wanted = observer_read
    arm = SimulatedArm(urdf, armature=params['armature'], payload_mass=2.0,
                       payload_link='flange')
    arm.reset(start)
    spent = []
    update = controller.update

    def timed(*args, **kwargs):
        begin = time.perf_counter_ns()
        out = update(*args, **kwargs)
        spent.append(time.perf_counter_ns() - begin)
        return out

    controller.update = timed
    trajectory = profile_trajectory(PUMA_JOINTS, 'quintic', start, goal, 3.0, 1.0 / rate, 0.5)
    # a law that takes no trajectory (cartesian_impedance) holds the pose of the start
    run_lockstep(controller, arm, duration, rate,
                 trajectory if law_class(mode).follows_trajectory else None)
    spent = np.array(spent[len(spent) // 10:]) * 1e-3        # the first tenth warms up
    return float(spent.mean()), float(np.percentile(spent, 99))


def run_modes(args):
    """Run the node in each mode for ``args.soak`` s, then the controller in process."""
    domain_id = isolate(args)
    soak = args.soak or 30.0
    results = {}
    for mode in MODES:
        print(f'modes: the node in {mode} mode, {soak:g} s at {args.rate:g} Hz ...',
              file=sys.stderr, flush=True)
        node_args = argparse.Namespace(**dict(vars(args), soak=soak,
                                              node_arg=args.node_arg + [f'mode:={mode}']))
        node = soak_one(node_args, False, domain_id)
        mean, p99 = step_cost(mode)
        observed, _ = step_cost(mode, observer_read=True)
        results[mode] = {'cpu_us_per_state': node['cpu_us_per_state'],
                         'p50_us': node['p50_us'], 'p99_us': node['p99_us'],
                         'without_reply': node['without_reply'],
                         'published': node['published'],
                         'step_mean_us': mean, 'step_p99_us': p99,
                         'step_observed_mean_us': observed}
    base = results['computed_torque']
    for mode in MODES:
        results[mode]['cpu_ratio'] = results[mode]['cpu_us_per_state'] / base['cpu_us_per_state']
        results[mode]['step_ratio'] = results[mode]['step_mean_us'] / base['step_mean_us']
        results[mode]['step_observed_ratio'] = (results[mode]['step_observed_mean_us']
                                                / base['step_observed_mean_us'])
    results['setup'] = (f'node: /joint_states at {args.rate:g} Hz for {soak:g} s per mode '
                        '(the soak stream, PUMA 560, config/puma560.yaml), CPU time of its '
                        'process per state; in process: controller.update on Lee et al.\'s '
                        'PUMA move at 500 Hz, 2 kg at the flange unmodelled, kp 1600 kd 80')
    return results


def print_modes(result):
    print(result['setup'])
    print(f'{"mode":<17}{"node CPU/state":>15}{"ratio":>7}{"p50":>8}{"p99":>8}{"no reply":>9}'
          f'{"update mean":>13}{"p99":>8}{"ratio":>7}{"+ observer":>12}{"ratio":>7}')
    for mode in MODES:
        r = result[mode]
        print(f'{mode:<17}{r["cpu_us_per_state"]:>12.0f} us{r["cpu_ratio"]:>7.2f}'
              f'{r["p50_us"]:>6.0f}us{r["p99_us"]:>6.0f}us{r["without_reply"]:>9d}'
              f'{r["step_mean_us"]:>10.1f} us{r["step_p99_us"]:>6.0f}us{r["step_ratio"]:>7.2f}'
              f'{r["step_observed_mean_us"]:>9.1f} us{r["step_observed_ratio"]:>7.2f}')
    print('goals (update ratio to computed_torque): '
          + ', '.join(f'{mode} < {bound:.2f}' for mode, bound in COST_GOALS.items())
          + '; "+ observer": update with the momentum observer read on every state '
          '(contact.threshold set, or ~/external_effort subscribed); cartesian_impedance '
          'holds the start pose in process')


# ---- stall run: long trajectories and an oversized message while states stream ------------

STALL_RATE = 500.0                        # Hz of the valid joint states
STALL_SIZES = (2_000, 20_000, 50_000)     # points of the valid trajectories (1 ms apart)
#: the stall run's goals (issue 25): worst gap while valid trajectories arrive and around
#: the oversized message, s
STALL_GOALS = {'valid': 0.020, 'oversized': 0.050}


def serve_stream(path, rate=STALL_RATE):
    """Publish valid PUMA states at ``rate`` until stdin closes; record effort receipts.

    Writes ``path`` (publish times) and ``path.efforts`` (the instant the node published
    each command, from the DDS sample's source timestamp, and 1 if the command was all
    zeros), both ``time.monotonic`` seconds, the clock every process shares. The source
    timestamp, not this process's callback time, so that a pause of this process's own
    executor thread (its garbage collector, the scheduler) does not show as a gap of the
    node's. A process of its own, so that the benchmark publishing a 40 MB message (rclpy
    holds the GIL for it) cannot delay the states.
    """
    import rclpy
    from builtin_interfaces.msg import Time
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from ne_dynamics_ros.nodes.computed_torque_node import JOINT_STATE_QOS

    rclpy.init()
    node = rclpy.create_node('bench_stall_stream')
    pub = node.create_publisher(JointState, '/joint_states', JOINT_STATE_QOS)
    received = []

    # the source timestamp is the publisher's system clock (ns): to monotonic seconds
    wall_to_monotonic = time.monotonic() - time.time()

    def on_effort(data, info):
        # Float64MultiArray of 6 values: the last 48 bytes are the data
        values = np.frombuffer(data[-48:], '<f8')
        received.append((info['source_timestamp'] * 1e-9 + wall_to_monotonic,
                         float(not values.any())))

    node.create_subscription(Float64MultiArray, '/effort_controller/commands', on_effort,
                             1000, raw=True)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    # no collection of the interpreter's older objects (30-40 ms, seen as a pause of the
    # stream that excused the node's gap) while streaming: what this process makes
    # holds no reference cycles
    gc.disable()
    # single-threaded: Jazzy's EventsExecutor cannot hand a callback its message info
    # ('SystemError: null argument to internal routine')
    executor, spin_stop, spinner = spin_in_thread(node, node.context, 'single_threaded')
    q0 = np.array([0.1, -0.3, 0.4, 0.2, -0.5, 0.3])
    sent = []
    period = 1.0 / rate
    next_time = time.monotonic()
    k = 0
    while not stop.is_set():
        t_ns = time.time_ns()
        msg = JointState(name=PUMA_JOINTS, position=(q0 + 1e-4 * math.sin(k * 0.01)).tolist(),
                         velocity=[0.0] * 6)
        msg.header.stamp = Time(sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000)
        pub.publish(msg)
        sent.append(time.monotonic())
        k += 1
        next_time += period
        time.sleep(max(0.0, next_time - time.monotonic()))
    spin_stop.set()
    spinner.join(timeout=5)
    np.savetxt(path, sent)
    np.savetxt(f'{path}.efforts', np.array(received).reshape(-1, 2))
    executor.shutdown(timeout_sec=1.0)
    node.destroy_node()
    rclpy.shutdown()


def stall_messages(oversized_bytes, sizes=STALL_SIZES, largest_points=None):
    """Serialize the stall run's trajectories: (label, bytes, the count logged or None).

    STALL_SIZES points (positions only, 1 ms apart, zero stamp: start on receipt); the
    largest trajectory the node accepts (MAX_POINTS points giving positions, velocities,
    accelerations and efforts: 23 MB for six joints, under the default bound); and one
    message of about ``oversized_bytes``, over the bound.
    """
    from builtin_interfaces.msg import Duration
    from rclpy.serialization import serialize_message
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from ne_dynamics_ros.control.reference.trajectory import MAX_POINTS

    q0 = np.array([0.1, -0.3, 0.4, 0.2, -0.5, 0.3])

    def message(size, every_field):
        msg = JointTrajectory(joint_names=PUMA_JOINTS)
        points = []
        for k in range(size):
            sec, nanosec = divmod(1_000_000 * (k + 1), 1_000_000_000)
            point = JointTrajectoryPoint(
                positions=(q0 + 1e-4 * math.sin(1e-3 * k)).tolist(),
                time_from_start=Duration(sec=sec, nanosec=nanosec))
            if every_field:
                point.velocities = [1e-4 * math.cos(1e-3 * k)] * 6
                point.accelerations = [-1e-4 * math.sin(1e-3 * k)] * 6
                point.effort = [0.0] * 6
            points.append(point)
        msg.points = points
        return serialize_message(msg)

    largest = MAX_POINTS if largest_points is None else largest_points
    messages = [(f'{size} points', message(size, False), f'{size} points') for size in sizes]
    messages.append(('largest', message(largest, True), f'{largest} points'))
    big = JointTrajectory(joint_names=PUMA_JOINTS)
    big.points = [JointTrajectoryPoint(positions=np.zeros(int(oversized_bytes) // 8),
                                       time_from_start=Duration(sec=1))]
    messages.append(('oversized', serialize_message(big), None))
    return messages


def stall_goals(sizes=STALL_SIZES):
    """Return the stall run's goals: (label, goal, count logged or None, bytes).

    Goals of ``sizes`` points (positions only, 1 ms apart, as the topic's trajectories)
    and one of MAX_POINTS + 1 points, over the bound (rejected by the receiver process).
    Empty without control_msgs.
    """
    try:
        from control_msgs.action import FollowJointTrajectory
    except ImportError:
        return []
    from rclpy.serialization import deserialize_message
    from trajectory_msgs.msg import JointTrajectory

    from ne_dynamics_ros.control.reference.trajectory import MAX_POINTS

    goals = []
    for size in list(sizes) + [MAX_POINTS + 1]:
        # the topic's message for that size, read back as an object
        data = stall_messages(1, (size,), 1)[0][1]
        goal = FollowJointTrajectory.Goal(trajectory=deserialize_message(data, JointTrajectory))
        over = size > MAX_POINTS
        goals.append(('goal oversized' if over else f'goal {size} points', goal,
                      None if over else f'{size} points', len(data)))
    return goals


class _NodeOutput:
    """The node process's output lines, read live, each with its monotonic arrival time."""

    def __init__(self, proc):
        self.lines = []
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc):
        for line in proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip('\n')))

    def wait_for(self, text, since, timeout):
        """Arrival time of the first line containing ``text`` after ``since``; None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, line in list(self.lines):
                if t >= since and text in line:
                    return t
            time.sleep(0.01)
        return None


class GoalSender:
    """Send FollowJointTrajectory goals from an ActionClient on an executor of its own.

    A Python executor: rclpy's EventsExecutor does not serve actions in these wheels.
    Goals are sent from the executor's thread (rclpy#1123).
    """

    def __init__(self, context):
        import rclpy
        from control_msgs.action import FollowJointTrajectory
        from rclpy.action import ActionClient
        from rclpy.executors import SingleThreadedExecutor

        self.node = rclpy.create_node('bench_stall_goals', context=context)
        self.client = ActionClient(self.node, FollowJointTrajectory,
                                   '/computed_torque_node/follow_joint_trajectory')
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()
        if not self.client.wait_for_server(timeout_sec=30):
            raise RuntimeError('no /computed_torque_node/follow_joint_trajectory')

    def send(self, goal):
        """Send ``goal`` (not waiting for the answer)."""
        self.executor.create_task(lambda: self.client.send_goal_async(goal))

    def close(self):
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()


def largest_gap(times, start, end):
    """Longest interval of [start, end] without one of ``times``, s."""
    inside = times[(times >= start) & (times <= end)]
    return float(np.diff(np.concatenate([[start], inside, [end]])).max())


def run_stall(args):
    """Run the stall run; return the gaps per round and event, and the zero commands."""
    import tempfile

    import rclpy
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory

    domain_id = isolate(args)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), os.environ.get('PYTHONPATH', '')]), PYTHONUNBUFFERED='1',
        RCUTILS_COLORIZED_OUTPUT='0')
    print('stall: serializing the trajectories ...', file=sys.stderr, flush=True)
    messages = stall_messages(args.oversized_mb * 1e6, args.sizes, args.largest_points)
    goals = [] if args.baseline or args.no_goals else stall_goals(args.sizes)
    if os.environ.get('EXP_BASE'):
        cmd = [sys.executable] + os.environ['EXP_BASE'].split()
    elif args.baseline:
        cmd = [sys.executable, __file__, '--serve-baseline', '--executor', args.executor]
    else:
        cmd = [sys.executable, '-m', 'ne_dynamics_ros.nodes.computed_torque_node',
               '--ros-args', '--params-file', args.params_file, '-p', f'urdf_path:={args.urdf}']
        for extra in args.node_arg:
            cmd += ['-p', extra]
    node_proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
    output = _NodeOutput(node_proc)
    folder = tempfile.mkdtemp(prefix='bench_stall_')
    sent_file = os.path.join(folder, 'sent.txt')
    streamer = subprocess.Popen([sys.executable, __file__, '--serve-stream', sent_file]
                                + (['--stream-fifo'] if args.load else []),
                                env=env, stdin=subprocess.PIPE, text=True)
    load = [subprocess.Popen([sys.executable, '-c', 'while True: pass'])
            for _ in range(args.load)]
    context = rclpy.context.Context()
    rclpy.init(context=context, domain_id=domain_id)
    bench = rclpy.create_node('bench_stall', context=context)
    answers = []
    bench.create_subscription(Float64MultiArray, '/effort_controller/commands',
                              lambda data: answers.append(1), 1000, raw=True)
    trajectory_pub = bench.create_publisher(
        JointTrajectory, '/computed_torque_node/joint_trajectory', 10)
    executor, stop, spinner = spin_in_thread(bench, context, 'events')
    sender = GoalSender(context) if goals else None
    events = []               # (round, label, publish time, done time or None)
    try:
        deadline = time.monotonic() + 30.0
        while len(answers) < 100 or trajectory_pub.get_subscription_count() < 1:
            if node_proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError('the node did not answer:\n'
                                   + '\n'.join(line for _, line in output.lines))
            time.sleep(0.05)
        for r in range(args.stall):
            for label, data, logged in messages:
                print(f'stall: round {r + 1}, {label}', file=sys.stderr, flush=True)
                time.sleep(args.pause)
                t_pub = time.monotonic()
                trajectory_pub.publish(data)
                done = output.wait_for(
                    'received trajectory' if args.baseline
                    else f'new trajectory: {logged}' if logged
                    else 'dropped a trajectory message', t_pub, 20.0)
                events.append((r, label, len(data), t_pub, done))
                time.sleep(0.5)
            for label, goal, logged, size in goals:
                print(f'stall: round {r + 1}, {label}', file=sys.stderr, flush=True)
                time.sleep(args.pause)
                t_pub = time.monotonic()
                sender.send(goal)
                done = output.wait_for(
                    f'accepted: {logged}' if logged
                    else 'rejected a FollowJointTrajectory goal', t_pub, 30.0)
                events.append((r, label, size, t_pub, done))
                time.sleep(0.5)
        time.sleep(1.0)
        rounds_end = time.monotonic()
    finally:
        for busy in load:
            busy.kill()
            busy.wait()
        if sender is not None:
            sender.close()
        if streamer.poll() is None:
            streamer.communicate('', timeout=30)
        tear_down(node_proc, bench, context, executor, stop, spinner)
    sent = np.loadtxt(sent_file, ndmin=1)
    efforts = np.loadtxt(f'{sent_file}.efforts', ndmin=2)
    times, zeros = efforts[:, 0], efforts[:, 1] > 0
    rows = []
    previous_end = None
    for r, label, size, t_pub, done in events:
        end = (done if done is not None else t_pub + 20.0) + 0.5
        steady_start = t_pub - (args.pause - 0.1) if previous_end is None else previous_end
        rows.append({
            'round': r + 1, 'event': label, 'bytes': size,
            'handled_s': None if done is None else done - t_pub,
            'gap_ms': 1e3 * largest_gap(times, t_pub, end),
            'steady_gap_ms': 1e3 * largest_gap(times, steady_start, t_pub),
            'steady_stream_gap_ms': 1e3 * largest_gap(sent, steady_start, t_pub),
            'stream_gap_ms': 1e3 * largest_gap(sent, t_pub, end),
            'zero_commands': int(zeros[(times >= t_pub) & (times <= end)].sum())})
        previous_end = end
    who = ('BASELINE: the rclpy echo node, taking trajectories as bytes unread'
           if args.baseline else 'computed_torque_node')
    return {'setup': f'{who} in its own process ({pathlib.Path(args.params_file).name}, '
                     f'state_timeout as configured), valid joint_states at {STALL_RATE:g} Hz '
                     'from a process of their own; trajectories of '
                     f'{", ".join(map(str, args.sizes))} points (positions only, 1 ms '
                     'apart), the largest the node accepts, and one '
                     f'{args.oversized_mb:g} MB message; {args.stall} rounds'
                     + (f'; {args.load} CPU-bound processes beside the node, the states '
                        'streamed at SCHED_FIFO where permitted' if args.load else ''),
            'node_args': args.node_arg, 'rows': rows, 'load': args.load,
            'priority': next((line.split('control path priority: ', 1)[1].strip()
                              for _, line in output.lines
                              if 'control path priority: ' in line), 'not logged'),
            'zero_commands_total': int(zeros.sum()),
            'timeouts_logged': sum('no valid joint_states' in line
                                   for t, line in output.lines if t <= rounds_end)}


def print_stall(result):
    print(result['setup'])
    print(f'the node\'s control path: {result.get("priority", "not logged")}')
    if result['node_args']:
        print('node parameters:', ' '.join(result['node_args']))
    print('worst gaps between effort commands as received, from the message\'s publication '
          'until 0.5 s after the node logged it; "steady" is the time before it since the '
          'previous message; "stream": the states\' own worst gap in the same window')
    print(f'{"round":>5} {"event":>18} {"MB":>6} {"handled":>8} | {"gap":>8} {"stream":>8} | '
          f'{"steady":>8} {"stream":>8} | {"zeros":>5}')
    for row in result['rows']:
        handled = '-' if row['handled_s'] is None else f'{row["handled_s"] * 1e3:.0f} ms'
        print(f'{row["round"]:>5} {row["event"]:>18} {row["bytes"] / 1e6:>6.2f} {handled:>8} | '
              f'{row["gap_ms"]:>5.1f} ms {row["stream_gap_ms"]:>5.1f} ms | '
              f'{row["steady_gap_ms"]:>5.1f} ms {row["steady_stream_gap_ms"]:>5.1f} ms | '
              f'{row["zero_commands"]:>5d}')
    valid = [row['gap_ms'] for row in result['rows'] if not row['event'].endswith('oversized')]
    largest = [row['gap_ms'] for row in result['rows'] if row['event'] == 'largest']
    oversized = [row['gap_ms'] for row in result['rows'] if row['event'].endswith('oversized')]
    goal_rows = [row for row in result['rows'] if row['event'].startswith('goal')]
    steady = [row['steady_gap_ms'] for row in result['rows']]
    print('goals:')
    print(f'  worst gap while valid trajectories arrive: {max(valid):.1f} ms '
          f'(goal <= {1e3 * STALL_GOALS["valid"]:.0f} ms): '
          + ('met' if max(valid) <= 1e3 * STALL_GOALS['valid'] else 'not met'))
    print(f'    of which the largest trajectory: {max(largest):.1f} ms')
    if goal_rows:
        print(f'    of which FollowJointTrajectory goals: '
              f'{max(r["gap_ms"] for r in goal_rows if "oversized" not in r["event"]):.1f} ms; '
              f'around the goal over the bound: '
              f'{max(r["gap_ms"] for r in goal_rows if "oversized" in r["event"]):.1f} ms')
    print(f'  worst gap around the oversized message: {max(oversized):.1f} ms '
          f'(goal <= {1e3 * STALL_GOALS["oversized"]:.0f} ms): '
          + ('met' if max(oversized) <= 1e3 * STALL_GOALS['oversized'] else 'not met'))
    print(f'  zero-effort commands: {result["zero_commands_total"]} '
          f'(timeouts logged: {result["timeouts_logged"]}) (goal 0): '
          + ('met' if result['zero_commands_total'] == 0 else 'not met'))
    print(f'  worst steady-state gap: {max(steady):.1f} ms; while trajectories arrive '
          f'{max(valid):.1f} ms (goal: no larger than steady state): '
          + ('met' if max(valid) <= max(steady) else 'not met'))
    everything = max([row['gap_ms'] for row in result['rows']] + steady)
    print(f'worst gap of this run: {everything:.1f} ms'
          + (f' with {result["load"]} CPU-bound processes beside the node (goal <= 20 ms)'
             if result.get('load') else ''))


def run_starts(args):
    """Run ``--starts N``: :func:`node_starts.run_starts` on a private domain."""
    import tempfile
    import rclpy
    import node_starts
    domain = args.domain_id if args.domain_id is not None else random.randint(150, 229)
    os.environ['ROS_DOMAIN_ID'] = str(domain)
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    context = rclpy.context.Context()
    rclpy.init(context=context, domain_id=domain)
    try:
        with tempfile.TemporaryDirectory() as folder:
            return node_starts.run_starts(args.starts, context, pathlib.Path(folder),
                                          args.node_arg)
    finally:
        rclpy.shutdown(context=context)


def main(argv=None):
    args = parse_args(argv)
    if args.serve_baseline:
        serve_baseline(args.executor)
        return 0
    if args.serve_stream:
        if args.stream_fifo:             # as joint_state_broadcaster's realtime thread
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(60))
            except (OSError, AttributeError) as err:
                print(f'stream: no SCHED_FIFO ({err})', file=sys.stderr, flush=True)
        serve_stream(args.serve_stream, args.stream_rate)
        return 0
    if args.ros2_control:
        import ros2_control_loop
        args.test_dir = ROOT / 'test'
        result = ros2_control_loop.run_ros2_control(args)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            ros2_control_loop.print_ros2_control(result)
        return 0
    if args.starts is not None:
        result = run_starts(args)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            import node_starts
            node_starts.print_starts(result)
        return 0 if not result['unexcused'] else 1
    if args.modes:
        result = run_modes(args)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print_modes(result)
        return 0
    if args.stall is not None:
        result = run_stall(args)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print_stall(result)
        return 0
    if args.soak is not None:
        result = run_soak(args)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print_soak(result, args.window)
        return 0
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    lat = result['latency_us']
    print(result['setup'])
    print(f"{result['published']} joint states at {result['rate_hz']:.0f} Hz for "
          f"{result['duration_s']:.1f} s (achieved {result['achieved_rate_hz']:.1f} Hz)")
    print(f"~/tracking_error and ~/desired subscribed: {result['diagnostics_subscribed']}")
    print(f"effort commands received: {result['efforts_received']}, states answered: "
          f"{result['answered']}, without reply: {result['without_reply']}")
    print(f"publish -> effort receipt latency: p50 {lat['p50']:.0f} us, p99 {lat['p99']:.0f} us, "
          f"max {lat['max']:.0f} us, mean {lat['mean']:.0f} us")
    return 0


if __name__ == '__main__':
    sys.exit(main())
