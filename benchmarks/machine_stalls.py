"""The machine's own stalls, measured beside a benchmark: which moves met one.

A process of its own at SCHED_FIFO 90 (above every process of the stack: the node 50,
controller_manager 45/50, the simulated arm 49, ``effort_guard`` 55) sleeps to a 1 ms
grid and notes each wake-up later than :data:`NOTED` (0.5 ms) by the wall clock, which
the ROS stamps use. Nothing of the stack can hold it back; a late wake-up is the machine
not running anything: a virtual machine's host taking its CPUs (``steal`` in
``/proc/stat``), a kernel thread, an interrupt. During such a stall every process of the
loop stops together, while the simulated arm, on the hardware's clock, advances by the
wall time that passed with the command in force, as a real robot would: the loop then
tracks as a real controller PC that stalled, in any wiring, the direct topic included.

:class:`StallMonitor` starts the process and hands back its notes; :func:`stalls_within`
counts those within the moves. ``bench_node.py --ros2-control`` reports how many
stalls over :data:`CLEAN` (1 ms) and twice that fell in each wiring's moves.
"""
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

#: The monitor's period, s.
PERIOD = 0.001
#: A wake-up later than this is noted, s.
NOTED = 0.0005
#: A move met a stall when a wake-up within it came later than this, s.
CLEAN = 0.001
#: The monitor's SCHED_FIFO priority (above the stack's processes).
PRIORITY = 90


def steal_seconds():
    """Return the CPU time the hypervisor took from this machine since boot, s (all CPUs).

    ``steal`` of ``/proc/stat``'s ``cpu`` line (0 where the file or the field is missing).
    """
    try:
        fields = pathlib.Path('/proc/stat').read_text().split('\n', 1)[0].split()
        return int(fields[8]) / os.sysconf('SC_CLK_TCK')
    except (OSError, IndexError, ValueError):
        return 0.0


def serve(path):
    """Note late wake-ups until SIGTERM; then write ``wall time, lateness`` lines (s)."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(PRIORITY))
        policy = f'SCHED_FIFO {PRIORITY}'
    except OSError as err:
        policy = f'default scheduling ({err.strerror})'
    notes = []
    due = time.monotonic()
    while not stop:
        due += PERIOD
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        late = time.monotonic() - due
        if late > NOTED:
            notes.append((time.time() - late, late))
            due = time.monotonic()                 # the grid starts again after a stall
    tmp = pathlib.Path(path).with_suffix('.part')
    tmp.write_text(f'# {policy}\n' + ''.join(f'{t:.6f} {late:.6f}\n' for t, late in notes))
    tmp.replace(path)


class StallMonitor:
    """The monitor process over a ``with`` block; :attr:`stalls` after it.

    Attributes:
        stalls: list of ``(wall time s, lateness s)`` of the wake-ups later than
            :data:`NOTED`, filled when the block ends.
        policy: the monitor's scheduling as it got it (its first line).
        steal: CPU time the hypervisor took over the block (:func:`steal_seconds`), s.
    """

    def __init__(self):
        """Prepare a monitor (started by ``with``)."""
        self.stalls, self.policy, self.steal, self._process = [], '', 0.0, None
        self._folder = tempfile.TemporaryDirectory(prefix='machine_stalls_')
        self._path = pathlib.Path(self._folder.name) / 'stalls.txt'

    def __enter__(self):
        """Start the monitor process."""
        self._process = subprocess.Popen([sys.executable, __file__, str(self._path)])
        self.steal = -steal_seconds()
        return self

    def __exit__(self, *exc):
        """Stop it (bounded) and read its notes."""
        self.steal += steal_seconds()
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._path.exists():
            lines = self._path.read_text().splitlines()
            self.policy = lines[0].lstrip('# ') if lines else ''
            self.stalls = [tuple(float(v) for v in line.split()) for line in lines[1:]]
        self._folder.cleanup()
        return False


def stalls_within(stalls, windows):
    """Count the stalls that began within ``windows`` ((start, end) wall-clock s each).

    Returns ``{'stalls_1ms', 'stalls_2ms': how many were over :data:`CLEAN` and twice it,
    'stall_max_ms': the longest, 'seconds': the windows' total time}``.
    """
    inside = [late for t, late in stalls if any(start <= t <= end for start, end in windows)]
    return {'stalls_1ms': sum(late > CLEAN for late in inside),
            'stalls_2ms': sum(late > 2 * CLEAN for late in inside),
            'stall_max_ms': 1e3 * max(inside, default=0.0),
            'seconds': sum(end - start for start, end in windows)}


def met_stall(stalls, windows, over=2 * CLEAN):
    """Return, per window ((start, end) wall-clock s), whether a stall began in it.

    A stall over ``over`` s; a move that met none is one the machine itself did not stop.
    """
    return [any(start <= t <= end and late > over for t, late in stalls)
            for start, end in windows]


if __name__ == '__main__':
    serve(sys.argv[1])


__all__ = ['CLEAN', 'met_stall', 'NOTED', 'PERIOD', 'PRIORITY', 'serve', 'stalls_within',
           'StallMonitor', 'steal_seconds']
