"""The node's link to ``controller_manager``: which controller drives the arm, and switches.

With ``ros2_control.controller_manager`` set, the node follows the manager's
``~/activity`` (``controller_manager_msgs/ControllerManagerActivity``, reliable,
transient local: the controllers' lifecycle states, published on every change) and
calls its ``~/switch_controller``: to ``ros2_control.effort_controller`` when it
activates, back to ``ros2_control.hold_controller`` when it deactivates. Whenever the hold
controller takes the arm (after a deactivate, a switch, or ``effort_guard``), the node
sends it the position measured with the model's gravity as the point's effort
(:meth:`Ros2ControlLink.hold_here`): joint_trajectory_controller adds a point's effort to
its PID's output with effort command interfaces (ros2_controllers #1200), so the PID
only corrects what the model misses. Both run on a
node and executor of their own (a thread), so that a transition can wait for the switch
without the control path's executor. ``controller_manager_msgs`` comes with ros2_control
(ROS 2, or the bundled build's ``PYTHONPATH``); without it the node refuses the parameter.
"""
import threading
import time
from typing import Callable, NamedTuple

from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

from ne_dynamics_ros.control.laws.base import clamp
from ne_dynamics_ros.errors import NonFiniteEffortError, StateError
from ne_dynamics_ros.nodes.qos import ACTIVITY_QOS

#: Longest wait (s) for ~/activity to confirm a switch to the effort controller.
SWITCH_SETTLE = 0.5


class Ros2ControlLink:
    """Follow a controller_manager's controllers; switch between effort and hold.

    Attributes:
        effort_active: True/False once ``~/activity`` said, None before.
        hold_active: likewise for the hold controller ('' : never).
    """

    def __init__(self, context, manager, effort, hold, on_change):
        """Start following ``manager`` (a node name).

        ``on_change(link, effort_active, hold_active)`` is called from the link's thread
        when either controller's activity changes, with this link (the thread starts here:
        its first call may come before the constructor returns).

        Raises:
            ImportError: controller_manager_msgs is not installed (the message says so).
        """
        try:
            from controller_manager_msgs.msg import ControllerManagerActivity
            from controller_manager_msgs.srv import SwitchController
        except ImportError as err:
            raise ImportError(f'ros2_control.controller_manager is set but '
                              f'controller_manager_msgs is not installed ({err})') from None
        import rclpy
        from lifecycle_msgs.msg import State
        self._active_id = State.PRIMARY_STATE_ACTIVE
        self._inactive_id = State.PRIMARY_STATE_INACTIVE
        self._switch_type = SwitchController
        self.manager, self.effort, self.hold = manager.rstrip('/') or '/', effort, hold
        self.effort_active = None
        self.hold_active = None
        #: the effort controller went away while the node commanded (the node says so
        #: when its commands are not applied; cleared when it is back)
        self.lost = False
        self.states = {}
        #: the node wants the effort controller and has not had it yet (activation in
        #: any start order: retried when the controllers appear)
        self.wanted = False
        #: until when (monotonic s) a switch to the effort controller is under way
        self._switching_until = 0.0
        self._retrying = threading.Lock()
        self._on_change = on_change
        self.node = rclpy.create_node('computed_torque_ros2_control_link', context=context,
                                      start_parameter_services=False)
        self.node.create_subscription(ControllerManagerActivity, f'{self.manager}/activity',
                                      self._on_activity, ACTIVITY_QOS)
        self.client = self.node.create_client(SwitchController,
                                              f'{self.manager}/switch_controller')
        self._hold_publisher = None
        if hold:
            from trajectory_msgs.msg import JointTrajectory
            self._hold_publisher = self.node.create_publisher(
                JointTrajectory, f'/{hold.strip("/")}/joint_trajectory', 10)
        self._executor = SingleThreadedExecutor(context=context)
        self._executor.add_node(self.node)
        self._thread = threading.Thread(target=self._spin, name='ros2_control_link',
                                        daemon=True)
        self._thread.start()

    def _spin(self):
        try:
            self._executor.spin()
        except ExternalShutdownException:
            pass

    def _on_activity(self, msg):
        states = {c.name: c.state.id for c in msg.controllers}
        self.states = states
        effort = states.get(self.effort) == self._active_id if self.effort in states else False
        hold = bool(self.hold) and states.get(self.hold) == self._active_id
        changed = effort != self.effort_active or hold != self.hold_active
        self.effort_active, self.hold_active = effort, hold
        if effort:
            self.wanted = False
            self._switching_until = 0.0
        elif self.wanted and self._ready():
            # loaded now (the node started first): take the arm; off this thread, which
            # must stay free to receive the answer
            threading.Thread(target=self._retry, daemon=True).start()
        if changed:
            self._on_change(self, effort, hold)

    def _ready(self):
        """Tell whether the effort controller is configured and the hold controller holds."""
        return self.states.get(self.effort) == self._inactive_id and (
            not self.hold or self.hold_active)

    def _retry(self):
        if not self._retrying.acquire(blocking=False):
            return
        try:
            if self.wanted and not self.effort_active:
                self.switch_to_effort()
        finally:
            self._retrying.release()

    def switch(self, activate, deactivate, timeout=2.0):
        """Ask controller_manager for a switch; return (ok, message).

        BEST_EFFORT, as soon as possible.

        Waits up to ``timeout`` s for the service and its answer (never on the control
        path: lifecycle transitions only).
        """
        if not self.client.wait_for_service(timeout_sec=timeout):
            return False, f'{self.manager}/switch_controller is not available'
        request = self._switch_type.Request(
            activate_controllers=[c for c in activate if c],
            deactivate_controllers=[c for c in deactivate if c],
            strictness=self._switch_type.Request.BEST_EFFORT, activate_asap=True)
        request.timeout.sec = int(timeout)
        done = threading.Event()
        future = self.client.call_async(request)
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout):
            return False, f'no answer from {self.manager}/switch_controller in {timeout} s'
        result = future.result()
        return bool(result.ok), result.message or ('switched' if result.ok else 'refused')

    def to_effort(self):
        """Hand the arm to the effort controller (from the hold controller).

        Made on the link's own thread; before the effort controller is configured (the
        node started before the controllers) it waits until ``~/activity`` lists it.
        """
        self.wanted = True
        if self.effort_active:
            self.wanted = False
            return True, f'{self.effort} already active'
        if not self._ready():
            waiting = f'{self.effort} not loaded'
            if self.hold:
                waiting += f' or {self.hold} not active'
            return True, waiting + ' yet: switching when they are'
        # off the caller's thread: the activation returns, commands flow (to a controller
        # not yet active, which drops them), and the first one after the switch lands
        # within a state period, instead of a gap while the executor waited here
        threading.Thread(target=self._retry, daemon=True).start()
        return True, 'switching'

    def switch_to_effort(self):
        """Switch: activate the effort controller, deactivate the hold controller."""
        hold = [self.hold] if self.hold and self.hold_active else []
        # ``wanted`` stays until ~/activity shows the effort controller active: a
        # BEST_EFFORT switch answers ok even when it activated nothing
        self._switching_until = time.monotonic() + SWITCH_SETTLE
        ok, message = self.switch([self.effort], hold)
        if not ok:
            self._switching_until = 0.0
        return ok, message

    @property
    def switching(self):
        """True from a switch to the effort controller until ~/activity shows it active.

        (At most :data:`SWITCH_SETTLE` s.) Meanwhile the node keeps its reference: the
        controller may already apply its commands.
        """
        return time.monotonic() < self._switching_until

    def commands_applied(self):
        """Whether the effort controller applies the node's commands now.

        True while it is active, while a switch to it is under way (:attr:`switching`) and
        before controller_manager has said anything (None); False while it is switched
        away (a hold controller in charge): the controller's input ``commands_applied``.
        """
        return self.effort_active is not False or self.switching

    def note_unapplied(self):
        """Note a command sent while :meth:`commands_applied` was False.

        The node's run then held the position that state measured; the return of the
        effort controller is said so (:func:`on_effort_controller`).
        """
        self.lost = True

    def to_hold(self):
        """Hand the arm to the hold controller; (False, why) when there is none."""
        self.wanted = False
        if not self.hold:
            return False, 'no ros2_control.hold_controller'
        if self.hold not in self.states:
            return False, f'{self.hold} is not loaded'
        return self.switch([self.hold], [self.effort] if self.effort_active else [])

    def hold_here(self, joint_names, q, effort, settle=0.05, wait=0.0):
        """Send the hold controller one point: ``q`` (rad, m) with ``effort`` (N·m, N).

        ``joint_names`` name the values; reached in ``settle`` s from where the
        controller holds (its spline ramps the feed-forward in over that time). ``wait``:
        s to wait for the controller's acknowledgement (before an exit).
        """
        if self._hold_publisher is None:
            return
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
        point = JointTrajectoryPoint(positions=[float(v) for v in q],
                                     velocities=[0.0] * len(q),
                                     effort=[float(v) for v in effort])
        point.time_from_start.nanosec = int(settle * 1e9)
        self._hold_publisher.publish(JointTrajectory(joint_names=list(joint_names),
                                                     points=[point]))
        if wait > 0:
            from rclpy.duration import Duration
            self._hold_publisher.wait_for_all_acked(Duration(nanoseconds=int(wait * 1e9)))

    def describe(self):
        """One line for /diagnostics: who drives the arm."""
        if self.effort_active is None:
            return f'no activity from {self.manager} yet'
        if self.effort_active:
            return f'{self.effort} active'
        return (f'{self.effort} not active ({self.hold} holds the arm)' if self.hold_active
                else f'{self.effort} not active')

    def stop(self):
        """Stop the thread and destroy the link's node."""
        self._executor.shutdown(timeout_sec=1.0)
        self._thread.join(timeout=2.0)
        self.node.destroy_node()


class NodeSide(NamedTuple):
    """All the link asks of the node it serves: a narrow interface, not its attributes.

    ``controller()``: the node's controller, or None; ``last_command()``: the last
    Command it published, or None; ``commanding()``: the node is active (its lifecycle);
    ``event(text)``: say ``text`` on ``/diagnostics`` at once; ``logger``: the node's.
    """

    controller: Callable
    last_command: Callable
    commanding: Callable
    event: Callable
    logger: object


def attach(context, parameters, side):
    """Return ``(link, problem)``: the link when ``ros2_control.controller_manager`` is set.

    ``parameters``: ``{name: value}`` of the node's ``ros2_control.*`` parameters; ``side``:
    the :class:`NodeSide` it serves. ``(None, '')`` when not set; ``(None, why)`` when it
    cannot be (controller_manager_msgs missing).
    """
    manager = parameters['ros2_control.controller_manager']
    if not manager:
        return None, ''
    try:
        link = Ros2ControlLink(
            context, manager, parameters['ros2_control.effort_controller'],
            parameters['ros2_control.hold_controller'],
            lambda link, active, hold: on_effort_controller(link, side, active, hold))
    except ImportError as err:
        return None, str(err)
    return link, ''


def measured_chain_q(controller, out):
    """Return the position (chain order, rad or m) a ``Command`` was computed from."""
    q = [d - e for d, e in zip(out.desired_values[0], out.position_error_values)]
    names = controller.joints
    return [q[names.index(j)] for j in controller.model.joint_names]


def feed_the_hold(link, side, controller, wait=0.0):
    """Give the hold controller the position last measured and the model's gravity there.

    The gravity of the law's model (with the load it carries; zero where the hardware
    compensates gravity), clamped to the effort limits like every command; nothing is
    sent if it is not finite.
    """
    out = side.last_command()
    if out is None:
        return
    q = measured_chain_q(controller, out)
    try:
        gravity = clamp(controller.context.gravity_values(q),       # chain order
                        controller.effort_limits.tolist())
    except (NonFiniteEffortError, StateError):
        return
    link.hold_here(controller.model.joint_names, q, gravity, wait=wait)
    side.logger.info(f'{link.hold} holds the arm: given the position last measured and its '
                     'gravity as feed-forward')


def hand_to_hold(link, side):
    """Switch to ``ros2_control.hold_controller`` and feed it; True if it holds now.

    Deactivate, Ctrl-C and SIGTERM hand the arm over this way beside ros2_control
    (bounded waits: the switch's answer, the point's delivery); without a link or a hold
    controller, or when the switch fails, the caller commands zero as before.
    """
    if link is None or not link.hold:
        return False
    handed, message = link.to_hold()
    # one severity per call site: rclpy raises ValueError when a line logs at two
    if handed:
        side.logger.info(f'switch to {link.hold}: {message}')
    else:
        side.logger.error(f'switch to {link.hold}: {message}')
    controller = side.controller()
    if handed and controller is not None:
        feed_the_hold(link, side, controller, wait=0.5)
    return handed


def on_effort_controller(link, side, active, hold_active=False):
    """Answer the effort controller becoming active or inactive (the link's thread).

    Gone while the node commands: /diagnostics says it is not commanding, and the hold
    controller, once active, gets the position and its gravity. Back: the run holds the
    position measured then (the node followed the arm meanwhile), never the reference
    of before.
    """
    controller = side.controller()
    if not active and hold_active and controller is not None:
        feed_the_hold(link, side, controller)
    if not active:
        if side.commanding():
            side.event(f'{link.effort} not active: not commanding')
        return
    if link.lost and controller is not None and controller.active:
        side.logger.warning(f'{link.effort} active again: holding the position measured '
                            'when it returned')
        side.event(f'{link.effort} back: holding the position measured')
    link.lost = False


__all__ = ['ACTIVITY_QOS', 'attach', 'feed_the_hold', 'hand_to_hold', 'measured_chain_q',
           'NodeSide', 'on_effort_controller', 'Ros2ControlLink']
