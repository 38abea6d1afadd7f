"""Code style as ament_flake8 checks it, with flake8 from PyPI (configured in setup.cfg)."""
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
#: no DDS participant and no timing judged: runs beside other tests (test/conftest.py)
PARALLEL_SAFE = True
CHECKED = [d for d in ('ne_dynamics_ros', 'launch', 'test', 'benchmarks') if (REPO / d).is_dir()]


def test_flake8():
    result = subprocess.run([sys.executable, '-m', 'flake8', *CHECKED], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, \
        f'flake8 found problems:\n{result.stdout}{result.stderr}'
