"""What is done to a recording before it is identified: steps, resampling, currents, glitches.

Pure module (NumPy). Real arms do not sample at a fixed rate (a UR10e over RTDE logs at
about 94 Hz in steps of 10 and 12 ms, a Franka Panda at about 1 kHz with steps of 0.7 to
8.8 ms): :func:`step_spread` measures the spread, :func:`resampled` puts a recording on a
uniform grid for the filters. Arms that log motor currents instead of efforts (UR RTDE
``actual_current``) are scaled to efforts by :func:`scaled_efforts`. Positions no joint can
measure are refused (:func:`check_positions`) and sensor glitches dropped
(:func:`drop_jumps`). The functions take and return
:class:`~ne_dynamics_ros.identification.recording.JointRecording` objects (new ones:
the input is never changed).
"""
import dataclasses
from dataclasses import dataclass
import math

import numpy as np

from ne_dynamics_ros.errors import RecordingError, shorten


#: Steps all within this fraction of their mean are uniform (:func:`resampled` leaves them).
UNIFORM_TOLERANCE = 1e-6
#: :attr:`StepSpread.off_fraction` counts the steps further than this fraction from the mean.
OFF_MEAN = 0.10


@dataclass(frozen=True)
class StepSpread:
    """How a recording's time steps spread (:meth:`JointRecording.steps`); times in s.

    Attributes:
        mean: mean step, (t[-1] - t[0]) / (N - 1), s (1 / rate).
        minimum: shortest of the N - 1 steps, s.
        median: median step, s.
        maximum: longest step, s.
        std: standard deviation of the steps, s.
        off_fraction: fraction of the steps more than 10 % (:data:`OFF_MEAN`) off the mean.
        uniform: every step within 1e-6 (:data:`UNIFORM_TOLERANCE`) relative of the mean.
        longest_at: time at which the longest step starts, s.
    """

    mean: float
    minimum: float
    median: float
    maximum: float
    std: float
    off_fraction: float
    uniform: bool
    longest_at: float

    def text(self):
        """Return the spread in words for a note.

        E.g. ``steps 10.0-12.0 ms (median 10.0, std 1.0; 29 % more than 10 % off the mean
        10.6 ms)``.
        """
        return (f'steps {_ms(self.minimum)}\u2013{_ms(self.maximum)} ms (median '
                f'{_ms(self.median)}, std {_ms(self.std)}; {100 * self.off_fraction:.0f} % '
                f'more than {100 * OFF_MEAN:.0f} % off the mean {_ms(self.mean)} ms)')


def _ms(seconds):
    """Return ``seconds`` in ms for a message: one decimal, two digits below 1 ms."""
    value = 1e3 * seconds
    return f'{value:.1f}' if not 5e-4 <= abs(value) < 0.95 else f'{value:.2g}'


def _show(value):
    """Return a value given by the user for a message: a number as ``%g``, else its repr."""
    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        return f'{float(value):g}'
    return shorten(repr(value), 40)


def need_two(t, source):
    """Raise RecordingError unless the times ``t`` (N,) hold a step (N >= 2)."""
    if t.size < 2:
        raise RecordingError(f'{source}: {t.size} samples have no time step (at least 2 '
                             'are needed)')


def step_spread(t, source=''):
    """Return the spread of the time steps of ``t`` (N,) s as a :class:`StepSpread`.

    Raises:
        RecordingError: fewer than 2 samples (no step), naming ``source``.
    """
    need_two(t, source)
    dt = np.diff(t)                        # (N - 1,) s; one temporary of N
    mean = float((t[-1] - t[0]) / dt.size)
    longest = int(np.argmax(dt))
    deviation = np.abs(dt - mean)
    return StepSpread(
        mean=mean, minimum=float(dt.min()), median=float(np.median(dt)),
        maximum=float(dt[longest]), std=float(dt.std()),
        off_fraction=float(np.count_nonzero(deviation > OFF_MEAN * mean) / dt.size),
        uniform=bool(deviation.max() <= UNIFORM_TOLERANCE * mean),
        longest_at=float(t[longest]))


def describe_steps(rate, spread, resample=True):
    """Return one line on a rate (Hz) and its :class:`StepSpread`, for the CLI.

    ``...: regular`` when every step is within 1e-6 of the mean
    (:data:`UNIFORM_TOLERANCE`), else ``...: irregular`` (with ``resample``: ``...,
    resampled to a uniform ... Hz grid``).
    """
    text = (f'{rate:.1f} Hz mean (steps {_ms(spread.minimum)}\u2013'
            f'{_ms(spread.maximum)} ms, spread {_ms(spread.std)} ms): ')
    if spread.uniform:
        return text + 'regular'
    if not resample:
        return text + 'irregular'
    return text + f'irregular, resampled to a uniform {rate:.1f} Hz grid'


def resampled(recording, rate=None):
    """Return ``recording`` on a uniform time grid, interpolated linearly.

    The grid runs from ``t[0]`` at the mean rate (:attr:`JointRecording.rate`: N samples,
    ending exactly at ``t[-1]``) or at ``rate`` (as many steps of 1/rate as fit before
    ``t[-1]``). Positions, velocities (when recorded) and efforts are interpolated per
    column (a few temporaries of N values, besides the (M, n) results: a 2-million-row,
    7-joint recording needs 3 x 112 MB for q, qd and effort and about 65 MB more).
    ``tracking_error`` is kept as it is (its own times, same time base). Linear
    interpolation does not low-pass: to go far below the recorded rate, filter first.

    Args:
        recording: :class:`JointRecording`, (N,) times, (N, n) arrays.
        rate: grid rate, Hz (default the mean rate).

    Returns:
        a :class:`JointRecording` with (M,) times and (M, n) arrays, its ``notes`` saying
        it was resampled and from what spread; or ``recording`` itself when its steps are
        already uniform (all within 1e-6 relative of the mean) at that rate.

    Raises:
        RecordingError: ``rate`` not a finite number > 0, or fewer than 2 samples on the
            grid (or in the recording).
    """
    spread = step_spread(recording.t, recording.source)
    t = recording.t
    if rate is None:
        if spread.uniform:
            return recording
        count = t.size
        rate = recording.rate
        grid = np.linspace(t[0], t[-1], count)
    else:
        given = rate
        try:
            rate = float(rate)
        except (TypeError, ValueError):
            rate = math.nan
        if not (math.isfinite(rate) and rate > 0):
            raise RecordingError(f'resampling rate must be a finite number > 0 Hz, got '
                                 f'{_show(given)}')
        if spread.uniform and abs(rate * spread.mean - 1.0) <= UNIFORM_TOLERANCE:
            return recording
        count = int(math.floor((t[-1] - t[0]) * rate * (1 + 1e-12))) + 1
        if count < 2:
            raise RecordingError(f'{recording.source}: {t[-1] - t[0]:.6g} s hold no step of '
                                 f'{1 / rate:.6g} s ({rate:g} Hz)')
        grid = t[0] + np.arange(count) / rate
        np.minimum(grid, t[-1], out=grid)            # rounding of the last point
    note = (f'{recording.source}: resampled to a uniform {rate:.6g} Hz grid ({count} samples '
            f'from {t.size}) from irregular {spread.text()}')
    if spread.maximum > 5 * spread.mean:
        note += (f'; the longest step, {_ms(spread.maximum)} ms at t = '
                 f'{spread.longest_at:.3f} s, is bridged by a straight line')
    return dataclasses.replace(
        recording, t=grid, q=_interpolate(grid, t, recording.q),
        qd=None if recording.qd is None else _interpolate(grid, t, recording.qd),
        effort=_interpolate(grid, t, recording.effort), notes=recording.notes + (note,))


def _interpolate(grid, t, values):
    """Return (M, n) ``values`` (N, n) at the times ``grid`` (M,), one column at a time."""
    out = np.empty((grid.size, values.shape[1]))
    for j in range(values.shape[1]):
        out[:, j] = np.interp(grid, t, values[:, j])
    return out


def check_current_constants(constants, joints, name='current-to-effort constant'):
    """Check current-to-effort constants (N·m/A) against the joints; return them as (n,).

    Args:
        constants: one per joint, in the order of ``joints``: torque constant x gear ratio
            (N·m/A, or N/A for a prismatic joint); numbers or their text.
        joints: (n,) joint names.
        name: what the message calls a constant (e.g. ``'--current-to-effort'``).

    Returns:
        (n,) float array.

    Raises:
        RecordingError: a count other than the joints' (naming both counts and the
            joints), or a constant that is not a finite number > 0 (naming its joint and
            the value).
    """
    joints = list(joints)
    values = list(np.atleast_1d(np.asarray(constants, dtype=object)))
    if len(values) != len(joints):
        raise RecordingError(f'{name}: {len(values)} given for {len(joints)} joints '
                             f'{joints}: give one per joint, in this order (N·m/A: torque '
                             'constant x gear ratio)')
    out = np.empty(len(joints))
    for k, (joint, value) in enumerate(zip(joints, values)):
        try:
            out[k] = float(value)
        except (TypeError, ValueError):
            out[k] = math.nan
        if not (math.isfinite(out[k]) and out[k] > 0):
            raise RecordingError(f'{name} of {joint} must be a finite number > 0 (N·m/A: '
                                 f'torque constant x gear ratio), got {_show(value)}')
    return out


def scaled_efforts(recording, constants):
    """Return ``recording`` with efforts = recorded currents x constants, per joint.

    For arms that log motor currents (A) where the efforts belong (UR RTDE
    ``actual_current``): effort_j = K_j x current_j, K_j = torque constant x gear ratio
    (N·m/A) of joint j.

    Args:
        recording: :class:`JointRecording` whose ``effort`` (N, n) holds currents, A.
        constants: (n,) N·m/A, in the order of ``recording.joints``.

    Returns:
        a :class:`JointRecording` with (N, n) efforts in N·m (a new array), its ``notes``
        saying the efforts are currents x constants (naming them).

    Raises:
        RecordingError: as :func:`check_current_constants`.
    """
    gains = check_current_constants(constants, recording.joints)
    named = ', '.join(f'{j} {k:g}' for j, k in zip(recording.joints, gains))
    note = (f'{recording.source}: efforts are the recorded currents (A) x current-to-effort '
            f'constants (N·m/A: {named})')
    return dataclasses.replace(recording, effort=recording.effort * gains,
                               notes=recording.notes + (note,))


#: A jump is implausible beyond this multiple of the velocity limit over the step: URDF
#: velocity limits are often conservative and a simulated arm does not enforce them (the
#: demo's PUMA moves joint 3 at 1.25 times its limit), a sensor glitch is far beyond.
JUMP_FACTOR = 2.0
#: At most this fraction of the samples may be dropped as jumps.
MAX_JUMP_FRACTION = 0.01


def check_positions(recording, joint_names=None):
    """Refuse a recording whose positions no joint can measure, naming the first one.

    A position beyond :data:`~ne_dynamics_ros.control.controller.MAX_POSITION` (1e6 rad
    or m, the node's own bound: a continuous joint would need 160 000 turns), finite or
    not, is no joint angle (wrong units or a corrupted file): the recording is refused
    with the joint, the value, when it was measured and the bound.

    Raises:
        RecordingError: naming them.
    """
    from ne_dynamics_ros.control.controller import MAX_POSITION

    names = list(joint_names or recording.joints)
    with np.errstate(invalid='ignore'):
        bad = ~(np.abs(recording.q) <= MAX_POSITION)        # NaN counts too
    if not bad.any():
        return
    row, column = (int(v) for v in np.argwhere(bad)[0])
    value = recording.q[row, column]
    raise RecordingError(
        f'{recording.source}: {names[column]} position {value:.6g} at t = '
        f'{recording.t[row] - recording.t[0]:.3f} s is beyond {MAX_POSITION:g} rad (m), '
        f'which no joint measures ({int(bad[:, column].sum())} such samples of '
        f'{names[column]}): wrong units, or a damaged recording?')


def drop_jumps(recording, velocity_limits, joint_names=None):
    """Drop samples whose position jumps beyond the joint's velocity limit.

    A sample is implausible when, for some joint, ``|q_k - q_last| > 2 v_max (t_k -
    t_last) + 1e-6`` against the last plausible sample (a sensor glitch: one or a few
    samples far away, the arm cannot have moved there); joints without a finite limit
    are not checked.

    Args:
        recording: :class:`JointRecording`.
        velocity_limits: (n,) rad/s or m/s (inf: not checked).
        joint_names: names for the message (default the recording's).

    Returns:
        the recording without them (its ``notes`` counting them, naming the joints), or
        the same recording when there are none.

    Raises:
        RecordingError: more than 1 % of the samples would be dropped (the positions are
            not a plausible motion: wrong units, or another joint order?).
    """
    vmax = np.asarray(velocity_limits, dtype=float)
    q, t = recording.q, recording.t
    checked = np.isfinite(vmax)
    if q.shape[0] < 2 or not checked.any():
        return recording
    allowed = JUMP_FACTOR * np.where(checked, vmax, 0.0)
    columns = np.flatnonzero(checked)
    found = []
    for start in range(0, q.shape[0] - 1, 100000):     # bounded temporaries
        stop = min(q.shape[0], start + 100001)
        step = np.abs(np.diff(q[start:stop, columns], axis=0))
        step -= allowed[columns] * np.diff(t[start:stop])[:, None] + 1e-6
        found.append(np.flatnonzero((step > 0).any(axis=1)) + start + 1)
    candidates = np.concatenate(found)
    if candidates.size == 0:
        return recording
    keep = np.ones(q.shape[0], dtype=bool)
    culprits = np.zeros(q.shape[1], dtype=bool)
    limit = int(MAX_JUMP_FRACTION * q.shape[0]) + 1
    last, k, position = 0, 0, 0
    while position < candidates.size:
        k = max(k, int(candidates[position]))
        position += 1
        # walk on from a candidate until a sample is plausible against the last kept one
        while k < q.shape[0]:
            far = np.abs(q[k] - q[last]) > allowed * (t[k] - t[last]) + 1e-6
            far &= checked
            if not far.any():
                last = k
                break
            keep[k] = False
            culprits |= far
            if (~keep).sum() > limit:
                raise RecordingError(
                    f'{recording.source}: more than {100 * MAX_JUMP_FRACTION:g}% of the '
                    'samples jump beyond the joints\' velocity limits: the positions are not '
                    'a plausible motion (units? joint order?)')
            k += 1
        while position < candidates.size and candidates[position] <= k:
            position += 1
    names = list(joint_names or recording.joints)
    dropped = int((~keep).sum())
    if dropped == 0:
        return recording
    note = (f'{recording.source}: dropped {dropped} samples whose position jumps beyond '
            f'twice the velocity limit over one sample (joints '
            f'{[n for n, c in zip(names, culprits) if c]})')
    return dataclasses.replace(
        recording, t=t[keep], q=q[keep], qd=None if recording.qd is None else
        recording.qd[keep], effort=recording.effort[keep], notes=recording.notes + (note,))


#: Seconds between joined recordings: over the observer's restart gap (0.1 s).
JOIN_GAP = 1.0


def joined(recordings):
    """Return several recordings of the same joints as one, and where each starts.

    Each starts :data:`JOIN_GAP` after the previous one ends (the momentum observer
    restarts over such a gap); for filters and fits, keep them apart (they are not one
    motion). Returns (the joined :class:`~ne_dynamics_ros.identification.recording.
    JointRecording`, [(start time s, source)] per recording); one recording comes back
    as it is.
    """
    recordings = list(recordings)
    if len(recordings) == 1:
        return recordings[0], [(0.0, recordings[0].source)]
    starts, t, offset = [], [], 0.0
    for one in recordings:
        starts.append((offset, one.source))
        t.append(one.t - one.t[0] + offset)
        offset = float(t[-1][-1]) + JOIN_GAP
    with_qd = all(one.qd is not None for one in recordings)
    first = recordings[0]
    return dataclasses.replace(
        first, t=np.concatenate(t), q=np.vstack([one.q for one in recordings]),
        qd=np.vstack([one.qd for one in recordings]) if with_qd else None,
        effort=np.vstack([one.effort for one in recordings]),
        source=' + '.join(one.source for one in recordings), tracking_error=None,
        notes=tuple(n for one in recordings for n in one.notes)), starts


def locate(time, starts):
    """Return (source, time in it) of a ``time`` of a :func:`joined` recording."""
    start, source = max((s for s in starts if s[0] <= time), default=starts[0])
    return source, time - start


__all__ = ['check_current_constants', 'check_positions', 'describe_steps', 'drop_jumps',
           'JOIN_GAP', 'joined', 'JUMP_FACTOR', 'locate', 'MAX_JUMP_FRACTION', 'need_two',
           'OFF_MEAN', 'resampled', 'scaled_efforts', 'step_spread', 'StepSpread',
           'UNIFORM_TOLERANCE']
