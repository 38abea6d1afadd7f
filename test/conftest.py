"""Shared pytest fixtures.

DDS isolation: every test that starts ROS 2 participants gets its own ``rclpy`` context
on its own ``ROS_DOMAIN_ID`` (derived from the pytest process id and a per-test counter),
and discovery is restricted to this host (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``),
so parallel runs on one machine and CI never exchange messages with each other.
"""
import itertools
import os
import pathlib

import pytest

os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.pop('ROS_LOCALHOST_ONLY', None)

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIG_DIR = REPO_ROOT / 'config'
PUMA560_URDF = CONFIG_DIR / 'puma560.urdf'
UR5E_URDF = CONFIG_DIR / 'ur5e.urdf'

# Fast DDS uses UDP ports 7400 + 250 * domain_id; valid domain ids for it are 0..232.
# Start from a pid-dependent base so two pytest processes rarely share a domain.
_DOMAIN_BASE = 1 + (os.getpid() * 7) % 150
_domain_counter = itertools.count()


def next_domain_id():
    """Return a fresh ROS_DOMAIN_ID for one test (cycles within 1..230)."""
    return 1 + (_DOMAIN_BASE + next(_domain_counter)) % 230


@pytest.fixture
def domain_id():
    """Give the test a private ROS_DOMAIN_ID, also exported for subprocesses."""
    did = next_domain_id()
    old = os.environ.get('ROS_DOMAIN_ID')
    os.environ['ROS_DOMAIN_ID'] = str(did)
    yield did
    if old is None:
        os.environ.pop('ROS_DOMAIN_ID', None)
    else:
        os.environ['ROS_DOMAIN_ID'] = old


@pytest.fixture
def ros_context(domain_id):
    """Yield an initialised ``rclpy`` context on a private domain; shut it down after."""
    import rclpy
    context = rclpy.context.Context()
    rclpy.init(context=context, domain_id=domain_id)
    yield context
    if context.ok():
        rclpy.shutdown(context=context)


try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # pragma: no cover - hypothesis is a test requirement
    _hypothesis_settings = None
if _hypothesis_settings is not None:
    # CI: the same examples every run (no flaky discoveries), no per-example deadline.
    _hypothesis_settings.register_profile('ci', derandomize=True, deadline=None,
                                          print_blob=True)
    _hypothesis_settings.register_profile('dev', deadline=None, print_blob=True)
    _hypothesis_settings.load_profile('ci' if os.environ.get('CI') else 'dev')
