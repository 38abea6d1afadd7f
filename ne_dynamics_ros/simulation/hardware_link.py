"""The simulated arm's side of ``ne_dynamics_ros_hardware/SimArmSystem``: datagrams, the clock.

Pure module (no ROS). The hardware plugin (``hardware/src/sim_arm_system.cpp``) is the
driver of a robot that ``sim_arm_node`` simulates, and it reaches the arm as a real driver
reaches its robot: not over DDS but over a link of its own, here two Unix datagram
sockets in Linux's abstract namespace, ``@<channel>/arm`` (the arm's, bound by
:class:`HardwareLink`) and ``@<channel>/hardware`` (the plugin's). Every
controller_manager cycle ``write()`` sends one command datagram; the arm answers it at
once with one state datagram; the plugin's next ``read()`` takes every state waiting
and keeps the newest, as UR's RTDE, libfranka and KUKA's FRI give their driver the
robot's newest state once per cycle.

Datagrams (host byte order, the layout the plugin's source states too):

* command: ``b'NECM'``, uint32 n, uint64 seq, int64 read_ns (this cycle's ``read()``),
  int64 write_ns (this ``write()``; both system clock, ns), float64 effort[n] (N·m or
  N, the hardware's joint order; NaN commands already sent as 0), then the n joint names,
  each NUL-terminated;
* state: ``b'NEST'``, uint32 n, uint64 seq (of the command it answers), int64 stamp_ns
  (the instant the state is the arm's, ns), float64 position[n] (rad or m), velocity[n]
  (rad/s or m/s), acceleration[n] (rad/s² or m/s², the arm's under the command just
  taken), effort[n] (N·m or N), then inverse_inertia[n·n] (row-major, rad/(N·m·s²): how
  the acceleration answers a change of command, ``∂q̈/∂τ``, the armature included), in
  the command's joint order.

:class:`HardwareClock` is what the arm does with a command: the arm advances by the time
since the previous write under the command that was in force (zero-order hold, bounded by
``max_step``), takes the new one, and is carried on under it to the instant of the
hardware's next ``read()`` (this read plus the cycle period, learnt from the reads'
instants), the state the next read will find. A read that comes at another instant
(controller_manager's loop wakes late, or overruns), or finds no newer state (the arm's
answer late: this process did not get the CPU in time), finds the newest state carried
to its own instant by the plugin, under the commands written since:
``q̈ = q̈₀ + M⁻¹ (τ − τ₀)`` over each command's interval, ``q + q̇ h + q̈ h²/2``, ``q̇ + q̈ h``
(at most 20 ms). Without it the node saw a state older than its stamp, an error of
``q̇ δ`` the arm did not have: the worst sample of a 0.3 rad move on the UR5e, uniform on
every joint, was ``q̇ δ`` for the ``δ`` of that read (0.4-1.7 mrad at 1.3-4.5 ms late,
0.1 mrad at 0.3 ms early; 2026-12-02); and with this arm's answers late (writes reaching
it 4 ms late at p50 on a 2-core machine whose hypervisor took half of it) the loop fed
on states cycles old and went unstable.
"""
from dataclasses import dataclass
import socket
import struct

import numpy as np

from ne_dynamics_ros.errors import ModelError

COMMAND_MAGIC = b'NECM'
STATE_MAGIC = b'NEST'
#: magic, n, seq, read_ns, write_ns
COMMAND_HEADER = struct.Struct('=4sIQqq')
#: magic, n, seq, stamp_ns
STATE_HEADER = struct.Struct('=4sIQq')
#: The longest datagram the arm takes (a few hundred joints with long names).
MAX_DATAGRAM = 65536
#: How many read-to-read intervals the cycle period is the median of.
PERIOD_WINDOW = 64


class HardwareLinkError(ModelError):
    """A datagram on the hardware link is malformed: the message says how."""


@dataclass(frozen=True)
class HardwareCommand:
    """One write of the hardware: what the plugin sent.

    Attributes:
        seq: the write's number (1, 2, ... from the plugin's configuration).
        read_ns: the instant of this cycle's ``read()``, system clock, ns.
        write_ns: the instant of this ``write()``, system clock, ns.
        effort: (n,) N·m or N, in ``names``' order.
        names: (n,) the hardware's joints.
        names_raw: the names as they came (bytes): ``parse_command``'s cache key.
    """

    seq: int
    read_ns: int
    write_ns: int
    effort: np.ndarray
    names: tuple
    names_raw: bytes = b''


def abstract_address(channel, end):
    """Return the abstract socket address ``@<channel>/<end>`` (``end``: arm or hardware)."""
    if not channel:
        raise HardwareLinkError('the hardware channel is empty')
    return '\0' + f'{channel}/{end}'


def pack_command(seq, read_ns, write_ns, effort, names):
    """Return a command datagram (what the plugin's ``write()`` sends; for tests)."""
    effort = np.asarray(effort, dtype='<f8').reshape(-1)
    names = [str(n) for n in names]
    if len(names) != effort.size:
        raise HardwareLinkError(f'{effort.size} efforts for {len(names)} names')
    return (COMMAND_HEADER.pack(COMMAND_MAGIC, effort.size, seq, read_ns, write_ns)
            + effort.tobytes() + b''.join(n.encode() + b'\0' for n in names))


def parse_command(data, names_cache=None):
    """Return the :class:`HardwareCommand` in a command datagram.

    ``names_cache``: the previous command, whose names are reused when they came as the
    same bytes (they do, every cycle).

    Raises:
        HardwareLinkError: not a command datagram, a size that does not match its n, names
            that are not n NUL-terminated UTF-8 strings, or NaN/inf efforts.
    """
    if len(data) < COMMAND_HEADER.size:
        raise HardwareLinkError(f'a datagram of {len(data)} bytes is no command '
                                f'(header {COMMAND_HEADER.size} bytes)')
    magic, n, seq, read_ns, write_ns = COMMAND_HEADER.unpack_from(data)
    if magic != COMMAND_MAGIC:
        raise HardwareLinkError(f'datagram starts with {magic!r}, not {COMMAND_MAGIC!r}')
    start = COMMAND_HEADER.size + 8 * n
    if len(data) < start + n:
        raise HardwareLinkError(f'command of {len(data)} bytes too short for {n} joints')
    effort = np.frombuffer(data, dtype='=f8', count=n, offset=COMMAND_HEADER.size).copy()
    raw = bytes(data[start:])
    if names_cache is not None and names_cache.names_raw == raw:
        names = names_cache.names
    else:
        parts = raw.split(b'\0')
        if len(parts) != n + 1 or parts[-1] != b'' or not all(parts[:-1]):
            raise HardwareLinkError(f'command names are not {n} NUL-terminated names')
        try:
            names = tuple(p.decode() for p in parts[:-1])
        except UnicodeDecodeError as exc:
            raise HardwareLinkError(f'command names are not UTF-8: {exc}') from None
    if not np.all(np.isfinite(effort)):
        raise HardwareLinkError(f'NaN or inf effort in command {seq}')
    return HardwareCommand(seq, read_ns, write_ns, effort, names, raw)


def pack_state(seq, stamp_ns, position, velocity, acceleration, effort, inverse_inertia):
    """Return a state datagram, all in the command's joint order.

    ``position``, ``velocity``, ``acceleration``, ``effort``: (n,) each;
    ``inverse_inertia``: (n, n), ``∂q̈/∂τ``.

    Raises:
        HardwareLinkError: ``inverse_inertia`` is not (n, n).
    """
    n = np.asarray(position).size
    inverse_inertia = np.asarray(inverse_inertia, dtype='=f8')
    if inverse_inertia.shape != (n, n):
        raise HardwareLinkError(f'an inverse inertia of shape {inverse_inertia.shape} for '
                                f'{n} joints')
    values = np.concatenate([np.asarray(v, dtype='=f8').reshape(-1)
                             for v in (position, velocity, acceleration, effort,
                                       inverse_inertia)])
    return STATE_HEADER.pack(STATE_MAGIC, n, seq, int(stamp_ns)) + values.tobytes()


def parse_state(data):
    """Return the fields of a state datagram, as :func:`pack_state` takes them.

    ``(seq, stamp_ns, position, velocity, acceleration, effort, inverse_inertia)``: the
    arrays (n,), the last (n, n).

    Raises:
        HardwareLinkError: not a state datagram, or a size that does not match its n.
    """
    if len(data) < STATE_HEADER.size:
        raise HardwareLinkError(f'a datagram of {len(data)} bytes is no state')
    magic, n, seq, stamp_ns = STATE_HEADER.unpack_from(data)
    if magic != STATE_MAGIC or len(data) != STATE_HEADER.size + 8 * n * (4 + n):
        raise HardwareLinkError(f'not a state datagram of {n} joints ({len(data)} bytes)')
    values = np.frombuffer(data, dtype='=f8', offset=STATE_HEADER.size)
    rows = values[:4 * n].reshape(4, n)
    return ((seq, stamp_ns) + tuple(row.copy() for row in rows)
            + (values[4 * n:].reshape(n, n).copy(),))


def inverse_inertia(acceleration, position, velocity):
    """Return the (n, n) ``∂q̈/∂τ`` of a plant at a state, column by column.

    ``acceleration(position, velocity, effort)`` is the plant's forward dynamics; q̈ is
    affine in τ (``M⁻¹ (τ − h)``), so a unit effort on joint j, less none, is column j
    exactly (1 N·m is within any joint's limit, where the plant clips).
    """
    n = np.asarray(position).size
    base = acceleration(position, velocity, np.zeros(n))
    unit = np.eye(n)
    return np.column_stack([acceleration(position, velocity, unit[j]) - base
                            for j in range(n)])


class CyclePeriod:
    """The hardware's cycle period: the median of the last read-to-read intervals, ns."""

    def __init__(self, window=PERIOD_WINDOW):
        self._intervals = []
        self._window = int(window)
        self._last = None

    def update(self, read_ns):
        """Take a cycle's read instant (ns); return the period (ns), None until known."""
        if self._last is not None and read_ns > self._last:
            self._intervals.append(read_ns - self._last)
            del self._intervals[:-self._window]
        self._last = read_ns
        return self.period()

    def period(self):
        """Return the median interval, ns (None before two reads)."""
        if not self._intervals:
            return None
        return int(np.median(self._intervals))


class HardwareClock:
    """Advance an arm on the hardware's writes (see the module docstring).

    ``arm``: a simulated arm (``step(effort, dt)``, ``n``); ``max_step``: the longest
    time, s, one command acts unseen (a longer silence is simulated only that long and
    counted in ``late_writes``); ``brakes``: held still until the first non-zero command.

    Attributes:
        sim_ns: the instant the arm's state is at, ns (None before the first write).
        command: (n,) the command in force, the arm's joint order.
        late_writes: writes that came more than ``max_step`` after the previous one.
    """

    def __init__(self, arm, max_step, brakes=True):
        self.arm = arm
        self.max_step = float(max_step)
        self.released = not brakes
        self.sim_ns = None
        self.command = np.zeros(arm.n)
        self.late_writes = 0
        self.cycle = CyclePeriod()

    def write(self, effort, read_ns, write_ns):
        """Take one write's (n,) ``effort`` (arm order); return the new state's stamp, ns.

        The command in force acts from the state's instant to ``write_ns``; then
        ``effort`` acts up to the next read (``read_ns`` plus the cycle period; at most one
        period ahead of the arm). Before the first non-zero command (brakes on) the arm
        stands still while time passes.
        """
        max_ns = int(self.max_step * 1e9)
        if self.sim_ns is not None and write_ns > self.sim_ns:
            elapsed = write_ns - self.sim_ns
            if elapsed > max_ns:
                self.late_writes += 1
                elapsed = max_ns
            if self.released:
                self.arm.step(self.command, elapsed * 1e-9)
        self.sim_ns = write_ns if self.sim_ns is None else max(write_ns, self.sim_ns)
        effort = np.asarray(effort, dtype=float)
        self.released = self.released or bool(np.any(effort))
        self.command = effort
        period = self.cycle.update(read_ns)
        if period is not None and self.released:
            lead = min(read_ns + period - self.sim_ns, period)
            if lead > 0:
                self.arm.step(self.command, lead * 1e-9)
                self.sim_ns += lead
        return self.sim_ns


class HardwareLink:
    """The arm's socket, ``@<channel>/arm``: commands in, states back to their sender.

    Raises:
        HardwareLinkError: the address is taken (another arm on this channel).
    """

    def __init__(self, channel):
        self.address = abstract_address(channel, 'arm')
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self._socket.bind(self.address)
        except OSError as exc:
            self._socket.close()
            raise HardwareLinkError(f'cannot bind @{channel}/arm: {exc} (another arm on '
                                    'this channel?)') from None

    def receive(self, timeout):
        """Return ``(datagram bytes, sender)``, or None after ``timeout`` s without one."""
        self._socket.settimeout(timeout)
        try:
            return self._socket.recvfrom(MAX_DATAGRAM)
        except (socket.timeout, BlockingIOError):
            return None

    def send(self, data, address):
        """Send ``data`` to ``address``; return False when it cannot take it (gone, full)."""
        try:
            self._socket.sendto(data, socket.MSG_DONTWAIT, address)
        except OSError:
            return False
        return True

    def close(self):
        """Close the socket (the address is free again)."""
        self._socket.close()


__all__ = ['abstract_address', 'COMMAND_HEADER', 'CyclePeriod', 'HardwareClock',
           'HardwareCommand', 'HardwareLink', 'HardwareLinkError', 'inverse_inertia',
           'pack_command',
           'pack_state', 'parse_command', 'parse_state', 'STATE_HEADER']
