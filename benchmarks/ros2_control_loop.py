"""The loop through the real ros2_control: latency in controller_manager cycles, tracking.

``bench_node.py --ros2-control`` runs it. Every figure comes from the stack the project
ships (``launch/ros2_control.launch.py``: controller_manager, joint_state_broadcaster,
the effort controller, the hold controller, effort_guard, the UR5e on Pinocchio behind
the package's SimArmSystem hardware), started once per configuration on a private domain.

**Latency** (per ``--r2c-rates`` and with/without the node's ``realtime_priority``,
quiet and beside ``--load`` CPU-bound processes): ``--r2c-moves`` moves (below), so that
every command differs from the one before (a held arm repeats its command, and a repeated
value cannot be told apart). The measurement uses controller_manager's own stamps:

- each state is joint_state_broadcaster's ``/joint_states``, stamped at its cycle;
- the node's ``~/tracking_error`` carries that stamp and the command it computed from
  the state;
- the hardware's ``/r2c/joint_commands`` carries the effort it wrote and its own stamp.

A command is found in the first write at or after its state with exactly its values
(doubles pass unchanged through the chain). Its latency in cycles is
``round((write - state) / period)``: 1 means it was written at the next cycle, the best
the loop can do.

Reported per configuration:

- the share of commands written 1, 2 and more cycles late, and never written (replaced in
  the controller's buffer before a cycle took them);
- p50 and p99 of the latency in ms.

**Tracking** (``--r2c-runs`` moves of 0.3 rad on three joints, a 1.5 s quintic, there
and back): the worst ``|q_d - q|`` during the moves, of the node's own error and of the
arm's (:func:`arm_errors`: ``q_d`` less the arm's own position at the instant of the
state's stamp, which the broadcaster sets after the read), and whether the loop
oscillated (the node's error still above 2 mrad 0.6 s after a move ended). It is
measured through the stack with the shipped wiring (SimArmSystem: the arm on the
hardware's clock over its datagram link; for the UR5e also with the ``<ros2_control>``
block reversed and the controller's joints shuffled), with the arm on the hardware's
clock behind ``topic_based_ros2_control`` (DDS topics), with the arm on its own timer at
0.8 x the update rate behind the same plugin, quiet and beside ``--load`` processes, and
for the direct-topic launch (``ur5e_sim.launch.py``: sim_arm_node on the effort topic)
on the same machine in the same run. Beside each wiring's moves a process at SCHED_FIFO
90 notes the machine's own stalls (:mod:`machine_stalls`): reported with the median over
the moves of each move's worst, which a single stall does not decide.
"""
import subprocess
import sys
import time

import numpy as np

#: The joints moved, by how much (rad): shoulder_pan, shoulder_lift, elbow.
MOVE = np.array([0.3, -0.3, 0.3, 0.0, 0.0, 0.0])
MOVE_TIME = 1.5
SETTLE = 0.6
OSCILLATING = 2e-3
UR5E = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
        'wrist_2_joint', 'wrist_3_joint']
PUMA = [f'joint_{k}' for k in range(1, 7)]
#: The wirings ``--r2c-wirings`` picks from: SimArmSystem (the shipped wiring), the same
#: with the block reversed and the controller's joints shuffled (the UR5e), the arm on
#: the hardware's clock behind topic_based_ros2_control, the arm on its own timer behind
#: it, and the direct topic.
WIRINGS = ('hardware', 'reversed', 'topic_based', 'timer', 'direct')
#: robot:= -> (its joints, its direct-topic launch file).
ARMS = {'ur5e': (UR5E, 'ur5e_sim.launch.py'), 'puma560': (PUMA, 'puma560.launch.py')}
#: Lee et al. (1982)'s worst tracking error of the PUMA 560 at 100 Hz, rad.
LEE_BOUND = 4.26e-4


def cycle_latency(states, writes, period):
    """Match each state's command to the hardware write that applied it.

    Args:
        states: sequence of (stamp s, command tuple) from the node's ``~/tracking_error``.
        writes: sequence of (stamp s, effort tuple) from the hardware's command topic, in
            order.
        period: controller_manager's update period, s.

    Returns:
        dict: ``cycles`` (list of ints, one per written command), ``latency_ms`` (the same
        as write stamp less state stamp), ``never`` (commands not found in any write).
    """
    stamps = np.array([w[0] for w in writes])
    index = {}
    for k, (_, effort) in enumerate(writes):
        index.setdefault(tuple(effort), []).append(k)
    cycles, latency, never = [], [], 0
    for stamp, command in states:
        candidates = [k for k in index.get(tuple(command), ()) if stamps[k] >= stamp]
        if not candidates:
            never += 1
            continue
        written = stamps[candidates[0]]
        cycles.append(int(round((written - stamp) / period)))
        latency.append((written - stamp) * 1e3)
    return {'cycles': cycles, 'latency_ms': latency, 'never': never}


def state_ages(truth, broadcast, joints, period=0.002):
    """Return how old the states joint_state_broadcaster publishes really are.

    Each broadcast state is found among the simulated arm's own states (``truth``: stamp,
    receipt, positions in ``joints`` order) by its exact positions; its age is the
    broadcast stamp less the arm's stamp (both the system clock). Returns ``{'p50_ms',
    'p99_ms', 'max_ms', 'repeated', 'queued', 'states'}`` (repeated: the share of
    broadcast states that carry the same measurement as the one before; queued: the share
    two or more cycles of ``period`` s old, by the nearest whole cycle as the stamps jitter
    by microseconds, i.e. read from behind a newer state in the hardware's queue; one cycle
    old is a state that reached the hardware after its read), or None when none matched.
    """
    import ros2_control_stack as stack
    ages, sources = stack.matched_ages(truth, broadcast, joints)
    if not ages.size:
        return None
    cycles = stack.cycles_old(ages, period)
    ages = ages * 1e3
    repeated = float(np.mean(np.diff(sources) == 0)) if len(sources) > 1 else 0.0
    return {'p50_ms': float(np.percentile(ages, 50)), 'p99_ms': float(np.percentile(ages, 99)),
            'max_ms': float(ages.max()), 'repeated': repeated,
            'repeats': int(np.sum(np.diff(sources) == 0)) if len(sources) > 1 else 0,
            'queued': float(np.mean(cycles > 1)),
            'older': int(np.sum(cycles > 1)), 'states': int(ages.size)}


def summary(result):
    """Return the shares of 1, 2, later cycles and never, and p50/p99 ms of a match."""
    cycles = np.array(result['cycles'])
    total = len(cycles) + result['never']
    share = (lambda mask: float(np.sum(mask)) / total if total else float('nan'))
    p50, p99 = (np.percentile(result['latency_ms'], [50, 99]) if len(cycles)
                else (float('nan'), float('nan')))
    return {'commands': total, 'next_cycle': share(cycles <= 1), 'two': share(cycles == 2),
            'later': share(cycles > 2), 'never': result['never'] / total if total else 0.0,
            'p50_ms': float(p50), 'p99_ms': float(p99)}


def _burners(count):
    return [subprocess.Popen([sys.executable, '-c', 'while True: pass'])
            for _ in range(count)]


def _stop(processes):
    for p in processes:
        p.kill()
        p.wait(timeout=10)


def arm_errors(tracking, broadcast, truth, joints):
    """Return the arm's own error at the instant of each of the node's states.

    Args:
        tracking: the node's ``~/tracking_error`` rows (stamp s, ``q_d - q`` (n,), effort).
        broadcast: the states the node read (stamp s, names, positions).
        truth: the arm's own states (stamp s, receipt, q (n,)), ``joints`` order.

    Returns:
        ``(stamps (N,), errors (N, n))``, rad: ``q_d`` at each state's stamp (the node's
        error plus the position it was computed from) less the arm's position at that
        instant (a cubic spline through the arm's states, 2 ms apart). For the direct
        topic the two are the node's error; through controller_manager the broadcaster
        stamps a state with the time of its own update, after the hardware's read
        (20 us at the median, 2026-12-06, more when the loop is delayed), and the node's
        error holds ``q' dt`` the arm does not have (up to 1.3e-4 rad in a move whose
        own error was 2.6e-5).
    """
    from scipy.interpolate import CubicSpline
    stamps = np.array([t for t, _, _ in truth])
    if stamps.size < 4:
        return np.zeros(0), np.zeros((0, len(joints)))
    _, first = np.unique(stamps, return_index=True)
    spline = CubicSpline(stamps[first], np.array([q for _, _, q in truth])[first])
    read = {}
    for stamp, names, positions in broadcast:
        order = {name: k for k, name in enumerate(names)}
        read[stamp] = np.array([positions[order[j]] for j in joints])
    rows = [(t, e + read[t]) for t, e, _ in tracking
            if t in read and stamps[first[0]] <= t <= stamps[first[-1]]]
    if not rows:
        return np.zeros(0), np.zeros((0, len(joints)))
    at = np.array([t for t, _ in rows])
    return at, np.array([q_d for _, q_d in rows]) - spline(at)


def _moves(probe, runs, joint_names):
    """Run ``runs`` moves there and back.

    Returns (worst of the node's error, oscillations, worst of the arm's own error
    (:func:`arm_errors`), per move ``(first stamp, last stamp, the node's worst, the
    arm's worst)``, why the moves ended before ``runs`` or None), rad and wall-clock s.
    A move starts from the arm's newest state; with none fresh within 5 s the moves end
    there, and the reason is given (a run of "0 s of moves" once said nothing of it).
    """
    import ros2_control_stack as stack
    publisher = probe.trajectory_publisher    # never destroyed while the probe spins
    deadline = time.monotonic() + 20.0
    while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    worst, oscillations, arm_worst, per_move = 0.0, 0, 0.0, []
    for run in range(runs):
        try:
            start = probe.position_now()
        except AssertionError as exc:
            return worst, oscillations, arm_worst, per_move, (
                f'move {run + 1} of {runs} not started: {exc} ({probe.counts()})')
        with probe.lock:
            marks = len(probe.tracking), len(probe.broadcast), len(probe.truth)
        goal = start + (MOVE if run % 2 == 0 else -MOVE)
        publisher.publish(stack.quintic(joint_names, start, goal, MOVE_TIME))
        time.sleep(MOVE_TIME + SETTLE + 0.4)
        with probe.lock:
            rows = probe.tracking[marks[0]:]
            broadcast, truth = probe.broadcast[marks[1]:], probe.truth[marks[2]:]
        if not rows:
            continue
        stamps = np.array([r[0] for r in rows])
        errors = np.array([np.max(np.abs(r[1])) for r in rows])
        worst = max(worst, float(np.max(errors)))
        _, own = arm_errors(rows, broadcast, truth, joint_names)
        own_worst = float(np.max(np.abs(own))) if own.size else None
        if own_worst is not None:
            arm_worst = max(arm_worst, own_worst)
        per_move.append((float(stamps[0]), float(stamps[-1]), float(np.max(errors)),
                         own_worst))
        late = errors[stamps > stamps[0] + MOVE_TIME + SETTLE]
        if late.size and float(np.max(late)) > OSCILLATING:
            oscillations += 1
    return worst, oscillations, arm_worst, per_move, None


def move_statistics(per_move, stalls):
    """Return the median of the moves' worst errors and the machine's stalls meanwhile.

    ``per_move``: :func:`_moves`'s; ``stalls``: :class:`machine_stalls.StallMonitor`'s
    notes. As ``{'median_rad': the node's, 'arm_median_rad': the arm's (None without),
    'stalls_1ms', 'stalls_2ms': how many stalls over 1 and 2 ms fell in the moves,
    'stall_max_ms', 'seconds': the moves' total time, 'clean_moves': how many met no
    stall over 2 ms, 'clean_worst_rad', 'clean_arm_worst_rad': the worst of those (None
    without)}``: the worst of the moves is decided by the longest stall that met a move's
    fastest part; the median, and the worst of the moves the machine did not stop, by the
    loop.
    """
    from machine_stalls import met_stall, stalls_within
    windows = [(m[0], m[1]) for m in per_move]
    arms = [m[3] for m in per_move if m[3] is not None]
    clean = [m for m, stalled in zip(per_move, met_stall(stalls, windows)) if not stalled]
    clean_arms = [m[3] for m in clean if m[3] is not None]
    return {'median_rad': float(np.median([m[2] for m in per_move])) if per_move else None,
            'arm_median_rad': float(np.median(arms)) if arms else None,
            'clean_moves': len(clean),
            'clean_worst_rad': max((m[2] for m in clean), default=None),
            'clean_arm_worst_rad': max(clean_arms, default=None),
            **stalls_within(stalls, windows)}


def _node_process(domain_id):
    """Start computed_torque_node by hand (the UR5e, beside ros2_control) on a domain."""
    import ros2_control_stack as stack
    from ne_dynamics_ros.resources import find_resource
    return subprocess.Popen(
        [sys.executable, '-m', 'ne_dynamics_ros.nodes.computed_torque_node', '--ros-args',
         '--params-file', str(find_resource('config/ur5e_sim.yaml')),
         '-p', f'urdf_path:={find_resource("config/ur5e.urdf")}',
         '-p', 'ros2_control.controller_manager:=/controller_manager',
         '-p', 'ros2_control.hold_controller:=hold_controller'],
        env=stack._python_environment(domain_id), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)


#: SCHED_FIFO priority of the probe's executor and DDS threads: above CPU-bound
#: neighbours at the default policy, below every process of the stack (45-55).
PROBE_PRIORITY = 1


def _raise_probe(s):
    """Give the probe's executor thread and this process's DDS threads PROBE_PRIORITY.

    The probe is the instrument: beside ``--load`` processes at its default policy it fell
    behind the four 500 Hz topics it records, and a move waited in vain for a fresh state
    (2026-12-08: runs of "0 s of moves"). Returns how many threads took it (0 where
    SCHED_FIFO is not permitted: the probe then keeps the default policy).
    """
    from ne_dynamics_ros.nodes.computed_torque.priority import apply, dds_thread_ids
    policy = ('fifo', PROBE_PRIORITY)
    return sum(apply(policy, tid) for tid in (s.probe.thread.native_id, *dds_thread_ids()))


def _commanding(s, what):
    """Wait until the stack commands; on a failure print why and keep the launch's log.

    The probe is raised first (:func:`_raise_probe`).
    """
    _raise_probe(s)
    try:
        s.wait_commanding()
        return True
    except AssertionError as err:
        import ros2_control_stack as stack
        import tempfile
        with tempfile.NamedTemporaryFile('w', prefix='r2c_failed_', suffix='.log',
                                         delete=False) as log:
            log.write(stack.output(s.process))
        lines = [line for line in stack.output(s.process).splitlines()
                 if 'computed_torque_node' in line or 'effort_guard' in line]
        print(f'{what}: the stack did not command ({str(err).splitlines()[0]}); its log: '
              f'{log.name}; the node and the guard said:\n  ' + '\n  '.join(lines[-12:]),
              flush=True)
        return False


def run_starts(count, chain):
    """Start the stack ``count`` times in each order; return the arm's motion per start.

    Rows of the order, the motion (rad) before the first computed command, and in all
    until a second after it.
    """
    import signal
    import ros2_control_stack as stack
    rows = []
    for order in ('together', 'node after', 'node before'):
        for _ in range(count):
            node = None
            if order == 'together':
                s = stack.Stack(chain)
            else:
                s = stack.Stack(chain, 'node:=false')
                if order == 'node before':
                    node = _node_process(s.domain)
                else:
                    s.probe.wait(lambda: s.probe.is_active('hold_controller'), 60.0,
                                 'hold_controller up')
                    node = _node_process(s.domain)
            try:
                s.wait_commanding()
                first = s.probe.first_nonzero_command()
                with s.probe.lock:
                    stamp = s.probe.commands[first][0]
                    before = np.array([q for t, _, q in s.probe.truth if t <= stamp])
                    start = s.probe.truth[0][1]
                time.sleep(1.0)
                rows.append({'order': order,
                             'before': float(np.max(np.abs(before - before[0])))
                             if len(before) else 0.0,
                             'total': s.probe.motion_since(start)})
            finally:
                if node is not None:
                    node.send_signal(signal.SIGINT)
                    try:
                        node.wait(timeout=20)
                    except subprocess.TimeoutExpired:
                        node.kill()
                s.close()
    return rows


def run_ros2_control(args):
    """Run the latency and tracking measurements; return the result dict."""
    sys.path.insert(0, str(args.test_dir))
    import ros2_control_stack as stack
    from machine_stalls import StallMonitor
    why = stack.missing()
    if why:
        return {'skipped': why}
    chain = UR5E
    latency_rows, tracking_rows = [], []
    if args.r2c_starts:
        return {'starts': run_starts(args.r2c_starts, chain)}
    loads = [0] + ([args.load] if args.load else [])
    for load in loads:
        burners = _burners(load)
        try:
            for rate in args.r2c_rates:
                for priority in (50, 0):
                    s = stack.Stack(chain, f'rate:={rate}', f'realtime_priority:={priority}')
                    try:
                        if not _commanding(s, f'{rate} Hz, priority {priority}, load {load}'):
                            latency_rows.append({'rate': rate, 'realtime_priority': priority,
                                                 'load': load, 'failed': True})
                            continue
                        with s.probe.lock:
                            s.probe.tracking.clear()
                            s.probe.commands.clear()
                        # moving: every command differs from the one before (a held arm
                        # repeats its command, and a repeated value cannot be told apart)
                        ended = _moves(s.probe, args.r2c_moves, chain)[-1]  # (the rest unused)
                        with s.probe.lock:
                            states = [(t, tuple(e)) for t, _, e in s.probe.tracking]
                            writes = [(t, tuple(e)) for t, e in s.probe.commands]
                        row = summary(cycle_latency(states, writes, 1.0 / rate))
                        row.update(rate=rate, realtime_priority=priority, load=load,
                                   ended=ended)
                        latency_rows.append(row)
                    finally:
                        s.close()
            for arm in args.r2c_arms:
                robot, plant = arm.split(':')
                joints, direct = ARMS[robot]
                wirings = [('hardware', "through controller_manager, the hardware's clock",
                            (), None)]
                if robot == 'ur5e':
                    wirings.append(('reversed', "the same, block reversed, controller shuffled",
                                    (f'hardware_joints:=[{", ".join(reversed(joints))}]',
                                     'controller_joints:=[' + ', '.join(
                                         joints[2:] + joints[:2]) + ']'), None))
                wirings.append(('topic_based',
                                "the hardware's clock behind topic_based_ros2_control",
                                ('hardware:=topic_based',), None))
                wirings.append(('timer', 'topic_based_ros2_control, own timer at 0.8 x rate',
                                ('hardware:=topic_based', 'sim_clock:=timer'), None))
                wirings.append(('direct', f'direct topic ({direct})', (), direct))
                for label, arguments, launch in [w[1:] for w in wirings
                                                 if w[0] in args.r2c_wirings]:
                    s = stack.Stack(joints, f'plant:={plant}', *arguments,
                                    *(() if launch else (f'robot:={robot}',)),
                                    launch=launch or 'ros2_control.launch.py')
                    try:
                        if not _commanding(s, f'{arm} {label}, load {load}'):
                            tracking_rows.append({'arm': arm, 'wiring': label, 'load': load,
                                                  'failed': True})
                            continue
                        with s.probe.lock:
                            marks = len(s.probe.truth), len(s.probe.broadcast)
                        with StallMonitor() as monitor:
                            worst, oscillations, arm_worst, per_move, ended = _moves(
                                s.probe, args.r2c_runs, joints)
                        with s.probe.lock:
                            ages = None if launch else state_ages(
                                s.probe.truth[marks[0]:], s.probe.broadcast[marks[1]:],
                                joints)
                        values = s.probe.diagnostic_values()[0] if s.probe.diagnostics \
                            else {}
                        tracking_rows.append({'arm': arm, 'wiring': label, 'load': load,
                                              'worst_rad': worst,
                                              'arm_worst_rad': arm_worst,
                                              'oscillations': oscillations,
                                              'runs': args.r2c_runs,
                                              'state_age_p99_ms': values.get(
                                                  'state age p99 [ms]', ''),
                                              'loop_delay_ms': values.get(
                                                  'loop delay [ms]', ''),
                                              'true_state_age': ages,
                                              'moves': move_statistics(per_move,
                                                                       monitor.stalls),
                                              'ended': ended,
                                              'monitor': monitor.policy,
                                              'steal_s': monitor.steal})
                    finally:
                        s.close()
        finally:
            _stop(burners)
    return {'latency': latency_rows, 'tracking': tracking_rows}


def print_ros2_control(result):
    """Print the tables beside the issue's goals."""
    if 'skipped' in result:
        print(f'ros2_control: not run: {result["skipped"]}')
        return
    if 'starts' in result:
        print('Starts (goal: the arm moves < 1 mrad before the first computed command; '
              '0 drops)')
        for order in ('together', 'node after', 'node before'):
            rows = [r for r in result['starts'] if r['order'] == order]
            if rows:
                before = max(r['before'] for r in rows)
                total = max(r['total'] for r in rows)
                drops = sum(r['before'] >= 1e-3 for r in rows)
                print(f'  {order:<12} {len(rows)} starts: before the first command at most '
                      f'{before * 1e3:.3f} mrad, in the first second after at most '
                      f'{total * 1e3:.2f} mrad; {drops} drops')
        return
    print('Latency chain (controller_manager stamps: broadcaster state -> hardware write); '
          'goal: >= 95 % at the next cycle, <= 0.1 % later than two, at 500 Hz')
    print(f'{"rate":>6}{"rt prio":>9}{"load":>6}{"commands":>10}{"next":>8}{"+2":>8}'
          f'{"later":>8}{"never":>8}{"p50 ms":>9}{"p99 ms":>9}')
    for r in result['latency']:
        if r.get('failed'):
            print(f'{r["rate"]:>6}{r["realtime_priority"]:>9}{r["load"]:>6}  the stack did not '
                  'command (above)')
            continue
        print(f'{r["rate"]:>6}{r["realtime_priority"]:>9}{r["load"]:>6}{r["commands"]:>10}'
              f'{100 * r["next_cycle"]:>7.1f}%{100 * r["two"]:>7.1f}%{100 * r["later"]:>7.2f}%'
              f'{100 * r["never"]:>7.1f}%{r["p50_ms"]:>9.2f}{r["p99_ms"]:>9.2f}')
        if r.get('ended'):
            print(f'{"":>6}  the moves ended early: {r["ended"]}')
    print('\nTracking, 0.3 rad quintic moves on three joints (goal: 0 oscillations; worst '
          f'within 1.5x the direct topic; Lee et al. (1982): {LEE_BOUND:.3g} rad)')
    rows = [r for r in result['tracking'] if not r.get('failed')]
    for r in result['tracking']:
        if r.get('failed'):
            print(f'  {r["arm"]:<18}{r["wiring"]:<50} load {r["load"]}: the stack did not '
                  'command (above)')
    print('  (worst of the node\'s own error |q_d - q| at its states\' stamps, and of the '
          'arm\'s: q_d less the arm\'s own position at that instant)')
    for r in rows:
        direct = [d for d in rows if d['arm'] == r['arm']
                  and d['load'] == r['load'] and d['wiring'].startswith('direct')]

        def ratio(key):
            base = direct[0].get(key) if direct else None
            return f' ({r[key] / base:.1f}x direct)' if base and r.get(key) is not None \
                else ''
        arm = r.get('arm_worst_rad')
        print(f'  {r["arm"]:<18}{r["wiring"]:<50} load {r["load"]}: the node\'s '
              f'{r["worst_rad"]:.3e} rad{ratio("worst_rad")}, the arm\'s '
              + (f'{arm:.3e} rad{ratio("arm_worst_rad")}' if arm is not None else '-')
              + f', {r["oscillations"]} of {r["runs"]} oscillating, state age p99 '
              f'{r["state_age_p99_ms"]} ms, loop delay {r["loop_delay_ms"]} ms')
        if r.get('ended'):
            print(f'  {"":<18}  the moves ended early: {r["ended"]}')
        moves, base = r.get('moves'), [d.get('moves') for d in direct]
        if moves:
            def versus(key):
                value, ref = moves.get(key), base[0].get(key) if base and base[0] else None
                return '-' if value is None else f'{value:.3e} rad' + (
                    f' ({value / ref:.1f}x direct)' if ref else '')
            print(f'  {"":<18}  median of the moves\' worst: the node\'s '
                  f'{versus("median_rad")}, the arm\'s {versus("arm_median_rad")}; the '
                  f'machine stalled {moves["stalls_1ms"]} times over 1 ms and '
                  f'{moves["stalls_2ms"]} over 2 ms in {moves["seconds"]:.0f} s of moves, '
                  f'the longest {moves["stall_max_ms"]:.1f} ms (monitor at '
                  f'{r.get("monitor", "?")}); the hypervisor took {r.get("steal_s", 0):.2f} '
                  'CPU s meanwhile')
            print(f'  {"":<18}  {moves.get("clean_moves", 0)} of {r["runs"]} moves met no '
                  f'stall over 2 ms: their worst, the node\'s {versus("clean_worst_rad")}, '
                  f'the arm\'s {versus("clean_arm_worst_rad")}')
        age = r.get('true_state_age')
        if age:
            print(f'  {"":<18}  the broadcaster\'s states, by the arm\'s own stamps: age '
                  f'p50 {age["p50_ms"]:.2f} ms, p99 {age["p99_ms"]:.2f} ms, max '
                  f'{age["max_ms"]:.2f} ms; of {age.get("states", 0)} moving states '
                  f'{age.get("repeats", 0)} repeat the one before, {age.get("older", 0)} '
                  'are older than a cycle (goal: 0 and 0 in 10 000 cycles, p99 <= one '
                  'cycle)')


__all__ = ['cycle_latency', 'print_ros2_control', 'run_ros2_control', 'summary']
