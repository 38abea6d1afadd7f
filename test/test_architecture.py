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
import json
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
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


@pytest.mark.parametrize('layer', ['dynamics', 'codegen', 'control', 'simulation'])
def test_importing_a_pure_layer_loads_no_ros(layer):
    modules = [name for name, _ in package_modules()
               if layer_of(name) == layer or name in (PACKAGE, f'{PACKAGE}.errors')]
    code = (
        'import importlib, json, sys\n'
        f'for name in {modules!r}:\n'
        '    importlib.import_module(name)\n'
        'print(json.dumps(sorted(sys.modules)))\n')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)
    assert f'{PACKAGE}.{layer}' in loaded
    assert [name for name in loaded if is_ros(name)] == []
