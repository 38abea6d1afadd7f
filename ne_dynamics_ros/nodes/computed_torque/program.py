"""``computed_torque_node`` as a program: :func:`main`, the executor, signals.

Ctrl-C / SIGTERM publish a final zero-effort command (when active) before shutting down:
rclpy's own signal handlers are disabled for that, they would shut the context down
before the node could publish.
"""
import gc
import signal
import sys

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from ne_dynamics_ros.control.parameters import EXECUTORS, MAX_TRAJECTORY_BYTES
from ne_dynamics_ros.nodes import transport
from ne_dynamics_ros.nodes.computed_torque import priority
from ne_dynamics_ros.nodes.computed_torque.node import ComputedTorqueNode
from ne_dynamics_ros.nodes.computed_torque.ros_parameters import NodeConfigurationError

#: The GIL switch interval set by :func:`main`, s: the thread that installs a
#: trajectory delays the control path by at most about this much at a time between its
#: NumPy operations (Python's default is 5 ms).
SWITCH_INTERVAL = 0.0005

#: On Ctrl-C / SIGTERM, how long the final zero command may wait for its subscribers'
#: acknowledgement before the process exits, s.
ZERO_EFFORT_WAIT = 1.0


def make_executor(kind, context=None):
    """Return the rclpy executor named by the ``executor`` parameter.

    ``events``: ``rclpy.experimental.EventsExecutor`` (C++; shipped with Jazzy's rclpy);
    ``single_threaded``: ``rclpy.executors.SingleThreadedExecutor``. Making the
    ``EventsExecutor`` enables :mod:`faulthandler` on ``sys.stderr``, which needs a file
    descriptor: where ``sys.stderr`` has none (a caller capturing the output in a buffer,
    as the demo's tests do), the process's own standard error takes its place meanwhile.

    Raises:
        NodeConfigurationError: an unknown kind.
    """
    if kind == 'events':
        from rclpy.experimental import EventsExecutor
        try:
            sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):   # io.UnsupportedOperation among them
            captured, sys.stderr = sys.stderr, sys.__stderr__
            try:
                return EventsExecutor(context=context)
            finally:
                sys.stderr = captured
        return EventsExecutor(context=context)
    if kind == 'single_threaded':
        return SingleThreadedExecutor(context=context)
    raise NodeConfigurationError(f'executor {kind!r} is not one of {EXECUTORS}')


class _FirstSignal:
    """SIGINT/SIGTERM handler: the first signal stops the node, later ones are swallowed.

    Ctrl-C in a terminal reaches the whole process group: ros2 launch forwards it a second
    time. Only the first one stops the node; later ones must not interrupt the zero-effort
    command and the clean shutdown. ``executor``: the executor spinning (None while
    starting: the signal abandons the start).
    """

    def __init__(self):
        self.received = []
        self.executor = None

    def __call__(self, signum, frame):
        if self.received:
            return
        self.received.append(signum)
        if self.executor is None:
            raise KeyboardInterrupt             # still starting: abandon the start
        # Spinning: only ask the loop to stop. An exception raised here could land inside
        # rclpy's C++ message conversion, which turns it into a RuntimeError.
        self.executor.wake()


def _raise_priorities(node):
    """Give the control threads ``realtime_priority``; return what was granted, as text."""
    watchdog = node.watchdog.thread
    text, node.control_policy = priority.raise_priority(
        node.get_parameter('realtime_priority').value,
        [0] + ([watchdog.native_id] if watchdog is not None else []))
    return text + priority.raise_node_threads(node)


def _activate(node, transports):
    """Give the control path its priority and CPU latency, then activate (``autostart``).

    The activation switches the effort controller in, and effort_guard hands the arm to
    the hold controller after 100 ms without a command: it comes once the control
    threads have their priority and the executor is about to spin. Activated in the
    constructor, before both, a start beside 4 CPU-bound processes left 105 ms between
    the switch and the priority (2026-12-08): the guard took the arm, and the node's
    commands went to an inactive controller.
    """
    node.get_logger().info(f'control path priority: {_raise_priorities(node)}; '
                           + priority.hold_cpu_latency(
                               node.get_parameter('cpu_dma_latency').value)
                           + f'; {transports}')
    if node.get_parameter('autostart').value is True:
        node.trigger_activate()


def _stop(node):
    """Stop the node's threads; hand the arm to the hold controller or command zero effort."""
    node.stop_threads()       # no watchdog publishing after the final zero command
    # beside ros2_control with a hold controller: it takes the arm (and the zero then goes
    # to an effort controller no longer active)
    handed = node.lifecycle_state == 'active' and node.hand_to_hold()
    node.publish_zero_effort(wait=ZERO_EFFORT_WAIT)
    node.get_logger().info(
        'shutting down: ' + (f'{node.ros2_control.hold} holds the arm; ' if handed
                             else 'published zero effort; ') + node.drop_summary())


def main(args=None):
    """Run the node until Ctrl-C / SIGTERM; return the process exit code.

    Exit code 1 when the robot description or parameters are invalid (logged). On
    Ctrl-C/SIGTERM a final zero-effort command is published before shutting down, for
    the reason given in the module docstring. rclpy's own signal handlers are disabled
    for that: they would shut the context down before the node could publish. Signals
    after the first are ignored (``ros2 launch`` forwards Ctrl-C a second time); after a
    signal-ended run SIGINT and SIGTERM stay ignored until the process exits, otherwise
    the previous handlers are restored.
    """
    transports = transport.choose_transports()      # before the participant exists
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    sys.setswitchinterval(SWITCH_INTERVAL)
    signals = _FirstSignal()
    previous_sigterm = signal.signal(signal.SIGTERM, signals)
    previous_sigint = signal.signal(signal.SIGINT, signals)
    node = None
    priority.own_collector()          # the node freezes it once configured
    try:
        node = ComputedTorqueNode(activate=False)        # configured: see _activate
        spinning = make_executor(node.get_parameter('executor').value)
        spinning.add_node(node)
        signals.executor = spinning
        _activate(node, transports)
        while rclpy.ok() and not signals.received:
            # A finite timeout lets Python run the signal handlers between waits.
            spinning.spin_once(timeout_sec=0.1)
        if signals.received:
            raise KeyboardInterrupt
    except NodeConfigurationError:
        return 1
    except (KeyboardInterrupt, ExternalShutdownException):
        if node is not None and node.context.ok():
            _stop(node)
    finally:
        # Tear down while our handlers still swallow late signals (ros2 launch forwards a
        # second SIGINT): the executor first, so that no C++ executor calls back into
        # Python afterwards, where a KeyboardInterrupt would abort the process.
        signalled = bool(signals.received)
        signals.received.append(None)       # from here on every signal is swallowed
        priority.release_collector()
        if signals.executor is not None:
            signals.executor.shutdown()
            signals.executor.remove_node(node)
        signals.executor = spinning = None
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        gc.collect()
        # After a signal the process is on its way out: a forwarded second Ctrl-C must
        # not turn into a KeyboardInterrupt traceback while the interpreter exits.
        signal.signal(signal.SIGTERM, signal.SIG_IGN if signalled else previous_sigterm)
        signal.signal(signal.SIGINT, signal.SIG_IGN if signalled else previous_sigint)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())


__all__ = ['EXECUTORS', 'main', 'make_executor', 'MAX_TRAJECTORY_BYTES', 'SWITCH_INTERVAL',
           'ZERO_EFFORT_WAIT']
