"""The control path's priority: SCHED_FIFO where the OS permits it, else a lower nice value.

A robot PC runs perception, MoveIt and logging beside the controller; under the default
scheduler a CPU-bound neighbour can hold a core for a whole time slice while a joint state
waits. ros2_control's controller manager runs its loop at SCHED_FIFO for this reason
(its ``thread_priority``, 50 by default). :func:`raise_priority` gives the threads that
answer ``/joint_states`` (the executor's) and command on state loss (the watchdog's)
``SCHED_FIFO`` at ``realtime_priority`` where permitted: as root, with ``CAP_SYS_NICE``, or
up to the ``RLIMIT_RTPRIO`` of the user (``ulimit -r``, set by the ``realtime`` group's
``/etc/security/limits.conf`` entry, as ros2_control's docs describe). Otherwise it lowers
their nice value as far as ``RLIMIT_NICE`` lets it (down to :data:`NICE_FLOOR`), and
otherwise leaves them as they were; it says which, for the node's start-up log.

The flag ``SCHED_RESET_ON_FORK`` keeps the priority from spreading: threads and processes
started later from those threads (the trajectory intake thread, the receiver process)
begin at the default policy, below the control path. Linux only; elsewhere the default
scheduling is kept and said so.
"""
import os
import resource

#: Lowest nice value tried when SCHED_FIFO is refused.
NICE_FLOOR = -10


def _fifo(tid, priority):
    """Set SCHED_FIFO (reset on fork) at ``priority`` on thread ``tid``; raise OSError."""
    flags = os.SCHED_FIFO | getattr(os, 'SCHED_RESET_ON_FORK', 0)
    os.sched_setscheduler(tid, flags, os.sched_param(priority))


def raise_priority(priority, tids):
    """Give the threads ``tids`` (native ids) the best priority permitted; say which.

    Args:
        priority: the SCHED_FIFO priority asked for, 1–99 (``realtime_priority``); 0 or
            less keeps the default scheduling.
        tids: native thread ids (``threading.get_native_id()``; 0 is the caller).

    Returns:
        (what they got as one line of text, the policy to give threads started later for
        the same work: ``('fifo', priority)``, ``('nice', value)`` or None).
    """
    if priority <= 0:
        return 'realtime_priority 0: default scheduling kept', None
    if not hasattr(os, 'sched_setscheduler'):
        return 'no SCHED_FIFO on this platform: default scheduling kept', None
    wanted = min(int(priority), os.sched_get_priority_max(os.SCHED_FIFO))
    limit = resource.getrlimit(resource.RLIMIT_RTPRIO)[0]
    tries = [wanted] + ([limit] if 0 < limit < wanted else [])
    reason = ''
    for value in tries:
        try:
            for tid in tids:
                _fifo(tid, value)
        except OSError as err:
            reason = err.strerror or str(err)
            continue
        got = 'as asked' if value == wanted else f'the RLIMIT_RTPRIO of {limit}'
        return (f'SCHED_FIFO priority {value} ({got}) for the control and watchdog '
                'threads', ('fifo', value))
    for nice in range(NICE_FLOOR, 0):
        try:
            for tid in tids:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
        except OSError:
            continue
        return (f'SCHED_FIFO refused ({reason}; RLIMIT_RTPRIO {limit}): nice {nice} for '
                'the control and watchdog threads instead', ('nice', nice))
    return (f'SCHED_FIFO refused ({reason}; RLIMIT_RTPRIO {limit}) and no lower nice value '
            'permitted: default scheduling kept (see the node page: the realtime group, '
            'ulimit -r)', None)


def apply(policy, tid=0):
    """Give thread ``tid`` a policy :func:`raise_priority` returned (None: nothing)."""
    if policy is None:
        return
    kind, value = policy
    try:
        if kind == 'fifo':
            _fifo(tid, value)
        else:
            os.setpriority(os.PRIO_PROCESS, tid, value)
    except OSError:
        pass                    # permitted a moment ago: a limit lowered since; keep going


__all__ = ['apply', 'NICE_FLOOR', 'raise_priority']
