"""The documentation site builds with Sphinx, warnings as errors (as rosdoc2 would build it).

A broken docstring (reST the autodoc cannot read), a dangling cross-reference, a page left
out of every toctree or a link to a missing page fails the suite.
"""
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
#: no DDS participant and no timing judged: runs beside other tests (test/conftest.py)
PARALLEL_SAFE = True


def test_sphinx_builds_the_site_without_warnings(tmp_path):
    result = subprocess.run(
        # the dummy builder reads every page and resolves every reference as the HTML
        # builder does (the warnings -W turns into errors), without writing the site
        [sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-q', '-j', '2', '-b', 'dummy',
         '-d', str(tmp_path / 'doctrees'), str(REPO / 'docs'), str(tmp_path / 'out')],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    for page in ('index', 'getting-started', 'node', 'ur-arm', 'dynamics', 'parameters',
                 'identification', 'simulation', 'architecture', 'benchmarks', 'api',
                 'references'):
        assert (tmp_path / 'doctrees' / f'{page}.doctree').is_file(), page


def test_readme_is_short_and_links_resolve():
    """README.md stays a page read in five minutes; its links to docs/ exist."""
    text = (REPO / 'README.md').read_text(encoding='utf-8')
    assert len(text.splitlines()) <= 200
    for target in re.findall(r'\]\((docs/[^)#]+)', text):
        assert (REPO / target).is_file(), target


def test_the_api_page_lists_every_module():
    """Each module is on the API page, but packages that only re-export their modules'
    names and the node's entry-point shim (``computed_torque_node``)."""
    text = (REPO / 'docs' / 'api.md').read_text(encoding='utf-8')
    listed = set(re.findall(r'automodule:: (\S+)', text))
    package = REPO / 'ne_dynamics_ros'
    missing = []
    for path in sorted(package.rglob('*.py')):
        parts = path.relative_to(REPO).with_suffix('').parts
        if parts[-1] == '__init__' or parts[-1] == 'computed_torque_node':
            continue
        name = '.'.join(parts)
        if name not in listed:
            missing.append(name)
    assert not missing, f'not on docs/api.md: {missing}'
