"""``ne-dynamics`` over ordinary mistakes and damaged inputs: a clean error, nothing lost.

Every case asserts the exit code, the message, and that no file changed, appeared or lost
its kind (:func:`snapshot`). Device cases use a FIFO and folders inside the test's own
temporary folder, never the machine's ``/dev``. The recording is made here from the
PUMA 560's model (the efforts of an excitation through our RNEA, with noise): these tests
are about the tools' handling of input, the identification's accuracy is tested in
``test_identification.py`` and ``test_mujoco_arm.py``.
"""
import contextlib
import io
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import warnings
from xml.sax.saxutils import quoteattr

from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

from references import PUMA560_URDF
from ne_dynamics_ros import load_model
from ne_dynamics_ros.identification.excitation import design_excitation
from ne_dynamics_ros.identification.recording import write_bag

#: no DDS participant and no timing judged: runs beside other tests (test/conftest.py)
PARALLEL_SAFE = True

RATE = 200.0
DURATION = 12.0


def cli(*args, cwd=None, umask=None):
    """Run ``ne-dynamics ARGS`` in a process of its own; return the CompletedProcess."""
    def set_umask():
        os.umask(umask)
    return subprocess.run([sys.executable, '-m', 'ne_dynamics_ros.tools.cli', *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=cwd,
                          preexec_fn=None if umask is None else set_umask)


def in_process(*args):
    """Run ``ne-dynamics ARGS`` through its ``main`` in this process; return a CompletedProcess.

    For runs that test what the command reads, writes and says, not the process around
    it: the libraries it loads are loaded once per test process (an ``identify`` in a
    process of its own spent ~3 s of its ~7 s of CPU importing SciPy and CVXPY,
    2026-12-07). The exit status is ``main``'s, as the console script's.
    """
    from ne_dynamics_ros.tools.cli import main
    argv = [str(arg) for arg in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            warnings.catch_warnings(record=True) as shown:
        # the warnings a process of its own would print on its stderr: Python's default
        # filters, not the test run's
        warnings.resetwarnings()
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning,
                         ResourceWarning):
            warnings.simplefilter('ignore', category)
        try:
            code = main(argv)
        except SystemExit as exc:                     # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    for w in shown:
        err.write(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line))
    return subprocess.CompletedProcess(['ne-dynamics', *argv], code, out.getvalue(),
                                       err.getvalue())


def in_turn(runs):
    """Run ``{key: args}`` as ``in_process(*args)``; return ``{key: CompletedProcess}``."""
    return {key: in_process(*args) for key, args in runs.items()}


def snapshot(folder):
    """Every entry under ``folder``: path -> (kind, mode, content for regular files)."""
    entries = {}
    for path in sorted(pathlib.Path(folder).rglob('*')):
        info = os.lstat(path)
        kind = stat.S_IFMT(info.st_mode)
        content = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
        entries[str(path)] = (kind, stat.S_IMODE(info.st_mode), content)
    return entries


@pytest.fixture(scope='module')
def data(tmp_path_factory):
    """A PUMA 560 recording as a bag and a CSV, with a folder of its own."""
    folder = tmp_path_factory.mktemp('cli_bad_input')
    model = load_model(str(PUMA560_URDF), tip_link='flange')
    excitation, _ = design_excitation(model, 6.0, harmonics=3, starts=1, iterations=20)
    t = np.arange(int(DURATION * RATE)) / RATE
    q, qd, qdd = excitation.evaluate(t)
    rng = np.random.default_rng(0)
    tau = model.rnea(q, qd, qdd) + rng.normal(0.0, 0.01, q.shape)
    bag = write_bag(folder / 'bag', model.joint_names, t, q, qd, tau)
    return {'folder': folder, 'model': model, 't': t, 'q': q, 'qd': qd, 'tau': tau,
            'bag': bag, 'csv': write_csv(folder / 'rec.csv', model.joint_names, t, q, qd, tau)}


def write_csv(path, names, t, q, qd, tau, delimiter=',', bom=False):
    """Write a recording as ``ne-dynamics identify --csv`` reads it."""
    header = delimiter.join(['time'] + [f'position/{j}' for j in names]
                            + [f'velocity/{j}' for j in names] + [f'effort/{j}' for j in names])
    rows = np.column_stack([t, q, qd, tau])
    with open(path, 'w', encoding='utf-8-sig' if bom else 'utf-8') as stream:
        stream.write(header + '\n')
        np.savetxt(stream, rows, delimiter=delimiter, fmt='%.12g')
    return path


def identify_args(urdf, recording, out_urdf, out_params, *extra):
    kind = '--csv' if str(recording).endswith('.csv') else '--bag'
    return ['identify', '--urdf', urdf, kind, recording, '--tip-link', 'flange',
            '--output-urdf', out_urdf, '--output-params', out_params, *extra]


def work_folder(data, tmp_path):
    """A private folder with a copy of the URDF, the CSV and the bag."""
    shutil.copy(PUMA560_URDF, tmp_path / 'puma.urdf')
    shutil.copy(data['csv'], tmp_path / 'rec.csv')
    shutil.copytree(data['bag'], tmp_path / 'bag')
    return tmp_path


# -- 1. the output writer -------------------------------------------------------------------

@pytest.mark.parametrize('kind', ['fifo', 'folder'])
def test_an_output_that_is_not_a_regular_file_is_refused_before_any_work(tmp_path, kind):
    target = tmp_path / 'target'
    os.mkfifo(target) if kind == 'fifo' else target.mkdir()
    before = snapshot(tmp_path)
    result = cli('codegen', PUMA560_URDF, '--lang', 'c', '--output', target)
    assert result.returncode == 2
    assert {'fifo': 'is a FIFO', 'folder': 'is a folder'}[kind] in result.stderr
    assert str(target) in result.stderr and 'Traceback' not in result.stderr
    assert result.stdout == ''                         # refused before generating anything
    assert snapshot(tmp_path) == before                # the FIFO is still a FIFO


def test_an_input_is_never_overwritten_also_through_links(data, tmp_path):
    folder = work_folder(data, tmp_path)
    urdf, csv = folder / 'puma.urdf', folder / 'rec.csv'
    os.symlink(urdf, folder / 'link.urdf')
    os.link(urdf, folder / 'hard.urdf')
    before = snapshot(folder)
    result = cli('codegen', urdf, '--lang', 'python', '--output', urdf)
    assert result.returncode == 2 and 'is the input' in result.stderr
    for output in (urdf, folder / 'link.urdf', folder / 'hard.urdf'):
        result = cli(*identify_args(urdf, csv, output, folder / 'out.yaml'))
        assert result.returncode == 2 and 'is the input' in result.stderr, result.stderr
    result = cli(*identify_args(urdf, csv, folder / 'out.urdf', csv))
    assert result.returncode == 2 and '--output-params' in result.stderr
    result = cli(*identify_args(urdf, folder / 'bag', folder / 'out.urdf',
                                next((folder / 'bag').glob('*.mcap'))))
    assert result.returncode == 2 and 'is the input' in result.stderr
    assert snapshot(folder) == before


def test_two_outputs_sharing_a_file_are_refused(data, tmp_path):
    folder = work_folder(data, tmp_path)
    (folder / 'out.urdf').write_text('old')
    os.symlink(folder / 'out.urdf', folder / 'alias.yaml')
    before = snapshot(folder)
    for params in (folder / 'out.urdf', folder / 'alias.yaml'):
        result = cli(*identify_args(folder / 'puma.urdf', folder / 'rec.csv',
                                    folder / 'out.urdf', params))
        assert result.returncode == 2 and 'the same file as --output-urdf' in result.stderr
    assert snapshot(folder) == before


def test_outputs_get_the_umask_mode_and_a_replaced_file_keeps_its_own(data, tmp_path):
    folder = work_folder(data, tmp_path)
    kept = folder / 'kept.yaml'
    kept.write_text('old')
    kept.chmod(0o600)
    result = cli(*identify_args(folder / 'puma.urdf', folder / 'rec.csv', folder / 'new.urdf',
                                kept), umask=0o022)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE((folder / 'new.urdf').stat().st_mode) == 0o644
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and 'armature' in kept.read_text()
    # a symbolic link output: the file it points to is written, the link stays a link
    os.symlink(folder / 'new.urdf', folder / 'via.urdf')
    result = cli('codegen', folder / 'puma.urdf', '--lang', 'python', '--output',
                 folder / 'via.urdf')
    assert result.returncode == 0 and (folder / 'via.urdf').is_symlink()
    assert 'def rnea' in (folder / 'new.urdf').read_text()
    assert not list(folder.glob('.*'))                 # no temporary file left


def test_a_full_disk_is_reported_with_the_path_and_changes_nothing(tmp_path, monkeypatch):
    from ne_dynamics_ros.tools import files
    first, second = tmp_path / 'a.txt', tmp_path / 'b.txt'
    first.write_text('old a')

    calls = []

    def full(descriptor):                   # the first file fits, the second does not
        calls.append(descriptor)
        if len(calls) == 2:
            raise OSError(28, 'No space left on device')

    monkeypatch.setattr(files.os, 'fsync', full)
    with pytest.raises(files.OutputError, match=f'cannot write {second}: no space left'):
        files.write_outputs([(first, 'new a'), (second, 'new b')])
    assert first.read_text() == 'old a' and not second.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ['a.txt']


# -- 2. one URDF reader, one pipeline ------------------------------------------------------

URDF_VARIANTS = ('bom', 'latin-1')


@pytest.fixture(scope='module')
def odd_urdf_runs(data, tmp_path_factory):
    """Each of ``URDF_VARIANTS``: a URDF written so, read by ``dh`` and ``identify`` (the
    variants, in turn). Returns {variant: (dh result, identify result, folder)}."""
    text = PUMA560_URDF.read_text(encoding='utf-8')
    body = text.split('?>', 1)[1] if text.startswith('<?xml') else text
    body = body.replace('<robot ', '<!-- Bézier -->\n<robot ', 1)
    folders, runs = {}, {}
    for variant in URDF_VARIANTS:
        folder = folders[variant] = work_folder(data, tmp_path_factory.mktemp(variant))
        urdf = folder / 'odd.urdf'
        if variant == 'bom':
            urdf.write_bytes(b'\xef\xbb\xbf<?xml version="1.0"?>' + body.encode('utf-8'))
        else:
            urdf.write_bytes(b'<?xml version="1.0" encoding="ISO-8859-1"?>'
                             + body.encode('latin-1'))
        runs[(variant, 'dh')] = ['dh', urdf]
        runs[(variant, 'identify')] = identify_args(urdf, folder / 'rec.csv',
                                                    folder / 'id.urdf', folder / 'id.yaml')
    done = in_turn(runs)
    return {variant: (done[(variant, 'dh')], done[(variant, 'identify')], folders[variant])
            for variant in URDF_VARIANTS}


@pytest.mark.parametrize('variant', URDF_VARIANTS)
def test_identify_reads_the_urdf_as_every_tool_does(odd_urdf_runs, variant):
    """A UTF-8 BOM, or a latin-1 declaration with a latin-1 character: both read (as
    ``dh`` reads them); the identified URDF is UTF-8 and says so."""
    dh, result, folder = odd_urdf_runs[variant]
    assert dh.returncode == 0, dh.stderr
    assert result.returncode == 0, result.stderr
    written = (folder / 'id.urdf').read_bytes()
    assert not written.startswith(b'\xef\xbb\xbf') and 'Bézier' in written.decode('utf-8')
    assert b'ISO-8859-1' not in written
    load_model(str(folder / 'id.urdf'), tip_link='flange')


# -- 3. generated code valid for any name --------------------------------------------------

XML_CHARACTERS = st.characters(blacklist_categories=('Cs',)).filter(
    lambda c: c in '\t\n\r' or ' ' <= c <= '\ud7ff' or '\ue000' <= c <= '\ufffd'
    or c >= '\U00010000')
NAMES = st.lists(st.text(XML_CHARACTERS, min_size=1, max_size=12), min_size=5, max_size=5,
                 unique=True)
NASTY = ['"', '\\', '*/', '"""', '\\N', '??/', '/*', '\n', "'", '{}']


def two_joint_urdf(names):
    """A 2-joint URDF whose links and joints carry ``names`` (base, l1, l2, j1, j2)."""
    q = {name: quoteattr(name, {'\n': '&#10;', '\r': '&#13;', '\t': '&#9;'})
         for name in names}
    base, l1, l2, j1, j2 = (q[n] for n in names)
    inertial = ('<inertial><mass value="1.5"/><origin xyz="0.1 0 0.02"/><inertia ixx="0.01" '
                'iyy="0.02" izz="0.025" ixy="0" ixz="0" iyz="0"/></inertial>')
    return (f'<robot name="r"><link name={base}/><link name={l1}>{inertial}</link>'
            f'<link name={l2}>{inertial}</link>'
            f'<joint name={j1} type="revolute"><parent link={base}/><child link={l1}/>'
            '<axis xyz="0 0 1"/><limit effort="10" velocity="2" lower="-3" upper="3"/></joint>'
            f'<joint name={j2} type="revolute"><parent link={l1}/><child link={l2}/>'
            '<origin xyz="0.3 0 0" rpy="1.5708 0 0"/><axis xyz="0 0 1"/>'
            '<limit effort="10" velocity="2" lower="-3" upper="3"/></joint></robot>')


@settings(max_examples=20, deadline=None)
@given(names=NAMES, nasty=st.sampled_from(NASTY))
def test_generated_python_and_c_are_valid_for_any_name(tmp_path_factory, names, nasty):
    """Names from the whole Unicode range (what XML can carry), with a nasty one among
    them, in the joints and links: the Python imports, gives the names back exactly and
    the same efforts as the model; the C compiles and holds the names' exact bytes."""
    from ne_dynamics_ros.codegen import c_source, generate, python_source
    from ne_dynamics_ros.codegen.python_emitter import load_python
    names = list(names)
    if nasty not in names:
        names[3] = nasty                        # a joint named by the nasty one
    model = load_model(two_joint_urdf(names))
    program = generate(model)
    robot = f'{nasty}robot{nasty}.urdf ({model.base_link} -> {model.tip_link})'
    source = python_source(program, robot)
    module = load_python(source)
    assert list(module['JOINT_NAMES']) == model.joint_names == names[3:]
    q = np.array([0.3, -0.7])
    np.testing.assert_allclose(module['rnea'](q, q, q), model.rnea(q, q, q), atol=1e-12)
    compiler = shutil.which('cc') or shutil.which('gcc')
    if compiler is None:
        pytest.skip('no C compiler on this machine')
    folder = tmp_path_factory.mktemp('c')
    (folder / 'rnea.c').write_text(c_source(program, robot), encoding='ascii')
    (folder / 'main.c').write_text(
        '#include <stdio.h>\n#include "rnea.c"\nint main(void) {\n'
        '  for (int i = 0; i < NE_N; ++i) { fputs(ne_joint_names[i], stdout); '
        'putchar(0); }\n  return 0;\n}\n', encoding='ascii')
    built = subprocess.run([compiler, '-std=c99', '-o', str(folder / 'main'),
                            str(folder / 'main.c'), '-lm'], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    printed = subprocess.run([str(folder / 'main')], capture_output=True).stdout
    assert printed.split(b'\0')[:-1] == [n.encode('utf-8') for n in names[3:]]


def test_codegen_of_a_urdf_file_with_a_nasty_name_imports(tmp_path):
    urdf = tmp_path / 'r\\N"""*?.urdf'
    shutil.copy(PUMA560_URDF, urdf)
    result = cli('codegen', urdf, '--tip', 'flange', '--lang', 'python', '--output',
                 tmp_path / 'gen.py')
    assert result.returncode == 0, result.stderr
    from ne_dynamics_ros.codegen.python_emitter import load_python
    assert len(load_python((tmp_path / 'gen.py').read_text())['JOINT_NAMES']) == 6


# -- 4. arguments checked before any work --------------------------------------------------

@pytest.mark.parametrize('option, value, message', [
    ('--duration', '1e9', 'duration must be a number in [1, 600] s'),
    ('--duration', '0.1', 'duration must be a number in [1, 600] s'),
    ('--starts', '0', 'starts must be an integer in [1, 50]'),
    ('--harmonics', '1000000', 'harmonics must be an integer in [2, 20]'),
    ('--iterations', '-1', 'iterations must be an integer in [1, 20000]'),
    ('--margin', '0.5', 'margin must be a number in [0, 0.45]'),
    ('--max-condition', 'nan', '--max-condition must be a number >= 1'),
])
def test_excite_refuses_arguments_out_of_their_documented_range(tmp_path, option, value,
                                                                message):
    options = {'--duration': '5', option: value}
    args = [a for pair in options.items() for a in pair]
    result = cli('excite', PUMA560_URDF, *args, '--output', tmp_path / 'e.yaml')
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert 'optimising' not in result.stdout and not list(tmp_path.iterdir())


def test_excite_names_joints_whose_limits_leave_no_motion_and_refuses_a_bad_condition(
        tmp_path):
    text = PUMA560_URDF.read_text()
    start = text.index('<joint name="joint_6"')
    limit = text.index('<limit', start)
    end = text.index('/>', limit)
    stuck = tmp_path / 'stuck.urdf'
    stuck.write_text(text[:limit] + '<limit lower="0.5" upper="0.5" effort="21.3" '
                     'velocity="5"' + text[end:])
    result = cli('excite', stuck, '--duration', '5', '--output', tmp_path / 'e.yaml')
    assert result.returncode == 2 and "['joint_6']" in result.stderr, result.stderr
    result = cli('excite', PUMA560_URDF, '--duration', '5', '--starts', '1', '--iterations',
                 '3', '--max-condition', '1', '--output', tmp_path / 'e.yaml')
    assert result.returncode == 2 and 'over --max-condition 1' in result.stderr
    assert not (tmp_path / 'e.yaml').exists()


@pytest.mark.parametrize('delay, message', [
    ('nan', '--effort-delay must be a finite time >= 0'),
    ('-0.1', '--effort-delay must be a finite time >= 0'),
    ('1e6', 'is not under a tenth of the'),
])
def test_identify_refuses_an_effort_delay_that_is_not_a_delay(data, tmp_path, delay, message):
    folder = work_folder(data, tmp_path)
    before = snapshot(folder)
    result = cli(*identify_args(folder / 'puma.urdf', folder / 'rec.csv', folder / 'o.urdf',
                                folder / 'o.yaml', '--effort-delay', delay))
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert 'Traceback' not in result.stderr and snapshot(folder) == before


@pytest.mark.parametrize('extra, message', [
    (['--current-to-effort', '1', '2'], '2 given for 6 joints'),
    (['--current-to-effort', '1', '1', '1', '-1', '1', '1'], 'joint_4'),
    (['--current-to-effort', '1', '1', '1', '0', '1', '1'], 'joint_4'),
    (['--current-to-effort', '1', '1', '1', 'nan', '1', '1'], 'joint_4'),
    (['--validate', '1.5'], '--validate 1.5'),
    (['--validate', '-0.1'], '--validate -0.1'),
    (['--validate', 'other.csv'], 'joint_1'),
    (['--validate', 'missing.csv'], 'missing.csv'),
])
def test_identify_refuses_bad_constants_and_validation_inputs(data, tmp_path, extra, message):
    folder = work_folder(data, tmp_path)
    names = [f'j{k}' for k in range(6)]      # a recording of other joints
    write_csv(folder / 'other.csv', names, data['t'], data['q'], data['qd'], data['tau'])
    extra = [str(folder / e) if e.endswith('.csv') else e for e in extra]
    before = snapshot(folder)
    result = cli(*identify_args(folder / 'puma.urdf', folder / 'rec.csv', folder / 'o.urdf',
                                folder / 'o.yaml', *extra))
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert 'Traceback' not in result.stderr and snapshot(folder) == before


# -- 5. recordings ----------------------------------------------------------------------------

def test_recordings_that_are_not_what_they_should_be_are_named(data, tmp_path):
    folder = work_folder(data, tmp_path)
    mcap = next((folder / 'bag').glob('*.mcap'))
    (folder / 'empty').mkdir()
    lone = folder / 'lone.mcap'
    shutil.copy(mcap, lone)
    cases = [(lone, 'is a file, not a rosbag2 folder'),
             (folder / 'empty', 'has no metadata.yaml'),
             (folder / 'missing', 'no recording at')]
    damaged = folder / 'damaged'
    shutil.copytree(folder / 'bag', damaged)
    storage = next(damaged.glob('*.mcap'))
    raw = bytearray(storage.read_bytes())
    garbage = np.random.default_rng(1).integers(0, 256, len(raw) - 400, dtype=np.uint8)
    raw[200:len(raw) - 200] = garbage.tobytes()
    storage.write_bytes(bytes(raw))
    cases.append((damaged, str(damaged)))
    before = snapshot(folder)
    for recording, message in cases:
        result = cli(*identify_args(folder / 'puma.urdf', recording, folder / 'o.urdf',
                                    folder / 'o.yaml'))
        assert result.returncode == 2, (recording, result.stderr)
        assert message in result.stderr and 'Traceback' not in result.stderr, result.stderr
        assert len(result.stderr) < 800
    # the storage file of a bag, given instead of its folder, is read as the bag
    result = in_process(*identify_args(folder / 'puma.urdf', mcap, folder / 'o.urdf',
                                       folder / 'o.yaml'))
    assert result.returncode == 0, result.stderr
    (folder / 'o.urdf').unlink()
    (folder / 'o.yaml').unlink()
    assert snapshot(folder) == before


def test_messages_with_fewer_positions_than_names_are_skipped_and_counted(data, tmp_path):
    q = [row if k % 50 else row[:5] for k, row in enumerate(data['q'])]
    bag = write_bag(tmp_path / 'short', data['model'].joint_names, data['t'], q, data['qd'],
                    data['tau'])
    shutil.copy(PUMA560_URDF, tmp_path / 'puma.urdf')
    result = in_process(*identify_args(tmp_path / 'puma.urdf', bag, tmp_path / 'o.urdf',
                                       tmp_path / 'o.yaml'))
    assert result.returncode == 0, result.stderr
    assert f'skipped {len(q) // 50} messages with fewer positions than names' in result.stdout


CSV_VARIANTS = {'bom': ',', 'semicolon': ';', 'tab': '\t'}


@pytest.fixture(scope='module')
def csv_variant_runs(data, tmp_path_factory):
    """``identify`` of the recording written as each of ``CSV_VARIANTS`` (in turn):
    {variant: result}."""
    folder = tmp_path_factory.mktemp('csv_variants')
    shutil.copy(PUMA560_URDF, folder / 'puma.urdf')
    runs = {}
    for variant, delimiter in CSV_VARIANTS.items():
        path = write_csv(folder / f'{variant}.csv', data['model'].joint_names, data['t'],
                         data['q'], data['qd'], data['tau'], delimiter=delimiter,
                         bom=variant == 'bom')
        runs[variant] = identify_args(folder / 'puma.urdf', path, folder / f'{variant}.urdf',
                                      folder / f'{variant}.yaml')
    return in_turn(runs)


@pytest.mark.parametrize('variant', list(CSV_VARIANTS))
def test_csv_files_with_a_bom_or_another_delimiter_are_read(csv_variant_runs, variant):
    result = csv_variant_runs[variant]
    assert result.returncode == 0, result.stderr


def test_all_zero_efforts_are_blamed_on_the_recording(data, tmp_path):
    names = data['model'].joint_names
    path = write_csv(tmp_path / 'r.csv', names, data['t'], data['q'], data['qd'],
                     np.zeros_like(data['tau']))
    shutil.copy(PUMA560_URDF, tmp_path / 'puma.urdf')
    result = cli(*identify_args(tmp_path / 'puma.urdf', path, tmp_path / 'o.urdf',
                                tmp_path / 'o.yaml'))
    assert result.returncode == 2 and 'efforts are all zero' in result.stderr, result.stderr
    assert not (tmp_path / 'o.urdf').exists()


def test_a_glitch_is_dropped_with_a_count_and_does_not_move_the_model(data, tmp_path):
    """One sample 1e6 rad away: dropped, counted, named; the identified model predicts the
    efforts as well as the glitch-free run's (within 0.1 % of the effort RMS)."""
    import yaml
    names = data['model'].joint_names
    shutil.copy(PUMA560_URDF, tmp_path / 'puma.urdf')
    values, runs = {}, {}
    for label in ('clean', 'glitch'):
        q = data['q'].copy()
        if label == 'glitch':
            q[1000, 2] = 1e6
        path = write_csv(tmp_path / f'{label}.csv', names, data['t'], q, data['qd'],
                         data['tau'])
        runs[label] = identify_args(tmp_path / 'puma.urdf', path, tmp_path / f'{label}.urdf',
                                    tmp_path / f'{label}.yaml')
    for label, result in in_turn(runs).items():
        assert result.returncode == 0, result.stderr
        assert 'RuntimeWarning' not in result.stderr
        values[label] = yaml.safe_load((tmp_path / f'{label}.yaml').read_text())[
            '/**']['ros__parameters']
        if label == 'glitch':
            assert "dropped 1 samples whose position jumps beyond twice" in result.stdout
            assert "['joint_3']" in result.stdout
    error = {}
    for label in values:
        model = load_model(str(tmp_path / f'{label}.urdf'), tip_link='flange',
                           armature=values[label]['armature'],
                           damping=values[label]['damping'], friction=values[label]['friction'])
        predicted = model.rnea(data['q'], data['qd'], np.gradient(data['qd'], data['t'],
                                                                  axis=0))
        predicted += model.friction_torques(data['qd'])
        error[label] = np.sqrt(((predicted - data['tau']) ** 2).mean() / (data['tau'] ** 2).mean())
    # both predict the clean efforts as well (measured: 0.073 % and 0.074 % of the RMS;
    # without the drop the command does not even finish)
    assert error['glitch'] < error['clean'] + 1e-3 and error['clean'] < 0.01, error


@pytest.mark.parametrize('column', ['all', 1])
def test_absurd_positions_give_a_short_message_and_no_raw_warning(data, tmp_path, column):
    names = data['model'].joint_names
    q = np.full_like(data['q'], 1e308) if column == 'all' else data['q'].copy()
    if column != 'all':
        q[:, column] = 1e308                 # finite, and no joint angle
    path = write_csv(tmp_path / 'r.csv', names, data['t'], q, data['qd'], data['tau'])
    shutil.copy(PUMA560_URDF, tmp_path / 'puma.urdf')
    result = cli(*identify_args(tmp_path / 'puma.urdf', path, tmp_path / 'o.urdf',
                                tmp_path / 'o.yaml'))
    assert result.returncode == 2, result.stdout + result.stderr
    assert 'Warning' not in result.stderr and 'Traceback' not in result.stderr
    assert len(result.stderr) < 800, result.stderr
    # the joint, the value and the bound it breaks; not an internal array's name
    joint = names[0 if column == 'all' else column]
    assert f'{joint} position 1e+308 at t = 0.000 s is beyond 1e+06 rad' in result.stderr, \
        result.stderr
    assert 'q contains' not in result.stderr
    assert not (tmp_path / 'o.urdf').exists()


# -- 7. missing packages, closed pipes -----------------------------------------------------

def test_a_missing_optional_package_is_one_line_naming_the_extra(data, tmp_path):
    folder = work_folder(data, tmp_path)
    args = identify_args(folder / 'puma.urdf', folder / 'rec.csv', folder / 'o.urdf',
                         folder / 'o.yaml')
    code = ('import sys; sys.modules["cvxpy"] = None\n'
            'from ne_dynamics_ros.tools.cli import main\n'
            f'sys.exit(main({[str(a) for a in args]!r}))')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'ne_dynamics_ros[identify]'" in lines[0]
    assert "'cvxpy'" in lines[0]
    assert not (folder / 'o.urdf').exists() and not (folder / 'o.yaml').exists()


def test_a_closed_stdout_ends_quietly():
    process = subprocess.Popen([sys.executable, '-m', 'ne_dynamics_ros.tools.cli',
                                'base-params', str(PUMA560_URDF)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()                          # as `| head -0` does
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0 and stderr == b'', stderr
