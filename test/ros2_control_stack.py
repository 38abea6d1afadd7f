"""The real ros2_control stack for tests and benchmarks: started, watched, stopped.

:func:`start_stack` runs ``ros2 launch ne_dynamics_ros ros2_control.launch.py`` (the
real ``controller_manager`` from ``.venv/ros2_control`` or a ROS 2 install) on a private
domain; :class:`Probe` records, in the test's process (a SingleThreadedExecutor on a
thread of its own), what the simulated arm publishes behind the hardware
(``/r2c/joint_states``, the truth), what the hardware wrote (``/r2c/joint_commands``),
``/joint_states`` (joint_state_broadcaster), ``/diagnostics`` and
``controller_manager``'s ``~/activity``. Every wait is bounded.
"""
import collections
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
AMENT_PREFIX = pathlib.Path(sys.prefix) / 'ament'
ROS2 = pathlib.Path(sys.executable).parent / 'ros2'


def missing():
    """Return why the stack cannot run here ('' when it can)."""
    from ne_dynamics_ros.tools.ros2_control import find_ros2_control
    if not ROS2.exists():
        return f'no ros2 command line at {ROS2} (bootstrap installs it from ../shared/wheels)'
    if not (AMENT_PREFIX / 'share' / 'ne_dynamics_ros' / 'launch').is_dir():
        return f'ne_dynamics_ros is not in the ament prefix {AMENT_PREFIX}'
    prefix, why = find_ros2_control()
    if prefix is None:
        return why
    try:
        environment = _python_environment()
        subprocess.run([sys.executable, '-c', 'import controller_manager_msgs'],
                       env=environment, check=True, capture_output=True, timeout=60)
    except subprocess.CalledProcessError as err:
        return f'controller_manager_msgs not importable beside ros2_control: {err.stderr}'
    return ''


def _python_environment(domain_id=None):
    from ne_dynamics_ros.tools.ros2_control import find_ros2_control
    _, extra = find_ros2_control()
    prefixes = [str(AMENT_PREFIX)] + [p for p in os.environ.get(
        'AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
    env = dict(os.environ, AMENT_PREFIX_PATH=os.pathsep.join(prefixes),
               ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST', PYTHONUNBUFFERED='1')
    env.update(extra or {})
    if extra:
        env['AMENT_PREFIX_PATH'] = os.pathsep.join(
            dict.fromkeys([str(AMENT_PREFIX)] + extra['AMENT_PREFIX_PATH'].split(os.pathsep)))
    if domain_id is not None:
        env['ROS_DOMAIN_ID'] = str(domain_id)
    return env


def link_messages():
    """Import controller_manager_msgs (from the bundled prefix if need be)."""
    from ne_dynamics_ros.tools.ros2_control import find_ros2_control
    prefix, extra = find_ros2_control()
    if extra and extra.get('PYTHONPATH'):
        for path in extra['PYTHONPATH'].split(os.pathsep):
            if path and path not in sys.path:
                sys.path.append(path)
        # this process started without the prefix on LD_LIBRARY_PATH: load the messages'
        # libraries by path first; the loader then finds them by their names
        import ctypes
        libraries = sorted((pathlib.Path(prefix) / 'lib').glob('libcontroller_manager_msgs__*.so'))
        for _ in range(len(libraries)):
            failed = []
            for library in libraries:
                try:
                    ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
                except OSError:
                    failed.append(library)
            if not failed or failed == libraries:
                break
            libraries = failed
    import controller_manager_msgs.msg
    import controller_manager_msgs.srv
    return controller_manager_msgs


def start_stack(domain_id, *arguments, launch='ros2_control.launch.py'):
    """Start the launch file (its own process group; output to a file); return the process.

    In the test's session, as a terminal's ``ros2 launch`` is in its own: a session of its
    own is an autogroup of its own, which Linux left waiting for seconds at its start beside
    CPU-bound processes (the trajectory receiver's module docstring).
    """
    log = tempfile.TemporaryFile(mode='w+')
    process = subprocess.Popen(
        [str(ROS2), 'launch', 'ne_dynamics_ros', launch, *arguments],
        env=_python_environment(domain_id), stdout=log, stderr=subprocess.STDOUT, text=True,
        process_group=0)
    process.log = log
    return process


def stop_stack(process, timeout=20.0):
    """Ctrl-C the launch's process group; return its output."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=timeout)
    process.log.seek(0)
    return process.log.read()


def output(process):
    """Return the launch's output so far."""
    process.log.flush()
    position = process.log.tell()
    process.log.seek(0)
    text = process.log.read()
    process.log.seek(position)
    return text


def pid_of(process, name):
    """Return the pid of the launch's child whose command line names ``name`` (or None).

    Its children: the processes of its process group.
    """
    result = subprocess.run(['pgrep', '-g', str(process.pid), '-f', name],
                            capture_output=True, text=True)
    pids = [int(p) for p in result.stdout.split()]
    return pids[0] if pids else None


def quintic(joint_names, start, goal, duration, points=31):
    """Return a ``JointTrajectory`` from ``start`` to ``goal`` (rad) in ``duration`` s.

    A quintic in time (rest to rest), positions, velocities and accelerations sampled at
    ``points`` instants.
    """
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    start, goal = np.asarray(start, dtype=float), np.asarray(goal, dtype=float)
    out = []
    for t in np.linspace(0.0, duration, points):
        s = t / duration
        shape = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5
        speed = (30 * s ** 2 - 60 * s ** 3 + 30 * s ** 4) / duration
        accel = (60 * s - 180 * s ** 2 + 120 * s ** 3) / duration ** 2
        point = JointTrajectoryPoint(positions=(start + shape * (goal - start)).tolist(),
                                     velocities=(speed * (goal - start)).tolist(),
                                     accelerations=(accel * (goal - start)).tolist())
        point.time_from_start.sec = int(t)
        point.time_from_start.nanosec = int(round((t - int(t)) * 1e9))
        out.append(point)
    return JointTrajectory(joint_names=list(joint_names), points=out)


def move(arm, chain, offset=(0.3, -0.3, 0.3, 0.3, -0.3, 0.3), duration=1.5, lead=0.5):
    """Move every joint by ``offset`` (a quintic); return (goal, errors during it, marks).

    ``arm``: a :class:`Stack` commanding; ``chain``: its joints (the trajectory's order).
    ``marks``: where the move began in the probe's tracking, truth and broadcast lists.
    The trajectory is stamped ``lead`` s after its publication (``header.stamp``, as
    JTC takes it): in fresh-clone CI a trajectory stamped zero (start on receipt) was
    installed 0.3-0.4 s after its receipt twice in about ten runs, the reference then
    20-35 mrad ahead at once on every joint (cause not found yet); the loop through
    controller_manager is what these moves measure.
    """
    probe = arm.probe
    start = probe.position_now()
    with probe.lock:
        marks = len(probe.tracking), len(probe.truth), len(probe.broadcast)
    goal = start + np.array(offset)
    publisher = probe.trajectory_publisher
    deadline = time.monotonic() + 10.0
    while publisher.get_subscription_count() == 0:
        assert time.monotonic() < deadline, 'no trajectory subscriber'
        time.sleep(0.05)
    moved = time.monotonic()
    trajectory = quintic(chain, start, goal, duration)
    at = time.time_ns() + int(lead * 1e9)          # the node's clock: the system's
    trajectory.header.stamp.sec, trajectory.header.stamp.nanosec = divmod(at, 10 ** 9)
    publisher.publish(trajectory)
    time.sleep(lead + duration + 1.2)
    assert probe.motion_since(moved) > 0.29                # it did move
    with probe.lock:
        errors = np.array([e for _, e, _ in probe.tracking[marks[0]:]])
    return goal, errors, marks


def matched_ages(truth, broadcast, chain):
    """Match broadcast states to the arm's own; return (ages s, the arm's stamps matched).

    ``truth``: (stamp s, receipt, q (n,) in ``chain`` order) of the simulated arm;
    ``broadcast``: (stamp s, names, positions) of joint_state_broadcaster. A broadcast
    state is found by its exact positions (doubles pass the chain unchanged); its age is
    its stamp less the arm's (both the system clock). At rest the arm repeats its state
    bit for bit: only states it had once are matched.
    """
    rows = [(tuple(q.tolist()), stamp) for stamp, _, q in truth]
    seen = collections.Counter(q for q, _ in rows)
    index = {q: stamp for q, stamp in rows if seen[q] == 1}
    ages, sources = [], []
    for stamp, names, positions in broadcast:
        order = {name: k for k, name in enumerate(names)}
        source = index.get(tuple(positions[order[j]] for j in chain))
        if source is not None:
            ages.append(stamp - source)
            sources.append(source)
    return np.array(ages), sources


def broadcast_ages(probe, marks, chain):
    """Return the broadcaster's states' ages by the arm's own stamps (s), and repeats."""
    with probe.lock:
        ages, sources = matched_ages(probe.truth[marks[1]:], probe.broadcast[marks[2]:],
                                     chain)
        broadcast = probe.broadcast[marks[2]:]
    # this process takes what it can of four 500 Hz topics: beside CPU-bound processes it
    # drops part of them (seen: 107 of 311 moving states matched), never the stack
    assert len(ages) > 50, ('broadcast states matched to the arm\'s', len(ages),
                            len(broadcast))
    return np.array(ages), float(np.mean(np.diff(sources) == 0))


def assert_reads_find_their_instant(ages, repeated):
    """Assert that the broadcaster's states come from the arm on the hardware's clock.

    Most reads find the state of their own instant (median 0 cycles old), nearly all at
    most one cycle old (p95), and repeats of the state before stay far under the 19-20 %
    of the arm on its own timer (whose reads find states about 10 ms old at the median).
    The goals themselves (p99 one cycle, no repeat) are the benchmark's to report
    (``bench_node.py --ros2-control``), not this test's: on these 2-core machines,
    when the machine ran slower (fresh-clone CI 2026-12-02, its first pass 250-295 s
    against 172 s an hour before), the two moves repeated 3.0 and 4.0 % of their states
    with p95 under 0.1 ms; earlier CI runs saw p99 2, then 3.7 cycles, up to 7 cycles
    old, when controller_manager's cycles overran.
    """
    cycles = cycles_old(ages)
    assert np.median(cycles) == 0 and np.percentile(cycles, 95) <= 1 and repeated < 0.1, (
        'ages [ms] p50 / p95 / p99 / max', np.percentile(np.asarray(ages) * 1e3,
                                                         [50, 95, 99, 100]), repeated)


def cycles_old(ages, period=0.002):
    """Return each age (s) in whole cycles of ``period`` s (the launch's 500 Hz default).

    A read finds the state of its own instant (0) or, when that state came late, the one
    before (1); the stamps add microseconds of jitter (seen: 2.0023 ms for one cycle), so
    an age counts by the nearest whole cycle, not against the period itself.
    """
    return np.rint(np.asarray(ages) / period)


#: How often the probe takes what its 500 Hz topics carried, s.
POLL = 0.02
#: How many messages of each polled topic wait between two looks (a second at 500 Hz).
HISTORY = 500


def record_controller_errors(probe, controller):
    """Record a JTC's ``~/controller_state`` position errors on ``probe``'s executor.

    Returns the list it fills with ``(receipt monotonic s, error (n,) rad)``, in the
    controller's joint order, under ``probe.lock``; polled every :data:`POLL` s.
    """
    from control_msgs.msg import JointTrajectoryControllerState
    from ne_dynamics_ros.nodes.spin import PolledSubscription
    rows = []
    polled = PolledSubscription(probe.node, JointTrajectoryControllerState,
                                f'/{controller}/controller_state', HISTORY)

    def drain():
        with probe.lock:
            rows.extend((received, np.array(msg.error.positions))
                        for msg, received in polled.take_monotonic())
    probe.node.create_timer(POLL, drain)
    return rows


class Probe:
    """Record the stack's topics in this process; bounded waits on what they show.

    The receipt times of the truth are the middleware's (when the message arrived), not
    when the probe looked.
    """

    def __init__(self, context, joints, truth='/r2c/joint_states'):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy
        from diagnostic_msgs.msg import DiagnosticArray
        from sensor_msgs.msg import JointState
        msgs = link_messages()
        self.joints = list(joints)
        self.lock = threading.RLock()
        self.truth = []          # (stamp s, receipt monotonic s, q (n,)) of the sim
        self.commands = []       # (stamp s, effort (n,)) the hardware wrote
        self.broadcast = []      # (stamp s, names, q) of joint_state_broadcaster
        self.diagnostics = []
        self.tracking = []       # (stamp s, q_d - q (n,), effort (n,)) of the node
        self.controllers = {}
        self.node = rclpy.create_node('r2c_probe', context=context)
        # the four 500 Hz topics are drained every POLL s, not a callback per message:
        # rclpy's executor took a third of a core for them, on 2 cores beside the stack
        from ne_dynamics_ros.nodes.cdr import JointStateReader
        from ne_dynamics_ros.nodes.spin import PolledSubscription
        # best effort: a recorder that falls behind must not cost the stack's writers
        # acknowledgements and resends (they run at SCHED_FIFO, this process does not)
        watch = QoSProfile(depth=HISTORY, reliability=QoSReliabilityPolicy.BEST_EFFORT)
        self._polled = [(PolledSubscription(self.node, JointState, topic, watch, raw=True),
                         JointStateReader(64), record)
                        for topic, record in ((truth, self._truth),
                                              ('/r2c/joint_commands', self._command),
                                              ('/joint_states', self._broadcast),
                                              ('/computed_torque_node/tracking_error',
                                               self._tracking))]
        self.node.create_timer(POLL, self._drain)
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._diagnostic, 10)
        from lifecycle_msgs.srv import ChangeState
        self._change_type = ChangeState
        self.change_client = self.node.create_client(
            ChangeState, '/computed_torque_node/change_state')
        self.node.create_subscription(
            msgs.msg.ControllerManagerActivity, '/controller_manager/activity',
            self._activity, QoSProfile(depth=1, reliability=QoSReliabilityPolicy.RELIABLE,
                                       durability=QoSDurabilityPolicy.TRANSIENT_LOCAL))
        self.switch_client = self.node.create_client(
            msgs.srv.SwitchController, '/controller_manager/switch_controller')
        # made here, before the executor spins, and never destroyed while it does: a
        # publisher destroyed from the test's thread (move() did) took its QoS-event
        # waitables out of the wait set under the executor, whose spin then died with
        # InvalidHandle; every later service call and wait of the module went unanswered
        from trajectory_msgs.msg import JointTrajectory
        self.trajectory_publisher = self.node.create_publisher(
            JointTrajectory, '/computed_torque_node/joint_trajectory', 10)
        self._switch_type = msgs.srv.SwitchController
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.spin_error = None
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        try:
            self.executor.spin()
        except Exception as exc:     # noqa: BLE001 - the context shut down meanwhile, or
            self.spin_error = exc    # a callback failed: wait() says so

    def _drain(self):
        """Take what the polled topics carried since the last look, oldest first."""
        with self.lock:
            for subscription, reader, record in self._polled:
                for data, received in subscription.take_monotonic():
                    record(reader.read(data), received)

    @staticmethod
    def _stamp(msg):
        return msg.sec + msg.nanosec * 1e-9

    def _ordered(self, msg, field):
        index = {name: k for k, name in enumerate(msg.names)}
        values = getattr(msg, field)
        return np.array([values[index[j]] for j in self.joints])

    def _truth(self, msg, received):
        self.truth.append((self._stamp(msg), received, self._ordered(msg, 'position')))

    def _command(self, msg, received):
        self.commands.append((self._stamp(msg), self._ordered(msg, 'effort')))

    def _broadcast(self, msg, received):
        self.broadcast.append((self._stamp(msg), list(msg.names), list(msg.position)))

    def _tracking(self, msg, received):
        self.tracking.append((self._stamp(msg), self._ordered(msg, 'position'),
                              self._ordered(msg, 'effort')))

    def _diagnostic(self, msg):
        with self.lock:
            self.diagnostics.extend(s for s in msg.status if 'computed torque' in s.name)

    def _activity(self, msg):
        from lifecycle_msgs.msg import State
        with self.lock:
            self.controllers = {c.name: c.state.id == State.PRIMARY_STATE_ACTIVE
                                for c in msg.controllers}

    def wait(self, predicate, timeout, what):
        """Wait until ``predicate()`` (bounded); raise AssertionError naming ``what``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if predicate():
                    return
            assert self.spin_error is None, f'the probe stopped: {self.spin_error!r}'
            time.sleep(0.01)
        raise AssertionError(f'not within {timeout} s: {what() if callable(what) else what}')

    def counts(self):
        """Say how many messages of each kind the probe holds (for failure messages)."""
        with self.lock:
            return (f'truth {len(self.truth)}, commands {len(self.commands)}, broadcast '
                    f'{len(self.broadcast)}, tracking {len(self.tracking)}, controllers '
                    f'{self.controllers}, spin error {self.spin_error!r}')

    def is_active(self, name):
        """Tell whether the controller named so is active (by ~/activity)."""
        with self.lock:
            return bool(self.controllers.get(name))

    def first_nonzero_command(self):
        """Return the index in :attr:`commands` of the first non-zero command (or None)."""
        with self.lock:
            for k, (_, effort) in enumerate(self.commands):
                if np.any(effort != 0.0):
                    return k
        return None

    def positions_since(self, monotonic_start):
        """Return the (N, n) true positions received since ``monotonic_start``."""
        with self.lock:
            rows = [q for _, received, q in self.truth if received >= monotonic_start]
        return np.array(rows).reshape(-1, len(self.joints))

    def position_now(self, max_age=0.05, timeout=5.0):
        """Return the arm's newest position (n,) once its stamp is within ``max_age`` s of now.

        A move starts from where the arm is: a probe that fell behind the stack (its
        process starved beside CPU-bound neighbours) still holds an older state, and a
        move from there would start its reference away from the arm.

        Raises:
            AssertionError: no state that fresh within ``timeout`` s.
        """
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                newest = self.truth[-1] if self.truth else None
            if newest is not None and time.time() - newest[0] <= max_age:
                return newest[2].copy()
            assert time.monotonic() < deadline, (
                f'no state of the arm within {max_age} s of now in {timeout} s (newest '
                f'{"none" if newest is None else f"{time.time() - newest[0]:.3f} s old"})')
            time.sleep(0.005)

    def motion_since(self, monotonic_start):
        """Return the largest joint motion (rad) in the truth since ``monotonic_start``.

        Raises AssertionError when fewer than two of the arm's states came meanwhile: no
        motion seen is not no motion.
        """
        rows = self.positions_since(monotonic_start)
        assert len(rows) >= 2, f'{len(rows)} states of the arm since the instant asked'
        return float(np.max(np.abs(rows - rows[0])))

    def motion_timeline(self, monotonic_start, bound):
        """Say when the arm first moved over ``bound`` / 2 since ``monotonic_start``.

        And what the hardware wrote around then (for failure messages): its writes'
        spacing and which were all zero, by the stamps of the arm and of the writes.
        """
        with self.lock:
            truth = [(stamp, q) for stamp, received, q in self.truth
                     if received >= monotonic_start]
            commands = list(self.commands)
        if len(truth) < 2:
            return 'no motion recorded'
        first = truth[0][1]
        moved = next((stamp for stamp, q in truth if np.max(np.abs(q - first)) > bound / 2),
                     truth[-1][0])
        window = [(stamp, effort) for stamp, effort in commands
                  if moved - 0.15 <= stamp <= moved + 0.05]
        stamps = np.array([stamp for stamp, _ in window])
        gaps = np.diff(stamps) if len(stamps) > 1 else np.zeros(0)
        zero = [round((stamp - moved) * 1e3, 1) for stamp, effort in window
                if not np.any(effort)]
        wide = [(round((stamps[k] - moved) * 1e3, 1), round(gaps[k] * 1e3, 1))
                for k in np.flatnonzero(gaps > 0.005)]
        return (f'over {bound / 2:g} rad {(moved - truth[0][0]) * 1e3:.1f} ms after the '
                f'instant asked; {len(window)} writes from 150 ms before to 50 ms after; '
                f'all-zero writes at {zero} ms; gaps over 5 ms (at ms, ms): {wide}')

    def switch(self, activate, deactivate, timeout=5.0):
        """Switch controllers as an operator would (BEST_EFFORT); return the answer's ok."""
        if not self.switch_client.wait_for_service(timeout_sec=timeout):
            raise AssertionError('no /controller_manager/switch_controller')
        request = self._switch_type.Request(activate_controllers=activate,
                                            deactivate_controllers=deactivate,
                                            strictness=1, activate_asap=True)
        request.timeout.sec = 2
        done = threading.Event()
        future = self.switch_client.call_async(request)
        future.add_done_callback(lambda _: done.set())
        assert done.wait(timeout), ('switch_controller did not answer (probe spin error: '
                                    f'{self.spin_error!r})')
        return future.result().ok

    def lifecycle(self, transition, timeout=10.0):
        """Ask the node for a lifecycle transition (lifecycle_msgs/Transition id)."""
        from lifecycle_msgs.msg import Transition
        if not self.change_client.wait_for_service(timeout_sec=timeout):
            raise AssertionError('no /computed_torque_node/change_state')
        done = threading.Event()
        future = self.change_client.call_async(self._change_type.Request(
            transition=Transition(id=transition)))
        future.add_done_callback(lambda _: done.set())
        assert done.wait(timeout), ('change_state did not answer (probe spin error: '
                                    f'{self.spin_error!r})')
        return future.result().success

    def diagnostic_values(self):
        """Return the last node diagnostic as ({key: value}, level, message)."""
        with self.lock:
            last = self.diagnostics[-1]
        return {v.key: v.value for v in last.values}, last.level, last.message

    def close(self):
        """Stop spinning and destroy the probe's node."""
        self.executor.shutdown(timeout_sec=1.0)
        self.thread.join(timeout=2.0)
        self.node.destroy_node()


class Stack:
    """A launched stack (the UR5e), its probe on a context of its own, and waits on it.

    ``launch``: ``ros2_control.launch.py`` (``robot:=ur5e`` added; the truth is the
    simulated arm's ``/r2c/joint_states``) or a direct-topic launch such as
    ``ur5e_sim.launch.py`` (the truth is ``/joint_states``).
    """

    def __init__(self, joints, *arguments, launch='ros2_control.launch.py'):
        import rclpy
        from dds import next_domain_id
        self.domain = next_domain_id()
        self.direct = launch != 'ros2_control.launch.py'
        extra = () if self.direct or any(a.startswith('robot:=') for a in arguments) \
            else ('robot:=ur5e',)
        self.process = start_stack(self.domain, *extra, *arguments, launch=launch)
        self.context = rclpy.context.Context()
        rclpy.init(context=self.context, domain_id=self.domain)
        self.probe = Probe(self.context, joints,
                           truth='/joint_states' if self.direct else '/r2c/joint_states')
        self.started = time.monotonic()
        # what the tests judge is the arm's own states: they flow before any test starts
        try:
            self.probe.wait(lambda: len(self.probe.truth) > 10, 60.0,
                            lambda: 'the arm\'s states reach the probe ('
                            + self.probe.counts() + '):\n' + output(self.process)[-6000:])
        except BaseException:
            self.close()
            raise

    def assert_still(self, since, bound):
        """Assert the arm moved at most ``bound`` rad since ``since`` (monotonic s).

        The failure names the motion and what the stack's nodes said about switching, so
        a run that fails in CI tells why.
        """
        motion = self.probe.motion_since(since)
        if motion > bound:
            said = [line for line in output(self.process).splitlines()
                    if 'Overrun' not in line and any(word in line for word in (
                        'computed_torque_node]', 'effort_guard]', 'jtc_feedforward]',
                        'Activat', 'Deactivat', 'SimArmSystem:'))]
            raise AssertionError(f'the arm moved {motion:.4g} rad (bound {bound:g}): '
                                 f'{self.probe.motion_timeline(since, bound)}; the '
                                 'stack said:\n' + '\n'.join(said[-40:]))

    def wait_commanding(self, timeout=60.0):
        """Wait until the node commands the arm (bounded); raise with the launch's output."""
        probe = self.probe
        if self.direct:
            probe.wait(lambda: len(probe.tracking) > 50, timeout,
                       lambda: 'the node commands:\n' + output(self.process)[-6000:])
            return
        probe.wait(lambda: probe.is_active('effort_controller') and not probe.is_active(
            'hold_controller'), timeout, lambda: 'the node switched to effort_controller:\n'
            + output(self.process)[-6000:])
        probe.wait(lambda: probe.first_nonzero_command() is not None, 10.0,
                   'a computed command reached the hardware')

    def close(self):
        """Stop the probe, its context and the launch; return the launch's output."""
        import rclpy
        self.probe.close()
        rclpy.shutdown(context=self.context)
        return stop_stack(self.process)
