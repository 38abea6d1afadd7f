"""Shared pytest fixtures.

Layers: ``test/unit`` (pure: no DDS, no child processes), ``test/ros`` (over DDS) and
``test/system`` (launch files, the demo, command-line processes, benchmark smoke runs);
each test gets the marker of its folder (``pytest -m unit``), and ``pytest test/unit`` is
the quick loop.

DDS isolation: every test that starts ROS 2 participants gets its own ``rclpy`` context
on its own ``ROS_DOMAIN_ID`` (derived from the pytest process id and a per-test counter),
and discovery is restricted to this host (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``),
so parallel runs on one machine and CI never exchange messages with each other.
"""
import os
import pathlib
import shutil
import sys

import pytest

from dds import next_domain_id

#: Session fixtures of the identification tests (unit and DDS tests share one recording).
pytest_plugins = ['identification_fixtures']

os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.pop('ROS_LOCALHOST_ONLY', None)


def _one_blas_thread():
    """Load OpenBLAS (through NumPy) with one thread in this process, unless told otherwise.

    The tests' matrices are small, and on the project's 2-core machines, beside a DDS run
    or another test run, OpenBLAS's second thread spins more than it computes.
    OPENBLAS_NUM_THREADS set by the caller wins; the processes the tests start get the
    environment as it was.
    """
    if 'numpy' in sys.modules or 'OPENBLAS_NUM_THREADS' in os.environ:
        return
    os.environ['OPENBLAS_NUM_THREADS'] = '1'
    try:
        import numpy  # noqa: F401  (OpenBLAS reads the variable once, when it loads)
    finally:
        del os.environ['OPENBLAS_NUM_THREADS']


_one_blas_thread()


def _announce_often():
    """Make this process's own Fast DDS participants announce every half second.

    They announce as the package's processes do (``nodes/fast_dds.py``, Fast DDS's
    default: every 3 s): a participant started after this process's first announcements
    (a node's trajectory receiver, a launched stack) otherwise waited up to the next one.
    Measured with 12 in-process node starts: 2 of 12 took 3.65 s at the default, none
    over 1.18 s so.

    Fast DDS reads its default profile file once, when the process's first participant
    is made: the variable is set for that one (a throw-away node) and removed, so the
    processes the tests start keep the environment they would have (the package's own
    profile where they choose it). Nothing is done under another middleware or a
    profile of the caller's.
    """
    from ne_dynamics_ros.nodes import fast_dds
    variables = fast_dds.PROFILE_VARIABLES
    if any(os.environ.get(v) for v in variables) or \
            (os.environ.get('RMW_IMPLEMENTATION') or fast_dds.FAST_DDS) != fast_dds.FAST_DDS:
        return
    import tempfile
    import rclpy
    folder = tempfile.mkdtemp(prefix='ne_dynamics_ros_tests_')
    path = os.path.join(folder, 'announce.xml')
    with open(path, 'w', encoding='utf-8') as stream:
        stream.write(fast_dds.announcement_profile_text('ne_dynamics_ros_tests'))
    os.environ[variables[0]] = path
    try:
        context = rclpy.context.Context()
        rclpy.init(context=context, domain_id=next_domain_id())
        try:
            rclpy.create_node('profile_loader', context=context).destroy_node()
        finally:
            rclpy.shutdown(context=context)
    finally:
        del os.environ[variables[0]]
        # read once, when the first participant was made: no folder left behind per run
        shutil.rmtree(folder, ignore_errors=True)


def _freeze_what_collection_made():
    """Keep the objects the imports and collection made out of every later collection.

    ``gc.freeze()`` after a collection, as the node does once configured
    (:func:`~ne_dynamics_ros.nodes.computed_torque.priority.freeze_collector`): the
    collector's full passes then walk only what the tests made, not the ~190 000 objects
    of NumPy, Pinocchio, cvxpy and the test modules. Measured over ``pytest test/unit``
    on 2026-12-07: 4.8 s of full collections down to 1.7 s. Objects freed by their
    reference counts are freed as before; only cycles among the frozen outlive it.
    """
    import gc
    gc.collect()
    gc.freeze()


def pytest_collection_finish(session):
    """Set the process up for the tests collected.

    Before the first DDS test of this process: :func:`_announce_often`; a run of unit
    tests only: :func:`_freeze_what_collection_made`.
    """
    if any(item.get_closest_marker('serial') for item in session.items):
        _announce_often()
    elif session.items and all(item.get_closest_marker('unit') for item in session.items):
        _freeze_what_collection_made()


LAYERS = ('unit', 'ros', 'system')


def pytest_collection_modifyitems(items):
    """Mark every test with its layer, the folder it sits in under test/, and ``serial``.

    ``serial``: a test of test/ros or test/system, unless its module says
    ``PARALLEL_SAFE = True`` (no DDS participant, no process whose timing it judges: the
    linters, the docs build, the import graph). README's command (``scripts/test.sh``)
    runs the others on two workers first (pytest-xdist), then these one at a time: a DDS
    test beside another test's CPU load on these 2-core machines judges the load, not the
    node.
    """
    for item in items:
        parts = pathlib.Path(str(item.fspath)).parts
        for layer in LAYERS:
            if layer in parts[-3:-1]:
                item.add_marker(getattr(pytest.mark, layer))
                if layer != 'unit' and not getattr(item.module, 'PARALLEL_SAFE', False):
                    item.add_marker(pytest.mark.serial)


#: Test modules whose tests share an expensive module or session fixture (the recordings of
#: test/identification_fixtures.py, the real arms identified once, the MuJoCo UR5e's
#: excitation, pydocstyle's one pass, the command-line runs of each variant): with ``-n``,
#: each goes to one xdist worker whole, so its fixtures are built once and not in each
#: worker that draws one of its tests (6-7 s of CPU each for the identification
#: recordings, 2026-12-07); every other test is scheduled on its own, as ``--dist load``
#: does. xdist's ``--dist loadgroup`` would say this with marks, but with pytest 9.2's
#: node ids it no longer groups (pytest-xdist issue #1386).
ONE_WORKER_MODULES = ('test/unit/test_identification.py', 'test/unit/test_real_arms.py',
                      'test/unit/test_mujoco_arm.py', 'test/system/test_pep257.py',
                      'test/system/test_cli_bad_input.py')


def pytest_xdist_make_scheduler(config, log):
    """With ``-n`` (``--dist load``): :data:`ONE_WORKER_MODULES` whole, the rest per test."""
    if config.getoption('dist') != 'load':
        return None       # a --dist the user chose: xdist's own scheduler
    stale = [path for path in ONE_WORKER_MODULES if not (config.rootpath / path).is_file()]
    if stale:
        raise pytest.UsageError(f'test/conftest.py: ONE_WORKER_MODULES names no file {stale}')
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtureScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            path = nodeid.split('::', 1)[0]
            return path if path in ONE_WORKER_MODULES else nodeid

    return SharedFixtureScheduling(config, log)


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
