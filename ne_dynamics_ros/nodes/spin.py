"""Run one small node until SIGINT or SIGTERM, with no traceback on the way out.

The helper processes (``sim_arm_node``, ``effort_guard``, ``robot_description_publisher``)
end the same way. SIGINT and SIGTERM set a flag and end the spin, never a
KeyboardInterrupt. ``ros2 launch`` forwards a second SIGINT to a process that already got
the terminal's, and a KeyboardInterrupt raised anywhere in the teardown was a traceback
(seen in CI). After the teardown both signals are ignored, so that a late one cannot end
the process with -2.
"""
import signal

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

from ne_dynamics_ros.nodes import transport


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
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
        # Python resets a handler of its own to the default at exit, and a late SIGINT
        # would then kill the process (exit code -2); an ignored signal stays ignored
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return 0


__all__ = ['init_until_signalled', 'spin_until_signalled']
