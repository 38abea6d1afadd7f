"""Sphinx configuration: MyST Markdown pages and autodoc, as rosdoc2 builds ROS 2 packages.

Build: ``.venv/bin/python -m sphinx -W -b html docs docs/_build/html`` (warnings are
errors; ``test/test_docs.py`` runs it).
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

project = 'ne_dynamics_ros'
author = 'the ne_dynamics_ros developers'
copyright = '2026, the ne_dynamics_ros developers'   # noqa: A001 - Sphinx's name
extensions = ['myst_parser', 'sphinx.ext.autodoc', 'sphinx.ext.napoleon',
              'sphinx.ext.viewcode']
source_suffix = {'.md': 'markdown', '.rst': 'restructuredtext'}
myst_enable_extensions = ['colon_fence']
myst_heading_anchors = 3
exclude_patterns = ['_build', '_generated']

# The node's parameter table is generated from the one table in the code
# (ne_dynamics_ros.control.parameters) on every build; node.md includes it.
from ne_dynamics_ros.control.parameters import markdown_table  # noqa: E402
(ROOT / 'docs' / '_generated').mkdir(exist_ok=True)
(ROOT / 'docs' / '_generated' / 'parameters.md').write_text(markdown_table(),
                                                            encoding='utf-8')
html_theme = 'furo'
html_title = 'ne_dynamics_ros'
autodoc_member_order = 'bysource'
autodoc_default_options = {'members': True, 'show-inheritance': True}
autodoc_typehints = 'description'
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# rclpy and the message packages are real imports of the node modules; they are
# installed in the venv the docs are built from, so nothing is mocked but
# controller_manager_msgs: it comes with ros2_control, whose libraries the docs' Python
# does not load (effort_guard imports it).
autodoc_mock_imports = ['controller_manager_msgs']
nitpicky = False
napoleon_use_ivar = True
