"""``effort_guard``: hands the arm to a holding controller when nobody commands its efforts.

``effort_controllers/JointGroupEffortController`` writes the last command it received
for as long as no new one arrives: a ``computed_torque_node`` killed (SIGKILL), crashed or
frozen leaves its last effort on the arm for good, and a node that simply stops leaves
whatever it sent last. This process, beside ``controller_manager`` (its own process, so
that it outlives the node), watches two things:

* the effort commands on ``command_topic``: while ``effort_controller`` is active and
  nothing arrived for ``command_timeout`` s (since the last command, or since the
  controller became active), it asks ``controller_manager`` to activate
  ``hold_controller`` and deactivate ``effort_controller`` in one switch (STRICT, as soon
  as possible); the hold controller (a joint_trajectory_controller with a PID on the
  effort interfaces) holds the position it finds;
* ``controller_manager``'s ``~/activity``: once the effort controller has driven the arm,
  when neither controller is active and no other controller but the broadcaster is (the
  effort controller switched off alone), it activates ``hold_controller`` at once.

It looks at the command topic every :data:`TICK` (the messages wait in a subscription
of depth 1 that wakes nobody: :class:`~ne_dynamics_ros.nodes.spin.PolledSubscription`):
with a callback per 500 Hz command and a 5 ms timer, rclpy's executor cost the guard 45 %
of a core at SCHED_FIFO 55 beside the stack on 2 cores (2026-12-02, measured from
``/proc``), the two cores were saturated, and the processes at the default scheduling
(the node's trajectory receiver among them) went up to a second without running.

It runs at ``realtime_priority`` (SCHED_FIFO where permitted, its executor thread and the
DDS threads that bring it the commands: :mod:`~ne_dynamics_ros.nodes.computed_torque.
priority`): beside a simulated arm, ``controller_manager`` and the node all at SCHED_FIFO
on two cores, a guard at the default scheduling went up to 648 ms between its
checks with two CPU-bound processes beside the stack (``test_ros2_control.py``); at 55,
no gap over 30 ms in two such runs, and the take-over in 0.14 s. (A CI run in which it
took over 1.0 s after a SIGKILL instead of 0.1 s is more likely Fast DDS's shared memory,
which the launch now keeps the stack off: docs/ros2-control.md.) The launch gives it 55:
above the node (50), controller_manager's loop and the simulated arm.

It never switches back: ``computed_torque_node`` switches to ``effort_controller`` when
it is activated (``ros2_control.controller_manager``). What it did is logged. The bound
on an orphaned effort is ``command_timeout`` plus one switch (measured in
docs/ros2-control.md).
"""
import time

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray

from controller_manager_msgs.msg import ControllerManagerActivity
from controller_manager_msgs.srv import SwitchController
from lifecycle_msgs.msg import State

from ne_dynamics_ros.nodes.qos import ACTIVITY_QOS
from ne_dynamics_ros.nodes.computed_torque.priority import (freeze_collector, own_collector,
                                                            raise_process)
from ne_dynamics_ros.nodes.spin import (PolledSubscription, init_until_signalled,
                                        spin_until_signalled)

#: Controllers that drive nothing (they are active beside any effort controller).
PASSIVE_TYPES_PREFIX = ('joint_state_broadcaster',)
#: How often the guard looks at the command topic and the controllers, s.
TICK = 0.02
#: How long nothing may drive the arm before the hold controller is activated, s.
ORPHAN_GRACE = 0.0
#: controller_manager's own bound on a switch (the request's ``timeout``), s.
SWITCH_TIMEOUT = 1.0
#: A switch whose answer has not come after this long is forgotten (a response can be
#: lost: the switch is then judged from ``~/activity``), s.
ANSWER_DEADLINE = SWITCH_TIMEOUT + 0.5


class EffortGuard(Node):
    """The guard; see the module docstring."""

    def __init__(self, **kwargs):
        super().__init__('effort_guard', **kwargs)

        def declare(name, default, description):
            return self.declare_parameter(name, default, ParameterDescriptor(
                description=description, read_only=True)).value

        manager = declare('controller_manager', '/controller_manager',
                          'the controller_manager node')
        self.effort = declare('effort_controller', 'effort_controller',
                              'the effort controller the node commands')
        self.hold = declare('hold_controller', 'hold_controller',
                            'the controller that holds the arm')
        topic = declare('command_topic', '/effort_controller/commands',
                        'the effort controller\'s command topic')
        self.timeout = float(declare('command_timeout', 0.1,
                                     'silence (s) after which the arm is handed to '
                                     'hold_controller'))
        self.realtime_priority = int(declare(
            'realtime_priority', 0, 'SCHED_FIFO priority of the guard\'s checks and of '
            'the DDS threads that bring it the commands, where permitted (0: the default '
            'scheduling)'))
        self.states = {}
        self.others = []              # active controllers besides ours and broadcasters
        self.orphaned_since = None    # monotonic s since nothing drives the arm
        self.effort_was_active = False   # the start-up's spawners are done with the arm
        self.last_command = None      # monotonic s of the last command or activation
        self.pending = None           # (monotonic s sent, activate, deactivate) or None
        self.switches = 0
        # looked at once a tick, not a callback per 500 Hz command (module docstring)
        self.commands = PolledSubscription(self, Float64MultiArray, topic, 1, raw=True)
        self.create_subscription(ControllerManagerActivity, f'{manager}/activity',
                                 self._on_activity, ACTIVITY_QOS)
        self.client = self.create_client(SwitchController, f'{manager}/switch_controller')
        self.create_timer(TICK, self._tick)
        self.get_logger().info(
            f'guarding {self.effort} on {manager}: {self.hold} takes over after '
            f'{self.timeout * 1e3:g} ms without a command on {topic}')

    def _take_commands(self, now):
        """Note the newest command since the last tick (its receipt, monotonic s)."""
        taken = self.commands.take()
        if taken:
            age = max(0.0, (time.time_ns() - taken[-1][1]) * 1e-9)
            self.last_command = now - age

    def _on_activity(self, msg):
        before = self.states.get(self.effort)
        self.states = {c.name: c.state.id for c in msg.controllers}
        if self.states.get(self.effort) == State.PRIMARY_STATE_ACTIVE and \
                before != State.PRIMARY_STATE_ACTIVE:
            self.last_command = time.monotonic()     # a fresh activation: time to command
            self.effort_was_active = True
        self.others = [c.name for c in msg.controllers
                       if c.state.id == State.PRIMARY_STATE_ACTIVE
                       and c.name not in (self.effort, self.hold)
                       and not c.name.startswith(PASSIVE_TYPES_PREFIX)]
        if self.pending is not None:
            _, activate, deactivate = self.pending
            if all(self._active(n) for n in activate) and \
                    not any(self._active(n) for n in deactivate):
                self.pending = None       # done, whether or not its answer arrives

    def _active(self, name):
        return self.states.get(name) == State.PRIMARY_STATE_ACTIVE

    def _orphaned(self):
        """Both controllers loaded and configured, neither nor another one active."""
        if not self.effort_was_active:
            return False          # start-up: the spawners are still activating the hold
        configured = all(self.states.get(n) in (State.PRIMARY_STATE_INACTIVE,
                                                State.PRIMARY_STATE_ACTIVE)
                         for n in (self.effort, self.hold))
        return configured and not (self._active(self.effort) or self._active(self.hold)
                                   or self.others)

    def _tick(self):
        now = time.monotonic()
        self._take_commands(now)
        if self.pending is not None and now - self.pending[0] > ANSWER_DEADLINE:
            self.get_logger().error(
                f'no answer to the switch to {self.hold} in {ANSWER_DEADLINE:g} s and '
                'controller_manager\'s activity does not show it: trying again')
            self.pending = None
        if not self._orphaned():
            self.orphaned_since = None
        elif self.orphaned_since is None:
            self.orphaned_since = now
        if self.orphaned_since is not None and now - self.orphaned_since >= ORPHAN_GRACE \
                and self.pending is None:
            self._switch([self.hold], [], f'neither {self.effort} nor another controller '
                         f'has been active for {ORPHAN_GRACE * 1e3:g} ms')
        if self.pending is not None or not self._active(self.effort) or \
                self.last_command is None:
            return
        silence = now - self.last_command
        if silence > self.timeout:
            self._switch([self.hold], [self.effort],
                         f'no effort command for {silence * 1e3:.0f} ms')

    def _switch(self, activate, deactivate, reason):
        if self.pending is not None or not self.client.service_is_ready():
            return
        started = time.monotonic()
        self.pending = (started, list(activate), list(deactivate))
        request = SwitchController.Request(
            activate_controllers=activate, deactivate_controllers=deactivate,
            strictness=SwitchController.Request.BEST_EFFORT, activate_asap=True)
        request.timeout.sec = int(SWITCH_TIMEOUT)
        self.get_logger().warning(f'{reason}: activating {activate}, deactivating '
                                  f'{deactivate}')

        def done(future):
            if self.pending is not None and self.pending[0] == started:
                self.pending = None
            self.switches += 1
            result = future.result()
            elapsed = (time.monotonic() - started) * 1e3
            if result is not None and result.ok:
                self.get_logger().warning(f'{self.hold} holds the arm (switch took '
                                          f'{elapsed:.1f} ms)')
            else:
                self.get_logger().error(f'the switch to {self.hold} failed: '
                                        f'{getattr(result, "message", "no answer")}')
        self.client.call_async(request).add_done_callback(done)


def main(args=None):
    """Run ``effort_guard`` until SIGINT/SIGTERM."""
    stop = init_until_signalled(args)
    guard = EffortGuard()
    if guard.realtime_priority > 0:
        guard.get_logger().info(raise_process(guard.realtime_priority, 'checks'))
    own_collector()
    freeze_collector()      # no full collection walks the set-up objects again
    return spin_until_signalled(guard, stop)


if __name__ == '__main__':
    raise SystemExit(main())
