"""Identification from recordings: synthetic recordings from the simulated arm.

The plant is Pinocchio's (SimulatedArm: the PUMA 560 URDF plus a hidden 2 kg payload,
rotor inertia and viscous friction the nominal URDF does not have), driven along an
excitation trajectory by computed torque with the *nominal* model, recorded with noise
into a real rosbag2 (MCAP) with ``rosbags``. Nothing of the identification code produces
the data: the check is that the identified model predicts the efforts of a *different*
motion of the same plant.
"""
import numpy as np
import pytest
import yaml

from references import PUMA560_URDF
from ne_dynamics_ros import load_model
from ne_dynamics_ros.errors import RecordingError
from ne_dynamics_ros.identification.excitation import FourierTrajectory
from ne_dynamics_ros.identification.recording import read_bag, read_csv, write_bag
from ne_dynamics_ros.simulation.recorder import record_tracking
from ne_dynamics_ros.tools.cli import main

from identification_fixtures import ARMATURE, FRICTION


def relative_rms(model, armature, run):
    predicted = model.rnea(run.q, run.qd, run.qdd) + model.friction_torques(run.qd) \
        + np.asarray(armature) * run.qdd
    return np.sqrt(((predicted - run.tau) ** 2).mean(axis=0) / (run.tau ** 2).mean(axis=0))


def test_excitation_starts_and_ends_at_rest_within_limits(setup):
    model, excitation = setup['model'], setup['excitation']
    t = np.linspace(0.0, excitation.duration, 2001)
    q, qd, qdd = excitation.evaluate(t)
    for k in (0, -1):
        np.testing.assert_allclose(q[k], excitation.q0, atol=1e-9)
        np.testing.assert_allclose(qd[k], 0.0, atol=1e-9)
        np.testing.assert_allclose(qdd[k], 0.0, atol=1e-9)
    span = model.upper_limits - model.lower_limits
    assert np.all(q >= model.lower_limits + 0.1 * span - 1e-5)
    assert np.all(q <= model.upper_limits - 0.1 * span + 1e-5)
    assert np.all(np.abs(qd) <= model.velocity_limits * (1 + 1e-4))
    assert setup['condition'] < 50
    again = FourierTrajectory.from_dict(yaml.safe_load(yaml.safe_dump(excitation.to_dict())))
    np.testing.assert_allclose(again.evaluate(t)[0], q)


def test_identified_model_predicts_another_motion(setup, identified):
    code, out, urdf, params = identified
    assert code == 0, out
    assert 'ZZ1R' in out and 'residual identified' in out
    values = yaml.safe_load(params.read_text())['/**']['ros__parameters']
    assert values['joints'] == setup['model'].joint_names
    identified = load_model(str(urdf), tip_link='flange')
    run = setup['validation']
    ours = relative_rms(identified, values['armature'], run)
    nominal = relative_rms(setup['model'], [0.0] * 6, run)   # its rnea has the armature
    assert np.all(ours < 0.02), ours
    assert nominal.max() > 0.3, nominal          # the nominal URDF is far off
    # the YAML's gains are the rule's for the identified model at the recording's rate
    from ne_dynamics_ros.control.laws.gains import recommended_gains
    from ne_dynamics_ros.identification.recording import read_bag
    rate = read_bag(setup['bag'], setup['model'].joint_names, progress=False).rate
    rule = recommended_gains(load_model(str(urdf), tip_link='flange',
                                        armature=values['armature']), rate,
                             position_noise=1e-5)      # the noise the recording was given
    by_noise = np.array([why == 'noise' for why in rule.limited_by])
    np.testing.assert_allclose(np.array(values['kp'])[~by_noise], rule.kp[~by_noise],
                               rtol=1e-3)
    np.testing.assert_allclose(np.array(values['kd'])[~by_noise], rule.kd[~by_noise],
                               rtol=1e-3)
    # where the noise binds, it was measured within 20 %: kd goes as 1 / sigma
    np.testing.assert_allclose(np.array(values['kd'])[by_noise], rule.kd[by_noise],
                               rtol=0.2)
    assert f'gains for {rate:g} Hz' in params.read_text()
    # Ia1, Ia2 fold into ZZ1R, ZZ2R (not identifiable apart); the others are found
    np.testing.assert_allclose(values['armature'][2:], ARMATURE[2:], rtol=0.05)
    np.testing.assert_allclose(values['damping'], FRICTION, rtol=0.1, atol=0.05)
    assert values['friction_compensation'] is True       # identified friction: compensate it
    import pinocchio as pin
    pin_model = pin.buildModelFromXML(urdf.read_text())
    assert pin_model.nq == 6
    # only <inertial> and <dynamics> changed: every other line is the nominal one
    nominal_lines = PUMA560_URDF.read_text().splitlines()
    kept = [line for line in urdf.read_text().splitlines()
            if not any(tag in line for tag in ('<inertial', '</inertial', '<mass', '<inertia',
                                               '<dynamics', '<origin'))]
    assert all(line in nominal_lines for line in kept)


def test_csv_recording_gives_the_same_identification(setup, tmp_path):
    record, model = setup['record'], setup['model']
    header = ['time'] + [f'{kind}/{j}' for kind in ('position', 'velocity', 'effort')
                         for j in model.joint_names]
    rows = np.column_stack([record.t, record.q, record.qd, record.effort])
    path = tmp_path / 'rec.csv'
    path.write_text(','.join(header) + '\n' + '\n'.join(
        ','.join(repr(float(v)) for v in row) for row in rows) + '\n')
    from_csv = read_csv(path, model.joint_names)
    from_bag = read_bag(setup['bag'], model.joint_names)
    np.testing.assert_allclose(from_csv.q, from_bag.q)
    np.testing.assert_allclose(from_csv.t, from_bag.t, atol=1e-9)


def test_sqlite3_bag_and_joint_order(tmp_path):
    t = np.arange(60) * 0.002
    q = np.outer(t, [1.0, 2.0])
    bag = write_bag(tmp_path / 'b', ['a', 'b'], t, q, None, -q, storage='sqlite3')
    rec = read_bag(bag, ['b', 'a'])
    np.testing.assert_allclose(rec.q, q[:, ::-1])
    assert rec.qd is None
    np.testing.assert_allclose(rec.effort, -q[:, ::-1])


def bad(tmp_path, **kwargs):
    t = kwargs.pop('t', np.arange(100) * 0.002)
    names = kwargs.pop('names', [f'joint_{i}' for i in range(1, 7)])
    q = np.zeros((t.size, len(names)))
    effort = kwargs.pop('effort', q)
    return write_bag(tmp_path / 'bad', names, t, q, q, effort, **kwargs)


@pytest.mark.parametrize('case, message', [
    ('missing', 'no recording at'),
    ('topic', 'no topic /joint_states'),
    ('effort', 'carry no effort'),
    ('joints', "joints \\['joint_6'\\] are in no message"),
    ('few', 'identification needs at least'),
    ('stamps', 'time stamps do not increase'),
    ('notabag', 'not a readable rosbag2'),
])
def test_bad_recordings_fail_clearly_and_write_nothing(tmp_path, capsys, case, message):
    if case == 'missing':
        bag = tmp_path / 'nothing'
    elif case == 'topic':
        bag = bad(tmp_path, topic='/other')
    elif case == 'effort':
        bag = bad(tmp_path, effort=None)
    elif case == 'joints':
        bag = bad(tmp_path, names=[f'joint_{i}' for i in range(1, 6)])
    elif case == 'few':
        bag = bad(tmp_path, t=np.arange(10) * 0.002)
    elif case == 'stamps':
        t = np.arange(100) * 0.002
        t[50] = t[10]
        bag = bad(tmp_path, t=t)
    else:
        bag = tmp_path / 'junk'
        bag.mkdir()
        (bag / 'metadata.yaml').write_text('not: [a, bag')
    out_urdf, out_yaml = tmp_path / 'o.urdf', tmp_path / 'o.yaml'
    code = main(['identify', '--urdf', str(PUMA560_URDF), '--bag', str(bag), '--tip-link',
                 'flange', '--output-urdf', str(out_urdf), '--output-params', str(out_yaml)])
    err = capsys.readouterr().err
    assert code == 2
    assert pytest.importorskip('re').search(message, err), err
    assert not out_urdf.exists() and not out_yaml.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith('.o.')]
    with pytest.raises(RecordingError):
        read_bag(bag, [f'joint_{i}' for i in range(1, 7)])


def test_excite_command_writes_a_playable_file(tmp_path, capsys):
    out = tmp_path / 'exc.yaml'
    code = main(['excite', str(PUMA560_URDF), '--tip', 'flange', '--duration', '8',
                 '--harmonics', '3', '--starts', '1', '--iterations', '10', '--output',
                 str(out)])
    assert code == 0
    assert 'condition number' in capsys.readouterr().out
    data = yaml.safe_load(out.read_text())
    trajectory = FourierTrajectory.from_dict(data)
    assert trajectory.duration == 8.0 and trajectory.harmonics == 3
    assert data['condition_number'] > 1
    code = main(['excite', str(PUMA560_URDF), '--duration', '-1', '--output',
                 str(tmp_path / 'no.yaml')])
    assert code == 2 and not (tmp_path / 'no.yaml').exists()


def test_a_joint_that_never_moves_is_named_and_kept_nominal(setup):
    from ne_dynamics_ros.identification.estimation import identify
    from ne_dynamics_ros.identification.pipeline import physical_model
    from ne_dynamics_ros.identification.recording import JointRecording
    model, excitation = setup['model'], setup['excitation']

    def frozen(t):
        q, qd, qdd = (a[0] for a in excitation.evaluate(t))
        q[5], qd[5], qdd[5] = excitation.q0[5], 0.0, 0.0
        return q, qd, qdd

    run = record_tracking(setup['arm'], model, frozen, 6.0, effort_noise=0.01)
    recording = JointRecording(tuple(model.joint_names), run.t, run.q, run.qd, run.effort,
                               'frozen joint 6')
    result = identify(model, recording)
    assert any("joints ['joint_6']" in w and 'nominal' in w for w in result.warnings)
    assert any(w.startswith('joint_6 hardly moved') and 'feedforward' in w
               for w in result.warnings)
    k = result.names.index('Fv6')
    assert np.isnan(result.std[k]) and result.beta[k] == result.nominal[k]
    assert np.all(np.isfinite(result.beta))
    consistent = physical_model(model, result)
    assert np.all(np.isfinite(consistent.parameters))


def plant_gravity(arm, q):
    """The plant's g(q), (N, n): Pinocchio's generalized gravity on the plant's own model.

    ``arm.model`` is the Pinocchio model the plant integrates (its links with the hidden
    payload, its gravity); armature and friction do not enter g. Nothing of ours computes
    it: ``arm.configuration`` only maps joint values to Pinocchio's q.
    """
    import pinocchio as pin
    data = arm.model.createData()
    order = [arm.model.joints[arm.model.getJointId(name)].idx_v for name in arm.joint_names]
    return np.array([pin.computeGeneralizedGravity(arm.model, data, arm.configuration(qk))[
        order] for qk in q])


@pytest.fixture(scope='module')
def plant_gravities(setup):
    """The plant's g(q) along the recording and along the validation run, (N, n) each.

    Computed once for the tests that remove it from the efforts (read-only arrays).
    """
    out = tuple(plant_gravity(setup['arm'], run.q)
                for run in (setup['record'], setup['validation']))
    for g in out:
        g.flags.writeable = False
    return out


@pytest.mark.parametrize('exclude_friction', [False, True])
def test_efforts_without_gravity_identify_a_model_used_the_same_way(setup, plant_gravities,
                                                                    exclude_friction):
    """A UR's driver reports efforts with g(q) removed: --efforts-exclude-gravity identifies
    with zero gravity, keeps what only gravity shows at its nominal value, says so in the
    YAML, and the model predicts the gravity-free efforts of another motion within 2 %, as
    the full-effort path does. With the friction removed too, Fv and Fc stay nominal."""
    from ne_dynamics_ros.identification.pipeline import identify_model
    from ne_dynamics_ros.identification.recording import JointRecording
    model, arm, record = setup['model'], setup['arm'], setup['record']
    names = model.joint_names
    recorded_gravity, validation_gravity = plant_gravities
    effort = record.effort - recorded_gravity
    if exclude_friction:
        effort -= arm.joint_friction * record.qd
    recording = JointRecording(tuple(names), record.t, record.q, record.qd, effort,
                               'gravity removed')
    found = identify_model(PUMA560_URDF.read_text(), model, recording,
                           efforts_exclude_gravity=True,
                           efforts_exclude_friction=exclude_friction)
    values = yaml.safe_load(found.params_yaml)['/**']['ros__parameters']
    assert values['hardware_compensates_gravity'] is True
    assert values.get('hardware_compensates_friction', False) is exclude_friction
    assert any('recorded without gravity' in w for w in found.result.warnings)
    identified = load_model(found.urdf, tip_link='flange', armature=values['armature'],
                            damping=values['damping'], friction=values['friction'])
    run = setup['validation']
    measured = run.tau - validation_gravity
    predicted = identified.rnea(run.q, run.qd, run.qdd, gravity=np.zeros(3))
    if exclude_friction:
        measured = measured - arm.joint_friction * run.qd
        np.testing.assert_allclose(values['damping'], model.damping, rtol=1e-9)  # the URDF's
    else:
        predicted = predicted + identified.friction_torques(run.qd)
    ratio = np.sqrt(((predicted - measured) ** 2).mean(axis=0) / (measured ** 2).mean(axis=0))
    assert np.all(ratio < 0.02), ratio


def test_drive_errors_are_relative_and_skip_what_cannot_be_compared():
    from ne_dynamics_ros.identification.pipeline import drive_errors
    error = drive_errors([0.1, 0.0, 2.0, 1.0], [0.11, 0.3, 1.0, 1.0],
                         [True, True, True, False])
    np.testing.assert_allclose(error[[0, 2]], [0.1, 0.5])
    assert np.isnan(error[1]) and np.isnan(error[3])      # plant 0; not identifiable


def test_irregular_steps_identify_as_the_same_motion_on_a_uniform_grid(setup):
    # a UR-like log: steps of 10 and 12 ms in turn (the 500 Hz recording's samples 5 and 6
    # apart), beside the same motion sampled every 11 ms; both identify a model that
    # predicts another motion as well, and the rate reported is the mean one
    from ne_dynamics_ros.dynamics.urdf_import import read_urdf_text
    from ne_dynamics_ros.identification.pipeline import identify_model
    from ne_dynamics_ros.identification.recording import JointRecording
    model, record = setup['model'], setup['record']
    steps = np.tile([5, 6], record.t.size // 11 + 1)
    rows = np.concatenate([[0], np.cumsum(steps)])
    rows = rows[rows < record.t.size]
    uniform_t = np.arange(0.0, record.t[-1], 0.011)      # every 11 ms, interpolated

    def recording(t, source, pick=None):
        def at(values):
            if pick is not None:
                return values[pick]
            return np.column_stack([np.interp(t, record.t, values[:, j])
                                    for j in range(model.n)])
        return JointRecording(tuple(model.joint_names), t - t[0], at(record.q),
                              at(record.qd), at(record.effort), source)
    irregular = recording(record.t[rows], 'irregular', rows)
    spread = irregular.steps()
    assert spread.minimum == pytest.approx(0.010) and spread.maximum == pytest.approx(0.012)
    mean_rate = (rows.size - 1) / (record.t[rows[-1]] - record.t[0])
    assert irregular.rate == pytest.approx(mean_rate, rel=0.02)
    assert 'irregular' in irregular.describe()
    regular = recording(uniform_t, 'uniform')
    text = read_urdf_text(str(PUMA560_URDF))
    errors, resampled = [], []
    for run in (irregular, regular):
        found = identify_model(text, model, run, validation=0)
        physical = found.physical
        identified = model.with_parameters(physical.parameters)
        identified.set_friction_shape(physical.friction_velocity, physical.friction_offset)
        errors.append(relative_rms(identified, [0.0] * 6, setup['validation']))
        resampled.append(any('resampled to a uniform' in w for w in found.result.warnings))
    assert resampled == [True, False]
    assert np.all(errors[0] < 0.03) and np.all(errors[1] < 0.03), errors
    np.testing.assert_allclose(errors[0], errors[1], atol=0.01)


def placeholder_urdf(text, kind):
    """The PUMA URDF with every <inertial> removed, or made a 1 kg unit cube."""
    import re
    cube = ('<inertial><origin xyz="0 0 0" rpy="0 0 0"/><mass value="1.0"/><inertia '
            'ixx="0.1667" ixy="0" ixz="0" iyy="0.1667" iyz="0" izz="0.1667"/></inertial>')
    return re.sub(r'<inertial>.*?</inertial>', '' if kind == 'none' else cube, text,
                  flags=re.S)


@pytest.mark.parametrize('kind', ['none', 'unit cubes'])
def test_a_urdf_with_placeholder_inertials_is_said_and_fitted_from_the_data(
        setup, identified, tmp_path, kind):
    """No <inertial> (or 1 kg unit cubes everywhere): identify says the inertials are
    placeholders, takes no prior toward them, and the URDF it writes fits the recording
    and predicts another motion as the model identified from the real URDF does, within
    1 % of the efforts' RMS on every joint."""
    urdf = tmp_path / 'placeholder.urdf'
    urdf.write_text(placeholder_urdf(PUMA560_URDF.read_text(), kind))
    out_urdf, params = tmp_path / 'identified.urdf', tmp_path / 'identified.yaml'
    import contextlib
    import io
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(['identify', '--urdf', str(urdf), '--bag', str(setup['bag']),
                     '--tip-link', 'flange', '--output-urdf', str(out_urdf),
                     '--output-params', str(params), '--armature',
                     *(str(a) for a in ARMATURE)])
    text = printed.getvalue()
    assert code == 0, text
    assert 'inertials are placeholders' in text and 'infx' not in text
    values = yaml.safe_load(params.read_text())['/**']['ros__parameters']
    ours = load_model(str(out_urdf), tip_link='flange')
    _, _, real_urdf, real_params = identified
    real_values = yaml.safe_load(real_params.read_text())['/**']['ros__parameters']
    real = load_model(str(real_urdf), tip_link='flange')
    for run in (setup['record'], setup['validation']):       # fitted, then another motion
        mine = relative_rms(ours, values['armature'], run)
        theirs = relative_rms(real, real_values['armature'], run)
        assert np.all(mine <= theirs + 0.01), (kind, mine, theirs)
