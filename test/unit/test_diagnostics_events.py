"""Events on /diagnostics at once: the statistics that detect them, the status that names
them, the watchdog that wakes for them (no DDS: the message types only)."""
import threading

import pytest

from ne_dynamics_ros.nodes.computed_torque.diagnostics import (ControlStatistics, ERROR, OK,
                                                               status, WARN)
from ne_dynamics_ros.nodes.computed_torque.threads import Watchdog

LIMITS = [10.0, 10.0]


def test_a_joint_reaching_its_limit_is_an_event_once_until_it_leaves_it():
    stats = ControlStatistics(2)

    def at(effort):                   # Command.at_limit of these efforts
        return [abs(e) >= h for e, h in zip(effort, LIMITS)]
    assert stats.commanded(1000, at([1.0, 2.0]), [0.0, 0.0]) == []
    assert stats.commanded(1000, at([10.0, 2.0]), [0.0, 0.0]) == [0]
    assert stats.commanded(1000, at([10.0, -10.0]), [0.0, 0.0]) == [1]
    stats.take(2)                                  # a new period: still at the limit
    assert stats.commanded(1000, at([10.0, -10.0]), [0.0, 0.0]) == []
    assert stats.commanded(1000, at([9.0, -10.0]), [0.0, 0.0]) == []
    assert stats.commanded(1000, at([-10.0, -10.0]), [0.0, 0.0]) == [0]


def test_events_come_first_in_the_message_and_under_their_own_key():
    def message(events, timed_out=False):
        return status('n', '', {}, (500, [1e6] * 500, [False, False], 0.0, []), 1.0, {}, {}, 0.1,
                      ['a', 'b'], timed_out, '', events).status[0]
    quiet = message([])
    assert quiet.level == OK and not [v for v in quiet.values if v.key == 'events']
    contact = message(['contact on a: external effort +5.00 N*m over its threshold 3.00 N*m'])
    assert contact.level == WARN and contact.message.startswith('contact on a')
    assert [v.value for v in contact.values if v.key == 'events'] == [
        'contact on a: external effort +5.00 N*m over its threshold 3.00 N*m']
    lost = message(['state timeout: no valid joint_states'], timed_out=True)
    assert lost.level == ERROR and 'state timeout: no valid joint_states' in lost.message


def test_the_watchdog_ticks_when_woken_not_at_the_end_of_its_period():
    ticked = threading.Event()
    watchdog = Watchdog(lambda: 3600.0, ticked.set, lambda err: True)
    watchdog.start()
    try:
        assert not ticked.wait(0.2)               # a period of an hour: no tick by itself
        watchdog.wake()
        assert ticked.wait(30.0)                  # woken: it ticks long before the hour
    finally:
        watchdog.stop()
    assert not watchdog.thread.is_alive()


def test_the_loop_delay_is_reported_and_warned_about_beyond_what_the_gains_tolerate():
    """State ages 8 ms (the topic-based hardware's queue), 0.2 ms latency, 500 Hz."""
    def message(age_ms, kp, kd):
        ages = [age_ms * 1e6] * 500
        return status('n', '', {}, (500, [2e5] * 500, [False, False], 0.0, ages), 1.0, {},
                      {}, 0.1, ['a', 'b'], False, '', [], (kp, kd)).status[0]
    values = {v.key: v.value for v in message(8.0, [2500.0] * 2, [100.0] * 2).values}
    # loop delay = age + latency + one period: 8 + 0.2 + 2 ms
    assert float(values['loop delay [ms]']) == pytest.approx(10.2, abs=1e-3)
    assert float(values['state age p99 [ms]']) == pytest.approx(8.0, abs=1e-3)
    slow = message(8.0, [2500.0] * 2, [100.0] * 2)
    assert slow.level == WARN and 'the gains tolerate' in slow.message
    gentle = message(8.0, [100.0] * 2, [20.0] * 2)      # Lee et al.'s gains tolerate 20 ms
    assert gentle.level == OK
