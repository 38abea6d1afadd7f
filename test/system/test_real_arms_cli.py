"""``ne-dynamics identify`` as a user runs it on a real arm's recording (the Panda's).

The recording sits in ``../shared/data/real`` (third-party GPL data, read from there; the
CSV the command reads is written to the test's temporary folder and deleted with it);
without that folder the test skips and says why.
"""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from ne_dynamics_ros import load_model
from ne_dynamics_ros.dynamics.urdf_import import read_urdf_text

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'benchmarks'))
import bench_real  # noqa: E402 - the benchmark's readers: one way to read the recordings

#: no DDS participant and no timing judged: runs beside other tests (test/conftest.py)
PARALLEL_SAFE = True

DATA = ROOT.parent / 'shared' / 'data' / 'real'
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f'no recordings of real arms at '
                                f'{DATA} (../shared/data/real beside the repository)')


def test_identify_command_validates_refuses_bad_inputs_and_writes_nothing(tmp_path):
    panda_text = read_urdf_text(str(bench_real.panda_urdf()))
    model = load_model(panda_text, tip_link='panda_link8')
    rec = bench_real.panda_recording(DATA / 'panda_gaz2019', model)
    names = model.joint_names
    header = (['time'] + [f'position/{n}' for n in names] + [f'velocity/{n}' for n in names]
              + [f'effort/{n}' for n in names])
    csv = tmp_path / 'panda.csv'      # a temporary copy for the command, deleted after
    np.savetxt(csv, np.column_stack([rec.t, rec.q, rec.qd, rec.effort]), delimiter=',',
               header=','.join(header), comments='')
    other = tmp_path / 'other.csv'
    np.savetxt(other, np.column_stack([rec.t, rec.q, rec.effort]), delimiter=',',
               header=','.join(['time'] + [f'position/j{k}' for k in range(7)]
                               + [f'effort/j{k}' for k in range(7)]), comments='')
    exe = str(pathlib.Path(sys.executable).parent / 'ne-dynamics')
    urdf = str(bench_real.panda_urdf())
    base = [exe, 'identify', '--urdf', urdf, '--tip-link', 'panda_link8', '--csv', str(csv),
            '--output-urdf', str(tmp_path / 'o.urdf'), '--output-params',
            str(tmp_path / 'o.yaml')]
    for extra, message in (
            (['--current-to-effort', '1', '2'], '7'),
            (['--current-to-effort', '1', '1', '1', '-1', '1', '1', '1'], 'panda_joint4'),
            (['--validate', '1.5'], '--validate'),
            (['--validate', str(other)], 'panda_joint1')):
        run = subprocess.run(base + extra, capture_output=True, text=True, timeout=300)
        assert run.returncode == 2, run.stdout + run.stderr
        assert message in run.stderr, run.stderr
        assert not (tmp_path / 'o.urdf').exists() and not (tmp_path / 'o.yaml').exists()
    run = subprocess.run(base + ['--validate', '0.3'], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'held-out motion' in run.stdout and 'contact thresholds' in run.stdout
    assert 'resampled to a uniform' in run.stdout      # the Panda's irregular steps
    assert (tmp_path / 'o.urdf').exists() and (tmp_path / 'o.yaml').exists()
