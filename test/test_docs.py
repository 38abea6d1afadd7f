"""The documentation site builds with Sphinx, warnings as errors (as rosdoc2 would build it).

A broken docstring (reST the autodoc cannot read), a dangling cross-reference, a page left
out of every toctree or a link to a missing page fails the suite.
"""
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent


def test_sphinx_builds_the_site_without_warnings(tmp_path):
    result = subprocess.run(
        [sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-q', '-b', 'html',
         str(REPO / 'docs'), str(tmp_path / 'html')],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    for page in ('index', 'getting-started', 'node', 'ur-arm', 'dynamics', 'parameters',
                 'identification', 'simulation', 'architecture', 'benchmarks', 'api'):
        assert (tmp_path / 'html' / f'{page}.html').is_file(), page


def test_readme_is_short_and_links_resolve():
    """README.md stays a page read in five minutes; its links to docs/ exist."""
    import re
    text = (REPO / 'README.md').read_text(encoding='utf-8')
    assert len(text.splitlines()) <= 200
    for target in re.findall(r'\]\((docs/[^)#]+)', text):
        assert (REPO / target).is_file(), target
