"""Model feed-forward inside controller_manager's cycle: JTC with and without the efforts.

Side by side in one run, per arm (``--arms``, default the UR5e on Pinocchio and on
MuJoCo and the PUMA 560), through the real controller_manager at ``--rate`` Hz with the
simulated arm on the hardware's clock (SimArmSystem):

- **JTC + feed-forward**: ``ros2_control.launch.py loop:=jtc``, goals through
  ``jtc_feedforward``'s action (the model's efforts on the points);
- **JTC alone**: the same stack and gains, the same trajectories sent straight to JTC's
  topic (no effort on the points: its PID alone);
- **the node's loop**: ``loop:=node`` (computed_torque_node's own effort loop through
  effort_controller);
- **direct topic**: the node on the simulated arm's effort topic, no controller_manager.

Each runs ``--runs`` 0.3 rad quintics (1.5 s) on three joints, there and back; reported:
the worst and the RMS tracking error as the controller itself reports it (JTC's
``~/controller_state`` error, the node's ``~/tracking_error``), and for JTC the sag
after a cancel mid-move (the arm's own positions 0.3-1.8 s after the cancel; and the
motion of the joints the goal did not move, from the cancel on), with the relay's
gravity hold and with JTC's own zero-effort hold. The goals (issue 56) are
printed beside the figures: JTC + feed-forward >= 10x better than JTC alone and within
1.5x of the direct topic; the sag within 5 mrad.

``--lee``: instead of the quintics, Lee et al. (1982)'s experiment on the PUMA 560 in every
wiring: from (90, 0, 90, 0, 0, 0) deg to (45, 30, 0, 45, 60, 90) deg in a 3 s quintic
(the arm first taken to its start), the worst error beside their 4.26e-4 rad.

``--acceptance N``: instead, N goals of 1 000 and of 50 000 points sent to the relay and
straight to JTC, the time from sending each to its goal response side by side (the relay
answers once it has checked and resampled the goal; the goal's 5 ms bound).

Usage: python benchmarks/bench_jtc.py [--runs 10] [--rate 500] [--arms ur5e:pinocchio ...]
       python benchmarks/bench_jtc.py --lee [--rate 500]
       python benchmarks/bench_jtc.py --acceptance 5
"""
import argparse
import pathlib
import sys
import time

import numpy as np

TEST_DIR = pathlib.Path(__file__).resolve().parents[1] / 'test'
MOVE = np.array([0.3, -0.3, 0.3, 0.0, 0.0, 0.0])
MOVE_TIME = 1.5
#: print each move's worst error (``--per-move``)
PER_MOVE = False
JTC = 'joint_trajectory_controller'
UR5E = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
        'wrist_2_joint', 'wrist_3_joint']
PUMA = [f'joint_{k}' for k in range(1, 7)]
ARMS = {'ur5e': (UR5E, 'ur5e_sim.launch.py'), 'puma560': (PUMA, 'puma560.launch.py')}
#: The goals of issue 56.
BETTER_THAN_ALONE = 10.0
WITHIN_DIRECT = 1.5
SAG = 5e-3
#: Lee et al. (1982)'s worst tracking error of the PUMA 560, rad, and their move's time, s.
LEE_BOUND = 4.26e-4
LEE_TIME = 3.0
#: What the relay may add to a 1 000-point goal's acceptance, s (issue 56).
ACCEPTANCE_ADDED = 5e-3
#: computed_torque_node's own acceptance of a 50 000-point goal (docs/benchmarks.md).
NODE_50K = '739-839 ms'


class Errors:
    """Tracking errors a controller reports, on the probe's executor."""

    def __init__(self, probe, jtc):
        import ros2_control_stack as stack
        self.probe = probe
        self.rows = stack.record_controller_errors(probe, JTC) if jtc else []

    def since(self, began, mark):
        """Return JTC's errors since ``began`` (monotonic s), or the node's from ``mark``."""
        with self.probe.lock:
            if self.rows or mark is None:
                return np.array([e for t, e in self.rows if t >= began])
            return np.array([r[1] for r in self.probe.tracking[mark:]])


def _publisher(probe, topic):
    from trajectory_msgs.msg import JointTrajectory
    publisher = probe.node.create_publisher(JointTrajectory, topic, 10)
    deadline = time.monotonic() + 20.0
    while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    return publisher


def _moves(s, joints, runs, topic, jtc):
    """Run the moves; return (worst, rms) of the controller's own errors, rad, and more.

    The third value: per move ``(wall-clock start, end, its worst)``.
    """
    import ros2_control_stack as stack
    probe = s.probe
    errors = Errors(probe, jtc)
    publisher = _publisher(probe, topic)
    collected, per_move = [], []
    for run in range(runs):
        start = probe.position_now()
        with probe.lock:
            mark = len(probe.tracking)
        began, wall = time.monotonic(), time.time()
        goal = start + (MOVE if run % 2 == 0 else -MOVE)
        publisher.publish(stack.quintic(joints, start, goal, MOVE_TIME))
        time.sleep(MOVE_TIME + 0.8)
        rows = errors.since(began, None if jtc else mark)
        if len(rows):
            collected.append(rows)
            per_move.append((wall, time.time(), float(np.max(np.abs(rows)))))
            if PER_MOVE:
                print(f'    move {run}: worst {np.max(np.abs(rows)):.3e} rad at '
                      f'{rows.shape[0] and int(np.argmax(np.max(np.abs(rows), axis=1)))} '
                      f'of {rows.shape[0]} samples', flush=True)
    rows = np.concatenate(collected) if collected else np.zeros((1, 6))
    return float(np.max(np.abs(rows))), float(np.sqrt(np.mean(rows ** 2))), per_move


def _stalls(per_move, monitor):
    """Return the median of the moves' worst, rad, and the machine's stalls in the moves."""
    from machine_stalls import stalls_within
    return {'median': float(np.median([m[2] for m in per_move])) if per_move else None,
            'steal_s': monitor.steal,
            **stalls_within(monitor.stalls, [(m[0], m[1]) for m in per_move])}


def _lee(s, joints, topic, jtc):
    """Lee et al.'s move; return (worst, rms) of the controller's own errors during it, rad.

    The arm is first taken to the experiment's start (a 3 s quintic from where it is,
    then 1 s at rest); the move is the 3 s quintic to its goal, judged until 0.8 s after.
    """
    import ros2_control_stack as stack
    from ne_dynamics_ros.tools.experiment.setup import LEE_GOAL_DEG, LEE_START_DEG
    probe = s.probe
    errors = Errors(probe, jtc)
    publisher = _publisher(probe, topic)
    here = probe.position_now()
    publisher.publish(stack.quintic(joints, here, np.radians(LEE_START_DEG), LEE_TIME))
    time.sleep(LEE_TIME + 1.0)
    here = probe.position_now()
    with probe.lock:
        mark = len(probe.tracking)
    began = time.monotonic()
    publisher.publish(stack.quintic(joints, here, np.radians(LEE_GOAL_DEG), LEE_TIME))
    time.sleep(LEE_TIME + 0.8)
    rows = errors.since(began, None if jtc else mark)
    if not len(rows):
        return float('nan'), float('nan')
    return float(np.max(np.abs(rows))), float(np.sqrt(np.mean(rows ** 2)))


def _lee_params():
    """Write the PUMA's parameter YAML with ``position_limit_margin: .inf``; its path."""
    import tempfile
    import yaml
    from ne_dynamics_ros.resources import find_resource
    with open(find_resource('config/puma560.yaml'), encoding='utf-8') as stream:
        values = yaml.safe_load(stream)
    values['computed_torque_node']['ros__parameters']['position_limit_margin'] = float('inf')
    folder = pathlib.Path(tempfile.mkdtemp(prefix='bench_jtc_lee_'))
    path = folder / 'puma560_lee.yaml'
    path.write_text(yaml.safe_dump(values), encoding='utf-8')
    return path


def _action_client(probe, relay):
    """Return a FollowJointTrajectory client of the relay's (or JTC's own) action, ready."""
    from control_msgs.action import FollowJointTrajectory
    from rclpy.action import ActionClient
    name = '/jtc_feedforward/follow_joint_trajectory' if relay else \
        f'/{JTC}/follow_joint_trajectory'
    client = ActionClient(probe.node, FollowJointTrajectory, name)
    probe.wait(client.server_is_ready, 20.0, name)
    return client


def _cancel_sag(s, joints, relay):
    """Send a 2 s goal, cancel it at 0.8 s; return (sag, still) in rad.

    ``sag``: the arm's motion 0.3-1.8 s after the cancel; ``still``: the motion of the
    joints the goal did not move, from the cancel on.
    """
    import threading
    import ros2_control_stack as stack
    from control_msgs.action import FollowJointTrajectory
    probe = s.probe
    client = _action_client(probe, relay)

    def call(fn):
        box, done = [], threading.Event()
        probe.executor.create_task(lambda: (box.append(fn()), done.set()))
        assert done.wait(10.0)
        future = box[0]
        probe.wait(future.done, 20.0, 'an action future')
        return future.result()
    start = probe.position_now()
    trajectory = stack.quintic(joints, start, start + MOVE, 2.0)
    goal = FollowJointTrajectory.Goal(trajectory=trajectory)
    handle = call(lambda: client.send_goal_async(goal))
    if not handle.accepted:
        return float('nan'), float('nan')
    time.sleep(0.8)
    cancelled = time.monotonic()
    call(handle.cancel_goal_async)
    time.sleep(0.3)
    settled = time.monotonic()
    time.sleep(1.5)
    still = probe.positions_since(cancelled)[:, MOVE == 0]
    return probe.motion_since(settled), float(np.max(np.abs(still - still[0])))


def _run(arm, args):
    """Return the rows of one arm: one per wiring."""
    import ros2_control_stack as stack
    from machine_stalls import StallMonitor
    robot, plant = arm.split(':')
    joints, direct = ARMS[robot]
    rows = []
    wirings = [('JTC + feed-forward', ('loop:=jtc',), '/jtc_feedforward/joint_trajectory',
                True),
               ('JTC alone', ('loop:=jtc',), f'/{JTC}/joint_trajectory', True),
               ("the node's loop", (), '/computed_torque_node/joint_trajectory', False),
               ('direct topic', None, '/computed_torque_node/joint_trajectory', False)]
    orders = lee = ()
    if args.lee:
        # Lee et al.'s start (joint 3 at 90 deg) lies outside the joint 3 range of
        # config/puma560.urdf (their joint zeros differ): the node must not drop those
        # states, as the demo's Lee experiment sets it (the simulated arm has no stops)
        lee = (f'params_file:={_lee_params()}',)
    if args.shuffled:         # the <ros2_control> block reversed, the controllers shuffled
        orders = (f'hardware_joints:=[{", ".join(reversed(joints))}]',
                  f'controller_joints:=[{", ".join(joints[2::-1] + joints[:2:-1])}]')
    for label, arguments, topic, jtc in wirings:
        if args.wirings and label not in args.wirings:
            continue
        launch = direct if arguments is None else 'ros2_control.launch.py'
        extra = lee if arguments is None else (f'robot:={robot}', f'rate:={args.rate}',
                                               *orders, *lee, *arguments,
                                               *args.launch_arg)
        s = stack.Stack(joints, f'plant:={plant}', *extra, launch=launch)
        try:
            if jtc:
                s.probe.wait(lambda: s.probe.is_active(JTC), 60.0, f'{JTC} active')
                time.sleep(1.0)
            else:
                s.wait_commanding()
            machine = None
            if args.lee:
                worst, rms = _lee(s, joints, topic, jtc)
            else:
                with StallMonitor() as monitor:
                    worst, rms, per_move = _moves(s, joints, args.runs, topic, jtc)
                machine = _stalls(per_move, monitor)
            row = {'arm': arm, 'wiring': label, 'worst': worst, 'rms': rms,
                   'machine': machine}
            if jtc and not args.lee:
                row['sag'], row['still'] = _cancel_sag(s, joints,
                                                       relay=label.startswith('JTC +'))
            rows.append(row)
            print(f'  {arm:17s} {label:20s} worst {worst:.3e} rad, RMS {rms:.3e}'
                  + (f', sag after a cancel {row["sag"]:.2e} rad (still joints from the '
                     f'cancel on {row["still"]:.2e})' if 'sag' in row else '')
                  + (f'; median of the moves\' worst {machine["median"]:.3e} rad, the '
                     f'machine stalled {machine["stalls_1ms"]} times over 1 ms '
                     f'({machine["stalls_2ms"]} over 2 ms, the longest '
                     f'{machine["stall_max_ms"]:.1f} ms; steal {machine["steal_s"]:.2f} s)'
                     if machine and machine['median'] is not None else ''), flush=True)
        finally:
            s.close()
    return rows


def _acceptance_times(s, joints, relay, points, repeats):
    """Return the goal acceptance times (s) of ``repeats`` goals of ``points`` points.

    From ``send_goal_async`` to the goal response on the probe's executor (a done
    callback: no polling). Each goal is a slow 0.05 rad move, 2 ms a point, cancelled
    as soon as it is accepted (JTC holds, or the relay's stop preempts it).
    """
    import threading
    import ros2_control_stack as stack
    from control_msgs.action import FollowJointTrajectory
    probe = s.probe
    client = _action_client(probe, relay)
    times = []
    for _ in range(repeats):
        start = probe.position_now()
        goal = FollowJointTrajectory.Goal(trajectory=stack.quintic(
            joints, start, start + 0.05 * np.sign(MOVE + 0.5), 0.002 * points,
            points=points))
        done, box = threading.Event(), {}

        def send():
            box['sent'] = time.monotonic()
            future = client.send_goal_async(goal)
            future.add_done_callback(lambda f: (box.update(at=time.monotonic(),
                                                           handle=f.result()), done.set()))
        probe.executor.create_task(send)
        assert done.wait(60.0), f'no answer to a {points}-point goal ({relay=})'
        times.append(box['at'] - box['sent'])
        if box['handle'].accepted:
            cancelled = threading.Event()
            probe.executor.create_task(lambda: box['handle'].cancel_goal_async()
                                       .add_done_callback(lambda _: cancelled.set()))
            cancelled.wait(10.0)
        time.sleep(0.5)
    return times


def run_acceptance(args):
    """Print the relay's acceptance of 1 000- and 50 000-point goals beside JTC's own."""
    import ros2_control_stack as stack
    joints = UR5E
    s = stack.Stack(joints, 'plant:=pinocchio', 'robot:=ur5e', f'rate:={args.rate}',
                    'loop:=jtc')
    try:
        s.probe.wait(lambda: s.probe.is_active(JTC), 60.0, f'{JTC} active')
        time.sleep(1.0)
        print(f'Goal acceptance (UR5e, Pinocchio, {args.rate} Hz; {args.acceptance} goals '
              'each; send to answer, ms: min / median / max)')
        for points in (1000, 50000):
            row = {}
            for relay in (False, True):
                ms = 1e3 * np.array(_acceptance_times(s, joints, relay, points,
                                                      args.acceptance))
                row[relay] = ms
                print(f'  {points:6d} points  {"jtc_feedforward" if relay else JTC:28s} '
                      f'{ms.min():7.1f} / {np.median(ms):7.1f} / {ms.max():7.1f}',
                      flush=True)
            added = np.median(row[True]) - np.median(row[False])
            bound = f'goal <= {ACCEPTANCE_ADDED * 1e3:g} ms' if points == 1000 else \
                f'the node accepts 50 000 points in {NODE_50K}'
            print(f'  {points:6d} points: the relay adds {added:.1f} ms (median; {bound})')
    finally:
        s.close()


def summary(rows):
    """Print each arm's figures beside the goals."""
    for arm in dict.fromkeys(r['arm'] for r in rows):
        by = {r['wiring']: r for r in rows if r['arm'] == arm}
        ff, alone = by.get('JTC + feed-forward'), by.get('JTC alone')
        direct = by.get('direct topic')
        if not (ff and alone and direct):
            continue
        better = alone['worst'] / ff['worst']
        ratio = ff['worst'] / direct['worst']
        print(f'{arm}: JTC + feed-forward {better:.1f}x better than JTC alone (goal >= '
              f'{BETTER_THAN_ALONE:g}x), {ratio:.1f}x the direct topic (goal <= '
              f'{WITHIN_DIRECT:g}x); sag after a cancel {ff["sag"]:.2e} rad with the '
              f'relay\'s hold, {alone["sag"]:.2e} with JTC\'s own (goal <= {SAG:g}); the '
              f'joints the goal did not move, from the cancel on: {ff["still"]:.2e} / '
              f'{alone["still"]:.2e}')


def main(argv=None):
    """Run the comparison; print it beside the goals."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=10, help='moves per wiring')
    parser.add_argument('--rate', type=int, default=500, help='controller_manager Hz')
    parser.add_argument('--arms', nargs='*', default=['ur5e:pinocchio', 'ur5e:mujoco',
                                                      'puma560:pinocchio'])
    parser.add_argument('--shuffled', action='store_true',
                        help='the <ros2_control> block in reversed joint order and the '
                        'controllers\' joints in a third order (default: the URDF\'s)')
    parser.add_argument('--lee', action='store_true',
                        help='instead: Lee et al.\'s experiment on the PUMA 560 in every '
                        'wiring, beside their bound')
    parser.add_argument('--wirings', nargs='*', default=[],
                        help='only these wirings (their labels, e.g. "JTC + feed-forward")')
    parser.add_argument('--launch-arg', action='append', default=[], metavar='NAME:=VALUE',
                        help='an argument of ros2_control.launch.py for the wirings through '
                        'controller_manager (e.g. effort_offset:=0.0)')
    parser.add_argument('--per-move', action='store_true',
                        help='print the worst error of each move')
    parser.add_argument('--acceptance', type=int, default=0, metavar='N',
                        help='instead: N goals of 1 000 and of 50 000 points through the '
                        'relay and straight to JTC, their acceptance times side by side')
    args = parser.parse_args(argv)
    global PER_MOVE
    PER_MOVE = args.per_move
    sys.path.insert(0, str(TEST_DIR))
    import ros2_control_stack as stack
    why = stack.missing()
    if why:
        print(f'skipped: {why}')
        return 0
    if args.acceptance:
        run_acceptance(args)
        return 0
    if args.lee:
        print(f'Lee et al.\'s experiment (PUMA 560, Pinocchio) through controller_manager at '
              f'{args.rate} Hz: the worst and RMS of the controller\'s own error')
        for row in _run('puma560:pinocchio', args):
            print(f'  {row["wiring"]:20s} worst {row["worst"]:.3e} rad (Lee et al.: '
                  f'{LEE_BOUND:.3g} rad, {"under" if row["worst"] < LEE_BOUND else "OVER"})')
        return 0
    print(f'Tracking through controller_manager at {args.rate} Hz, {args.runs} moves of '
          f'0.3 rad per wiring (worst and RMS of the controller\'s own error); joints '
          + ('reversed in the hardware, shuffled in the controllers' if args.shuffled
             else 'in the URDF\'s order'))
    rows = []
    for arm in args.arms:
        rows += _run(arm, args)
    summary(rows)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
