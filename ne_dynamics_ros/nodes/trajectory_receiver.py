"""Trajectory messages taken and read in a process of their own.

Why a process: whatever subscribes to a topic in the control process pays for every
message on it before any callback can look at its size. rclpy takes a message whole on
the executor's thread, holding the GIL while it copies it out of Fast DDS and into a
Python ``bytes``, and Fast DDS reassembles it on the process's own threads. Measured with
``benchmarks/bench_node.py --stall`` (PUMA 560, states at 500 Hz, state timeout 0.1 s,
2026-11-24 on the 2-core machine of CI), the longest time without an effort command
while an echo node that only *takes* trajectories as bytes received them:

=========================================  ============  ============  ==========
trajectory subscription                    4.4 MB valid  40 MB (over   zero
                                                         the bound)    commands
=========================================  ============  ============  ==========
on the control executor (as before)        7-18 ms       95-134 ms     0
on a second executor thread, same process  5-6 ms        69-143 ms     0
in a child process (this module)           4 ms          6 ms          0
=========================================  ============  ============  ==========

Only the child process keeps an oversized message away from the control path, so
``computed_torque_node`` starts this module as a child (:class:`TrajectoryReceiver`).
The child subscribes to the node's resolved ``~/joint_trajectory`` (as node
``<node>_trajectory_receiver`` in the node's namespace, which is what ``ros2 topic
info`` lists as the subscriber), drops messages over ``max_trajectory_bytes`` unread,
reads the others (:func:`message_frame`: NumPy for the usual message, rclpy's
deserializer for other encodings), checks them against the chain and works out their
segment polynomials (:func:`~ne_dynamics_ros.control.reference.trajectory.prepare_waypoints`), and
hands the node columns of numbers over a Unix socket pair: a frame is a ``<IQ`` prefix
(header length, payload length), a JSON header, then the payload of float64 and bool
arrays. The node's side reads it on a thread of its own (``recv`` gives the GIL up) and
installs the trajectory on views of the payload: what is left to do there (the way in
from the reference in force, the stamp) does not depend on the number of points but for
one ``tolist`` of the times. Once started, the child runs ``NICENESS`` nicer than the
node, so that when the two cores are busy, answering joint states wins over reading
trajectories: with it, the worst gap of the stall run around the 23 MB trajectory fell
from 41 to 6-24 ms (the states' own stream paused up to 21 ms in that window) and around
the 40 MB message from 120 to 4-7 ms.

Messages are read in the order they arrive, an oversized one reported at once; should
more than the subscription's depth (or twice ``max_trajectory_bytes``) wait, the oldest is
dropped and reported. The child lives as long as the node: it runs in a process group of
its own and ignores SIGINT (Ctrl-C reaches the terminal's whole foreground process group;
the node decides), and exits when the socket closes, which the kernel also does if the
node dies. Not in a session of its own: Linux's autogroup scheduling (on by default) puts
each session in a scheduling group of its own, and beside two CPU-bound processes such a
new group was left waiting to run for seconds at its start (2026-12-06, kernel 6.18:
6 of 27 starts took over 7 s to get ready, 2 past the node's 10 s activation_timeout,
with 0.1 s of CPU used and 15-28 s of waiting summed over its threads; in the node's own
session, 14 of 14 were ready within 2 s).
"""
import argparse
import collections
import faulthandler
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from ne_dynamics_ros.control.reference.trajectory import (MAX_POINTS, prepare_waypoints,
                                                          TrajectoryError)
from ne_dynamics_ros.nodes.cdr import (
    read_joint_trajectory, trajectory_message_fields, UnsupportedEncoding)
from ne_dynamics_ros.nodes.frames import (ARRAYS, receive_frame, send_frame,  # noqa: F401
                                          trajectory_arrays, trajectory_fields)

#: Most joint names read from a trajectory message; more and it is dropped unread (every
#: name beyond the chain's is refused anyway, and the check is linear up to here).
MAX_TRAJECTORY_JOINTS = 100_000
#: How much nicer than the node the receiving process runs once started (Linux ``nice``
#: increment, every thread of it): not during its start-up, which the node's activation
#: waits for.
NICENESS = 10


def nicer(increment):
    """Lower every thread of this process by ``increment`` nice steps, to 19 at most.

    Linux keeps a nice value per thread; threads started later inherit their creator's.
    A thread that ends meanwhile, or a value the OS refuses, is left as it is.
    """
    for tid in os.listdir('/proc/self/task'):
        try:
            value = os.getpriority(os.PRIO_PROCESS, int(tid))
            os.setpriority(os.PRIO_PROCESS, int(tid), min(19, value + increment))
        except OSError:
            pass


#: Seconds of start-up after which the child writes every thread's stack to its stderr
#: (the node's log), and again each time as long again until it says ready: a start that
#: never got ready (the node's "activate failed: ... the trajectory receiver process has
#: not started", in fresh-clone suite runs on 2026-12-06, beside CPU-bound processes;
#: the stacks: loading and creating its node, slowly) then says where it waits.
STARTUP_REPORT = 5.0


def message_frame(data: bytes, max_bytes: int, chain_joint_names=None):
    """Turn one serialized ``JointTrajectory`` into a frame: ``(header, arrays)``.

    ``header['kind']`` is ``'trajectory'`` (``arrays`` hold its waypoints in chain order
    and their segment polynomials, see :func:`trajectory_fields`), ``'dropped'`` (over
    ``max_bytes``, which is not read, ``'unread': True``; or bytes no reader
    understands) or ``'rejected'`` (``'reason'``: what
    :func:`~ne_dynamics_ros.control.reference.trajectory.prepare_waypoints` refused, or no robot
    model yet when ``chain_joint_names`` is None). What is sent on holds the chain's
    joints only, no ``frame_id``. Never raises for bad bytes.
    """
    if len(data) > max_bytes:
        return {'kind': 'dropped', 'unread': True,
                'reason': f'dropped a trajectory message of {len(data)} bytes unread: '
                          f'more than max_trajectory_bytes ({max_bytes})'}, []
    try:
        try:
            fields = read_joint_trajectory(data, MAX_TRAJECTORY_JOINTS, MAX_POINTS)
        except UnsupportedEncoding:
            fields = _deserialized_fields(data)   # big-endian, XCDR2...: rclpy reads them
    except Exception as err:  # noqa: BLE001 - whatever a reader raises, drop the message
        return {'kind': 'dropped', 'unread': False,
                'reason': f'dropped a trajectory message: {type(err).__name__}: {err}'}, []
    if chain_joint_names is None:
        return {'kind': 'rejected', 'reason': 'no robot model yet'}, []
    try:
        prepared = prepare_waypoints(fields.joint_names, fields.points, chain_joint_names)
    except TrajectoryError as err:
        return {'kind': 'rejected', 'reason': str(err)}, []
    header = {'kind': 'trajectory', 'sec': fields.sec, 'nanosec': fields.nanosec}
    header.update(trajectory_arrays(prepared.waypoints, prepared.coefficients,
                                    chain_joint_names))
    return header, header.pop('_arrays')


def _deserialized_fields(data):
    """Read a trajectory with rclpy's deserializer (any encoding it knows)."""
    from rclpy.serialization import deserialize_message
    from trajectory_msgs.msg import JointTrajectory

    return trajectory_message_fields(deserialize_message(data, JointTrajectory))


class TrajectoryReceiver:
    """The node's side: start the receiving process, then iterate over its frames.

    Args:
        topic: the fully resolved topic name to subscribe to.
        node_name, namespace: of the node; the child is ``<node_name>_trajectory_receiver``
            in the same namespace.
        domain_id: ROS domain of the node's context.
        max_bytes: ``max_trajectory_bytes``.
        depth: QoS history depth of the subscription (reliable, volatile).
        chain_joint_names: the controlled joints when already known (else
            :meth:`set_chain` later; until then every trajectory is refused).
    """

    def __init__(self, topic, node_name, namespace, domain_id, max_bytes, depth=10,
                 chain_joint_names=None, action_name=''):
        self._send_lock = threading.Lock()
        self._socket, child = socket.socketpair()
        chain = [] if chain_joint_names is None else ['--chain-json',
                                                      json.dumps(list(chain_joint_names))]
        try:
            self.process = subprocess.Popen(
                [sys.executable, '-m', __name__, '--socket-fd', str(child.fileno()),
                 '--topic', topic, '--node-name', f'{node_name}_trajectory_receiver',
                 '--namespace', namespace, '--domain-id', str(domain_id),
                 '--max-bytes', str(max_bytes), '--depth', str(depth),
                 '--action', action_name] + chain,
                pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL,
                # a process group of its own: Ctrl-C in a terminal (SIGINT to the
                # foreground process group) must not reach it while it starts, before it
                # can ignore it; it ends when the node closes the socket. The node's
                # session, not one of its own (the module docstring: autogroups)
                process_group=0)
        finally:
            child.close()

    def set_chain(self, joint_names, lower=None, upper=None):
        """Tell the child the controlled joints (chain order) and their position limits.

        It checks names against them and sends only their columns; before it knows them,
        it refuses every trajectory and goal.
        """
        self.send({'kind': 'chain', 'joints': list(joint_names),
                   'lower': None if lower is None else [float(v) for v in lower],
                   'upper': None if upper is None else [float(v) for v in upper]})

    def send(self, header):
        """Send the child one frame without payload (any thread); False if it is gone."""
        with self._send_lock:
            try:
                send_frame(self._socket, header, [])
                return True
            except OSError:
                return False            # the child is gone: frames() ends, the node says so

    def frames(self):
        """Yield ``(header, arrays)`` frames until the child or :meth:`close` ends them."""
        while True:
            try:
                frame = receive_frame(self._socket)
            except OSError:
                return
            if frame is None:
                return
            yield frame

    def close(self, timeout=5.0):
        """End the child (closing the socket tells it to exit) and wait for it.

        Returns its exit code (None if it had to be killed).
        """
        try:
            self._socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._socket.close()
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None


class _Pending:
    """Messages waiting to be read, in order, bounded: (bytes or an unread-drop frame, ns).

    At most ``depth`` of them and ``2 * max_bytes`` in all, else the oldest is dropped
    (counted, for a ``dropped`` frame). ``close`` wakes a waiting :meth:`take`.
    """

    def __init__(self, depth, max_bytes):
        self._depth, self._max_bytes = depth, max_bytes
        self._items = collections.deque()
        self._bytes = 0              # bytes waiting
        self._superseded = 0         # messages dropped for a newer one, not yet reported
        self._ready = threading.Condition()
        self.closed = threading.Event()

    def put(self, data, received_ns):
        """Queue one message (or an unread-drop frame), dropping the oldest beyond bounds."""
        with self._ready:
            self._items.append((data, received_ns))
            self._bytes += len(data) if isinstance(data, bytes) else 0
            while len(self._items) > self._depth or self._bytes > 2 * self._max_bytes:
                old, _ = self._items.popleft()
                self._bytes -= len(old) if isinstance(old, bytes) else 0
                self._superseded += 1
            self._ready.notify()

    def take(self):
        """Wait for work: ``(superseded count, data or None, received ns)``; None: closed."""
        with self._ready:
            while not self._items and not self._superseded and not self.closed.is_set():
                self._ready.wait()
            if self.closed.is_set():
                return None
            dropped, self._superseded = self._superseded, 0
            data, received = self._items.popleft() if self._items else (None, None)
            self._bytes -= len(data) if isinstance(data, bytes) else 0
            return dropped, data, received

    def close(self):
        """End :meth:`take` (now and from now on)."""
        self.closed.set()
        with self._ready:
            self._ready.notify()


class ReceiverProgram:
    """The child process, as named steps: ROS up, subscribe, serve the action, run, down.

    Two threads besides the executor's: one reads the waiting messages and sends their
    frames (:meth:`send_loop`), one watches the socket for the node's frames (the chain,
    the goals' answers) and its end (:meth:`watch_socket`).
    """

    def __init__(self, sock, max_bytes, depth, chain_joint_names):
        self._sock, self._max_bytes, self._depth = sock, max_bytes, depth
        self._pending = _Pending(depth, max_bytes)
        self._chain = chain_joint_names      # the controlled joints, once the node has them
        self._send_lock = threading.Lock()
        self.context = self.node = self.executor = self.goals = None

    def start_node(self, node_name, namespace, domain_id):
        """Start a context of its own (no signal handlers: the node decides) and the node."""
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions
        self.context = rclpy.context.Context()
        rclpy.init(context=self.context, domain_id=domain_id,
                   signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(node_name, namespace=namespace, context=self.context,
                                      start_parameter_services=False, enable_rosout=False)
        # A Python executor: the action server needs one (rclpy's EventsExecutor spins at
        # full CPU and never answers it in these Jazzy wheels), and its create_task is how
        # the socket's thread hands the node's answers to the action server.
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def subscribe(self, topic):
        """Take ``topic``'s messages as bytes (:meth:`on_bytes`)."""
        from rclpy.event_handler import SubscriptionEventCallbacks
        from trajectory_msgs.msg import JointTrajectory
        self.node.create_subscription(
            JointTrajectory, topic, self.on_bytes, self._depth, raw=True,
            event_callbacks=SubscriptionEventCallbacks(use_default_callbacks=False))

    def serve_action(self, action_name):
        """Serve FollowJointTrajectory at ``action_name`` if control_msgs is installed.

        Returns what the ``ready`` frame says of it: the name, or why it is not served.
        """
        if not action_name:
            return ''
        try:
            from ne_dynamics_ros.nodes.follow_joint_trajectory import GoalServer
        except ImportError as err:     # control_msgs is not installed
            return f'not served: {err}'
        self.goals = GoalServer(self.node, self.executor, action_name, self.send,
                                None if self._chain is None else (self._chain, None, None))
        return action_name

    def send(self, header, arrays):
        """Send one frame (the sending thread and the action server's callbacks both do)."""
        with self._send_lock:
            send_frame(self._sock, header, arrays)

    def on_bytes(self, data):
        """Subscription callback: queue one message; an oversized one is reported unread."""
        received = time.monotonic_ns()
        if len(data) > self._max_bytes:          # reported in order, never held
            data = message_frame(data, self._max_bytes)
        self._pending.put(data, received)

    def send_loop(self):
        """Thread: read the waiting messages in order and send their frames."""
        try:
            while True:
                work = self._pending.take()
                if work is None:
                    return
                dropped, data, received = work
                for _ in range(dropped):
                    self.send({'kind': 'dropped', 'unread': False, 'superseded': True,
                               'received_monotonic_ns': time.monotonic_ns(),
                               'reason': 'a trajectory was dropped unread: more than '
                                         f'{self._depth} messages (or twice '
                                         'max_trajectory_bytes) were waiting'}, [])
                if data is not None:
                    header, arrays = self._frame_of(data)
                    header['received_monotonic_ns'] = received
                    self.send(header, arrays)
        except OSError:
            pass                     # the node closed the socket
        finally:
            self._pending.close()
            self.executor.wake()

    def _frame_of(self, data):
        """Return the frame of one waiting item: bytes read, or an unread-drop frame as is."""
        if not isinstance(data, bytes):
            return data
        try:
            return message_frame(data, self._max_bytes, self._chain)
        except Exception as err:  # noqa: BLE001 - report it, keep receiving
            return {'kind': 'dropped', 'unread': False, 'reason': (
                f'dropped a trajectory message: {type(err).__name__}: {err}')}, []

    def watch_socket(self):
        """Thread: take the node's frames (the chain, the goals' answers) until it is gone."""
        try:
            while True:
                frame = receive_frame(self._sock)
                if frame is None:
                    break
                if frame[0].get('kind') == 'chain':
                    self._chain = tuple(frame[0]['joints'])
                if self.goals is not None:
                    self.goals.on_frame(frame[0])
                if frame[0].get('kind') == 'state':
                    # applied: goals from now on are taken or refused by it (the node
                    # waits for this before its transition ends)
                    self.send({'kind': 'state_applied', 'seq': frame[0].get('seq')}, [])
        except (OSError, ValueError):
            pass
        self._pending.close()
        self.executor.wake()

    def run(self, action):
        """Say ready (with ``action``, see :meth:`serve_action`), then spin until closed."""
        try:
            self.send({'kind': 'ready', 'action': action, 'served': self.goals is not None},
                      [])
        except OSError:
            self._pending.close()
        faulthandler.cancel_dump_traceback_later()     # started: see STARTUP_REPORT
        nicer(NICENESS)              # started: reading trajectories can wait from now on
        for target in (self.send_loop, self.watch_socket):
            threading.Thread(target=target, daemon=True).start()
        while not self._pending.closed.is_set() and self.context.ok():
            self.executor.spin_once(timeout_sec=0.1)

    def shut_down(self):
        """End the goals still running with the reason, then the node and the context."""
        import rclpy
        goals, executor = self.goals, self.executor
        if goals is not None:
            # spin a little so that their results reach the clients before the server goes
            goals.abort_all('Aborted: the controller node is gone (shut down)')
            deadline = time.monotonic() + 1.0
            while goals.busy() and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
            # the server sends a result after its execution ended (none to send when no
            # goal came: then the node's close does not wait the 0.1 s)
            for _ in range(5 if goals.accepted else 0):
                executor.spin_once(timeout_sec=0.02)
            goals.destroy()
        executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def serve(sock, topic, node_name, namespace, domain_id, max_bytes, depth, chain_joint_names,
          action_name=None):
    """Run the child process: subscribe, read, send frames; return when the socket closes.

    ``action_name``: serve ``control_msgs/action/FollowJointTrajectory`` there too
    (:mod:`ne_dynamics_ros.nodes.follow_joint_trajectory`), when control_msgs is
    installed; the ``ready`` frame says whether it is served (``action``) or why not.
    """
    program = ReceiverProgram(sock, max_bytes, depth, chain_joint_names)
    program.start_node(node_name, namespace, domain_id)
    program.subscribe(topic)
    action = program.serve_action(action_name)
    program.run(action)
    program.shut_down()


def main(argv=None):
    """Run the child process (``python -m ne_dynamics_ros.nodes.trajectory_receiver``).

    Does not return: once served and shut down, the process ends (``os._exit(0)``).
    """
    parser = argparse.ArgumentParser(description='computed_torque_node\'s trajectory '
                                     'receiver (started by the node, not by hand)')
    parser.add_argument('--socket-fd', type=int, required=True)
    parser.add_argument('--topic', required=True)
    parser.add_argument('--node-name', required=True)
    parser.add_argument('--namespace', default='/')
    parser.add_argument('--domain-id', type=int, required=True)
    parser.add_argument('--max-bytes', type=int, required=True)
    parser.add_argument('--depth', type=int, default=10)
    parser.add_argument('--chain-json', default=None)
    parser.add_argument('--action', default='')
    args = parser.parse_args(argv)
    # Ctrl-C in a terminal reaches the whole process group: the node decides when this
    # process ends (it closes the socket), so that it can still publish its zero command
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # a background process group of the terminal's session: where the terminal says
    # `stty tostop`, writing to it (the node's log) would stop this process
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    sock = socket.socket(fileno=args.socket_fd)
    faulthandler.dump_traceback_later(STARTUP_REPORT, repeat=True)   # until ready
    try:
        serve(sock, args.topic, args.node_name, args.namespace, args.domain_id,
              args.max_bytes, args.depth,
              None if args.chain_json is None else tuple(json.loads(args.chain_json)),
              args.action)
    finally:
        sock.close()
    # The node, its context and the socket are closed: what the interpreter's own
    # finalisation would add (0.2 s measured, each time the node closes this process:
    # the node waits for it) does nothing the node needs. Output flushed, exit now.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == '__main__':
    sys.exit(main())
