"""The node's two threads: the trajectory intake and the watchdog, objects the node owns.

Why threads (and a process for trajectories): see :mod:`ne_dynamics_ros.nodes.
computed_torque`. Each object is given the few things it needs; neither reads the node:

* :class:`TrajectoryIntake` takes the trajectory receiver process's frames on a thread
  of its own and installs them in the controller in force (or hands action frames to
  the goal link); it counts what it accepted and dropped, and knows when the receiver
  is ready.
* :class:`Watchdog` calls a function of the node's every period (the state timeout,
  which outputs are wanted, ``/diagnostics``) on a thread of its own, or at once when
  woken (an event for ``/diagnostics``).

Started by configuring, stopped by cleaning up or shutting down.
"""
import subprocess
import threading
import time

from ne_dynamics_ros.control.reference.trajectory import TrajectoryError
from ne_dynamics_ros.nodes.computed_torque.readers import stamp_ns
from ne_dynamics_ros.nodes.computed_torque.support import FloatingPointErrors
from ne_dynamics_ros.nodes.trajectory_receiver import message_frame, trajectory_fields


class TrajectoryIntake:
    """Install the trajectories the receiver process reads, on a thread of its own.

    Args:
        controller_of: returns the controller in force, or None (no model yet).
        goals_of: returns the node's goal link (action goals), or None.
        clock: the node's clock (a trajectory's receipt time is on it).
        logger: the node's logger.
        warnings: the node's throttled warnings
            (:class:`~ne_dynamics_ros.nodes.computed_torque.support.ThrottledWarnings`).

    Attributes:
        ready: set when the receiver process said it subscribed (and serves the action).
        action: the action name the receiver said it serves ('' for none).
        accepted_trajectories: trajectory messages that became the reference.
        dropped_trajectories: trajectory messages dropped before the controller saw them
            (too large, undeserializable, superseded while waiting); the controller
            counts its own refusals.
    """

    def __init__(self, controller_of, goals_of, clock, logger, warnings):
        self._controller_of, self._goals_of = controller_of, goals_of
        self._clock, self._logger, self._warnings = clock, logger, warnings
        self.ready = threading.Event()
        self._state_applied = threading.Condition()
        self._applied_seq = 0        # the number of the last ``state`` frame applied
        self.action = ''
        self.accepted_trajectories = 0
        self.dropped_trajectories = 0
        self._receiver = None
        self._max_bytes = 0
        self._thread = None
        self._stopping = threading.Event()

    def start(self, receiver, max_trajectory_bytes: int):
        """Handle ``receiver``'s frames (a :class:`TrajectoryReceiver`) from now on."""
        self.ready.clear()
        self._receiver, self._max_bytes = receiver, max_trajectory_bytes
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name='trajectory_reception',
                                        daemon=True)
        self._thread.start()

    def state_applied_wait(self, seq: int, timeout: float) -> bool:
        """Wait until the receiver has applied ``state`` frame ``seq`` (or a later one).

        At most ``timeout`` s; returns whether it has.
        """
        with self._state_applied:
            return self._state_applied.wait_for(lambda: self._applied_seq >= seq, timeout)

    @property
    def thread(self):
        """The thread handling the receiver's frames, or None before :meth:`start`."""
        return self._thread

    def stop(self, timeout: float = 2.0):
        """Close the receiver and join the thread (idempotent)."""
        self._stopping.set()
        if self._receiver is not None:
            self._receiver.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def receiving(self):
        """Return the reception thread (None before :meth:`start`)."""
        return self._thread

    def take_bytes(self, data: bytes):
        """Read, check and install one serialized trajectory in the calling thread.

        What the receiving process does with each message (:func:`message_frame`), done
        here: for a caller that holds message bytes in this process.
        """
        controller = self._controller_of()
        header, arrays = message_frame(data, self._max_bytes,
                                       None if controller is None
                                       else controller.model.joint_names)
        self._handle_frame(header, arrays, self._clock.now().nanoseconds)

    def _run(self):
        """Thread: handle the receiving process's frames until it ends."""
        receiver = self._receiver
        for header, arrays in receiver.frames():
            if header['kind'] == 'ready':
                self.action = header.get('action', '')
                self._logger.debug(f'trajectory receiver subscribed; action: {self.action}')
                if header.get('action') and not header.get('served'):
                    self._logger.warning(f'FollowJointTrajectory {header["action"]}')
                self.ready.set()
                continue
            if header['kind'] == 'state_applied':
                with self._state_applied:
                    self._applied_seq = max(self._applied_seq, int(header.get('seq') or 0))
                    self._state_applied.notify_all()
                continue
            # the time the receiving process took the message, on this node's clock
            age = max(0, time.monotonic_ns()
                      - header.get('received_monotonic_ns', time.monotonic_ns()))
            try:
                self._handle_frame(header, arrays, self._clock.now().nanoseconds - age)
            except Exception as err:  # noqa: BLE001 - a bad frame must not end the thread
                self.dropped_trajectories += 1
                self._warnings.warn('trajectory', f'dropped a trajectory message: '
                                    f'{type(err).__name__}: {err}')
        if not self._stopping.is_set():
            try:
                code = receiver.process.wait(1.0)
            except subprocess.TimeoutExpired:
                code = None
            self._logger.error(
                f'the trajectory receiver process ended (exit code {code}): no trajectory '
                'is received any more; the reference in force stays')

    def _handle_frame(self, header, arrays, received_ns):
        """Count, warn about or install one frame of :func:`message_frame`."""
        kind = header['kind']
        controller, goals = self._controller_of(), self._goals_of()
        if kind == 'dropped':
            self.dropped_trajectories += 1
            self._warnings.warn('trajectory_superseded' if header.get('superseded')
                                else 'trajectory', header['reason'])
        elif kind == 'rejected':
            if controller is None:
                self._warnings.warn('trajectory', 'rejected a trajectory: no robot model yet')
                return
            err = controller.reject_trajectory(header['reason'])
            self._warnings.warn('trajectory', f'rejected a trajectory, keeping the previous '
                                f'one: {err}')
        elif kind == 'trajectory':
            self._install(controller, goals, trajectory_fields(header, arrays), received_ns)
        elif goals is None:
            return                   # frames of the action before the model exists
        elif kind == 'goal':
            goals.install_goal(header, trajectory_fields(header, arrays), received_ns)
        elif kind == 'goal_rejected':
            goals.reject(header)
        elif kind == 'cancel':
            goals.cancel(header['goal_id'])

    def _install(self, controller, goals, fields, received_ns):
        """Check, interpolate and install one :class:`JointTrajectoryFields`.

        ``received_ns``: when it arrived, on the node's clock.
        """
        if controller is None:
            self._warnings.warn('trajectory', 'rejected a trajectory: no robot model yet')
            return
        fp_errors = FloatingPointErrors()
        try:
            with fp_errors.context():
                prepared = controller.prepare_trajectory(
                    fields.joint_names, fields.points, stamp_ns(fields), received_ns)
            # a zero stamp starts now, not at its receipt (JTC: at its first sample)
            trajectory = controller.install_trajectory(
                prepared, now_ns=self._clock.now().nanoseconds)
            if goals is not None:
                goals.wake()               # a goal the topic trajectory replaced
        except TrajectoryError as err:
            self._warnings.warn('trajectory', f'rejected a trajectory, keeping the previous '
                                f'one: {err}')
            return
        finally:
            self._warnings.floating_point(fp_errors, 'preparing a trajectory')
        self.accepted_trajectories += 1
        count = len(trajectory.times)
        if prepared.stretch != 1.0:
            self._logger.warning(
                f'new trajectory: {count} points, played {prepared.stretch:.4g}x slower than '
                f'sent ({trajectory.times[-1]:.3f} s) to stay within the effort limits')
            return
        log = self._logger.debug if count == 1 else self._logger.info
        log(f'new trajectory: {count} points, {trajectory.times[-1]:.3f} s')


class Watchdog:
    """Call ``tick()`` every ``period_of()`` seconds on a thread of its own until stopped.

    Args:
        period_of: returns the period, s (read again before every wait).
        tick: the work of one period; an exception is passed to ``failed``.
        failed: ``failed(err)`` returns True to stop the thread (e.g. the context shut
            down meanwhile), False to go on.
    """

    def __init__(self, period_of, tick, failed):
        self._period_of, self._tick, self._failed = period_of, tick, failed
        self._stopping = threading.Event()
        self._woken = threading.Event()
        self.thread = None

    def wake(self):
        """Run the next ``tick()`` now instead of at the end of the period (any thread)."""
        self._woken.set()

    def start(self):
        """Start the thread."""
        self._stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name='state_timeout_watchdog',
                                       daemon=True)
        self.thread.start()

    def stop(self, timeout: float = 2.0):
        """Stop the thread and join it (idempotent)."""
        self._stopping.set()
        self._woken.set()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout)

    def _run(self):
        while True:
            self._woken.wait(self._period_of())
            self._woken.clear()
            if self._stopping.is_set():
                return
            try:
                self._tick()
            except Exception as err:  # noqa: BLE001 - reported by the owner
                if self._stopping.is_set() or self._failed(err):
                    return


__all__ = ['TrajectoryIntake', 'Watchdog']
