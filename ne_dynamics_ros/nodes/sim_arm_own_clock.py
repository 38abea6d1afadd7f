"""sim_arm_node on its own clock: the wall-clock timer and lockstep, as a mixin of the node.

:class:`OwnClockMixin` holds what :class:`~ne_dynamics_ros.nodes.sim_arm_node.SimArmNode`
does when nothing outside paces it: ``clock: timer`` (a timer at ``publish_rate`` steps the
arm to the node clock's now; a command acts from the instant it arrives) and ``lockstep``
(each state answered by one command, simulated time on ``/clock``). The node's module
docstring says what each does and why.
"""
import time

WARN_PERIOD = 2.0  # seconds between repeats of the same warning


class OwnClockMixin:
    """The node's timer and lockstep methods (see the module docstring)."""

    def run_until(self, end_time):
        """Lockstep: let simulated time run up to ``end_time`` (s; None = without end).

        The demo holds the arm at t = 0 (``run_until(0.0)``) until the controller and the
        trajectory are in place, then releases it for the whole experiment.
        """
        self.end_time = end_time
        if self.lockstep:
            self._advance()

    def _advance(self):
        """Lockstep: apply the answer to the current state for one period, publish next."""
        if self._answer is None:
            return
        if self.end_time is not None and \
                self.arm.time + self.publish_period > self.end_time + 1e-9:
            return
        command, self._answer = self._answer, None
        self.arm.step(command, self.publish_period)
        self._publish_state()

    def _on_timer(self):
        now = self.get_clock().now()
        if self._advance_to(now):
            self._publish_state(now)

    def _take_command(self, command):
        """Take ``command``; on the timer the arm is first carried to now under the old one.

        A command acts from its arrival, not over the period before it (module docstring).
        """
        if not self.lockstep and self.clock == 'timer':
            self._advance_to(self.get_clock().now())
        self.command = command

    def _advance_to(self, now):
        """Step the arm to ``now`` (rclpy Time) under the command in force; False: not after.

        With ``brakes`` nothing moves before the first command; at most five periods.
        """
        if self._last_step is None:
            self._last_step = now
            return True
        elapsed = (now - self._last_step).nanoseconds * 1e-9
        if elapsed <= 0:
            return False
        self._last_step = now
        if self._brakes and self.commands_received == 0:
            return True                       # held by its brakes: time passes, not motion
        limit = 5 * self.publish_period
        if elapsed > limit:
            self.get_logger().warning(f'the arm was not stepped for {elapsed:.3f} s; simulating '
                                      f'only {limit:.3f} s of it (it falls behind the clock)',
                                      throttle_duration_sec=WARN_PERIOD)
            elapsed = limit
        self.arm.step(self.command, elapsed)
        return True

    def _lockstep_watchdog(self):
        """Publish the first state once someone listens; republish an unanswered one."""
        if self.state_publisher.get_subscription_count() == 0:
            return
        now = time.monotonic()
        if self._last_publish_wall is None:
            self._publish_state()
        elif self._awaiting_answer and now - self._last_publish_wall > self.lockstep_timeout:
            self.get_logger().warning(
                f'no effort command answered the state at t = {self.arm.time:.3f} s within '
                f'{self.lockstep_timeout:g} s; publishing it again',
                throttle_duration_sec=WARN_PERIOD)
            self._publish_state()
