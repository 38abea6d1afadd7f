"""DDS helpers for the tests: a fresh ``ROS_DOMAIN_ID`` per test, a bounded spin."""
import itertools
import os
import time

# Fast DDS uses UDP ports 7400 + 250 * domain_id; valid domain ids for it are 0..232.
# Start from a pid-dependent base so two pytest processes rarely share a domain.
_DOMAIN_BASE = 1 + (os.getpid() * 7) % 150
_domain_counter = itertools.count()


def next_domain_id():
    """Return a fresh ROS_DOMAIN_ID for one test (cycles within 1..230)."""
    return 1 + (_DOMAIN_BASE + next(_domain_counter)) % 230


def spin_until(executor, predicate, timeout, what='the condition'):
    """Spin ``executor`` until ``predicate()`` holds; AssertionError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f'not within {timeout} s: {what}'
        executor.spin_once(timeout_sec=0.01)
