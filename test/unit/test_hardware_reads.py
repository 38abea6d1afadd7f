"""The simulated robot's view of what topic_based_ros2_control read (ReadBacklog).

A small model of the plugin stands in for it here: a best-effort queue of five, and a
``read()`` per cycle that takes the oldest message (topic_based_ros2_control 0.3.0's
``spin_some``, one message per ready subscription). The robot publishes one state per
write; one state that arrives after the read it was meant for leaves every later read a
cycle behind, unless the robot withholds a state when it sees that.
"""
from collections import deque

import pytest

from ne_dynamics_ros.simulation.hardware_reads import IN_TRANSIT_NS, ReadBacklog

PERIOD = 2_000_000            # 500 Hz, ns
WRITE_OFFSET = 200_000        # the write after the read within a cycle, ns
TRANSIT = 150_000             # DDS on one host, ns


def run(cycles, late_at=(), backlog=None):
    """Drive ``cycles`` cycles; return the age (in cycles) of the state each read took.

    ``late_at``: cycles whose write's state arrives after the next read. ``backlog``: the
    robot's ReadBacklog (None: the robot never withholds).
    """
    queue = deque(maxlen=5)
    pending = []              # (arrival ns, state number)
    ages, last = [], None
    for k in range(cycles):
        read_ns = k * PERIOD
        for arrival, number in list(pending):
            if arrival <= read_ns:
                queue.append(number)
                pending.remove((arrival, number))
        if queue:
            last = queue.popleft()
        if last is not None:
            ages.append(k - 1 - last)            # 0: the state of the previous write
            if backlog is not None:
                backlog.read((float(last),), read_ns)
        write_ns = read_ns + WRITE_OFFSET
        if backlog is not None and backlog.withhold(write_ns):
            continue
        arrival = write_ns + (PERIOD + 100_000 if k in late_at else TRANSIT)
        pending.append((arrival, k))
        if backlog is not None:
            backlog.published((float(k),), write_ns + 50_000)
    return ages


def test_without_withholding_one_late_state_leaves_every_later_read_a_cycle_behind():
    ages = run(200, late_at={50})
    assert max(ages[:50]) == 0
    assert all(age == 1 for age in ages[60:])


def test_the_robot_withholds_one_state_and_every_read_is_fresh_again():
    backlog = ReadBacklog()
    ages = run(400, late_at={50, 200, 201}, backlog=backlog)
    assert max(ages[:50]) == 0
    assert all(age == 0 for age in ages[60:199])
    assert all(age == 0 for age in ages[215:])
    assert backlog.withheld >= 2
    assert sum(age > 0 for age in ages) <= 8        # a few cycles behind at each event
    assert backlog.reads == len(ages)


def test_on_time_states_are_never_withheld():
    backlog = ReadBacklog()
    ages = run(500, backlog=backlog)
    assert max(ages) == 0 and backlog.withheld == 0 and backlog.behind == 0


def test_a_state_still_in_transit_at_the_read_is_not_counted_as_queued():
    backlog = ReadBacklog()
    backlog.published((1.0,), 0)
    backlog.published((2.0,), 10 * PERIOD - IN_TRANSIT_NS // 2)
    assert backlog.read((1.0,), 10 * PERIOD) == 0
    assert not backlog.withhold(10 * PERIOD)
    assert backlog.read((1.0,), 10 * PERIOD + IN_TRANSIT_NS) == 1


def test_an_unknown_state_is_ignored():
    backlog = ReadBacklog()
    backlog.published((1.0,), 0)
    assert backlog.read((7.0,), PERIOD) == 0 and backlog.reads == 0


def test_the_next_read_is_on_the_cycles_grid():
    backlog = ReadBacklog()
    assert backlog.next_read_ns(0) is None
    for k in range(20):
        backlog.read((0.0,), 1_000 + k * PERIOD)
    assert backlog.cycle_period_ns() == PERIOD
    last = 1_000 + 19 * PERIOD
    assert backlog.next_read_ns(last + WRITE_OFFSET) == last + PERIOD
    # a write stamped with its cycle's own time, a hair before or after it
    for jitter in (-1_000, 0, 1_000):
        assert backlog.next_read_ns(last + PERIOD + jitter) == last + 2 * PERIOD
    # a cycle overrun: the grid goes on
    assert backlog.next_read_ns(last + 3 * PERIOD + 10) == last + 4 * PERIOD


@pytest.mark.parametrize('history', [4, 32])
def test_old_states_are_forgotten(history):
    backlog = ReadBacklog(history=history)
    for k in range(3 * history):
        backlog.published((float(k),), k * PERIOD)
    assert backlog.read((0.0,), 100 * history * PERIOD) == 0 and backlog.reads == 0
    newest = float(3 * history - 1)
    assert backlog.read((newest - 1,), 100 * history * PERIOD) == 1
