"""Docstring style as ament_pep257 checks it, with pydocstyle from PyPI (setup.cfg)."""
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
#: no DDS participant and no timing judged: runs beside other tests (test/conftest.py)
PARALLEL_SAFE = True
CHECKED = [d for d in ('ne_dynamics_ros', 'launch', 'test', 'benchmarks') if (REPO / d).is_dir()]


def pydocstyle(*args):
    return subprocess.run([sys.executable, '-m', 'pydocstyle', *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_pep257():
    result = pydocstyle(*CHECKED)
    assert result.returncode == 0, \
        f'pydocstyle found problems:\n{result.stdout}{result.stderr}'


def test_public_api_has_docstrings():
    """Public modules, classes, methods and functions of the package are documented."""
    result = pydocstyle('--select=D100,D101,D102,D103,D104', 'ne_dynamics_ros')
    assert result.returncode == 0, \
        f'undocumented public API:\n{result.stdout}{result.stderr}'
