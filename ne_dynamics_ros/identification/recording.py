"""Joint states recorded while the arm moves: rosbag2 (MCAP, sqlite3) and CSV.

A recording is what ``ros2 bag record /joint_states`` makes while the arm runs an
excitation trajectory: ``sensor_msgs/msg/JointState`` messages with position, (optionally)
velocity and the measured effort. Bags are read with the ``rosbags`` library (no ROS
installation needed); joints are matched by name in every message (their order may change);
time is the message's ``header.stamp`` (the recording time when a stamp is zero).

CSV: a header row with ``time`` (s) and, per joint, ``position/<joint>``, optionally
``velocity/<joint>``, and ``effort/<joint>`` (a column whose name *ends* with these, such as
``/joint_states/position/joint_1``, is taken too); one row per sample.
"""
import csv
import dataclasses
from dataclasses import dataclass
import os
import pathlib
import shutil
import tempfile
from typing import Optional

import numpy as np

from ne_dynamics_ros.errors import RecordingError

#: Fewer samples than this cannot identify anything.
MIN_SAMPLES = 50
#: Show a progress bar for bags with more messages than this.
PROGRESS_MESSAGES = 5000
JOINT_STATE = 'sensor_msgs/msg/JointState'


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
    """

    joints: tuple
    t: np.ndarray
    q: np.ndarray
    qd: Optional[np.ndarray]
    effort: np.ndarray
    source: str
    tracking_error: Optional[tuple] = None

    @property
    def rate(self):
        """Median sample rate, Hz."""
        return float(1.0 / np.median(np.diff(self.t)))


def _typestore():
    from rosbags.typesys import get_typestore, Stores
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
    from rosbags.highlevel import AnyReader, AnyReaderError
    from rosbags.rosbag2 import ReaderError
    path = pathlib.Path(path)
    if not path.exists():
        raise RecordingError(f'no recording at {path}')
    bag_dir = path.parent if path.is_file() else path
    joints = list(joints)
    source = f'{bag_dir} ({topic})'
    try:
        reader = AnyReader([bag_dir], default_typestore=_typestore())
        reader.open()
    except (AnyReaderError, ReaderError, OSError, ValueError, KeyError) as exc:
        raise RecordingError(f'{bag_dir} is not a readable rosbag2 recording: {exc}') from None
    try:
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
        for connection, timestamp, raw in messages:
            msg = reader.deserialize(raw, connection.msgtype)
            names = list(msg.name)
            seen.update(names)
            index = {name: k for k, name in enumerate(names)}
            if any(name not in index for name in joints):
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
    finally:
        reader.close()
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
    """Read joint states from a CSV file (module docstring); errors as :func:`read_bag`."""
    path = pathlib.Path(path)
    joints = list(joints)
    source = str(path)
    try:
        with open(path, newline='', encoding='utf-8') as stream:
            rows = list(csv.reader(stream))
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordingError(f'cannot read {path}: {exc}') from None
    if not rows:
        raise RecordingError(f'{source}: empty file')
    header = [h.strip() for h in rows[0]]

    def column(kind, joint, required=True):
        matches = [k for k, h in enumerate(header) if h.endswith(f'{kind}/{joint}')]
        if not matches:
            if required:
                raise RecordingError(f'{source}: no column {kind}/{joint} (header: '
                                     f'{header[:12]}{"..." if len(header) > 12 else ""})')
            return None
        return matches[0]

    if 'time' not in header:
        raise RecordingError(f'{source}: no "time" column')
    missing = [j for j in joints if column('position', j, False) is None]
    if missing:
        raise RecordingError(f'{source}: joints {missing} have no position column')
    if all(column('effort', j, False) is None for j in joints):
        raise RecordingError(f'{source}: no effort columns (effort/<joint>)')
    t_col = header.index('time')
    p_cols = [column('position', j) for j in joints]
    e_cols = [column('effort', j) for j in joints]
    v_cols = [column('velocity', j, False) for j in joints]
    try:
        data = np.array([[float(r[k]) for k in range(len(header))] for r in rows[1:] if r],
                        dtype=float).reshape(-1, len(header))
    except (ValueError, IndexError) as exc:
        raise RecordingError(f'{source}: a row is not {len(header)} numbers ({exc})') from None
    qd = None if any(v is None for v in v_cols) else data[:, v_cols]
    return _finish(joints, data[:, t_col], data[:, p_cols], qd, data[:, e_cols], source,
                   min_samples)


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
    from rosbags.rosbag2 import StoragePlugin, Writer
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


__all__ = ['JointRecording', 'read_bag', 'read_csv', 'read_recording', 'TRACKING_ERROR_TOPIC',
           'write_bag']
