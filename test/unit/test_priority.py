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
