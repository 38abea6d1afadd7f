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

A state reaches the executor through threads the executor does not own: the DDS
library's reception and event threads (Fast DDS names them ``dds.shm.<port>``,
``dds.udp.<port>``, ``dds.ev.<n>``). Left at the default policy they wait behind CPU-bound
neighbours before the executor even hears of a state, so :func:`dds_thread_ids` finds
them and they get the control path's policy too. The node's other Python threads (the
trajectory intake, the goal link) share the control thread's GIL: one preempted by a
neighbour while it holds the GIL stalls the control thread however high its priority
(an inversion), so they get :func:`helper_policy`, above the neighbours and below the
control path. Measured with ``bench_node.py --stall 3 --load 4`` (four CPU-bound
processes on two cores): worst gap between commands 52.9 ms (24.7 ms on valid messages)
with the executor and watchdog alone raised; 14.4, 13.9 and 15.8 ms in three runs with
the DDS threads and the helpers as here.

The flag ``SCHED_RESET_ON_FORK`` keeps the priority from spreading: threads and processes
started later from those threads (the receiver process) begin at the default policy,
below the control path. Linux only; elsewhere the default scheduling is kept and said so.
"""
import contextlib
import gc
import os
import resource
import sys
import threading

#: Lowest nice value tried when SCHED_FIFO is refused.
NICE_FLOOR = -10

#: Name prefixes (``/proc/self/task/<tid>/comm``) of the DDS threads a state passes.
DDS_THREAD_PREFIXES = ('dds.shm.', 'dds.udp.', 'dds.ev.')


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


def dds_thread_ids():
    """Return the native ids of this process's DDS reception and event threads (a list).

    Threads whose name starts with one of :data:`DDS_THREAD_PREFIXES`; [] where
    ``/proc/self/task`` does not exist (not Linux) or names none.
    """
    try:
        tasks = os.listdir('/proc/self/task')
    except OSError:
        return []
    found = []
    for task in tasks:
        try:
            with open(f'/proc/self/task/{task}/comm', encoding='utf-8') as comm:
                name = comm.read().strip()
        except OSError:
            continue                        # the thread ended meanwhile
        if name.startswith(DDS_THREAD_PREFIXES):
            found.append(int(task))
    return sorted(found)


def helper_policy(control_policy):
    """Return the policy of the node's threads that share the GIL with the control path.

    Below a SCHED_FIFO control path: nice :data:`NICE_FLOOR` (above CPU-bound neighbours,
    which then cannot hold the GIL's holder off the CPU for a time slice); beside a niced
    control path: its nice value; None: nothing raised.
    """
    if control_policy is None:
        return None
    kind, value = control_policy
    return ('nice', NICE_FLOOR) if kind == 'fifo' else ('nice', value)


@contextlib.contextmanager
def bulk_work():
    """Run the calling thread's block at :func:`helper_policy` when it holds SCHED_FIFO.

    For work of a real-time thread that no loop waits for but that takes tens of ms of
    CPU: ``jtc_feedforward`` resampling a goal and building the controller's message
    (some 40 ms for a 1 000-point goal, 2026-12-08). At SCHED_FIFO it kept every process
    at the default policy off its core meanwhile, among them the client waiting for the
    goal's response the relay had just sent. At nice :data:`NICE_FLOOR` it still outweighs
    CPU-bound neighbours, and a process woken meanwhile gets the CPU. The thread's own
    policy and priority are given back after the block; a thread not at SCHED_FIFO (or a
    refused change) keeps what it has.
    """
    tid = threading.get_native_id()
    try:
        policy, param = os.sched_getscheduler(tid), os.sched_getparam(tid)
        nice = os.getpriority(os.PRIO_PROCESS, tid)
    except (AttributeError, OSError):
        policy = None
    if policy is None or policy & ~getattr(os, 'SCHED_RESET_ON_FORK', 0) != os.SCHED_FIFO:
        yield
        return
    try:
        os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
        os.setpriority(os.PRIO_PROCESS, tid, NICE_FLOOR)
    except OSError:
        pass                          # what was set stays; the block runs all the same
    try:
        yield
    finally:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
            os.sched_setscheduler(tid, policy, param)
        except OSError:
            pass


def raise_node_threads(node):
    """Give the node's other threads their share of its ``control_policy``; say what.

    The watchdog (``node.watchdog.thread``) and the DDS threads (:func:`dds_thread_ids`)
    get the control path's policy, the trajectory intake and the goal link
    (``node.intake.thread``, ``node.goals.thread``) :func:`helper_policy`. Called once the
    control path's priority is known and again at each configure (new threads). Returns
    a clause for the start-up log ('' when the control path kept the default).
    """
    policy = node.control_policy
    if policy is None:
        return ''
    watchdog = node.watchdog.thread
    if watchdog is not None:
        apply(policy, watchdog.native_id)
    dds = sum(apply(policy, tid) for tid in dds_thread_ids())
    helpers = [thread.native_id for thread in (node.intake.thread,
                                               getattr(node.goals, 'thread', None))
               if thread is not None and thread.native_id is not None]
    helper = helper_policy(policy)
    raised = sum(apply(helper, tid) for tid in helpers)
    return (f'; the same for {dds} DDS threads; nice {helper[1]} for {raised} of the '
            f'{len(helpers)} threads sharing the GIL (trajectory intake, goal link)')


def raise_process(priority, what):
    """Give the calling thread and this process's DDS threads ``priority``; say what.

    For a process whose one executor thread is its work (``sim_arm_node``'s simulation,
    ``effort_guard``'s checks): :func:`raise_priority` on the caller, then its policy on
    :func:`dds_thread_ids`. ``what``: the caller's work, for the line returned (the
    start-up log).
    """
    text, policy = raise_priority(int(priority), [0])
    took = sum(apply(policy, tid) for tid in dds_thread_ids())
    return (f"{text.replace('control and watchdog threads', what)}; the same for {took} "
            'DDS threads')


#: Whether :func:`freeze_collector` acts in this process (:func:`own_collector`).
_COLLECTOR_OWNED = False


def own_collector():
    """Let :func:`freeze_collector` act: called by a program's ``main`` before its node.

    A node made inside another process (a test, a process composing nodes) leaves that
    process's collector as it is.
    """
    global _COLLECTOR_OWNED
    _COLLECTOR_OWNED = True


def release_collector():
    """Unfreeze before a program tears down, so that its objects go as they did unfrozen.

    Frozen objects outlive the teardown's collections and are freed in the interpreter's
    finalisation, in an order of its own: a node process aborted there once (glibc's
    ``malloc_consolidate(): unaligned fastbin chunk``, a fresh-clone run beside two
    CPU-bound processes, 2026-12-07) with them frozen.
    """
    gc.unfreeze()


def freeze_collector():
    """Collect the garbage now and keep what survives out of every later collection.

    Python's cyclic collector stops every thread of the process (it holds the GIL) for
    as long as it walks the objects it tracks: a full collection of the configured node's
    ~57 000 objects took 30–37 ms here (2026-12-07), enough to miss 15 cycles at 500 Hz
    and let a controller switch act with zero effort meanwhile. After ``gc.freeze()``
    later collections walk only the objects made since, 0.002 ms for the same node. Call
    it once the process is set up and before it commands (the node: at the end of each
    configure; what was frozen before is unfrozen and collected first, so a
    reconfigured model's garbage goes). Objects freed by their reference counts are freed
    as before; only cycles among frozen objects outlive it. Does nothing (returns False)
    unless the process's program called :func:`own_collector`.
    """
    if not _COLLECTOR_OWNED:
        return False
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    return True


def apply(policy, tid=0):
    """Give thread ``tid`` a policy :func:`raise_priority` returned (None: nothing).

    Returns True if it took, False if the OS refused it (a limit lowered since, a nice
    value below ``RLIMIT_NICE``, the thread gone): the thread keeps what it had.
    """
    if policy is None:
        return False
    kind, value = policy
    try:
        if kind == 'fifo':
            _fifo(tid, value)
        else:
            os.setpriority(os.PRIO_PROCESS, tid, value)
    except OSError:
        return False
    return True


#: The PM QoS device of Linux: a latency written there holds while the file stays open.
CPU_DMA_LATENCY = '/dev/cpu_dma_latency'
#: The open request of :func:`hold_cpu_latency` (kept until the process exits), or None.
_LATENCY_REQUEST = None


def hold_cpu_latency(microseconds, path=CPU_DMA_LATENCY):
    """Ask Linux to wake the CPUs within ``microseconds`` while this process runs; say what.

    Linux's PM QoS: while a process keeps ``/dev/cpu_dma_latency`` open with a latency
    written to it (a 32-bit integer, µs), the cpuidle governor uses no idle state whose
    exit latency is above it; ``0`` leaves only polling (``cyclictest`` does this by
    default). The request ends when the file is closed, at the latest when the process
    exits. In a virtual machine whose idle state halts the vCPU (``haltpoll``, the machine
    kind this project's benchmarks run on) a halted vCPU waits for its host to run it
    again: at 500 Hz through ros2_control, 96.0, 74.9 and 99.9 % of the node's commands
    were written at the next cycle in three quiet runs without it, 99.8, 99.9 and 99.9 %
    with it (``bench_node.py --ros2-control``, 2026-12-07). Negative: nothing is asked.

    Returns the line for the start-up log (what was asked, or why nothing was).
    """
    global _LATENCY_REQUEST
    if microseconds < 0:
        return 'CPU wake-up latency left alone'
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as err:
        return f'CPU wake-up latency left alone ({path}: {err.strerror})'
    try:
        os.write(fd, int(microseconds).to_bytes(4, sys.byteorder, signed=True))
    except OSError as err:
        os.close(fd)
        return f'CPU wake-up latency left alone ({path}: {err.strerror})'
    if _LATENCY_REQUEST is not None:
        os.close(_LATENCY_REQUEST)               # the new request replaces the old one
    _LATENCY_REQUEST = fd
    return f'CPU wake-up latency held at {int(microseconds)} us ({path})'


__all__ = ['apply', 'bulk_work', 'CPU_DMA_LATENCY', 'DDS_THREAD_PREFIXES', 'dds_thread_ids',
           'freeze_collector', 'helper_policy', 'hold_cpu_latency', 'NICE_FLOOR',
           'own_collector', 'release_collector', 'raise_node_threads', 'raise_priority',
           'raise_process']
