"""The control laws as a package: modes named in one place, one friction, one clamp.

Read from the source files (syntax trees and text), as the architecture checks are:

* nothing outside ``control/laws/registry.py`` compares a mode (``ControlMode.X``, a mode
  compared with ``is``/``==``/``in``, or a comparison with a mode's name), and nothing
  outside ``control/laws/`` writes a mode's name (a law is named by its class's ``name``)
  or a law's own topic (the node makes them from the laws' ``topics``);
* no module reads another module's underscore attribute (``other._x``);
* the drive friction formula (``tanh`` of a velocity) is written once in the control path
  (``dynamics/friction.py``), and so is the clamp (``laws/base.py``);
* ``control/controller.py`` is at most 500 lines and no function of ``control/`` or
  ``nodes/`` is over 60 lines;
* no node module writes an attribute of the controller (``controller.x = ...``): what the
  node knows reaches the controller as an input of its update or a call.
"""
import ast
import pathlib

from ne_dynamics_ros.control.laws.registry import LAW_CLASSES, LAW_TOPICS

REPO = pathlib.Path(__file__).resolve().parents[2]
#: no DDS participant and no timing judged: runs beside other tests (test/conftest.py)
PARALLEL_SAFE = True
PACKAGE = REPO / 'ne_dynamics_ros'
REGISTRY = PACKAGE / 'control' / 'laws' / 'registry.py'
MODE_NAMES = [law.name for law in LAW_CLASSES]


def trees(paths):
    """``(path, syntax tree)`` of each path."""
    return [(path, ast.parse(path.read_text())) for path in sorted(paths)]


def is_mode(node):
    """True for ``ControlMode.X``, ``<anything>.mode``, ``.mode.value``, ``mode``, a mode name."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == 'ControlMode':
        return True
    if isinstance(node, ast.Attribute) and node.attr == 'value':
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr == 'mode'
    if isinstance(node, ast.Name):
        return node.id == 'mode'
    return isinstance(node, ast.Constant) and node.value in MODE_NAMES


def mode_comparisons(path):
    """The lines of ``path`` that compare a mode or name a member of ``ControlMode``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        sides = [node.left, *node.comparators] if isinstance(node, ast.Compare) else []
        if any(is_mode(side) for side in sides) and not any(
                isinstance(side, ast.Constant) and side.value is None for side in sides):
            found.add(node.lineno)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == 'ControlMode' and node.attr.isupper():
            found.add(node.lineno)
    return sorted(found)


def test_no_mode_is_compared_outside_the_registry():
    found = {str(p.relative_to(REPO)): hits for p in sorted(PACKAGE.rglob('*.py'))
             if p != REGISTRY and (hits := mode_comparisons(p))}
    assert found == {}


def test_the_comparison_finder_finds_each_form(tmp_path):
    sample = tmp_path / 'sample.py'
    sample.write_text('"""if mode is ControlMode.ADAPTIVE: in a docstring."""\n'
                      'a = settings.mode is ControlMode.ADAPTIVE\n'
                      "b = settings.mode.value != 'adaptive'\n"
                      "c = args.mode == 'cartesian_impedance'\n"
                      "d = x if mode in LOAD_CARRYING_MODES else y\n"
                      "e = 'computed_torque' == name\n"
                      "f = law_class(mode).takes_target   # mode is fine here\n"
                      "g = f'(mode is {settings.mode.value})'\n"
                      "h = LAWS[ControlMode.FEEDFORWARD]\n"
                      "i = args.mode is not None\n")
    assert mode_comparisons(sample) == [2, 3, 4, 5, 6, 9]


def mode_names_written(path):
    """The lines of ``path`` that write a mode's name as a string (the registry's list)."""
    return sorted({node.lineno for node in ast.walk(ast.parse(path.read_text()))
                   if isinstance(node, ast.Constant) and node.value in MODE_NAMES})


def outside_the_laws(finder):
    """``{module: lines}`` of the package's modules outside ``control/laws/`` ``finder``
    finds lines in."""
    laws = PACKAGE / 'control' / 'laws'
    return {str(p.relative_to(REPO)): hits for p in sorted(PACKAGE.rglob('*.py'))
            if laws not in p.parents and (hits := finder(p))}


def test_no_mode_name_is_written_outside_the_laws():
    assert outside_the_laws(mode_names_written) == {}


def topic_names_written(path):
    """The lines of ``path`` that name a law's own topic: a string that is a topic name
    ending in one (``'~/target_pose'``, ``'/node/payload'``), or a key given to
    ``take_input``. Prose (docstrings, strings with spaces) is not a name."""
    names = {topic.name.rsplit('/', 1)[-1] for _, topic in LAW_TOPICS}
    keys = {topic.key for _, topic in LAW_TOPICS}
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and ' ' not in node.value and '/' in node.value \
                and node.value.rsplit('/', 1)[-1] in names:
            found.add(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == 'take_input' and node.args \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value in keys:
            found.add(node.lineno)
    return sorted(found)


def test_no_law_topic_is_named_outside_the_laws():
    # the node makes every law's topics from their declarations (LawTopic): no module of
    # the package outside control/laws/ names one (the node, the controller, the demo,
    # the experiment, identification)
    assert outside_the_laws(topic_names_written) == {}


def test_the_topic_finder_finds_a_law_topic_named(tmp_path):
    sample = tmp_path / 'sample.py'
    sample.write_text('"""A law reads ~/target_pose: in a docstring, prose."""\n'
                      "a = node.create_subscription(Pose, '~/target_pose', cb, 10)\n"
                      "b = controller.take_input('declared_payload', value)\n"
                      "c = '/computed_torque_node/payload'\n"
                      "d = '~/tracking_error'\n"
                      "e = plot(label='estimate on ~/payload')\n")
    assert topic_names_written(sample) == [2, 3, 4]


def test_the_name_finder_finds_a_mode_written_out(tmp_path):
    sample = tmp_path / 'sample.py'
    sample.write_text('"""The feedforward mode, in a docstring, is prose."""\n'
                      "a = {'mode': 'feedforward'}\n"
                      "b = ('computed_torque', 'adaptive')\n"
                      "c = FeedforwardLaw.name\n")
    assert mode_names_written(sample) == [2, 3]


def private_reads(path, tree):
    """``x._name`` reads in ``tree`` of a name its module never defines on ``self``."""
    own = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
           and isinstance(node.value, ast.Name) and node.value.id in ('self', 'cls')}
    own |= {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    return [f'{path.name}:{node.lineno}: {ast.unparse(node)}'
            for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            and node.attr.startswith('_') and not node.attr.startswith('__')
            and not (isinstance(node.value, ast.Name) and node.value.id in ('self', 'cls'))
            and node.attr not in own
            and node.attr not in ('_asdict', '_replace', '_fields', '_make',  # namedtuple
                                  '_exit')                                    # os._exit
            and node.attr not in ROSIDL_PROTOCOL]


#: what rosidl_generator_py puts on every message class's metaclass for rclpy to read (the
#: type support and the C converters): nodes/raw_goals.py reads them as rclpy does
ROSIDL_PROTOCOL = ('_TYPE_SUPPORT', '_CREATE_ROS_MESSAGE', '_DESTROY_ROS_MESSAGE',
                   '_CONVERT_FROM_PY', '_CONVERT_TO_PY')


def test_no_module_reads_another_modules_underscore_attribute():
    found = [hit for path, tree in trees(PACKAGE.rglob('*.py'))
             for hit in private_reads(path, tree)]
    assert found == []


def test_the_private_read_finder_finds_one(tmp_path):
    sample = tmp_path / 'sample.py'
    sample.write_text('class A:\n    def f(self, other):\n        self._x = other._x\n'
                      '        return law._fixed + point._asdict()\n')
    assert [hit.split(': ')[1] for hit in private_reads(sample, ast.parse(
        sample.read_text()))] == ['law._fixed']


#: the names the node's modules give the controller
CONTROLLER_NAMES = ('controller', 'self.controller', 'self._controller', 'c')


def controller_writes(path, tree):
    """``controller.x = ...`` (also augmented, annotated, nested) in ``tree``, as text."""
    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            # the outermost attribute written (of ``a.b.c[0] = ...``: ``a.b.c``)
            written = next((part for part in ast.walk(target)
                            if isinstance(part, ast.Attribute)), None)
            base = '' if written is None else ast.unparse(written.value)
            if any(base == name or base.startswith(name + '.') for name in CONTROLLER_NAMES):
                found.append(f'{path.name}:{node.lineno}: {ast.unparse(target)}')
    return found


def test_no_node_module_writes_into_the_controller():
    found = [hit for path, tree in trees((PACKAGE / 'nodes').rglob('*.py'))
             for hit in controller_writes(path, tree)]
    assert found == []


def test_the_controller_write_finder_finds_each_form(tmp_path):
    sample = tmp_path / 'sample.py'
    sample.write_text('controller.external_effort_wanted = True\n'
                      'self.controller.gains.kp += 1\n'
                      'c.data.references.goal = None\n'
                      'self.controller = controller\n'
                      'x.y = controller.z\n'
                      'controller.limits[0] = 1.0\n')
    assert [hit.split(': ')[1] for hit in controller_writes(sample, ast.parse(
        sample.read_text()))] == ['controller.external_effort_wanted',
                                  'self.controller.gains.kp', 'c.data.references.goal',
                                  'controller.limits[0]']


def clamps_and_tanh(tree):
    """Line numbers of ``tanh(...)`` calls and of clamps (``-h if t < -h else``, np.clip)."""
    tanh, clamps = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, 'attr', getattr(node.func, 'id', ''))
            if name == 'tanh':
                tanh.append(node.lineno)
            if name == 'clip' or (name == 'minimum' and node.args and isinstance(
                    node.args[0], ast.Call) and getattr(node.args[0].func, 'attr', '')
                    == 'maximum'):
                clamps.append(node.lineno)
        if isinstance(node, ast.IfExp) and isinstance(node.test, ast.Compare) \
                and isinstance(node.test.ops[0], (ast.Lt, ast.Gt)) \
                and isinstance(node.body, ast.UnaryOp):
            clamps.append(node.lineno)
    return tanh, clamps


def test_one_friction_formula_and_one_clamp():
    # (profiles.py clips a normalised time to [0, 1], friction_estimate.py a factor on the
    # model's Coulomb friction to [0.25, 4], trajectory_efforts.py an instant into the
    # trajectory's span: no effort)
    checked = [p for p in (PACKAGE / 'control').rglob('*.py')
               if p.name not in ('profiles.py', 'friction_estimate.py', 'trajectory_efforts.py')]
    checked += [PACKAGE / 'dynamics' / 'model.py', PACKAGE / 'dynamics' / 'friction.py',
                *(PACKAGE / 'nodes' / 'computed_torque').rglob('*.py')]
    tanh, clamps = [], []
    for path, tree in trees(checked):
        found = clamps_and_tanh(tree)
        tanh += [str(path.relative_to(REPO))] * len(found[0])
        clamps += [str(path.relative_to(REPO))] * len(found[1])
    assert set(tanh) == {'ne_dynamics_ros/dynamics/friction.py'}   # its list and array forms
    assert clamps == ['ne_dynamics_ros/control/laws/base.py']


def test_the_controller_is_at_most_500_lines_and_control_and_node_functions_60():
    assert len((PACKAGE / 'control' / 'controller.py').read_text().splitlines()) <= 500
    long = []
    for path in sorted([*(PACKAGE / 'control').rglob('*.py'),
                        *(PACKAGE / 'nodes').rglob('*.py')]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and node.end_lineno - node.lineno + 1 > 60:
                long.append(f'{path.relative_to(REPO)}:{node.lineno} {node.name} '
                            f'{node.end_lineno - node.lineno + 1} lines')
    assert long == []
