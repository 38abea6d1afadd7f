"""Joint states recorded while the arm moves: rosbag2 (MCAP, sqlite3) and CSV.

A recording is what ``ros2 bag record /joint_states`` makes while the arm runs an
excitation trajectory: ``sensor_msgs/msg/JointState`` messages with position, (optionally)
velocity and the measured effort. Bags are read with the ``rosbags`` library (no ROS
installation needed); joints are matched by name in every message (their order may change);
time is the message's ``header.stamp`` (the recording time when a stamp is zero).

CSV: a header row with ``time`` (s) and, per joint, ``position/<joint>``, optionally
``velocity/<joint>``, and ``effort/<joint>`` (a column whose name *ends* with these, such as
``/joint_states/position/joint_1``, is taken too); one row per sample.

Real arms do not sample at a fixed rate (a UR10e over RTDE logs at about 94 Hz in steps of 10
and 12 ms, a Franka Panda at about 1 kHz with steps of 0.7 to 8.8 ms):
:meth:`JointRecording.steps` measures the spread, :func:`resampled` puts a recording on a
uniform grid for the filters. Arms that log motor currents instead of efforts (UR RTDE
``actual_current``) are scaled to efforts by :func:`scaled_efforts`.
"""
import csv
import dataclasses
from dataclasses import dataclass
import itertools
import math
import os
import pathlib
import shutil
import struct
import tempfile
from typing import Optional
import warnings

import numpy as np

from ne_dynamics_ros.errors import RecordingError, require, shorten

#: Fewer samples than this cannot identify anything.
MIN_SAMPLES = 50
#: Show a progress bar for bags with more messages than this.
PROGRESS_MESSAGES = 5000
JOINT_STATE = 'sensor_msgs/msg/JointState'


def _cut(text):
    """Return a library's message on one line, cut to 300 characters (:func:`shorten`)."""
    return shorten(text, 300, one_line=True)


@dataclass(frozen=True)
class JointRecording:
    """Joint states over time, joints in the order asked for.

    Attributes:
        joints: (n,) joint names.
        t: (N,) time, s, strictly increasing, starting at 0.
        q: (N, n) positions (rad or m).
        qd: (N, n) recorded velocities (rad/s or m/s), or None when not recorded.
        effort: (N, n) measured efforts (N·m or N).
        source: where it came from (file and topic), for messages.
        tracking_error: the controller's ``q_d - q`` when the recording carries it
            (``computed_torque_node``'s ``~/tracking_error``), else None: a pair of (M,)
            times in the same time base as ``t`` and (M, n) errors, rad (m).
        notes: what was skipped or dropped on the way, one message each (counts).
    """

    joints: tuple
    t: np.ndarray
    q: np.ndarray
    qd: Optional[np.ndarray]
    effort: np.ndarray
    source: str
    tracking_error: Optional[tuple] = None
    notes: tuple = ()

    @property
    def rate(self):
        """Mean sample rate, Hz: (N - 1) / (t[-1] - t[0]).

        Raises:
            RecordingError: fewer than 2 samples (no rate).
        """
        _need_two(self)
        return float((self.t.size - 1) / (self.t[-1] - self.t[0]))

    def steps(self):
        """Return the spread of the time steps as a :class:`StepSpread` (s).

        Raises:
            RecordingError: fewer than 2 samples (no step).
        """
        _need_two(self)
        dt = np.diff(self.t)                        # (N - 1,) s; one temporary of N
        mean = float((self.t[-1] - self.t[0]) / dt.size)
        longest = int(np.argmax(dt))
        deviation = np.abs(dt - mean)
        return StepSpread(
            mean=mean, minimum=float(dt.min()), median=float(np.median(dt)),
            maximum=float(dt[longest]), std=float(dt.std()),
            off_fraction=float(np.count_nonzero(deviation > OFF_MEAN * mean) / dt.size),
            uniform=bool(deviation.max() <= UNIFORM_TOLERANCE * mean),
            longest_at=float(self.t[longest]))

    def describe(self, resample=True):
        """Return one line on the rate and the regularity of the steps, for the CLI.

        E.g. ``93.9 Hz mean (steps 10.0-12.0 ms, spread 1.0 ms): irregular, resampled to
        a uniform 93.9 Hz grid`` (with ``resample``; else ``...: irregular``), or ``...:
        regular`` when every step is within 1e-6 of the mean (:data:`UNIFORM_TOLERANCE`).

        Raises:
            RecordingError: fewer than 2 samples.
        """
        spread = self.steps()
        text = (f'{self.rate:.1f} Hz mean (steps {_ms(spread.minimum)}\u2013'
                f'{_ms(spread.maximum)} ms, spread {_ms(spread.std)} ms): ')
        if spread.uniform:
            return text + 'regular'
        if not resample:
            return text + 'irregular'
        return text + f'irregular, resampled to a uniform {self.rate:.1f} Hz grid'


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


def _need_two(recording):
    if recording.t.size < 2:
        raise RecordingError(f'{recording.source}: {recording.t.size} samples have no time '
                             'step (at least 2 are needed)')


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
    spread = recording.steps()
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


def _typestore():
    typesys = require('rosbags.typesys', 'reading and writing rosbag2 recordings')
    get_typestore, Stores = typesys.get_typestore, typesys.Stores
    return get_typestore(Stores.ROS2_JAZZY)


def _finish(joints, stamps, q, qd, effort, source, min_samples):
    """Check and assemble a recording (shared by the bag and CSV readers)."""
    count = len(stamps)
    if count < min_samples:
        raise RecordingError(f'{source}: {count} samples with all of {list(joints)}; '
                             f'identification needs at least {min_samples}')
    t = np.asarray(stamps, dtype=float)
    steps = np.diff(t)
    bad = np.flatnonzero(~(steps > 0))
    if bad.size:
        k = int(bad[0])
        raise RecordingError(f'{source}: time stamps do not increase: sample {k + 1} at '
                             f'{t[k + 1]:.9f} s follows {t[k]:.9f} s ({bad.size} such steps)')
    arrays = [np.asarray(a, dtype=float) for a in (q, effort)]
    velocity = None if qd is None else np.asarray(qd, dtype=float)
    for label, a in (('position', arrays[0]), ('effort', arrays[1]), ('velocity', velocity)):
        if a is not None and not np.all(np.isfinite(a)):
            row = int(np.flatnonzero(~np.all(np.isfinite(a), axis=1))[0])
            raise RecordingError(f'{source}: non-finite {label} in sample {row}')
    return JointRecording(tuple(joints), t - t[0], arrays[0], velocity, arrays[1], source)


#: Where computed_torque_node publishes q_d - q (read with the joint states when recorded).
TRACKING_ERROR_TOPIC = '/computed_torque_node/tracking_error'


def read_bag(path, joints, topic='/joint_states', min_samples=MIN_SAMPLES, progress=True,
             tracking_topic=TRACKING_ERROR_TOPIC):
    """Read joint states of ``joints`` from a rosbag2 directory (or its .mcap/.db3 file).

    Args:
        path: the bag directory (with metadata.yaml), as ``ros2 bag record`` writes it.
        joints: joint names wanted, in the order of the returned arrays.
        topic: the JointState topic.
        min_samples: fewest samples accepted.
        progress: show a progress bar (tqdm, on stderr) for long bags.
        tracking_topic: JointState topic with the controller's ``q_d - q`` in ``position``
            (read into ``tracking_error`` when the bag has it; None: not read).

    Returns:
        :class:`JointRecording`. Messages that lack one of the joints are skipped; if
        velocities are missing from any used message, ``qd`` is None.

    Raises:
        RecordingError: no such bag, not a rosbag2, topic missing or of another type,
            no effort in the messages, joints never present, too few samples, stamps
            not increasing.
    """
    highlevel = require('rosbags.highlevel', 'reading rosbag2 recordings')
    AnyReader, AnyReaderError = highlevel.AnyReader, highlevel.AnyReaderError
    ReaderError = require('rosbags.rosbag2', 'reading rosbag2 recordings').ReaderError
    path = pathlib.Path(path)
    bag_dir = _bag_folder(path)
    joints = list(joints)
    source = f'{bag_dir} ({topic})'
    try:
        reader = AnyReader([bag_dir], default_typestore=_typestore())
        reader.open()
    except (AnyReaderError, ReaderError, *_DAMAGED) as exc:
        raise RecordingError(f'{bag_dir} is not a readable rosbag2 recording: '
                             f'{_cut(exc)}') from None
    try:
        return _read_messages(reader, bag_dir, source, topic, joints, progress,
                              tracking_topic, min_samples)
    except (AnyReaderError, ReaderError, *_DAMAGED) as exc:
        if isinstance(exc, RecordingError):
            raise
        raise RecordingError(f'{bag_dir}: the storage file is damaged or not what '
                             f'metadata.yaml says ({type(exc).__name__}: {_cut(exc)})') \
            from None
    finally:
        reader.close()


#: What rosbags and its storage readers raise on a damaged file (besides their own errors):
#: a garbage length field can surface as any of these.
_DAMAGED = (OSError, ValueError, LookupError, TypeError, ArithmeticError, AssertionError,
            EOFError, struct.error, MemoryError)


def _bag_folder(path):
    """Return the rosbag2 folder ``path`` names; RecordingError saying what is wrong."""
    if not path.exists():
        raise RecordingError(f'no recording at {path}')
    if path.is_file():
        if path.suffix in ('.mcap', '.db3') and (path.parent / 'metadata.yaml').is_file():
            return path.parent                 # the storage file of a bag: its folder
        raise RecordingError(f'{path} is a file, not a rosbag2 folder: give the folder '
                             '`ros2 bag record` made (metadata.yaml and the .mcap or .db3 '
                             'file), or a .csv file')
    if not path.is_dir():
        raise RecordingError(f'{path} is neither a rosbag2 folder nor a file')
    if not (path / 'metadata.yaml').is_file():
        raise RecordingError(f'{path} has no metadata.yaml: not a rosbag2 folder (a bag '
                             'recorded with `ros2 bag record` has one beside its .mcap or '
                             '.db3 file)')
    return path


def _read_messages(reader, bag_dir, source, topic, joints, progress, tracking_topic,
                   min_samples):
    """Read the joint states (and tracking errors) of an open reader: :func:`read_bag`."""
    connections = [c for c in reader.connections if c.topic == topic]
    if not connections:
        topics = sorted({f'{c.topic} [{c.msgtype}]' for c in reader.connections})
        raise RecordingError(f'{bag_dir}: no topic {topic}; the recording has {topics}')
    wrong = [c.msgtype for c in connections if c.msgtype != JOINT_STATE]
    if wrong:
        raise RecordingError(f'{source}: messages of type {wrong[0]}, expected '
                             f'{JOINT_STATE}')
    total = sum(c.msgcount for c in connections)
    messages = reader.messages(connections=connections)
    if progress and total > PROGRESS_MESSAGES:
        from tqdm import tqdm
        messages = tqdm(messages, total=total, unit='msg', desc=f'reading {topic}')
    stamps, q, qd, effort = [], [], [], []
    seen, with_effort = set(), 0
    velocities = True
    short = 0                       # messages with fewer positions than names
    for connection, timestamp, raw in messages:
        msg = reader.deserialize(raw, connection.msgtype)
        names = list(msg.name)
        seen.update(names)
        index = {name: k for k, name in enumerate(names)}
        if any(name not in index for name in joints):
            continue
        if len(msg.position) != len(names):
            short += 1
            continue
        if len(msg.effort) != len(names):
            continue
        with_effort += 1
        rows = [index[name] for name in joints]
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec   # integer ns
        stamps.append(stamp if stamp > 0 else timestamp)
        q.append(np.asarray(msg.position, dtype=float)[rows])
        effort.append(np.asarray(msg.effort, dtype=float)[rows])
        if len(msg.velocity) == len(names):
            qd.append(np.asarray(msg.velocity, dtype=float)[rows])
        else:
            velocities = False
    tracking = _read_tracking(reader, tracking_topic, joints)
    missing = [name for name in joints if name not in seen]
    if missing:
        raise RecordingError(f'{source}: joints {missing} are in no message '
                             f'(the messages name {sorted(seen)})')
    if not with_effort and total:
        raise RecordingError(f'{source}: the messages carry no effort (joint_state_broadcaster '
                             'publishes the measured effort when the hardware has an effort '
                             'state interface)')
    seconds = [(s - stamps[0]) * 1e-9 for s in stamps]     # exact differences first
    recording = _finish(joints, seconds, q, qd if velocities else None, effort, source,
                        min_samples)
    if tracking is not None and stamps:
        t_e = np.array([(s - stamps[0]) * 1e-9 for s in tracking[0]])
        recording = dataclasses.replace(recording, tracking_error=(t_e, tracking[1]))
    if short:
        recording = dataclasses.replace(recording, notes=recording.notes + (
            f'{source}: skipped {short} messages with fewer positions than names',))
    return recording


def _read_tracking(reader, topic, joints):
    """Return (stamps in ns, (M, n) q_d - q) from ``topic`` of an open bag, or None.

    Messages that lack a joint or hold non-finite values are skipped; None when the bag
    has no such JointState topic or no usable message.
    """
    connections = [c for c in reader.connections
                   if topic and c.topic == topic and c.msgtype == JOINT_STATE]
    if not connections:
        return None
    stamps, errors = [], []
    for connection, timestamp, raw in reader.messages(connections=connections):
        msg = reader.deserialize(raw, connection.msgtype)
        index = {name: k for k, name in enumerate(msg.name)}
        if len(msg.position) != len(msg.name) or any(j not in index for j in joints):
            continue
        row = np.asarray(msg.position, dtype=float)[[index[j] for j in joints]]
        if not np.all(np.isfinite(row)):
            continue
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        stamps.append(stamp if stamp > 0 else timestamp)
        errors.append(row)
    if not stamps:
        return None
    order = np.argsort(stamps, kind='stable')
    return [stamps[k] for k in order], np.array(errors)[order]


def read_csv(path, joints, min_samples=MIN_SAMPLES):
    """Read joint states from a CSV file (module docstring); errors as :func:`read_bag`.

    UTF-8 with or without a byte-order mark; the delimiter is the header's (``,``, ``;``
    or a tab); the numbers are parsed by NumPy in C (a 2-million-row file needs about
    twice its numbers' size in memory, not a Python object per cell). Empty lines and
    ``#`` comments are skipped; every other line is a sample: as many fields as the header
    (at least up to the last column used), the used ones numbers (``nan``/``inf`` are
    refused later as non-finite samples).

    Raises:
        RecordingError: as :func:`read_bag`; a line that is not a sample is named by its
            number (1-based, the header is line 1) and what is wrong with it, e.g.
            ``line 1234: 5 fields, the header has 22`` or ``line 17: 'abc' in column
            position/joint_2 is not a number``.
    """
    path = pathlib.Path(path)
    joints = list(joints)
    source = str(path)
    if path.is_dir():
        raise RecordingError(f'{source} is a folder, not a CSV file')
    try:
        with open(path, newline='', encoding='utf-8-sig') as stream:
            first = stream.readline()
    except FileNotFoundError:
        raise RecordingError(f'no recording at {source}') from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordingError(f'cannot read {source}: {_cut(exc)}') from None
    if not first.strip():
        raise RecordingError(f'{source}: empty file (no header row)')
    delimiter = max(',;\t', key=first.count)
    header = [h.strip() for h in next(csv.reader([first], delimiter=delimiter))]

    def column(kind, joint, required=True):
        matches = [k for k, h in enumerate(header) if h.endswith(f'{kind}/{joint}')]
        if not matches:
            if required:
                raise RecordingError(f'{source}: no column {kind}/{joint} (header: '
                                     f'{_cut(header[:12])}{"..." if len(header) > 12 else ""})')
            return None
        return matches[0]

    if 'time' not in header:
        raise RecordingError(f'{source}: no "time" column (header: {_cut(header[:12])}; '
                             'comma-, semicolon- or tab-separated)')
    missing = [j for j in joints if column('position', j, False) is None]
    if missing:
        raise RecordingError(f'{source}: joints {missing} have no position column')
    if all(column('effort', j, False) is None for j in joints):
        raise RecordingError(f'{source}: no effort columns (effort/<joint>)')
    t_col = header.index('time')
    p_cols = [column('position', j) for j in joints]
    e_cols = [column('effort', j) for j in joints]
    v_cols = [column('velocity', j, False) for j in joints]
    velocities = not any(v is None for v in v_cols)
    used = [t_col] + p_cols + e_cols + (v_cols if velocities else [])
    try:
        with open(path, newline='', encoding='utf-8-sig') as stream, \
                warnings.catch_warnings():
            warnings.simplefilter('ignore', UserWarning)       # "input contained no data"
            data = np.loadtxt(stream, delimiter=delimiter, skiprows=1, usecols=used,
                              dtype=float, ndmin=2)
    except (ValueError, IndexError, UnicodeDecodeError) as exc:
        # the fast parse names no line: find the first bad one (only on this path)
        try:
            bad = _first_bad_line(path, delimiter, header, used)
        except OSError as again:
            raise RecordingError(f'cannot read {source}: {_cut(again)}') from None
        if bad is None:
            raise RecordingError(f'{source}: a line is not {len(header)} numbers separated '
                                 f'by {delimiter!r} ({shorten(exc, 200, one_line=True)})') \
                from None
        raise RecordingError(f'{source}: {bad}') from None
    except OSError as exc:
        raise RecordingError(f'cannot read {source}: {_cut(exc)}') from None
    n = len(joints)
    qd = data[:, 1 + 2 * n:1 + 3 * n] if velocities else None
    return _finish(joints, data[:, 0], data[:, 1:1 + n], qd, data[:, 1 + n:1 + 2 * n],
                   source, min_samples)


#: Lines parsed at once when looking for the bad line of a CSV file.
_SCAN_LINES = 1 << 16


def _first_bad_line(path, delimiter, header, used):
    """Return ``'line N: what is wrong'`` for the first line that is no sample, or None.

    Reads the file again in blocks of :data:`_SCAN_LINES` lines, each parsed by
    ``np.loadtxt`` as :func:`read_csv` does; only a block that fails is checked line by
    line in Python (:func:`_line_problem`). Lines are counted as an editor does (1-based,
    split at line feeds; the header is line 1).
    """
    with open(path, 'rb') as stream:
        stream.readline()                           # the header, read already
        number = 2                                  # of the first line of the block
        while True:
            block = list(itertools.islice(stream, _SCAN_LINES))
            if not block:
                return None
            lines = []
            for k, raw in enumerate(block):
                try:
                    lines.append(raw.decode('utf-8'))
                except UnicodeDecodeError as exc:
                    return (f'line {number + k} is not UTF-8 text ({exc.reason} at byte '
                            f'{exc.start + 1} of the line)')
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter('ignore', UserWarning)
                    np.loadtxt(lines, delimiter=delimiter, usecols=used, dtype=float,
                               ndmin=2)
            except (ValueError, IndexError):
                for k, line in enumerate(lines):
                    problem = _line_problem(line, delimiter, header, used)
                    if problem:
                        return f'line {number + k}: {problem}'
            number += len(block)


def _line_problem(line, delimiter, header, used):
    """Return what keeps one CSV line from being a sample (np.loadtxt's rules), or None."""
    content = line.split('#', 1)[0].rstrip('\r\n')
    if not content:
        return None                                 # empty or a comment: skipped
    if not content.strip():
        return f'only white space (a sample has {len(header)} fields)'
    fields = content.split(delimiter)
    if len(fields) <= max(used):
        return f'{len(fields)} fields, the header has {len(header)}'
    for k in used:
        text = fields[k].strip()
        if not text:
            return f'column {header[k]} is empty'
        try:
            if not text.isascii() or '_' in text:   # float() takes these, NumPy does not
                raise ValueError(text)
            float(text)
        except ValueError:
            return f'{shorten(repr(text), 40)} in column {header[k]} is not a number'
    return None


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


def read_recording(path, joints, topic='/joint_states', min_samples=MIN_SAMPLES,
                   progress=True, tracking_topic=TRACKING_ERROR_TOPIC):
    """Read a CSV file (``.csv``) or a rosbag2 (anything else): see :func:`read_bag`."""
    if str(path).lower().endswith('.csv'):
        return read_csv(path, joints, min_samples)
    return read_bag(path, joints, topic, min_samples, progress, tracking_topic)


def write_bag(path, joints, t, q, qd=None, effort=None, topic='/joint_states',
              storage='mcap', start_ns=1_700_000_000_000_000_000, tracking_error=None):
    """Write JointState messages as a rosbag2 (``ros2 bag play`` and :func:`read_bag` read it).

    Args:
        path: the bag directory to create (must not exist); written in a temporary
            directory beside it and renamed, so a failure leaves nothing.
        joints: (n,) names; t: (N,) s; q, qd, effort: (N, n) or None.
        storage: ``'mcap'`` or ``'sqlite3'``.
        start_ns: stamp of t = 0 (ns since the epoch).
        tracking_error: None, or ((M,) s, (M, n) q_d - q) written as JointState positions
            on :data:`TRACKING_ERROR_TOPIC`, as ``computed_torque_node`` publishes them.

    Raises:
        FileExistsError: ``path`` exists. OSError: cannot write.
    """
    rosbag2 = require('rosbags.rosbag2', 'writing rosbag2 recordings')
    StoragePlugin, Writer = rosbag2.StoragePlugin, rosbag2.Writer
    path = pathlib.Path(path)
    if path.exists():
        raise FileExistsError(f'{path} exists already')
    typestore = _typestore()
    JointState = typestore.types[JOINT_STATE]
    Header = typestore.types['std_msgs/msg/Header']
    Time = typestore.types['builtin_interfaces/msg/Time']
    plugin = {'mcap': StoragePlugin.MCAP, 'sqlite3': StoragePlugin.SQLITE3}[storage]
    scratch = pathlib.Path(tempfile.mkdtemp(prefix=f'.{path.name}.', dir=path.parent))
    target = scratch / path.name
    empty = np.zeros(0)
    try:
        with Writer(target, version=9, storage_plugin=plugin) as writer:
            def message(tk, position, velocity, effort_k):
                stamp = start_ns + int(round(tk * 1e9))
                msg = JointState(
                    header=Header(stamp=Time(sec=stamp // 10**9, nanosec=stamp % 10**9),
                                  frame_id=''),
                    name=list(joints), position=np.asarray(position, dtype=np.float64),
                    velocity=empty if velocity is None else np.asarray(velocity, np.float64),
                    effort=empty if effort_k is None else np.asarray(effort_k, np.float64))
                return stamp, typestore.serialize_cdr(msg, JOINT_STATE)

            connection = writer.add_connection(topic, JOINT_STATE, typestore=typestore)
            for k, tk in enumerate(np.asarray(t, dtype=float)):
                writer.write(connection, *message(tk, q[k], None if qd is None else qd[k],
                                                  None if effort is None else effort[k]))
            if tracking_error is not None:
                connection = writer.add_connection(TRACKING_ERROR_TOPIC, JOINT_STATE,
                                                   typestore=typestore)
                for tk, row in zip(np.asarray(tracking_error[0], dtype=float),
                                   np.asarray(tracking_error[1], dtype=float)):
                    writer.write(connection, *message(tk, row, None, None))
        os.replace(target, path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return path


__all__ = ['check_current_constants', 'drop_jumps', 'JointRecording', 'read_bag', 'read_csv',
           'read_recording', 'resampled', 'scaled_efforts', 'StepSpread',
           'TRACKING_ERROR_TOPIC', 'write_bag']
