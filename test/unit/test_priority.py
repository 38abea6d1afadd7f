"""The control path's priority: SCHED_FIFO where permitted, else nice, else said so.

The permitted case runs on a thread of the test's own (its policy is restored after);
the refused cases by the OS's own refusal simulated (``PermissionError`` from the calls),
as an unprivileged user meets them.
"""
import os
import threading

import pytest

from ne_dynamics_ros.nodes.computed_torque import priority


def on_a_thread(work):
    """Run ``work(tid)`` on a fresh thread; return its result and the thread's policy."""
    out = {}

    def run():
        tid = threading.get_native_id()
        out['result'] = work(tid)
        out['policy'] = os.sched_getscheduler(tid)
        out['nice'] = os.getpriority(os.PRIO_PROCESS, tid)
        out['child'] = None
        child = threading.Thread(target=lambda: out.__setitem__(
            'child', os.sched_getscheduler(threading.get_native_id())))
        child.start()
        child.join()
        try:
            os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
        except OSError:
            pass                 # the refusal simulated: the policy never changed
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return out


def test_fifo_where_permitted_and_not_inherited_by_threads_started_later():
    out = on_a_thread(lambda tid: priority.raise_priority(10, [tid]))
    text, policy = out['result']
    if policy is None or policy[0] != 'fifo':
        pytest.skip(f'this machine refuses SCHED_FIFO to the test: {text}')
    assert out['policy'] & ~getattr(os, 'SCHED_RESET_ON_FORK', 0) == os.SCHED_FIFO
    assert policy == ('fifo', 10) and 'SCHED_FIFO priority 10' in text
    assert out['child'] == os.SCHED_OTHER       # reset on fork: the intake stays below


def test_refused_fifo_falls_back_to_a_lower_nice_value(monkeypatch):
    def refuse(*args):
        raise PermissionError(1, 'Operation not permitted')
    monkeypatch.setattr(os, 'sched_setscheduler', refuse)
    out = on_a_thread(lambda tid: priority.raise_priority(50, [tid]))
    text, policy = out['result']
    if policy is None:
        assert 'no lower nice value permitted' in text
        return
    assert policy[0] == 'nice' and out['nice'] == policy[1] < 0
    assert 'SCHED_FIFO refused (Operation not permitted' in text


def test_nothing_permitted_keeps_the_default_and_says_where_to_look(monkeypatch):
    def refuse(*args):
        raise PermissionError(1, 'Operation not permitted')
    monkeypatch.setattr(os, 'sched_setscheduler', refuse)
    monkeypatch.setattr(os, 'setpriority', refuse)
    text, policy = priority.raise_priority(50, [0])
    assert policy is None and 'default scheduling kept' in text and 'ulimit -r' in text
    text, policy = priority.raise_priority(0, [0])
    assert policy is None and text.startswith('realtime_priority 0')


class NamedThread:
    """A thread that renames itself (``prctl(PR_SET_NAME)``, as Fast DDS names its own)
    and waits until stopped."""

    def __init__(self, name):
        import ctypes
        self.started, self.stopping = threading.Event(), threading.Event()

        def run():
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(15, ctypes.c_char_p(name.encode()), 0, 0, 0)     # PR_SET_NAME
            self.started.set()
            self.stopping.wait(10)
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.started.wait(5)
        self.tid = self.thread.native_id

    def nice(self):
        return os.getpriority(os.PRIO_PROCESS, self.tid)

    def stop(self):
        self.stopping.set()
        self.thread.join(5)


@pytest.fixture
def named_threads():
    made = []

    def make(name):
        made.append(NamedThread(name))
        return made[-1]
    yield make
    for thread in made:
        thread.stop()


@pytest.mark.skipif(not os.path.isdir('/proc/self/task'), reason='Linux only (/proc)')
def test_dds_threads_are_found_by_their_names(named_threads):
    receiving, events, other = (named_threads('dds.udp.7411'), named_threads('dds.ev.0'),
                                named_threads('dds_like'))
    found = priority.dds_thread_ids()
    assert receiving.tid in found and events.tid in found and other.tid not in found
    assert threading.get_native_id() not in found


def test_helpers_sit_above_neighbours_and_below_a_fifo_control_path():
    assert priority.helper_policy(None) is None
    assert priority.helper_policy(('fifo', 50)) == ('nice', priority.NICE_FLOOR)
    assert priority.helper_policy(('nice', -5)) == ('nice', -5)     # beside it, not above


@pytest.mark.skipif(not os.path.isdir('/proc/self/task'), reason='Linux only (/proc)')
def test_the_node_threads_get_the_control_policy_or_the_helpers(named_threads, monkeypatch):
    """A nice value above the default (always permitted) stands for the control path's
    policy: the DDS-named threads and the watchdog take it, the helpers theirs."""
    from types import SimpleNamespace
    dds, watchdog, intake, goals = (named_threads('dds.shm.7413'), named_threads('w'),
                                    named_threads('i'), named_threads('g'))
    node = SimpleNamespace(control_policy=('nice', 7), watchdog=watchdog, intake=intake,
                           goals=goals)
    text = priority.raise_node_threads(node)
    assert dds.nice() == watchdog.nice() == intake.nice() == goals.nice() == 7
    assert 'nice 7 for 2 of the 2 threads sharing the GIL' in text
    assert priority.raise_node_threads(SimpleNamespace(control_policy=None)) == ''

    # what the OS refuses is said, not claimed
    def refuse(*args):
        raise PermissionError(1, 'Operation not permitted')
    monkeypatch.setattr(os, 'setpriority', refuse)
    refused = priority.raise_node_threads(SimpleNamespace(
        control_policy=('nice', -5), watchdog=watchdog, intake=intake, goals=None))
    assert 'the same for 0 DDS threads; nice -5 for 0 of the 1 threads' in refused, refused


@pytest.fixture
def collector_as_a_process_starts():
    """Nothing frozen during the test, as in a process that just started (a run of unit
    tests freezes what its collection made: test/conftest.py); frozen again after."""
    import gc
    frozen = gc.get_freeze_count()
    gc.unfreeze()
    yield
    if frozen:
        gc.freeze()


@pytest.mark.usefixtures('collector_as_a_process_starts')
def test_the_collector_frees_cycles_then_leaves_what_survives_alone(monkeypatch):
    """freeze_collector: nothing unless the process's program owns the collector; then
    cyclic garbage made before it is freed, what lives on is frozen (later collections
    never walk it), what it froze earlier is collected first; release_collector unfreezes
    (before a teardown)."""
    import gc
    import weakref
    monkeypatch.setattr(priority, '_COLLECTOR_OWNED', False)
    assert priority.freeze_collector() is False and gc.get_freeze_count() == 0
    priority.own_collector()                  # undone by monkeypatch after the test

    class Node:
        pass

    def cycle():
        a, b = Node(), Node()
        a.other, b.other = b, a
        return weakref.ref(a)

    gone = cycle()
    alive = Node()
    try:
        priority.freeze_collector()
        assert gone() is None
        assert gc.get_freeze_count() > 0
        assert not gc.is_tracked(alive) or alive not in gc.get_objects(2)
        frozen_garbage = cycle()        # a cycle frozen as garbage outlives collections...
        gc.freeze()
        gc.collect()
        assert frozen_garbage() is not None
        priority.freeze_collector()     # ...until the next freeze_collector (reconfigure)
        assert frozen_garbage() is None
        priority.release_collector()
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()


def test_the_cpu_latency_request_is_written_held_replaced_and_refusals_said(tmp_path,
                                                                            monkeypatch):
    """PM QoS: a 32-bit latency written to the device and the file kept open (the request
    lasts while it is); a new request replaces the old; -1 asks nothing; a device that
    cannot be opened or written changes nothing and is named."""
    import sys
    monkeypatch.setattr(priority, '_LATENCY_REQUEST', None)
    device = tmp_path / 'cpu_dma_latency'
    device.write_bytes(b'')
    said = priority.hold_cpu_latency(0, str(device))
    assert said == f'CPU wake-up latency held at 0 us ({device})'
    assert device.read_bytes() == (0).to_bytes(4, sys.byteorder, signed=True)
    first = priority._LATENCY_REQUEST
    os.fstat(first)                                    # still open: the request holds
    priority.hold_cpu_latency(25, str(device))
    with pytest.raises(OSError):
        os.fstat(first)                                # the first one closed
    assert device.read_bytes()[-4:] == (25).to_bytes(4, sys.byteorder, signed=True)
    os.close(priority._LATENCY_REQUEST)
    monkeypatch.setattr(priority, '_LATENCY_REQUEST', None)
    assert priority.hold_cpu_latency(-1, str(device)) == 'CPU wake-up latency left alone'
    assert priority._LATENCY_REQUEST is None
    missing = priority.hold_cpu_latency(0, str(tmp_path / 'none'))
    assert missing.startswith('CPU wake-up latency left alone') and 'none' in missing
    assert priority._LATENCY_REQUEST is None


@pytest.mark.parametrize('value', [-2, 1.5, '0', True, None])
def test_a_bad_cpu_dma_latency_is_refused_naming_it(value):
    from ne_dynamics_ros.control import parameters
    from ne_dynamics_ros.errors import ControlParameterError
    assert parameters.check('cpu_dma_latency', 0, 6) == 0
    assert parameters.check('cpu_dma_latency', -1, 6) == -1
    with pytest.raises(ControlParameterError, match='cpu_dma_latency must be an integer'):
        parameters.check('cpu_dma_latency', value, 6)


def test_bulk_work_runs_below_fifo_and_gives_the_thread_its_priority_back():
    """Inside the block a SCHED_FIFO thread is at the default policy at NICE_FLOOR (a
    process woken meanwhile can run); after it, and after an exception in it, SCHED_FIFO
    at its priority again. A thread at the default policy is left as it is."""
    reset = getattr(os, 'SCHED_RESET_ON_FORK', 0)

    def work(tid):
        text, policy = priority.raise_priority(7, [tid])
        if policy != ('fifo', 7):
            return text
        seen = {}
        with priority.bulk_work():
            seen['inside'] = (os.sched_getscheduler(tid) & ~reset,
                              os.getpriority(os.PRIO_PROCESS, tid))
        try:
            with priority.bulk_work():
                raise ValueError('a bad goal')
        except ValueError:
            pass
        seen['after'] = (os.sched_getscheduler(tid) & ~reset,
                         os.sched_getparam(tid).sched_priority)
        return seen

    out = on_a_thread(work)
    if isinstance(out['result'], str):
        pytest.skip(f'this machine refuses SCHED_FIFO to the test: {out["result"]}')
    assert out['result']['inside'] == (os.SCHED_OTHER, priority.NICE_FLOOR)
    assert out['result']['after'] == (os.SCHED_FIFO, 7)

    def plain(tid):
        before = (os.sched_getscheduler(tid), os.getpriority(os.PRIO_PROCESS, tid))
        with priority.bulk_work():
            inside = (os.sched_getscheduler(tid), os.getpriority(os.PRIO_PROCESS, tid))
        return before, inside
    before, inside = on_a_thread(plain)['result']
    assert before == inside
