"""Contact thresholds from a recording: the vectorised observer and the robust rule.

References: the online :class:`MomentumObserver` driven sample by sample (the offline
observer must equal it); injected stop transients and effort outliers (the thresholds
must not move); effort limits (the cap and its warning); a simulated PUMA 560 on
Pinocchio (``SimulatedArm``) under computed torque with a slightly wrong model: another
free run must raise no ``r`` over the thresholds, a constant external torque over them
must be detected. No DDS.
"""
import functools

import numpy as np
import pytest
import scipy.signal
from references import PUMA560_URDF

from ne_dynamics_ros import load_model
from ne_dynamics_ros.codegen.compiled import CompiledDynamics
from ne_dynamics_ros.control.sensing.observer import ContactDetector, MAX_GAP, MomentumObserver
from ne_dynamics_ros.errors import RecordingError
from ne_dynamics_ros.identification.recording import JointRecording
from ne_dynamics_ros.identification.thresholds import (
    contact_thresholds, FLOOR, MARGIN, observed_effort, QUANTILE, transients)
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm

DAMPING = [3.0, 3.0, 2.0, 0.3, 0.3, 0.3]
FRICTION = [2.0, 2.0, 1.5, 0.4, 0.4, 0.4]
#: No effort limits: neither cap nor floor, unless a test asks for them.
NO_LIMITS = [np.inf] * 6


def puma(armature=0.1):
    return load_model(str(PUMA560_URDF), tip_link='flange', armature=[armature] * 6,
                      damping=DAMPING, friction=FRICTION)


MODEL = puma()


def motion(t, seed):
    """Smooth multisine positions, velocities, accelerations (N, 6) at times t."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.8, 2.5, (3, 6))
    amp = rng.uniform(0.1, 0.3, (3, 6))
    phase = rng.uniform(0.0, 2 * np.pi, (3, 6))
    arg = t[:, None, None] * w + phase
    q = (amp * np.sin(arg)).sum(axis=1)
    qd = (amp * w * np.cos(arg)).sum(axis=1)
    qdd = -(amp * w ** 2 * np.sin(arg)).sum(axis=1)
    return q, qd, qdd


def synthetic(t, seed=0, noise=0.2):
    """A recording made with a plant model of 3 times the armature, plus effort noise."""
    q, qd, qdd = motion(t, seed)
    plant = puma(armature=0.3)
    effort = plant.rnea(q, qd, qdd) + plant.friction_torques(qd)
    effort += np.random.default_rng(seed + 100).normal(0.0, noise, effort.shape)
    return q, qd, effort


def online(model, t, q, qd, effort, gain):
    """The node's observer, one state at a time (the reference)."""
    observer = MomentumObserver(model.n, gain)
    r = []
    for k in range(len(t)):
        r.append(observer.update(
            float(t[k]), qd[k].tolist(),
            lambda qdd, k=k: model.rnea(q[k], qd[k], np.array(qdd)).tolist(),
            model.friction_torques(qd[k]).tolist(), effort[k].tolist() if k else None))
    return np.array(r)


@functools.lru_cache(maxsize=None)
def online_reference(kind, gain):
    """:func:`online` over :func:`synthetic` at ``times(kind)`` (read-only), once per kind
    and gain (a float, or a tuple of per-joint gains): every block size compares with it."""
    t = times(kind)
    r = online(MODEL, t, *synthetic(t), list(gain) if isinstance(gain, tuple) else gain)
    r.flags.writeable = False
    return r


def times(kind, count=600):
    if kind == 'uniform':
        return 3.0 + np.arange(count) * 0.002
    if kind == 'irregular':                       # alternating 10 ms and 12 ms
        return np.cumsum(np.where(np.arange(count) % 2, 0.010, 0.012))
    t = np.arange(count) * 0.004                  # a gap, a repeated and a late stamp
    t[count // 3:] += 2.5 * MAX_GAP
    t[count // 2] = t[count // 2 - 1]
    t[2 * count // 3] -= 0.01
    return t


@pytest.mark.parametrize('kind', ['uniform', 'irregular', 'gap'])
@pytest.mark.parametrize('block', [50_000, 37, 1])
def test_the_vectorised_observer_equals_the_online_one(kind, block, monkeypatch):
    """To 1e-9 of the effort scale, per-joint gains too, across blocks; the steady rate
    through lfilter, the others through the scaled cumulative sum (no Python loop)."""
    calls = []
    lfilter = scipy.signal.lfilter
    monkeypatch.setattr(scipy.signal, 'lfilter',
                        lambda *a, **k: calls.append(1) or lfilter(*a, **k))
    t = times(kind)
    q, qd, effort = synthetic(t)
    scale = np.abs(effort).max()
    for gain in (60.0, [20.0, 40.0, 60.0, 80.0, 150.0, 900.0]):
        r = observed_effort(MODEL, t, q, qd, effort, gain=gain, block=block)
        reference = online_reference(kind, gain if np.isscalar(gain) else tuple(gain))
        assert np.abs(reference).max() > 1e-3 * scale          # not a trivial comparison
        np.testing.assert_allclose(r, reference, rtol=0, atol=1e-9 * scale)
    if block == 50_000:                           # one block: one path for all of it
        assert bool(calls) == (kind == 'uniform')
    if kind == 'gap':
        restarts = ~((np.diff(t) > 0) & (np.diff(t) <= MAX_GAP))
        assert restarts.sum() == 3 and np.all(r[1:][restarts] == 0.0)


def test_the_observer_refuses_what_it_cannot_run():
    t = times('uniform', 20)
    q, qd, effort = synthetic(t)
    with pytest.raises(RecordingError, match='finite'):
        observed_effort(MODEL, t, q, qd, np.where(t[:, None] > 3.01, np.nan, effort))
    with pytest.raises(RecordingError, match=r'\(N, 6\)'):
        observed_effort(MODEL, t, q[:, :5], qd, effort)
    with pytest.raises(ValueError, match='gain'):
        observed_effort(MODEL, t, q, qd, effort, gain=-1.0)


def recording(t, q, qd, effort, source='synthetic.bag'):
    return JointRecording(tuple(MODEL.joint_names), t - t[0], q, qd, effort, source)


@pytest.fixture(scope='module')
def clean():
    t = np.arange(10_000) * 0.002                 # 20 s at 500 Hz
    q, qd, effort = synthetic(t)
    return t, q, qd, effort, contact_thresholds(MODEL, recording(t, q, qd, effort),
                                                effort_limits=NO_LIMITS)


def test_the_rule_is_twice_the_quantile_away_from_transients_plus_coulomb(clean):
    t, q, qd, effort, found = clean
    r = observed_effort(MODEL, t, q, qd, effort)
    kept = ~transients(t, qd, r).any
    assert 0.6 < kept.mean() < 0.97                          # reversals are left out
    for j in range(6):
        level = np.percentile(np.abs(r[kept[:, j], j]), QUANTILE)
        assert found.values[j] == pytest.approx(MARGIN * level + FRICTION[j], rel=1e-3)
        assert found.rule[j].startswith(f'2 x p99.9 |r| ({level:.3g} N·m) + Fc')
    assert found.all_warnings == []


def test_a_stop_transient_and_one_outlier_do_not_move_the_thresholds(clean):
    """A 5-sample 40 N*m knock at a reversal of joint 2 and one effort sample of joint 3
    off by 100 N*m move every threshold by less than 1 %, where they would move the old
    rule (twice the largest |r|) by far more; each is named as the largest |r| left
    out, where it happened."""
    t, q, qd, effort, before = clean
    reversal = np.flatnonzero((qd[1:, 1] * qd[:-1, 1] < 0) & (t[1:] > 5.0))[0] + 1
    fast = int(np.argmax(np.abs(qd[2500:7500, 2]))) + 2500
    hit = effort.copy()
    hit[reversal:reversal + 5, 1] += 40.0
    hit[fast, 2] -= 100.0
    after = contact_thresholds(MODEL, recording(t, q, qd, hit), effort_limits=NO_LIMITS)
    np.testing.assert_allclose(after.quantile, before.quantile, rtol=0.01)
    np.testing.assert_allclose(after.values, before.values, rtol=0.01)
    r = observed_effort(MODEL, t, q, qd, hit)
    old_rule = MARGIN * np.abs(r).max(axis=0) + FRICTION
    assert old_rule[1] > 3 * before.values[1] and old_rule[2] > 3 * before.values[2]
    knock, glitch = after.largest_excluded[1], after.largest_excluded[2]
    assert knock.transient and 'stop' in knock.reason
    assert 0.0 <= knock.time - t[reversal] < 0.03 and abs(knock.effort) > 10.0
    assert glitch.transient and 'spike' in glitch.reason
    assert glitch.time == t[fast] and glitch.effort > 10.0     # r = model - recorded
    lines = after.lines('robot.mcap')
    assert len(lines) == 6 and lines[2].startswith(f'{MODEL.joint_names[2]}: threshold ')
    assert f't = {t[fast]:.3f} s in robot.mcap' in lines[2]


def test_a_threshold_over_a_fifth_of_the_limit_is_capped_and_named(clean):
    """Capped at 20 % (or effort_fraction) of the limit, with a warning naming the joint,
    the value asked for and its cause: the friction (joint 3) or the residual away from
    stops (joint 4); the 1 % floor; an unknown limit leaves the rule's value."""
    t, q, qd, effort, free = clean
    limits = np.array([np.inf, 1e5, 2 * free.values[2], 2 * free.values[3], np.inf, np.inf])
    found = contact_thresholds(MODEL, recording(t, q, qd, effort), effort_limits=limits)
    for j in (2, 3):
        assert found.values[j] == pytest.approx(0.4 * free.values[j], rel=1e-3)  # 20 %
        (warning,) = found.warnings[j]
        assert warning.startswith(
            f'{MODEL.joint_names[j]}: the recording asks for a contact threshold of '
            f'{free.values[j]:.4g} N·m, over 20% of its effort limit {limits[j]:g} N·m; '
            f'capped at {found.values[j]:.4g} N·m')
        assert f'capped at 20% of the limit {limits[j]:g}' in found.rule[j]
    assert found.warnings[2][0].endswith('its Coulomb friction Fc is 1.5 N·m: a joint '
                                         'that sticks hides that much effort')
    assert (f'the 99.9th percentile of |r| is {free.quantile[3]:.3g} N·m away from stops: '
            f'the model explains this joint poorly') in found.warnings[3][0]
    assert found.values[1] == pytest.approx(FLOOR * 1e5)        # the 1 % floor
    assert 'raised to 1% of the limit' in found.rule[1]
    for j in (0, 4, 5):                                         # unknown limit: the rule
        assert found.values[j] == free.values[j]
    assert found.warnings[0] == found.warnings[1] == []
    tighter = contact_thresholds(MODEL, recording(t, q, qd, effort), effort_limits=limits,
                                 effort_fraction=0.1)
    assert tighter.values[2] == pytest.approx(0.2 * free.values[2], rel=1e-3)
    with pytest.raises(ValueError, match='effort_fraction'):
        contact_thresholds(MODEL, recording(t, q, qd, effort), effort_fraction=0.0)


RATE = 500.0


def simulate(seed, seconds=6.0, external=None):
    """PUMA 560 plant (armature 0.1, friction as the model's, a 1 kg load at the flange)
    under computed torque with the model (armature 0.12, no load) along a multisine;
    efforts recorded as sim_arm_node
    publishes them (each state with the effort of the step ending at it) with noise."""
    plant = SimulatedArm(str(PUMA560_URDF), armature=[0.1] * 6, joint_friction=DAMPING,
                         coulomb_friction=FRICTION, coulomb_velocity=0.01, payload_mass=1.0)
    model = puma(armature=0.12)
    law = CompiledDynamics(model)       # the model's generated RNEA (checked against it)
    count, dt = int(seconds * RATE), 1.0 / RATE
    t = np.arange(count) * dt
    q_d, qd_d, qdd_d = motion(t, seed)
    plant.reset(q_d[0], qd_d[0])
    q, qd, applied = np.empty((count, 6)), np.empty((count, 6)), np.zeros((count, 6))
    for k in range(count):
        q[k], qd[k] = plant.position, plant.velocity
        command = qdd_d[k] + 20.0 * (qd_d[k] - qd[k]) + 100.0 * (q_d[k] - q[k])
        tau = law.rnea(q[k], qd[k], command) + model.friction_torques(qd[k])
        if k + 1 < count:
            applied[k + 1] = tau
        plant.step(tau + (external(t[k]) if external else 0.0), dt)
    rng = np.random.default_rng(seed)
    effort = applied + rng.normal(0.0, 0.05, applied.shape)
    qd = qd + rng.normal(0.0, 1e-4, qd.shape)
    return model, JointRecording(tuple(model.joint_names), t, q, qd, effort, f'run {seed}')


def test_simulated_free_motion_stays_under_and_a_push_over_is_detected():
    """Thresholds from one free run: another run of the same kind (other frequencies and
    phases) has every |r| under them, transients included (no false alarm), though over
    the first run's bare quantile on some joint (the margin is needed); a constant
    torque of 1.5 thresholds on the shoulder from t = 3 s is reported within 50 ms."""
    model, first = simulate(seed=1)
    found = contact_thresholds(model, first)
    assert found.all_warnings == []
    _, second = simulate(seed=2)
    r = observed_effort(model, second.t, second.q, second.qd, second.effort)
    largest = np.abs(r).max(axis=0)
    assert np.all(largest < found.values), (largest, found.values)
    assert np.any(largest > found.quantile)     # the bare quantile would raise alarms
    push = np.zeros(6)
    push[1] = 1.5 * found.values[1]
    _, pushed = simulate(seed=2, external=lambda t: push * (t >= 3.0))
    r = observed_effort(model, pushed.t, pushed.q, pushed.qd, pushed.effort)
    detector = ContactDetector(model.joint_names, found.values, debounce=3)
    contacts = [c for c in map(detector.update, pushed.t, r) if c is not None]
    assert contacts and contacts[0].joint == model.joint_names[1]
    assert 3.0 <= contacts[0].time <= 3.05, contacts[0]
