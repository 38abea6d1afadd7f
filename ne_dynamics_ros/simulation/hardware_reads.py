"""What a topic-based hardware interface read: the simulated arm's states, matched.

Pure module (no ROS). PickNik's ``topic_based_ros2_control`` (0.3.0) subscribes to the
robot's states best effort with a queue of five and its ``read()`` takes one message per
cycle, the *oldest* queued. A robot on the hardware's clock publishes one state per
write, so one state arrives per cycle and one is taken: once a state has come too late
for the read it was meant for (a cycle that ran early, a preempted process), the next
read takes it and every read after takes the state one cycle older than the newest, for
good. A real driver's ``read()`` returns the robot's newest state. :class:`ReadBacklog`
lets the simulated robot see that lag and take it out: it remembers the states it
published, is told which state each cycle read (``joint_state_broadcaster`` republishes
it under the cycle's stamp), and says how many of its next states to withhold so that the
queue drains and the next read finds the newest state again. It also learns the
hardware's cycle from those stamps (:meth:`ReadBacklog.next_read_ns`), so that the
robot can publish the state it will be in when the next ``read()`` takes it.
"""
from collections import deque

#: How long before a cycle's stamp a state must have been published to count as there
#: for that cycle's read, ns (DDS on one host delivers in ~0.1-0.3 ms).
IN_TRANSIT_NS = 500_000
#: How many published states are remembered.
HISTORY = 32


class ReadBacklog:
    """Count the states queued behind the one each ``read()`` took; say what to withhold.

    Attributes:
        reads: reads matched to a published state.
        behind: reads that took an older state than the newest published before them.
        withheld: states withheld to drain the queue.
    """

    def __init__(self, history: int = HISTORY, in_transit_ns: int = IN_TRANSIT_NS):
        self._published = deque(maxlen=history)   # (sequence, published ns, positions)
        self._by_positions = {}
        self._sequence = 0
        self._in_transit = in_transit_ns
        self._to_withhold = 0
        self._settled_after_ns = 0
        self.reads = self.behind = self.withheld = 0
        self._cycles = deque(maxlen=65)          # the last cycles' stamps, ns

    def cycle_period_ns(self):
        """Return the hardware's cycle, ns (the median spacing of the reads seen; 0: unknown)."""
        if len(self._cycles) < 9:
            return 0
        stamps = list(self._cycles)
        spacing = sorted(b - a for a, b in zip(stamps, stamps[1:]) if b > a)
        return spacing[len(spacing) // 2] if spacing else 0

    def next_read_ns(self, write_ns: int):
        """Return when the ``read()`` after the write at ``write_ns`` comes, ns (or None).

        The cycles are on a grid (controller_manager sleeps to the next multiple of its
        period): the last cycle stamp seen plus whole periods. A write comes after its
        cycle's read (its stamp may be that cycle's own), so the next read is the first
        grid point more than half a period after it. None until enough cycles were seen.
        """
        period = self.cycle_period_ns()
        if not period:
            return None
        last = self._cycles[-1]
        after = write_ns + period // 2 - last
        return last + max(1, -(-after // period)) * period

    def withhold(self, now_ns: int) -> bool:
        """Tell whether the state about to be published at ``now_ns`` (ns) is withheld."""
        if self._to_withhold <= 0:
            return False
        self._to_withhold -= 1
        self.withheld += 1
        # reads before the next published state cannot show the drained queue yet
        self._settled_after_ns = now_ns
        return True

    def published(self, positions, published_ns: int):
        """Record a published state: its positions (a tuple of floats) and when, ns."""
        if len(self._published) == self._published.maxlen:
            _, _, oldest = self._published[0]
            if self._by_positions.get(oldest, (None,))[0] == self._published[0][0]:
                del self._by_positions[oldest]
        self._sequence += 1
        self._published.append((self._sequence, published_ns, positions))
        self._by_positions[positions] = (self._sequence, published_ns)

    def read(self, positions, cycle_ns: int):
        """Take a report of the state the cycle stamped ``cycle_ns`` (ns) read.

        Args:
            positions: the positions the hardware read, in the order :meth:`published`
                was given them (a tuple of floats, compared exactly: doubles pass the
                chain unchanged).
            cycle_ns: the cycle's stamp, ns (the broadcaster's ``header.stamp``).

        Returns:
            int: how many newer states were queued behind the one read (0 when it was
            the newest there, or the state is not one of the remembered ones).
        """
        if not self._cycles or cycle_ns > self._cycles[-1]:
            self._cycles.append(cycle_ns)
        found = self._by_positions.get(positions)
        if found is None:
            return 0
        sequence, _ = found
        self.reads += 1
        newest = 0
        for number, published_ns, _ in reversed(self._published):
            if published_ns <= cycle_ns - self._in_transit:
                newest = number
                break
        queued = max(0, newest - sequence)
        if queued:
            self.behind += 1
            if cycle_ns > self._settled_after_ns and self._to_withhold == 0:
                self._to_withhold = queued
        return queued


__all__ = ['IN_TRANSIT_NS', 'ReadBacklog']
