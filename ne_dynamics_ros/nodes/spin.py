"""Run one small node until SIGINT or SIGTERM, with no traceback on the way out.

The helper processes (``sim_arm_node``, ``effort_guard``, ``robot_description_publisher``)
end the same way. SIGINT and SIGTERM set a flag and end the spin, never a
KeyboardInterrupt. ``ros2 launch`` forwards a second SIGINT to a process that already got
the terminal's, and a KeyboardInterrupt raised anywhere in the teardown was a traceback
(seen in CI). After the teardown both signals are ignored, so that a late one cannot end
the process with -2.
"""
import signal
import time

import rclpy
from rclpy.callback_groups import CallbackGroup
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

from ne_dynamics_ros.nodes import transport
from ne_dynamics_ros.nodes.computed_torque.priority import release_collector


def init_until_signalled(args=None):
    """Install the flag handlers and ``rclpy.init`` without rclpy's; return the flag (a list).

    The list is non-empty once SIGINT or SIGTERM arrived. Fast DDS's transports are
    chosen first (:func:`ne_dynamics_ros.nodes.transport.choose_transports`).
    """
    from rclpy.signals import SignalHandlerOptions
    stop = []
    signal.signal(signal.SIGINT, lambda signum, frame: stop.append(signum))
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.append(signum))
    transport.choose_transports()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    return stop


def spin_until_signalled(node, stop):
    """Spin ``node`` on a SingleThreadedExecutor until ``stop`` fills; tear down; return 0."""
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        while not stop and rclpy.ok():
            # a finite timeout lets Python run the signal handler between waits
            executor.spin_once(timeout_sec=0.1)
    except ExternalShutdownException:
        pass
    finally:
        release_collector()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
        # Python resets a handler of its own to the default at exit, and a late SIGINT
        # would then kill the process (exit code -2); an ignored signal stays ignored
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return 0


class NeverExecuted(CallbackGroup):
    """A callback group no executor runs: its entities are never waited on.

    For :class:`PolledSubscription`: DDS keeps delivering the messages into the
    subscription's history, and nothing wakes the executor for them.
    """

    def can_execute(self, entity):
        """Tell the executor not to wait on ``entity`` (always False)."""
        return False

    def beginning_execution(self, entity):
        """Refuse to start a callback (always False)."""
        return False

    def ending_execution(self, entity):
        """Do nothing: no callback of the group ever starts."""


class PolledSubscription:
    """A subscription read when its owner asks (:meth:`take`), not one callback a message.

    rclpy's executor costs some hundred microseconds of Python per wake-up: a process that
    only needs to know whether (or what) a 500 Hz topic carried since it last looked
    (``effort_guard``'s silence check, a test's recorder) pays that 500 times a second
    with a callback per message, and once per look this way. The messages wait in the
    subscription's history (``qos``: keep its depth at what one look may find) and
    :meth:`take` returns them, serialized (``raw``) or as messages, oldest first.

    Args:
        node: the rclpy node that owns the subscription.
        msg_type, topic, qos: as ``Node.create_subscription``.
        raw: take the CDR bytes (no deserialization).
    """

    def __init__(self, node, msg_type, topic, qos, raw=False):
        self._msg_type, self._raw = msg_type, raw
        self.subscription = node.create_subscription(
            msg_type, topic, lambda _: None, qos, callback_group=NeverExecuted(), raw=raw)

    def take(self, limit=100_000):
        """Return the messages received since the last call, oldest first (at most ``limit``).

        Each is ``(message, received_ns)``: the message (bytes when ``raw``) and the time
        the middleware received it, ns on the system clock.
        """
        handle, out = self.subscription.handle, []
        with handle:
            while len(out) < limit:
                taken = handle.take_message(self._msg_type, self._raw)
                if taken is None:
                    break
                message, info = taken
                out.append((message, int(info['received_timestamp'])))
        return out

    def take_monotonic(self, limit=100_000):
        """As :meth:`take`, each receipt time as ``time.monotonic()`` s (for a recorder's clock).

        The middleware stamps receipt on the system clock; the offset between the two
        clocks is read once per call (a clock step between receipt and look shifts it).
        """
        monotonic, now_ns = time.monotonic(), time.time_ns()
        return [(message, monotonic - (now_ns - received_ns) * 1e-9)
                for message, received_ns in self.take(limit)]


__all__ = ['NeverExecuted', 'PolledSubscription', 'init_until_signalled',
           'spin_until_signalled']
