"""DDS isolation for the tests: a fresh ``ROS_DOMAIN_ID`` for each test that needs one."""
import itertools
import os

# Fast DDS uses UDP ports 7400 + 250 * domain_id; valid domain ids for it are 0..232.
# Start from a pid-dependent base so two pytest processes rarely share a domain.
_DOMAIN_BASE = 1 + (os.getpid() * 7) % 150
_domain_counter = itertools.count()


def next_domain_id():
    """Return a fresh ROS_DOMAIN_ID for one test (cycles within 1..230)."""
    return 1 + (_DOMAIN_BASE + next(_domain_counter)) % 230
