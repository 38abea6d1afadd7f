"""sim_arm_node on the hardware's clock: the two hardware wirings, as a mixin of the node.

:class:`HardwareClockMixin` holds what :class:`~ne_dynamics_ros.nodes.sim_arm_node.
SimArmNode` does when ros2_control's hardware paces it (``clock: hardware``):

* behind ``topic_based_ros2_control`` (``command_interface: joint_state``): each
  ``JointState`` command the hardware publishes steps the arm and publishes one state
  (:meth:`HardwareClockMixin._hardware_write`), the queue of the plugin watched through
  what each cycle read (:meth:`HardwareClockMixin._on_read`);
* behind the package's ``ne_dynamics_ros_hardware/SimArmSystem`` (``command_interface:
  sim_arm_system``): the link ``@<hardware_channel>/arm`` served on a thread of its own
  (:mod:`ne_dynamics_ros.simulation.hardware_link`), every write answered at once.

The node's module docstring says what each does and why.
"""
import threading
import time

import numpy as np
from rclpy.time import Time
from sensor_msgs.msg import JointState

from ne_dynamics_ros.nodes import cdr
from ne_dynamics_ros.simulation import hardware_link

#: command_interface sim_arm_system: each write the hardware sent (efforts by name,
#: stamped with the write's instant), for whoever watches the loop.
WRITES_TOPIC = '~/hardware_writes'
#: command_interface sim_arm_system: how often the link thread looks up from its socket
#: to see whether the node is shutting down, s.
LINK_POLL = 0.2
#: command_interface sim_arm_system: at most this many waiting writes taken in one go.
MAX_BATCH = 64
#: command_interface sim_arm_system: the inverse inertia sent with the states is renewed
#: every this many answers (20 ms at 500 Hz: the arm moves 0.06 rad at most at 3 rad/s).
INERTIA_EVERY = 10
WARN_PERIOD = 2.0  # seconds between repeats of the same warning


class HardwareClockMixin:
    """The node's hardware-clock methods (see the module docstring)."""

    def _hardware_write(self, command, stamp_ns=0):
        """Hardware clock: step over the time since the last write, take ``command``, publish.

        The command in force since the previous write acted over the whole interval
        (bounded by ``max_step``). With ``state_at_read`` the arm is carried on under the
        new command to the hardware's next ``read()`` (its cycle learnt from the cycles'
        stamps) and that state is published at once, stamped then: what the next read
        finds is the arm as it is at that read, as a robot's newest state is. Otherwise
        the state at this write's arrival is published, stamped with it.

        ``stamp_ns``: the write's own stamp (the hardware stamps its command message),
        taken as the instant of the write when it is within ``max_step`` before the
        arrival: a callback run late (the executor busy) must not shift the arm's time.
        """
        now = self.get_clock().now().nanoseconds
        if 0 < now - stamp_ns < self.max_step * 1e9:
            now = stamp_ns
        released = not self._brakes or self.commands_received > 0
        if self._sim_ns is not None:
            elapsed = (now - self._sim_ns) * 1e-9
            if elapsed > self.max_step:
                self.late_writes += 1
                self.get_logger().warning(
                    f'no hardware write for {elapsed:.3f} s; simulating only '
                    f'{self.max_step:.3f} s of it (the arm falls behind the clock)',
                    throttle_duration_sec=WARN_PERIOD)
                elapsed = self.max_step
            if elapsed > 0 and released:
                self.arm.step(self.command, elapsed)
        self._sim_ns = max(now, self._sim_ns or 0)
        if self.commands_received > 0 or np.any(command):
            self.commands_received += 1   # the brakes open on the first non-zero command
            released = True
        self.command = command
        read_ns = self.backlog.next_read_ns(now) if self.state_at_read else None
        if read_ns is not None and released:
            lead = min(read_ns - self._sim_ns, self.backlog.cycle_period_ns())
            if lead > 0:
                self.arm.step(self.command, lead * 1e-9)
                self._sim_ns += lead
        if not self.backlog.withhold(now):
            self._publish_state(Time(nanoseconds=self._sim_ns))
            self.backlog.published(tuple(self.arm.position.tolist()), time.time_ns())

    def _on_read(self, msg):
        """Hardware clock: the state a cycle read; drain the hardware's queue if it lags.

        The hardware takes the oldest state it holds (:mod:`~ne_dynamics_ros.simulation.
        hardware_reads`); when a cycle read an older one than the newest published before
        it, the next states are withheld until the queue is drained.
        """
        index = {name: k for k, name in enumerate(msg.name)}
        if len(msg.position) != len(msg.name) or \
                any(j not in index for j in self.arm.joint_names):
            return
        positions = tuple(msg.position[index[j]] for j in self.arm.joint_names)
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        self.backlog.read(positions, stamp)

    # -- the hardware link (command_interface sim_arm_system) ----------------------------

    def _start_link(self):
        """Bind ``@<hardware_channel>/arm`` and serve it on a thread of its own.

        Raises:
            HardwareLinkError: the channel's address is taken (another arm on it).
        """
        self.link = hardware_link.HardwareLink(self.hardware_channel)
        self.hardware_clock = hardware_link.HardwareClock(self.arm, self.max_step,
                                                          brakes=self._brakes)
        self.writes_publisher = self.create_publisher(JointState, WRITES_TOPIC, 10)
        self.states_undelivered = 0
        self.writes_caught_up = 0
        self._inertia_age, self._inverse_inertia = 0, None
        self._link_stop = threading.Event()
        self._link_thread = threading.Thread(target=self._serve_link, name='hardware_link',
                                             daemon=True)
        self._link_thread.start()

    def _serve_link(self):
        """Answer every write with the state the next read finds (module docstring).

        Runs at the node's ``realtime_priority`` (``ros2_control.launch.py``: 49, just
        below controller_manager's loop, which wakes it: above it, the answer preempted
        the loop's ``write()`` on its core). A malformed datagram is dropped with a
        throttled warning.
        """
        if int(self._realtime_priority) > 0:
            from ne_dynamics_ros.nodes.computed_torque.priority import raise_priority
            text, _ = raise_priority(int(self._realtime_priority), [0])
            text = text.replace('control and watchdog', 'link')
            self.get_logger().info(f'hardware link: {text}')
        previous, order = None, None
        while not self._link_stop.is_set():
            got = self.link.receive(LINK_POLL)
            # every write waiting now: each steps the arm over its own interval, and only
            # the newest is answered (the hardware keeps the newest state only), so a
            # stall of this thread is caught up in one go rather than a cycle behind ever
            # after (on a slow 2-core machine, writes reached the arm 4 ms late at p50)
            writes = []               # (command, arm order, sender) of each valid one
            while got is not None:
                data, sender = got
                try:
                    command = hardware_link.parse_command(data, previous)
                    if previous is None or command.names is not previous.names:
                        order = self._hardware_order(command.names)
                except hardware_link.HardwareLinkError as exc:
                    self.commands_dropped += 1
                    self.get_logger().warning(f'dropped hardware write: {exc}',
                                              throttle_duration_sec=WARN_PERIOD)
                else:
                    previous = command
                    writes.append((command, order, sender))
                got = self.link.receive(0.0) if len(writes) < MAX_BATCH else None
            self.writes_caught_up += max(0, len(writes) - 1)
            for k, (command, order, sender) in enumerate(writes):
                self._answer_write(command, order, sender, answer=k == len(writes) - 1)

    def _hardware_order(self, names):
        """Return (arm index of each hardware joint) for the hardware's joint ``names``.

        Raises:
            HardwareLinkError: the hardware's joints are not the arm's, each once.
        """
        joints = list(self.arm.joint_names)
        if sorted(names) != sorted(joints):
            raise hardware_link.HardwareLinkError(
                f"the hardware's joints {list(names)} are not the arm's {joints}")
        return np.array([joints.index(name) for name in names])

    def _answer_write(self, command, order, sender, answer=True):
        """Step the arm under one write; answer it unless a newer write waits.

        ``answer`` False (a newer write waits): the arm only steps. Otherwise the state
        goes back to the hardware and what happened is published.
        """
        effort = np.empty(self.arm.n)
        effort[order] = command.effort
        clock = self.hardware_clock
        stamp_ns = clock.write(effort, command.read_ns, command.write_ns)
        self.command = clock.command
        self.commands_received += bool(clock.released)
        self.late_writes = clock.late_writes
        if not answer:
            return
        state_effort = self._state_effort()
        position, velocity = self.arm.position, self.arm.velocity
        # for a read at another instant, or one this answer comes too late for: the
        # plugin carries the state there under the commands it wrote since (the brakes
        # on: held still). The inertia changes slowly: renewed every INERTIA_EVERY writes.
        if clock.released:
            acceleration = self.arm.acceleration(position, velocity, self.command)
            if self._inertia_age <= 0:
                self._inverse_inertia = hardware_link.inverse_inertia(
                    self.arm.acceleration, position, velocity)
                self._inertia_age = INERTIA_EVERY
            self._inertia_age -= 1
            inverse = self._inverse_inertia[np.ix_(order, order)]
        else:
            acceleration, inverse = np.zeros(self.arm.n), np.zeros((self.arm.n,) * 2)
        if not self.link.send(hardware_link.pack_state(
                command.seq, stamp_ns, position[order], velocity[order], acceleration[order],
                state_effort[order], inverse), sender):
            self.states_undelivered += 1
        self._publish_state(Time(nanoseconds=stamp_ns), state_effort)
        if self._names_block is None:
            self._names_block = cdr.joint_names_block(list(self.arm.joint_names))
        sec, nanosec = divmod(command.write_ns, 1_000_000_000)
        self.writes_publisher.publish(cdr.joint_state_bytes(
            sec, nanosec, b'', self._names_block, (), (), effort.tolist()))

    def _stop_link(self):
        """Stop the link thread, free the channel and say what the link carried."""
        self._link_stop.set()
        self._link_thread.join(timeout=5 * LINK_POLL)
        self.link.close()
        self.get_logger().info(
            f'hardware link: {self.commands_received} writes taken after the brakes opened, '
            f'{self.commands_dropped} dropped, {self.states_undelivered} states not '
            f'delivered, {self.late_writes} writes after more than {self.max_step:g} s, '
            f'{self.writes_caught_up} taken behind a newer one (not answered)')


__all__ = ['HardwareClockMixin', 'LINK_POLL', 'WRITES_TOPIC']
