"""The package's layers: only ``nodes/`` and ``tools/`` may import ROS.

Every module of the package is found by walking the source tree (no list of files kept
by hand), and its imports are read from its syntax tree: ``import``, ``from ... import``
(relative ones resolved), and ``importlib.import_module`` / ``__import__`` with a literal
name, at any depth (imports inside functions count). A second check imports every pure
module in a fresh interpreter and looks at ``sys.modules``, which also catches ROS pulled
in through another library.

Layers, each importing only those before it (``errors`` and ``resources`` serve all):
``dynamics`` <- ``codegen`` <- ``control`` <- ``identification`` <- ``simulation`` <-
``nodes`` <- ``tools``. Within a layer, no two modules import each other, however
indirectly (no import circle), and no module imports another module's private
(underscore) names.
"""
import ast
import builtins
import json
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
#: no DDS participant and no timing judged: runs beside other tests (test/conftest.py)
PARALLEL_SAFE = True
PACKAGE = 'ne_dynamics_ros'
ROS_ALLOWED = ('nodes', 'tools')
LAYERS = ('dynamics', 'codegen', 'control', 'identification', 'simulation', 'nodes',
          'tools')
#: Top-level ROS 2 Python packages that are not message packages by name.
ROS_PACKAGES = {'rclpy', 'rcl', 'rmw', 'rosidl_runtime_py', 'rosidl_parser', 'launch',
                'launch_ros', 'launch_xml', 'launch_yaml', 'ros2cli', 'rosbag2_py',
                'message_filters', 'tf2_ros', 'rpyutils'}
#: Suffixes of ROS interface packages (messages, services, actions).
ROS_INTERFACE_SUFFIXES = ('_msgs', '_srvs', '_interfaces', '_actions')


def is_ros(module_name):
    """True for rclpy and the other ROS client packages and any interface package."""
    top = module_name.split('.')[0]
    return top in ROS_PACKAGES or top.endswith(ROS_INTERFACE_SUFFIXES)


def module_name(path):
    relative = path.relative_to(REPO).with_suffix('')
    parts = list(relative.parts)
    if parts[-1] == '__init__':
        parts.pop()
    return '.'.join(parts)


def package_modules():
    """Every module of the package: (dotted name, path), by walking the source tree."""
    return sorted((module_name(p), p) for p in (REPO / PACKAGE).rglob('*.py'))


def imported_names(source, name, is_package=False):
    """Every module name imported by ``source`` (the module ``name``), at any depth."""
    found = set()
    package_parts = name.split('.') if is_package else name.split('.')[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[:len(package_parts) - node.level + 1]
                target = '.'.join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            found.add(target)
            found.update(f'{target}.{alias.name}' for alias in node.names)
        elif isinstance(node, ast.Call) and node.args and isinstance(
                node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', '')
            if called in ('import_module', '__import__'):
                found.add(node.args[0].value)
    return found


def layer_of(name):
    parts = name.split('.')
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def test_the_walk_finds_every_layer_and_the_nodes():
    names = {name for name, _ in package_modules()}
    for layer in ('dynamics', 'control', 'simulation', 'nodes', 'tools'):
        assert f'{PACKAGE}.{layer}' in names
    assert f'{PACKAGE}.nodes.computed_torque_node' in names
    assert f'{PACKAGE}.control.controller' in names


def test_the_import_reader_sees_every_form():
    source = '''
import numpy as np
import rclpy.node
from sensor_msgs.msg import JointState
from . import laws
from ..dynamics.model import load_model

def later():
    import importlib
    importlib.import_module('std_msgs.msg')
    __import__('builtin_interfaces.msg')
'''
    found = imported_names(source, 'ne_dynamics_ros.control.controller')
    assert {'numpy', 'rclpy.node', 'sensor_msgs.msg', 'std_msgs.msg',
            'builtin_interfaces.msg'} <= found
    assert 'ne_dynamics_ros.control.laws' in found
    assert 'ne_dynamics_ros.dynamics.model' in found
    assert sorted(n for n in found if is_ros(n)) == [
        'builtin_interfaces.msg', 'rclpy.node', 'sensor_msgs.msg', 'sensor_msgs.msg.JointState',
        'std_msgs.msg']
    assert not is_ros('numpy') and not is_ros('ne_dynamics_ros.nodes')


def test_only_nodes_and_tools_import_ros():
    offenders = {}
    ros_users = set()
    for name, path in package_modules():
        ros = sorted(n for n in imported_names(path.read_text(), name,
                                               path.name == '__init__.py') if is_ros(n))
        if ros:
            ros_users.add(layer_of(name))
        if ros and layer_of(name) not in ROS_ALLOWED:
            offenders[name] = ros
    assert not offenders, f'modules outside {ROS_ALLOWED} import ROS: {offenders}'
    assert ros_users == {'nodes', 'tools'}      # the check does see the nodes' imports


def test_each_layer_imports_only_the_layers_before_it():
    wrong = {}
    for name, path in package_modules():
        layer = layer_of(name)
        if layer is None:
            continue
        allowed = set(LAYERS[:LAYERS.index(layer) + 1])
        for imported in imported_names(path.read_text(), name, path.name == '__init__.py'):
            target = layer_of(imported) if imported.startswith(PACKAGE + '.') else None
            if target is not None and target not in allowed:
                wrong.setdefault(name, []).append(imported)
    assert not wrong, f'imports against the layering {LAYERS}: {wrong}'


#: The rooms of ``control`` and the rooms each may import (the run at the top: any).
CONTROL_ROOMS = {'config': set(), 'reference': set(), 'laws': {'config'},
                 'sensing': {'config', 'laws'}}


def control_room(name):
    """The room of a ``control`` module (``reference``, ``laws`` ...), '' for the run's."""
    parts = name.split('.')
    if parts[:2] != [PACKAGE, 'control']:
        return None
    return parts[2] if len(parts) > 2 and parts[2] in CONTROL_ROOMS else ''


def test_control_is_by_concern_and_no_import_runs_back_up():
    top = sorted(p.name for p in (REPO / PACKAGE / 'control').glob('*.py'))
    assert len(top) <= 10, top
    wrong = {}
    for name, path in package_modules():
        room = control_room(name)
        if not room:
            continue
        for imported in imported_names(path.read_text(), name, path.name == '__init__.py'):
            target = control_room(imported)
            if target is not None and target != room and target not in CONTROL_ROOMS[room]:
                wrong.setdefault(name, []).append(imported)
    assert not wrong, f'imports up or across the rooms of control {CONTROL_ROOMS}: {wrong}'


def import_graph():
    """{module: set of package modules it imports}, at any depth, names resolved to modules.

    ``from package.module import name`` counts as importing ``package.module`` (and
    ``package.module.name`` when that is a module); importing a package counts as
    importing its ``__init__``.
    """
    names = {name for name, _ in package_modules()}
    graph = {}
    for name, path in package_modules():
        edges = set()
        for imported in imported_names(path.read_text(), name, path.name == '__init__.py'):
            while imported and imported not in names:
                imported = imported.rpartition('.')[0]
            if imported and imported != name and imported != PACKAGE:
                edges.add(imported)
        graph[name] = edges
    return graph


def cycles(graph):
    """Every strongly connected group of more than one module (Tarjan), sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_cycle_finder_finds_circles():
    assert cycles({'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}) == [['a', 'b', 'c']]
    assert cycles({'a': {'b'}, 'b': set()}) == []


def test_no_import_circle_between_modules():
    """A package's ``__init__`` re-exporting its modules is not a circle with them."""
    graph = import_graph()
    for name in graph:
        package = name.rpartition('.')[0]
        graph[name].discard(package)        # a module reading its own package's __init__
    assert cycles(graph) == []


def test_no_module_imports_another_modules_private_names():
    offenders = []
    for name, path in package_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or '').startswith(PACKAGE):
                private = [a.name for a in node.names if a.name.startswith('_')]
                if private:
                    offenders.append((name, node.module, private))
    assert offenders == []


def result_of(code):
    """Run ``code`` in a fresh interpreter (the repository's root); return its stdout."""
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize('layer', ['dynamics', 'codegen', 'control', 'simulation'])
def test_importing_a_pure_layer_loads_no_ros(layer):
    modules = [name for name, _ in package_modules()
               if layer_of(name) == layer or name in (PACKAGE, f'{PACKAGE}.errors')]
    code = (
        'import importlib, json, sys\n'
        f'for name in {modules!r}:\n'
        '    importlib.import_module(name)\n'
        'print(json.dumps(sorted(sys.modules)))\n')
    loaded = json.loads(result_of(code))
    assert f'{PACKAGE}.{layer}' in loaded
    assert [name for name in loaded if is_ros(name)] == []


@pytest.mark.parametrize('package', [PACKAGE, f'{PACKAGE}.control',
                                     f'{PACKAGE}.identification'])
def test_a_facade_gives_every_name_it_lists_and_refuses_others(package):
    """The lazy facades: each name of ``__all__`` resolves to the object of the module its
    ``TYPE_CHECKING`` import names, ``dir`` lists it, an unknown name is AttributeError."""
    code = (
        'import importlib, json\n'
        f'p = importlib.import_module({package!r})\n'
        'out = {n: getattr(p, n).__module__ for n in p.__all__}\n'
        'out["_dir"] = sorted(set(p.__all__) - set(dir(p)))\n'
        'try:\n'
        '    p.no_such_name\n'
        'except AttributeError as err:\n'
        '    out["_error"] = str(err)\n'
        'print(json.dumps(out))\n')
    out = json.loads(result_of(code))
    assert out.pop('_dir') == []
    assert 'no_such_name' in out.pop('_error')
    path = REPO / package.replace('.', '/') / '__init__.py'
    declared = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            declared.update({a.name: f'{package}.{node.module}' for a in node.names})
    for name, module in out.items():
        assert module.startswith(declared[name]), (name, module, declared[name])


def test_the_trajectory_receiver_imports_neither_the_controller_nor_the_dynamics():
    """What the node's receiver process imports (its start-up delays each activation)."""
    code = ('import json, sys, ne_dynamics_ros.nodes.trajectory_receiver, '
            'ne_dynamics_ros.nodes.follow_joint_trajectory\n'
            'print(json.dumps(sorted(sys.modules)))\n')
    loaded = set(json.loads(result_of(code)))
    assert f'{PACKAGE}.control.reference.trajectory' in loaded
    assert loaded.isdisjoint({f'{PACKAGE}.control.controller', f'{PACKAGE}.dynamics.model',
                              f'{PACKAGE}.codegen', f'{PACKAGE}.control.laws.registry'})


def bound_names(tree):
    """Names a module binds at its top level (def, class, assignment, import) and the
    methods of its classes, as {name: set of method names or None}."""
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = None
        elif isinstance(node, ast.ClassDef):
            names[node.name] = {item.name for item in node.body
                                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
            # attributes set on self in its methods
            names[node.name] |= {t.attr for t in ast.walk(node)
                                 if isinstance(t, ast.Attribute) and isinstance(t.ctx, ast.Store)
                                 and isinstance(t.value, ast.Name) and t.value.id == 'self'}
            names[node.name] |= {t.id for item in node.body
                                 if isinstance(item, (ast.Assign, ast.AnnAssign))
                                 for t in (item.targets if isinstance(item, ast.Assign)
                                           else [item.target]) if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    names[target.id] = None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[(alias.asname or alias.name).split('.')[0]] = None
        elif isinstance(node, (ast.Try, ast.If)):   # optional imports, lazy facades
            handlers = getattr(node, 'handlers', [])
            for inner in node.body + [h for x in handlers for h in x.body]:
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    for alias in inner.names:
                        names[(alias.asname or alias.name).split('.')[0]] = None
                elif isinstance(inner, ast.Assign):
                    for target in inner.targets:
                        for t in ast.walk(target):
                            if isinstance(t, ast.Name):
                                names[t.id] = None
    return names


def docstring_references(text):
    """The Python objects a docstring names with Sphinx roles: [(role, target)]."""
    import re
    return [(role, re.sub(r'\s+', '', target).lstrip('~')) for role, target in
            re.findall(r':(func|class|meth|data|attr|exc):`([^`<>]+)`', text)]


def test_module_docstrings_name_only_what_exists():
    """A module docstring's :func:, :class:, :meth:, :data: names exist where it says."""
    trees = {name: ast.parse(path.read_text(encoding='utf-8'))
             for name, path in package_modules()}
    wrong = []
    for name, tree in trees.items():
        text = ast.get_docstring(tree) or ''
        for role, target in docstring_references(text):
            if target.startswith('.'):
                continue
            parts = target.split('.')
            if parts[0] == PACKAGE:
                # the longest module prefix, then names inside it
                for k in range(len(parts), 0, -1):
                    if '.'.join(parts[:k]) in trees:
                        module, rest = '.'.join(parts[:k]), parts[k:]
                        break
                else:
                    wrong.append((name, target, 'no such module'))
                    continue
            else:
                module, rest = name, parts
            if not rest:
                continue
            names = bound_names(trees[module])
            methods = set().union(*(v for v in names.values() if v is not None))
            if len(rest) == 1 and (rest[0] in dir(builtins) or module == name
                                   and rest[0] in methods):
                continue            # a builtin, or a method of one of this module's classes
            if rest[0] not in names:
                wrong.append((name, target, f'{module} defines no {rest[0]}'))
            elif len(rest) > 1 and names[rest[0]] is not None \
                    and rest[1] not in names[rest[0]]:
                wrong.append((name, target, f'{rest[0]} has no {rest[1]}'))
    assert not wrong, wrong


def test_the_docstring_check_catches_a_missing_name(tmp_path):
    tree = ast.parse('"""See :func:`gone` and :class:`Here`, :meth:`Here.run`."""\n'
                     'class Here:\n    def run(self):\n        pass\n')
    names = bound_names(tree)
    refs = docstring_references(ast.get_docstring(tree))
    assert [t for _, t in refs if t.split('.')[0] not in names] == ['gone']
    assert 'run' in names['Here']


# ---- rooms a newcomer can live in: sizes and dead code ------------------------------------

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
#: A module over MAX_MODULE_LINES says why in its docstring, in a sentence starting so.
MODULE_REASON = 'Over 600 lines because'
#: A function over MAX_FUNCTION_LINES says why in a comment right below its docstring.
FUNCTION_REASON = '# over 80 lines because'
#: Methods that a framework calls, not our code: rclpy's lifecycle transitions and
#: logging's handler.
FRAMEWORK_CALLBACKS = {'on_configure', 'on_activate', 'on_deactivate', 'on_cleanup',
                       'on_shutdown', 'on_error', 'emit',
                       # rclpy's CallbackGroup interface, called by its executors
                       'can_execute', 'beginning_execution', 'ending_execution'}
#: Where a public function may be called or documented by a test: every Python file of
#: the repository but the ones of the virtual environment and the build.
CALLERS = [p for d in (PACKAGE, 'test', 'benchmarks', 'launch', 'scripts', 'docs')
           for p in (REPO / d).rglob('*.py')] + list(REPO.glob('*.py'))


def functions(tree):
    """Every function and method of a module, at any depth."""
    return [node for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def function_reason(node, lines):
    """The size reason of a function: the comment right below its docstring, or ''."""
    body = node.body
    after = body[0].end_lineno if (body and isinstance(body[0], ast.Expr)
                                   and isinstance(body[0].value, ast.Constant)) \
        else node.body[0].lineno - 1
    text = lines[after].strip() if after < len(lines) else ''
    return text if text.startswith(FUNCTION_REASON) else ''


def oversized(paths):
    """(modules over the bound without a reason, functions over it without one)."""
    modules, long_functions = [], []
    for path in paths:
        source = path.read_text(encoding='utf-8')
        lines = source.splitlines()
        tree = ast.parse(source)
        if len(lines) > MAX_MODULE_LINES and MODULE_REASON not in ' '.join(
                (ast.get_docstring(tree) or '').split()):
            modules.append((str(path.relative_to(REPO)), len(lines)))
        for node in functions(tree):
            size = node.end_lineno - node.lineno + 1
            if size > MAX_FUNCTION_LINES and not function_reason(node, lines):
                long_functions.append((str(path.relative_to(REPO)), node.name, size))
    return modules, long_functions


def test_no_module_over_600_lines_and_no_function_over_80_without_a_reason():
    """The package and the launch files (benchmarks and generated code are exempt)."""
    paths = [path for _, path in package_modules()] + sorted((REPO / 'launch').glob('*.py'))
    modules, long_functions = oversized(paths)
    assert not modules, f'modules over {MAX_MODULE_LINES} lines without "{MODULE_REASON}' \
        f'..." in their docstring: {modules}'
    assert not long_functions, f'functions over {MAX_FUNCTION_LINES} lines without ' \
        f'"{FUNCTION_REASON} ..." below their docstring: {long_functions}'


def test_the_size_check_catches_a_long_module_and_function(tmp_path):
    body = ''.join(f'    x{k} = {k}\n' for k in range(MAX_FUNCTION_LINES))
    long_module = tmp_path / 'long.py'
    long_module.write_text('"""A module."""\n\n\ndef f():\n    """Doc."""\n' + body
                           + '\n' * MAX_MODULE_LINES)
    excused = tmp_path / 'excused.py'
    excused.write_text(f'"""A module. {MODULE_REASON} it must."""\n\n\ndef f():\n'
                       f'    """Doc."""\n    {FUNCTION_REASON} it must\n' + body
                       + '\n' * MAX_MODULE_LINES)
    global REPO
    saved, REPO = REPO, tmp_path
    try:
        assert oversized([long_module]) == ([('long.py', MAX_MODULE_LINES + 85)],
                                            [('long.py', 'f', MAX_FUNCTION_LINES + 2)])
        assert oversized([excused]) == ([], [])
    finally:
        REPO = saved


def referenced_names(paths):
    """Every identifier used (not defined) in ``paths``: names, attributes, imports and
    string constants that are identifiers (getattr, entry points, parametrised tests)."""
    used = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
            if isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.alias):
                used.add(node.name.split('.')[-1])
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                used.update(word for word in node.value.replace(':', ' ').split()
                            if word.isidentifier())
    return used


def public_functions(paths):
    """(module path, name) of every public top-level function and public method."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding='utf-8'))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((path, node.name))
            elif isinstance(node, ast.ClassDef):
                found += [(path, f'{node.name}.{item.name}') for item in node.body
                          if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return [(path, name) for path, name in found
            if not name.split('.')[-1].startswith('_')]


def test_no_dead_public_function():
    """Every public function of the package is called, or documented by a test, somewhere.

    A name used anywhere in the repository's Python (the package, tests, benchmarks,
    launch files, scripts, the docs' conf.py) counts; framework callbacks do not need one.
    """
    used = referenced_names(CALLERS)
    dead = [f'{path.relative_to(REPO)}: {name}'
            for path, name in public_functions([p for _, p in package_modules()])
            if name.split('.')[-1] not in used | FRAMEWORK_CALLBACKS]
    assert not dead, dead


def test_the_dead_code_check_catches_an_uncalled_function(tmp_path):
    module = tmp_path / 'module.py'
    module.write_text('def called():\n    pass\n\n\ndef forgotten():\n    pass\n\n\n'
                      'class A:\n    def used(self):\n        pass\n\n    def unused(self):\n'
                      '        pass\n\n\ncalled()\nA().used()\n')
    used = referenced_names([module])
    assert [name for _, name in public_functions([module])
            if name.split('.')[-1] not in used] == ['forgotten', 'A.unused']
