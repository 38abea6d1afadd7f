"""Joint states recorded while the arm moves: rosbag2 (MCAP, sqlite3) and CSV.

A recording is what ``ros2 bag record /joint_states`` makes while the arm runs an
excitation trajectory: ``sensor_msgs/msg/JointState`` messages with position, (optionally)
velocity and the measured effort. Bags are read with the ``rosbags`` library (no ROS
installation needed); joints are matched by name in every message (their order may change);
time is the message's ``header.stamp`` (the recording time when a stamp is zero).

CSV: a header row with ``time`` (s) and, per joint, ``position/<joint>``, optionally
``velocity/<joint>``, and ``effort/<joint>`` (a column whose name *ends* with these, such as
``/joint_states/position/joint_1``, is taken too); one row per sample.

What is done to a recording before it is identified (its steps measured, resampled,
currents scaled, glitches dropped) is in :mod:`~ne_dynamics_ros.identification.
conditioning`; those functions are importable from here too.
"""
import csv
import dataclasses
from dataclasses import dataclass
import itertools
import os
import pathlib
import shutil
import struct
import tempfile
from typing import Optional
import warnings

import numpy as np

from ne_dynamics_ros.errors import RecordingError, require, shorten
from ne_dynamics_ros.identification.conditioning import (  # noqa: F401 - re-exported
    check_current_constants, check_positions, describe_steps, drop_jumps, need_two,
    resampled, scaled_efforts, step_spread, StepSpread)

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
        need_two(self.t, self.source)
        return float((self.t.size - 1) / (self.t[-1] - self.t[0]))

    def steps(self):
        """Return how the time steps spread, in s.

        A :class:`~ne_dynamics_ros.identification.conditioning.StepSpread`
        (:func:`~ne_dynamics_ros.identification.conditioning.step_spread`).

        Raises:
            RecordingError: fewer than 2 samples (no step).
        """
        return step_spread(self.t, self.source)

    def describe(self, resample=True):
        """Return one line on the rate and the regularity of the steps, for the CLI.

        E.g. ``93.9 Hz mean (steps 10.0-12.0 ms, spread 1.0 ms): irregular, resampled to
        a uniform 93.9 Hz grid`` (with ``resample``; else ``...: irregular``), or ``...:
        regular`` (:func:`~ne_dynamics_ros.identification.conditioning.describe_steps`).

        Raises:
            RecordingError: fewer than 2 samples.
        """
        return describe_steps(self.rate, self.steps(), resample)


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
