"""``ne-dynamics dh`` and ``gains``: tables, JSON output and errors, run as a user would."""
import json
import math
import subprocess
import sys

import numpy as np
import yaml

from references import CONFIG_DIR, PUMA560_URDF, UR5E_URDF
from ne_dynamics_ros import load_model
from ne_dynamics_ros.control.laws.gains import recommended_gains

#: no DDS participant and no timing judged: runs beside other tests (test/conftest.py)
PARALLEL_SAFE = True


def run(*args):
    return subprocess.run([sys.executable, '-m', 'ne_dynamics_ros.tools.cli', *args],
                          capture_output=True, text=True, timeout=60)


def test_dh_table_text_for_ur5e():
    out = run('dh', str(UR5E_URDF), '--convention', 'dh', '--tip', 'tool0')
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith('standard DH table of world -> tool0')
    assert 'a[i]' in lines[1] and 'alpha[i]' in lines[1]
    row2 = lines[3].split()
    assert row2[1] == 'shoulder_lift_joint' and float(row2[3]) == -0.425
    assert 'FK residual' in lines[-1] and float(lines[-1].split()[-1]) < 1e-10


def test_dh_table_json_for_puma_mdh():
    out = run('dh', str(PUMA560_URDF), '--json')
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data['convention'] == 'mdh' and data['tip_link'] == 'flange'
    assert [r['joint'] for r in data['rows']] == [f'joint_{i}' for i in range(1, 7)]
    # Published PUMA 560 MDH (Craig): a2 = 0.4318 m, alpha1 = -pi/2 or +pi/2 by axis sense.
    assert math.isclose(abs(data['rows'][1]['alpha']), math.pi / 2, abs_tol=1e-12)
    assert math.isclose(data['rows'][2]['a'], 0.4318, abs_tol=1e-12)
    assert data['fk_residual'] < 1e-10


def test_mdh_header_shows_index_shift():
    out = run('dh', str(UR5E_URDF))
    assert 'a[i-1]' in out.stdout and 'alpha[i-1]' in out.stdout


def test_errors_exit_2_with_message():
    out = run('dh', '/nonexistent/robot.urdf')
    assert out.returncode == 2
    assert 'URDF file not found' in out.stderr and 'Traceback' not in out.stderr
    out = run('dh', str(UR5E_URDF), '--tip', 'nope')
    assert out.returncode == 2 and 'tip_link "nope"' in out.stderr


def test_base_params_json_for_the_puma():
    out = run('base-params', str(PUMA560_URDF), '--json')
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data['joints'] == [f'joint_{i}' for i in range(1, 7)]
    assert (data['standard_count'], data['base_count'], data['numeric_rank']) == (60, 36, 36)
    assert data['method'] == 'closed_form' and data['convention'] == 'mdh'
    assert len(data['base_parameters']) == 36 and len(data['drive_parameters']) == 18
    first = data['base_parameters'][0]
    assert first['name'] == 'ZZ1R' and first['expression'].startswith('ZZ1 + YY2')


def test_base_params_table_and_errors():
    out = run('base-params', str(UR5E_URDF), '--tip', 'tool0')
    assert out.returncode == 0, out.stderr
    assert 'standard: 60, base: 36, numeric rank: 36 (method: closed form)' in out.stdout
    assert out.stdout.count(' = ') >= 36
    out = run('base-params', '/nonexistent/robot.urdf')
    assert out.returncode == 2 and 'URDF file not found' in out.stderr
    assert 'Traceback' not in out.stderr


def test_codegen_python_and_c_match_the_recursion(tmp_path):
    import ctypes
    import shutil
    import numpy as np
    from ne_dynamics_ros import load_model
    from ne_dynamics_ros.codegen import count_operations, load_python
    armature = ['0.5', '1.0', '0.25', '0.1', '0.1', '0.1']
    out = run('codegen', str(PUMA560_URDF), '--lang', 'python', '--output',
              str(tmp_path / 'puma.py'), '--armature', *armature)
    assert out.returncode == 0, out.stderr
    assert 'Lee et al. 1982 Table 2 general NE, n = 6' in out.stdout and '690' in out.stdout
    source = (tmp_path / 'puma.py').read_text()
    module = load_python(source)
    assert module['OPERATIONS'] == count_operations(source)
    assert str(module['OPERATIONS']['mul']) in out.stdout.splitlines()[2]
    model = load_model(str(PUMA560_URDF), armature=[float(a) for a in armature])
    rng = np.random.default_rng(4)
    q, qd, qdd = rng.uniform(-2, 2, (3, 6))
    expected = model.rnea(q, qd, qdd)
    np.testing.assert_allclose(module['rnea'](q, qd, qdd), expected, rtol=1e-12, atol=1e-12)
    out = run('codegen', str(PUMA560_URDF), '--lang', 'c', '--output', str(tmp_path / 'p.c'),
              '--armature', *armature)
    assert out.returncode == 0, out.stderr
    compiler = shutil.which('cc') or shutil.which('gcc')
    if compiler is None:
        return          # the Python output is checked above; no compiler on this machine
    library = tmp_path / 'libpuma.so'
    build = subprocess.run([compiler, '-std=c99', '-Wall', '-Werror', '-O2', '-shared',
                            '-fPIC', str(tmp_path / 'p.c'), '-o', str(library), '-lm'],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    library = ctypes.CDLL(str(library))
    array = ctypes.c_double * 6
    tau = array()
    library.ne_rnea(array(*q), array(*qd), array(*qdd), tau)
    np.testing.assert_allclose(list(tau), expected, rtol=1e-12, atol=1e-12)
    # the batch entry point: 5 states stored row by row
    Q, QD, QDD = (np.ascontiguousarray(a) for a in rng.uniform(-2, 2, (3, 5, 6)))
    out = np.zeros((5, 6))
    pointer = ctypes.POINTER(ctypes.c_double)
    library.ne_rnea_batch.argtypes = [ctypes.c_long] + [pointer] * 4
    library.ne_rnea_batch(5, *(a.ctypes.data_as(pointer) for a in (Q, QD, QDD, out)))
    np.testing.assert_allclose(out, model.rnea(Q, QD, QDD), rtol=1e-12, atol=1e-12)


def test_codegen_errors_write_nothing(tmp_path):
    out = run('codegen', str(PUMA560_URDF), '--lang', 'python', '--output',
              str(tmp_path / 'missing_dir' / 'x.py'))
    assert out.returncode == 2 and 'cannot write' in out.stderr
    assert not (tmp_path / 'missing_dir').exists()
    target = tmp_path / 'x.py'
    out = run('codegen', '/nonexistent/robot.urdf', '--lang', 'c', '--output', str(target))
    assert out.returncode == 2 and 'URDF file not found' in out.stderr
    out = run('codegen', str(PUMA560_URDF), '--tip', 'base_link', '--lang', 'c',
              '--output', str(target))
    assert out.returncode == 2 and 'Traceback' not in out.stderr
    out = run('codegen', str(PUMA560_URDF), '--lang', 'c', '--output', str(target),
              '--armature', '1', '2')
    assert out.returncode == 2 and 'armature' in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_gains_command_prints_the_rule_and_refuses_bad_input(tmp_path):
    command = [sys.executable, '-m', 'ne_dynamics_ros.tools.cli', 'gains']
    out = subprocess.run(command + [str(PUMA560_URDF), '--params',
                                    str(CONFIG_DIR / 'puma560.yaml'), '--rate', '100',
                                    '--json'], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    printed = yaml.safe_load(out.stdout)
    np.testing.assert_allclose(printed['kp'], 100.0)
    assert printed['rate_hz'] == 100.0
    table = subprocess.run(command + [str(UR5E_URDF)], capture_output=True, text=True,
                           timeout=120)
    assert table.returncode == 0 and 'effort limit' in table.stdout, table.stderr
    shown = yaml.safe_load(table.stdout.split('\n#', 1)[1].split('\n', 1)[1])
    np.testing.assert_allclose(shown['kp'], recommended_gains(load_model(str(UR5E_URDF)),
                                                              500.0).kp, rtol=1e-3)
    cartesian = subprocess.run(command + [str(UR5E_URDF), '--cartesian', '--rate', '1000',
                                          '--json'], capture_output=True, text=True,
                               timeout=120)
    assert cartesian.returncode == 0, cartesian.stderr
    rule = yaml.safe_load(cartesian.stdout)
    assert rule['axes'] == ['x', 'y', 'z', 'rx', 'ry', 'rz'] and rule['rate_hz'] == 1000.0
    assert len(rule['cartesian.stiffness']) == 6 and min(rule['cartesian.stiffness']) > 0
    bad = tmp_path / 'bad.yaml'
    bad.write_text('{{{')
    for args, message in (([str(UR5E_URDF), '--rate', '-1'], 'rate'),
                          ([str(UR5E_URDF), '--rate', '-1', '--cartesian'], 'rate'),
                          ([str(tmp_path / 'none.urdf')], 'not found'),
                          ([str(UR5E_URDF), '--params', str(bad)], 'cannot read --params')):
        result = subprocess.run(command + args, capture_output=True, text=True, timeout=120)
        assert result.returncode == 2 and message in result.stderr, result.stderr
