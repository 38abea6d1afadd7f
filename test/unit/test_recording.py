"""Recordings as real arms make them: irregular time steps, motor currents, bad CSV lines.

Pure tests (no DDS): the mean rate and the spread of the steps, resampling onto a uniform
grid, currents scaled to efforts, and CSV lines refused by their line number.
"""
import math
import tracemalloc

import numpy as np
import pytest

from ne_dynamics_ros.errors import RecordingError
from ne_dynamics_ros.identification import recording as recording_module
from ne_dynamics_ros.identification.recording import (
    check_current_constants, JointRecording, read_csv, resampled, scaled_efforts)

JOINTS = tuple(f'joint_{i}' for i in range(1, 8))
OMEGA = np.array([0.7, 1.3, 2.1, 3.0, 4.2, 5.5, 6.8])      # rad/s, one per joint


def ur_steps(count, seed=0, long_fraction=0.3):
    """Return (count,) times from 0 with steps of 10 ms or 12 ms, as a UR10e over RTDE."""
    rng = np.random.default_rng(seed)
    steps = np.where(rng.random(count - 1) < long_fraction, 0.012, 0.010)
    return np.concatenate([[0.0], np.cumsum(steps)])


def panda_steps(count, seed=1):
    """Return (count,) times with steps of 0.7 to 8.8 ms around 1 ms, as a Franka Panda."""
    rng = np.random.default_rng(seed)
    steps = np.clip(rng.normal(1e-3, 1e-4, count - 1), 0.7e-3, None)
    steps[rng.choice(count - 1, 20, replace=False)] = 8.8e-3
    steps[0] = 0.7e-3
    return np.concatenate([[0.0], np.cumsum(steps)])


def motion(t):
    """Return q, qd, effort (N, 7) of a known smooth motion (sinusoids) at the times t."""
    q = np.sin(np.outer(t, OMEGA))
    qd = OMEGA * np.cos(np.outer(t, OMEGA))
    effort = 10.0 * q + 0.5 * qd
    return q, qd, effort


def make(t, qd=True, tracking=None, source='synthetic'):
    q, v, effort = motion(t)
    return JointRecording(JOINTS, t, q, v if qd else None, effort, source,
                          tracking_error=tracking)


# -- the mean rate and the spread of the steps ---------------------------------------------

def test_mean_rate_of_10_and_12_ms_steps_is_the_true_rate_and_the_median_is_not():
    t = ur_steps(5000)
    rec = make(t)
    truth = (t.size - 1) / t[-1]                    # 30 % of 12 ms: about 94.3 Hz
    assert abs(rec.rate - truth) <= 0.02 * truth
    assert rec.rate == pytest.approx(truth, rel=1e-12)
    median_rate = 1.0 / np.median(np.diff(t))       # what rate used to say: 100 Hz
    assert abs(median_rate - truth) > 0.05 * truth  # the old property is off by > 5 %
    spread = rec.steps()
    assert spread.minimum == pytest.approx(0.010) and spread.maximum == pytest.approx(0.012)
    assert spread.median == pytest.approx(0.010)
    assert spread.mean == pytest.approx(1.0 / truth)
    assert spread.std == pytest.approx(np.diff(t).std())
    assert not spread.uniform
    # 12 ms is 13 % above a 10.6 ms mean, 10 ms 5.7 % below: the 12 ms steps are "off"
    assert spread.off_fraction == pytest.approx(np.mean(np.diff(t) > 0.011), abs=1e-12)
    assert 0.25 < spread.off_fraction < 0.35
    text = rec.describe()
    assert text.startswith(f'{truth:.1f} Hz mean (steps 10.0\u201312.0 ms, spread ')
    assert text.endswith(f'irregular, resampled to a uniform {truth:.1f} Hz grid')
    assert rec.describe(resample=False).endswith(': irregular')


def test_regular_steps_are_described_as_regular():
    rec = make(np.arange(400) * 0.002)
    assert rec.steps().uniform and rec.steps().off_fraction == 0.0
    assert rec.rate == pytest.approx(500.0)
    assert rec.describe() == '500.0 Hz mean (steps 2.0\u20132.0 ms, spread 0.0 ms): regular'


def test_a_single_sample_has_no_rate():
    rec = make(np.zeros(1))
    with pytest.raises(RecordingError, match='no time step'):
        rec.rate
    with pytest.raises(RecordingError, match='no time step'):
        rec.steps()


# -- resampling ---------------------------------------------------------------------------

@pytest.mark.parametrize('steps', [ur_steps, panda_steps])
def test_resampled_reproduces_a_smooth_motion_on_a_uniform_grid(steps):
    t = steps(3000)
    tracking = (t[::10].copy(), np.zeros((t[::10].size, 7)))
    rec = make(t, tracking=tracking)
    out = resampled(rec)
    # the grid: N samples from t[0] to t[-1] at the mean rate
    assert out.t.size == t.size and out.t[0] == t[0] and out.t[-1] == pytest.approx(t[-1])
    dt = np.diff(out.t)
    assert np.ptp(dt) < 1e-9 * dt.mean()
    assert out.rate == pytest.approx(rec.rate, rel=1e-9)
    assert out.steps().uniform
    # linear interpolation of sin(w t): error at most h^2 w^2 / 8 per column
    h = np.diff(t).max()
    truth = motion(out.t)
    for got, want, scale in zip((out.q, out.qd, out.effort), truth,
                                (OMEGA ** 2, OMEGA ** 3, 10 * OMEGA ** 2 + 0.5 * OMEGA ** 3)):
        error = np.abs(got - want).max(axis=0)
        assert np.all(error <= h ** 2 * scale / 8 * 1.0001 + 1e-12), error
    # and it is interpolation, not the samples themselves shifted: off-grid samples moved
    assert np.abs(out.q - rec.q).max() > 10 * np.abs(out.q - truth[0]).max()
    assert out.tracking_error is tracking
    assert out.joints == rec.joints and out.source == rec.source
    assert len(out.notes) == 1 and 'resampled to a uniform' in out.notes[0]
    assert f'steps {1e3 * np.diff(t).min():.1f}' in out.notes[0]


def test_resampled_with_a_rate_and_without_velocities():
    t = ur_steps(2000)
    rec = make(t, qd=False)
    out = resampled(rec, rate=50.0)
    assert out.qd is None
    assert np.allclose(np.diff(out.t), 0.02) and out.t[0] == 0.0
    assert t[-1] - 0.02 < out.t[-1] <= t[-1]
    assert out.t.size == math.floor(t[-1] * 50.0) + 1
    assert np.abs(out.q - motion(out.t)[0]).max() < 0.012 ** 2 * OMEGA.max() ** 2 / 8 * 1.001
    for bad in (0.0, -5.0, math.nan, math.inf, 'fast'):
        with pytest.raises(RecordingError, match='finite number > 0'):
            resampled(rec, bad)
    with pytest.raises(RecordingError, match='hold no step'):
        resampled(rec, 1e-6)


def test_uniform_recordings_are_returned_unchanged():
    t = np.arange(500) * 0.004
    rec = make(t)
    assert resampled(rec) is rec
    assert resampled(rec, rate=250.0) is rec
    # steps uniform to 1e-7 relative (stamps rounded to ns): still unchanged
    jitter = make(np.round((1.0 + np.arange(500) * 0.004) * 1e9) * 1e-9 - 1.0)
    assert resampled(jitter) is jitter
    # another rate is a new grid
    other = resampled(rec, rate=100.0)
    assert other is not rec and np.allclose(np.diff(other.t), 0.01)


def test_resampling_works_column_by_column():
    """(N, n) temporaries are not made beyond the results: peak <= 3 results + 1 array."""
    t = ur_steps(200_000)
    rec = make(t)
    one = rec.q.nbytes
    tracemalloc.start()
    try:
        out = resampled(rec)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.q.shape == rec.q.shape
    # q, qd and effort (3 arrays) plus the grid, the steps and a column or two
    assert peak < 4.0 * one, peak / one


# -- currents to efforts ------------------------------------------------------------------

def test_scaled_efforts_multiply_each_joint_by_its_constant():
    rec = make(ur_steps(100))
    constants = [0.125 * (j + 1) * 101 for j in range(7)]        # N·m/A
    out = scaled_efforts(rec, constants)
    np.testing.assert_allclose(out.effort, rec.effort * np.array(constants), rtol=0, atol=0)
    assert out.q is rec.q and out.t is rec.t
    assert rec.effort[5, 3] == motion(rec.t)[2][5, 3]               # the input is untouched
    assert len(out.notes) == 1 and 'currents (A) x current-to-effort' in out.notes[0]
    assert 'joint_7 88.375' in out.notes[0]
    # text from a command line is taken too
    np.testing.assert_array_equal(check_current_constants(['2', '3.5'], ['a', 'b']),
                                  [2.0, 3.5])


@pytest.mark.parametrize('constants, message', [
    ([1.0] * 6, "6 given for 7 joints \\['joint_1', .*'joint_7'\\]"),
    ([1.0] * 8, '8 given for 7 joints'),
    ([1.0, 1.0, -2.0, 1.0, 1.0, 1.0, 1.0], 'of joint_3 must be a finite number > 0.*got -2$'),
    ([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0], 'of joint_7 must be a finite number > 0.*got 0$'),
    ([math.nan] + [1.0] * 6, 'of joint_1 must be a finite number > 0.*got nan$'),
    ([1.0, math.inf] + [1.0] * 5, 'of joint_2 .*got inf$'),
    ([1.0, 'x'] + [1.0] * 5, "of joint_2 .*got 'x'$"),
])
def test_wrong_current_constants_are_refused_by_name(constants, message):
    rec = make(ur_steps(100))
    with pytest.raises(RecordingError, match=message):
        scaled_efforts(rec, constants)
    with pytest.raises(RecordingError, match='^--current-to-effort.*' + message):
        check_current_constants(constants, JOINTS, name='--current-to-effort')


# -- CSV lines that are not samples -------------------------------------------------------

def write_csv(path, t, lines=None, delimiter=',', bom=False, tail=''):
    """Write the motion at t as a CSV file; ``lines``: {row index: replacement text}."""
    q, qd, effort = motion(t)
    header = delimiter.join(['time'] + [f'{kind}/{j}' for kind in ('position', 'velocity',
                                                                   'effort') for j in JOINTS])
    rows = [delimiter.join(f'{v:.9g}' for v in row)
            for row in np.column_stack([t, q, qd, effort])]
    for index, text in (lines or {}).items():
        rows[index] = text
    with open(path, 'w', encoding='utf-8-sig' if bom else 'utf-8', newline='') as stream:
        stream.write(header + '\n' + '\n'.join(rows) + '\n' + tail)
    return path


def test_a_good_csv_is_read_by_the_fast_path(tmp_path, monkeypatch):
    t = ur_steps(300)
    path = write_csv(tmp_path / 'r.csv', t, tail='\n\n')      # blank lines at the end
    monkeypatch.setattr(recording_module, '_first_bad_line', None)   # not called
    rec = read_csv(path, JOINTS)
    np.testing.assert_allclose(rec.t, t, atol=1e-9)
    np.testing.assert_allclose(rec.q, motion(t)[0], atol=1e-8)


def test_a_csv_with_a_bad_number_names_its_line(tmp_path):
    t = ur_steps(300)
    row = 15                                              # line 17: the header is line 1
    fields = f'{t[row]:.9g},0.5,abc' + ',1' * 19
    path = write_csv(tmp_path / 'r.csv', t, {row: fields})
    with pytest.raises(RecordingError) as info:
        read_csv(path, JOINTS)
    assert str(info.value) == (f"{path}: line 17: 'abc' in column position/joint_2 is not "
                               'a number')


def test_a_csv_with_a_short_row_names_its_line(tmp_path):
    t = ur_steps(1500)
    path = write_csv(tmp_path / 'r.csv', t, {1232: '1,2,3,4,5'})
    with pytest.raises(RecordingError) as info:
        read_csv(path, JOINTS)
    assert str(info.value) == f'{path}: line 1234: 5 fields, the header has 22'


@pytest.mark.parametrize('case, replacement, message', [
    ('empty field', '{t},' + ',1' * 20, 'line {line}: column position/joint_1 is empty'),
    ('white space', '   ', 'line {line}: only white space'),
    ('quoted', '"{t}"' + ',1' * 21, "line {line}: '\"[0-9.]+\"' in column time is not"),
    ('underscore', '{t},1_0' + ',1' * 20, "line {line}: '1_0' in column position/joint_1"),
])
def test_other_bad_lines_are_named(tmp_path, case, replacement, message):
    t = ur_steps(200)
    row = 120
    path = write_csv(tmp_path / 'r.csv', t, {row: replacement.format(t=f'{t[row]:.9g}')})
    with pytest.raises(RecordingError, match=message.format(line=row + 2)):
        read_csv(path, JOINTS)


def test_line_numbers_count_comments_blank_lines_and_blocks(tmp_path, monkeypatch):
    """Lines as an editor counts them; the bad line found in a later block of the scan."""
    monkeypatch.setattr(recording_module, '_SCAN_LINES', 7)
    t = ur_steps(200)
    q, qd, effort = motion(t)
    lines = [';'.join(['time'] + [f'/joint_states/{kind}/{j}' for kind in
                                  ('position', 'velocity', 'effort') for j in JOINTS])]
    for k, row in enumerate(np.column_stack([t, q, qd, effort])):
        if k == 40:
            lines += ['# a comment', '']               # lines 42 and 43
        text = ';'.join(f'{v:.9g}' for v in row)
        lines.append(text.replace(';', ';;', 1) if k == 100 else text)
    path = tmp_path / 'r.csv'
    path.write_text('\r\n'.join(lines) + '\r\n', encoding='utf-8-sig')
    # sample k is on line k + 2, and k + 4 after the comment and the blank line
    with pytest.raises(RecordingError) as info:
        read_csv(path, JOINTS)
    assert str(info.value) == f'{path}: line 104: column /joint_states/position/joint_1 is empty'


def test_a_line_that_is_not_utf8_is_named(tmp_path):
    t = ur_steps(200)
    path = write_csv(tmp_path / 'r.csv', t)
    raw = path.read_bytes().split(b'\n')
    raw[77] = raw[77][:5] + b'\xff' + raw[77][5:]
    path.write_bytes(b'\n'.join(raw))
    with pytest.raises(RecordingError, match='line 78 is not UTF-8 text'):
        read_csv(path, JOINTS)
