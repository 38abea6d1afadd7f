"""The node's two threads: the state-timeout watchdog and the trajectory reception.

Why threads (and a process for trajectories): see :mod:`ne_dynamics_ros.nodes.
computed_torque`. A mixin of :class:`~ne_dynamics_ros.nodes.computed_torque.node.
ComputedTorqueNode`: it uses the node's ``controller``, publishers, lock and warnings.
Started by configuring, stopped by cleaning up or shutting down.
"""
import subprocess
import threading
import time

from ne_dynamics_ros.control.trajectory import TrajectoryError
from ne_dynamics_ros.nodes.cdr import float64_multi_array_bytes
from ne_dynamics_ros.nodes.computed_torque.readers import stamp_ns
from ne_dynamics_ros.nodes.computed_torque.support import FloatingPointErrors
from ne_dynamics_ros.nodes.trajectory_receiver import message_frame, trajectory_fields


class ControlThreads:
    """Watchdog and trajectory-reception threads of the node (a mixin)."""

    def start_threads(self):
        """Start the watchdog and the trajectory thread (the receiver process is running)."""
        self._stopping = threading.Event()
        self._threads = [
            threading.Thread(target=self._run_watchdog, name='state_timeout_watchdog',
                             daemon=True),
            threading.Thread(target=self._receive_trajectories, name='trajectory_reception',
                             daemon=True)]
        for thread in self._threads:
            thread.start()

    def stop_threads(self, timeout=2.0):
        """Stop the watchdog, the trajectory receiver and its thread (idempotent).

        Nothing to do before :meth:`start_threads` (a node never configured).
        """
        if self._stopping is None:
            return
        self._stopping.set()
        if self.goals is not None:
            self.goals.stop()           # kept until teardown: its counts are reported
        if self._receiver is not None:
            self._receiver.close()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout)

    # ---- trajectories ---------------------------------------------------------------------

    def _on_trajectory_bytes(self, data):
        """Read, check and install one serialized trajectory in this thread.

        What the receiving process does with each message (:func:`message_frame`), done
        here: for a caller that holds message bytes in this process.
        """
        controller = self.controller
        header, arrays = message_frame(data, self._max_trajectory_bytes,
                                       None if controller is None
                                       else controller.model.joint_names)
        self._handle_frame(header, arrays, self.get_clock().now().nanoseconds)

    def _receive_trajectories(self):
        """Trajectory thread: handle the receiving process's frames until it ends."""
        receiver = self._receiver
        for header, arrays in receiver.frames():
            if header['kind'] == 'ready':
                self._receiver_action = header.get('action', '')
                self.get_logger().debug('trajectory receiver subscribed; action: '
                                        f'{self._receiver_action}')
                if header.get('action') and not header.get('served'):
                    self.get_logger().warning(f'FollowJointTrajectory {header["action"]}')
                self._receiver_ready.set()
                continue
            # the time the receiving process took the message, on this node's clock
            age = max(0, time.monotonic_ns()
                      - header.get('received_monotonic_ns', time.monotonic_ns()))
            try:
                self._handle_frame(header, arrays,
                                   self.get_clock().now().nanoseconds - age)
            except Exception as err:  # noqa: BLE001 - a bad frame must not end the thread
                self.dropped_trajectories += 1
                self._warnings.warn('trajectory', f'dropped a trajectory message: '
                                    f'{type(err).__name__}: {err}')
        if not self._stopping.is_set():
            try:
                code = receiver.process.wait(1.0)
            except subprocess.TimeoutExpired:
                code = None
            self.get_logger().error(
                f'the trajectory receiver process ended (exit code {code}): no trajectory '
                'is received any more; the reference in force stays')

    def _handle_frame(self, header, arrays, received_ns):
        """Count, warn about or install one frame of :func:`message_frame`."""
        kind = header['kind']
        if kind == 'dropped':
            self.dropped_trajectories += 1
            self._warnings.warn('trajectory_superseded' if header.get('superseded')
                                else 'trajectory', header['reason'])
        elif kind == 'rejected':
            if self.controller is None:
                self._warnings.warn('trajectory', 'rejected a trajectory: no robot model yet')
                return
            err = self.controller.reject_trajectory(header['reason'])
            self._warnings.warn('trajectory', f'rejected a trajectory, keeping the previous '
                                f'one: {err}')
        elif kind == 'trajectory':
            self._install(trajectory_fields(header, arrays), received_ns)
        elif self.goals is None:
            return                   # frames of the action before the model exists
        elif kind == 'goal':
            self.goals.install_goal(header, trajectory_fields(header, arrays), received_ns)
        elif kind == 'goal_rejected':
            self.goals.reject(header)
        elif kind == 'cancel':
            self.goals.cancel(header['goal_id'])

    def _install(self, fields, received_ns):
        """Check, interpolate and install one :class:`JointTrajectoryFields` (any thread).

        ``received_ns``: when it arrived, on the node's clock.
        """
        if self.controller is None:
            self._warnings.warn('trajectory', 'rejected a trajectory: no robot model yet')
            return
        fp_errors = FloatingPointErrors()
        try:
            with fp_errors.context():
                prepared = self.controller.prepare_trajectory(
                    fields.joint_names, fields.points, stamp_ns(fields), received_ns)
            trajectory = self.controller.install_trajectory(prepared)
            if self.goals is not None:
                self.goals.wake()          # a goal the topic trajectory replaced
        except TrajectoryError as err:
            self._warnings.warn('trajectory', f'rejected a trajectory, keeping the previous '
                                f'one: {err}')
            return
        finally:
            self._warn_floating_point(fp_errors, 'preparing a trajectory')
        self.accepted_trajectories += 1
        count = len(trajectory.times)
        log = self.get_logger().debug if count == 1 else self.get_logger().info
        log(f'new trajectory: {count} points, {trajectory.times[-1]:.3f} s')

    # ---- the watchdog ---------------------------------------------------------------------

    def _watchdog_period(self):
        timeout = float(self.get_parameter('state_timeout').value)
        return min(max(timeout / 4.0, 0.005), 0.1)

    def _run_watchdog(self):
        """Watchdog thread: the state timeout every period, /diagnostics every second."""
        while not self._stopping.wait(self._watchdog_period()):
            try:
                self._check_state_timeout()
                # off the control path: whether anyone subscribes to the ~/ outputs
                self._outputs_wanted = (
                    self._tracking_error_pub.get_subscription_count() > 0,
                    self._desired_pub.get_subscription_count() > 0,
                    self._controller_state_pub is not None
                    and self._controller_state_pub.get_subscription_count() > 0)
                self.publish_diagnostics_when_due()
            except Exception as err:  # noqa: BLE001 - e.g. the context shut down meanwhile
                if self._stopping.is_set() or not self.context.ok():
                    return
                self._warnings.warn('watchdog', f'watchdog: {type(err).__name__}: {err}')

    def _check_state_timeout(self):
        if self.controller is None:
            return
        with self._command_lock:
            timeout = self.controller.check_timeout(time.monotonic_ns())
            if timeout is None:
                return
            self._effort_pub.publish(float64_multi_array_bytes(timeout.effort.tolist()))
        if timeout.started:
            if self.goals is not None:
                self.goals.wake()          # the goal the timeout aborted
            self.statistics.timed_out()
            self.get_logger().error(
                f'no valid joint_states for {timeout.silence:.3f} s (state_timeout '
                f'{self.controller.settings.state_timeout} s): stopped commanding, publishing '
                'zero effort until states return')


__all__ = ['ControlThreads']
