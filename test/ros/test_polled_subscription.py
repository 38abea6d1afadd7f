"""PolledSubscription over real DDS: messages wait for a look, nothing wakes the executor.

``effort_guard`` and the tests' recorders read 500 Hz topics this way
(:class:`ne_dynamics_ros.nodes.spin.PolledSubscription`): the callback given to rclpy must
never run, :meth:`take` must return what arrived since the last look, oldest first, at
most the history's depth, with the middleware's receipt times, and a spinning executor
must not wake for them.
"""
import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import Float64MultiArray

from ne_dynamics_ros.nodes.cdr import float64_multi_array_bytes
from ne_dynamics_ros.nodes.spin import PolledSubscription


@pytest.fixture
def pair(ros_context):
    node = rclpy.create_node('polled', context=ros_context)
    publisher = node.create_publisher(Float64MultiArray, 'values', 10)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    yield node, publisher, executor
    executor.shutdown()
    node.destroy_node()


def wait_matched(publisher, count=1, timeout=5.0):
    deadline = time.monotonic() + timeout
    while publisher.get_subscription_count() < count:
        assert time.monotonic() < deadline, 'the subscription was not matched'
        time.sleep(0.01)


@pytest.mark.parametrize('raw', [False, True])
def test_take_returns_what_arrived_oldest_first_with_its_receipt_time(pair, raw):
    node, publisher, executor = pair
    polled = PolledSubscription(node, Float64MultiArray, 'values', 10, raw=raw)
    wait_matched(publisher)
    before = time.time_ns()
    for k in range(4):
        publisher.publish(Float64MultiArray(data=[float(k)]))
    deadline = time.monotonic() + 5.0
    taken = []
    while len(taken) < 4 and time.monotonic() < deadline:
        taken += polled.take()
        time.sleep(0.01)
    values = [m.data[0] if not raw else m for m, _ in taken]
    expected = [float(k) for k in range(4)]
    if raw:
        expected = [float64_multi_array_bytes([v]) for v in expected]
    assert values == expected
    stamps = [received for _, received in taken]
    assert stamps == sorted(stamps) and before <= stamps[0] <= time.time_ns()
    assert polled.take() == []


def test_the_history_keeps_the_newest_and_the_executor_never_runs_the_callback(pair):
    node, publisher, executor = pair
    polled = PolledSubscription(node, Float64MultiArray, 'values', 3)
    ran = []
    node.create_subscription(Float64MultiArray, 'values', ran.append, 10)  # a plain one
    wait_matched(publisher, 2)
    for k in range(6):
        publisher.publish(Float64MultiArray(data=[float(k)]))
    deadline = time.monotonic() + 5.0
    while len(ran) < 6 and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    assert len(ran) == 6                   # the executor ran the plain subscription's
    time.sleep(0.1)
    # the executor never took the polled one's: its newest three wait for the look
    assert [m.data[0] for m, _ in polled.take()] == [3.0, 4.0, 5.0]


def test_receipt_on_the_monotonic_clock_lies_between_publishing_and_looking(pair):
    node, publisher, executor = pair
    polled = PolledSubscription(node, Float64MultiArray, 'values', 10)
    wait_matched(publisher)
    before = time.monotonic()
    publisher.publish(Float64MultiArray(data=[1.0]))
    deadline = time.monotonic() + 5.0
    taken = []
    while not taken and time.monotonic() < deadline:
        time.sleep(0.05)
        taken = polled.take_monotonic()
    after = time.monotonic()
    assert [m.data[0] for m, _ in taken] == [1.0]
    # the receipt, moved onto the monotonic clock: after the publish, before the look
    assert before - 1e-3 <= taken[0][1] <= after
