"""The node's link to ``controller_manager``: which controller drives the arm, and switches.

With ``ros2_control.controller_manager`` set, the node follows the manager's
``~/activity`` (``controller_manager_msgs/ControllerManagerActivity``, reliable,
transient local: the controllers' lifecycle states, published on every change) and
calls its ``~/switch_controller``: to ``ros2_control.effort_controller`` when it
activates, back to ``ros2_control.hold_controller`` when it deactivates. Both run on a
node and executor of their own (a thread), so that a transition can wait for the switch
without the control path's executor. ``controller_manager_msgs`` comes with ros2_control
(ROS 2, or the bundled build's ``PYTHONPATH``); without it the node refuses the parameter.
"""
import threading

from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.qos import QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy

#: controller_manager's ~/activity QoS.
ACTIVITY_QOS = QoSProfile(depth=1, reliability=QoSReliabilityPolicy.RELIABLE,
                          durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)


class Ros2ControlLink:
    """Follow a controller_manager's controllers; switch between effort and hold.

    Attributes:
        effort_active: True/False once ``~/activity`` said, None before.
        hold_active: likewise for the hold controller ('' : never).
    """

    def __init__(self, context, manager, effort, hold, on_change):
        """Start following ``manager`` (a node name).

        ``on_change(effort_active)`` is called from the link's thread when the effort
        controller's activity changes.

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
        self._switch_type = SwitchController
        self.manager, self.effort, self.hold = manager.rstrip('/') or '/', effort, hold
        self.effort_active = None
        self.hold_active = None
        self.states = {}
        #: the node wants the effort controller and has not had it yet (activation in
        #: any start order: retried when the controllers appear)
        self.wanted = False
        self._retrying = threading.Lock()
        self._on_change = on_change
        self.node = rclpy.create_node('computed_torque_ros2_control_link', context=context,
                                      start_parameter_services=False)
        self.node.create_subscription(ControllerManagerActivity, f'{self.manager}/activity',
                                      self._on_activity, ACTIVITY_QOS)
        self.client = self.node.create_client(SwitchController,
                                              f'{self.manager}/switch_controller')
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
        self.hold_active = bool(self.hold) and states.get(self.hold) == self._active_id
        changed = effort != self.effort_active
        self.effort_active = effort
        if effort:
            self.wanted = False
        elif self.wanted and self._ready():
            # loaded now (the node started first): take the arm; off this thread, which
            # must stay free to receive the answer
            threading.Thread(target=self._retry, daemon=True).start()
        if changed:
            self._on_change(effort)

    def _ready(self):
        """Tell whether the effort controller is loaded and the hold controller holds."""
        return self.effort in self.states and (not self.hold or self.hold_active)

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

        Before the effort controller is loaded (the node started before the controllers)
        the switch waits: it is made when ``~/activity`` lists the controller.
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
        return self.switch_to_effort()

    def switch_to_effort(self):
        """Switch: activate the effort controller, deactivate the hold controller."""
        hold = [self.hold] if self.hold and self.hold_active else []
        ok, message = self.switch([self.effort], hold)
        if ok:
            self.wanted = False
        return ok, message

    def to_hold(self):
        """Hand the arm to the hold controller; (False, why) when there is none."""
        self.wanted = False
        if not self.hold:
            return False, 'no ros2_control.hold_controller'
        if self.hold not in self.states:
            return False, f'{self.hold} is not loaded'
        return self.switch([self.hold], [self.effort] if self.effort_active else [])

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


__all__ = ['ACTIVITY_QOS', 'Ros2ControlLink']
