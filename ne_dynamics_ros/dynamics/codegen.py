"""Robot-specific inverse dynamics as straight-line code (Renaud's customised computation).

Renaud (``004_6b1448616b3233f9.txt``) computes a given arm's dynamic model *analytically*
(every add of 0 and multiply by 0 or ±1 dropped) and *iteratively* (every new quantity
with at least one operation named once and reused). This module does that by running the
model's own Newton–Euler recursion (:mod:`ne_dynamics_ros.dynamics.rnea`: Craig's MDH or
Luh–Walker–Paul DH) on symbols instead of numbers:

* a :class:`Symbol` is a named quantity or an exact constant; ``+ - *`` between them fold
  constants, drop ``0 +``, ``0 *``, ``1 *`` and ``-1 *`` (a sign is carried, not computed),
  and look every operation up before emitting it, so a quantity that occurs twice is
  computed once (common subexpressions, also across the two passes);
* the model is first reduced to its base parameters (in its own frames, Gautier's QR of
  :mod:`ne_dynamics_ros.dynamics.base_parameters`): every parameter that occurs only
  together with others is gathered into one, and the others are zero, so they vanish from
  the code; DH/MDH constants within 1e-12 of 0 or ±1 (``cos(pi/2)``...) are made exact;
* sin and cos are taken once per revolute joint; a joint offset that is a multiple of
  pi/2 is folded into them (``cos(q + pi/2) = -sin q``).

The emitted lines are the program: :func:`generate` returns them with the operation
count, counted from the lines themselves; :func:`python_source` and :func:`c_source`
wrap them. ``tau = M(q) q̈ + C(q, q̇) q̇ + g(q) + armature q̈`` with gravity (0, 0, -9.81)
m/s² in the base link frame, URDF joint coordinates, like :meth:`RobotModel.rnea`
without friction.
"""
import ast
import dataclasses
import math

import numpy as np

from ne_dynamics_ros.dynamics.base_parameters import numeric_base
from ne_dynamics_ros.dynamics.dh import Convention
from ne_dynamics_ros.dynamics.parameters import inertial_index
from ne_dynamics_ros.dynamics.rnea import rnea_dh, rnea_mdh
from ne_dynamics_ros.errors import ModelError

#: Values within this of 0 or ±1 (relative to 1) are taken as exact.
SNAP = 1e-12
GRAVITY = (0.0, 0.0, -9.81)


class Emitter:
    """Collects the straight-line program: one assignment per new operation."""

    def __init__(self):
        self.lines = []          # (name, left, operator, right)
        self._known = {}
        self._count = 0

    def emit(self, operator, left, right):
        """Return the symbol of ``left operator right`` (both names), emitting it once."""
        key = (operator, *((left, right) if operator == '-' else sorted((left, right))))
        name = self._known.get(key)
        if name is None:
            self._count += 1
            name = f'x{self._count}'
            self._known[key] = name
            self.lines.append((name, key[1], operator, key[2]))
        return name

    def operations(self):
        """Count multiplications and additions/subtractions in the emitted lines."""
        mul = sum(1 for line in self.lines if line[2] == '*')
        return {'mul': mul, 'add': len(self.lines) - mul}


def _snap(value):
    for exact in (0.0, 1.0, -1.0):
        if abs(value - exact) < SNAP:
            return exact
    return float(value)


def _literal(value):
    return repr(float(value))


class Symbol:
    """A quantity of the generated program: ``sign * name``, or an exact constant."""

    __slots__ = ('emitter', 'name', 'sign', 'value')

    def __init__(self, emitter, name=None, sign=1.0, value=None):
        self.emitter, self.name, self.sign, self.value = emitter, name, sign, value

    # -- helpers ------------------------------------------------------------------------
    def _lift(self, other):
        if isinstance(other, Symbol):
            return other
        return Symbol(self.emitter, value=_snap(other))

    def _const(self, value):
        return Symbol(self.emitter, value=value)

    def _named(self, name, sign):
        return Symbol(self.emitter, name=name, sign=sign)

    def _term(self):
        """(sign, operand text) for an emission: a name, or a positive literal."""
        if self.value is not None:
            return (1.0 if self.value >= 0 else -1.0), _literal(abs(self.value))
        return self.sign, self.name

    # -- arithmetic ---------------------------------------------------------------------
    def __neg__(self):
        if self.value is not None:
            return self._const(-self.value)
        return self._named(self.name, -self.sign)

    def __add__(self, other):
        other = self._lift(other)
        if self.value is not None and other.value is not None:
            return self._const(self.value + other.value)
        if self.value == 0.0:
            return other
        if other.value == 0.0:
            return self
        sa, a = self._term()
        sb, b = other._term()
        if sa == sb:
            return self._named(self.emitter.emit('+', a, b), sa)
        if a == b:
            return self._const(0.0)
        # sa * (a - b), written with the operands in one order so that b - a reuses it
        if a > b:
            return self._named(self.emitter.emit('-', b, a), -sa)
        return self._named(self.emitter.emit('-', a, b), sa)

    __radd__ = __add__

    def __sub__(self, other):
        return self + (-self._lift(other))

    def __rsub__(self, other):
        return self._lift(other) + (-self)

    def __mul__(self, other):
        other = self._lift(other)
        if self.value is not None and other.value is not None:
            return self._const(self.value * other.value)
        for x, y in ((self, other), (other, self)):
            if x.value == 0.0:
                return self._const(0.0)
            if x.value in (1.0, -1.0):
                return y if x.value == 1.0 else -y
        sa, a = self._term()
        sb, b = other._term()
        return self._named(self.emitter.emit('*', a, b), sa * sb)

    __rmul__ = __mul__

    def text(self):
        """Return the symbol as an expression: ``x12``, ``-x12`` or a literal."""
        if self.value is not None:
            return _literal(self.value)
        return self.name if self.sign > 0 else f'-{self.name}'


def reduced_model(model):
    """Return ``model`` with only its base inertial parameters non-zero, same torques.

    The base parameters are computed in the model's own frames (Gautier's QR,
    :func:`~ne_dynamics_ros.dynamics.base_parameters.numeric_base`); values within 1e-12
    of zero are made exactly zero. Drive parameters are kept. If the numeric grouping does
    not reproduce the efforts to 1e-13 on random states (an ill-conditioned chain), the
    model is returned unchanged: exactness goes before brevity.
    """
    kept, K, dependent, _ = numeric_base(model)
    pi = model.standard_parameters()
    inertial = inertial_index(model.n)
    pi_i = pi[inertial]
    beta = pi_i[kept] + (K @ pi_i[dependent] if dependent.size else 0.0)
    scale = max(1.0, float(np.abs(beta).max()))
    beta = np.where(np.abs(beta) < SNAP * scale, 0.0, beta)
    reduced = pi.copy()
    reduced[inertial] = 0.0
    reduced[inertial[kept]] = beta
    candidate = model.with_parameters(reduced)
    # The grouping is numeric: on an ill-conditioned chain its round-off could show in the
    # efforts. Keep it only if it reproduces them to 1e-13 (relative to max(1, |tau|)).
    rng = np.random.default_rng(1)
    q, qd, qdd = rng.uniform(-np.pi, np.pi, (3, 20, model.n))
    expected = model.rnea(q, qd, qdd)
    error = np.abs(candidate.rnea(q, qd, qdd) - expected).max()
    if not error <= 1e-13 * max(1.0, float(np.abs(expected).max())):
        return model
    return candidate


def _exact_links(model):
    links = []
    for link in model.links:
        links.append(dataclasses.replace(
            link, a=_snap(link.a), d=_snap(link.d), cos_alpha=_snap(link.cos_alpha),
            sin_alpha=_snap(link.sin_alpha), mass=_snap(link.mass),
            first_moment=tuple(_snap(v) for v in link.first_moment),
            inertia_origin=tuple(tuple(_snap(v) for v in row) for row in link.inertia_origin)))
    return links


@dataclasses.dataclass
class GeneratedDynamics:
    """A straight-line inverse-dynamics program for one model.

    Attributes:
        joint_names: the chain's joints (argument order).
        convention: ``'dh'`` or ``'mdh'``.
        trig: lines ``(name, function, joint index, offset, sign)``: ``name = sign *
            function(q[joint] + offset)``, function ``'sin'``/``'cos'``.
        lines: ``(name, left, operator, right)`` in computation order.
        outputs: n expressions (text) for the efforts.
        operations: ``{'mul': M, 'add': A}`` counted from ``lines`` and ``trig``
            offsets; sin/cos apart in ``'trig'``.
        parameters: (13 n,) the standard parameters the program was generated from.
    """

    joint_names: list
    convention: str
    trig: list
    lines: list
    outputs: list
    operations: dict
    parameters: np.ndarray


def generate(model, use_base_parameters=True):
    """Generate the robot-specific Newton–Euler program of ``model`` (module docstring).

    Every model :func:`load_model` accepts can be generated; ``use_base_parameters=False``
    keeps all standard parameters (a longer program, same efforts).
    """
    if use_base_parameters:
        model = reduced_model(model)
    emitter = Emitter()
    links = _exact_links(model)
    n = model.n
    trig, cos_theta, sin_theta, d = [], [], [], []
    for i, link in enumerate(links):
        if link.prismatic:
            cos_theta.append(_snap(math.cos(link.theta)))
            sin_theta.append(_snap(math.sin(link.theta)))
            d.append(Symbol(emitter, name=f'q{i + 1}') + link.d)
            continue
        d.append(link.d)
        quarter = link.theta / (math.pi / 2)
        if abs(quarter - round(quarter)) < SNAP:
            # cos(q + k pi/2), sin(q + k pi/2) as +-cos q, +-sin q
            k = int(round(quarter)) % 4
            c_fn, c_sign, s_fn, s_sign = [('cos', 1, 'sin', 1), ('sin', -1, 'cos', 1),
                                          ('cos', -1, 'sin', -1), ('sin', 1, 'cos', -1)][k]
            trig.append((f'c{i + 1}', 'cos', i, 0.0, 1))
            trig.append((f's{i + 1}', 'sin', i, 0.0, 1))
            names = {'cos': f'c{i + 1}', 'sin': f's{i + 1}'}
            cos_theta.append(Symbol(emitter, name=names[c_fn], sign=float(c_sign)))
            sin_theta.append(Symbol(emitter, name=names[s_fn], sign=float(s_sign)))
        else:
            trig.append((f'c{i + 1}', 'cos', i, link.theta, 1))
            trig.append((f's{i + 1}', 'sin', i, link.theta, 1))
            cos_theta.append(Symbol(emitter, name=f'c{i + 1}'))
            sin_theta.append(Symbol(emitter, name=f's{i + 1}'))
    qd = [Symbol(emitter, name=f'qd{i + 1}') for i in range(n)]
    qdd = [Symbol(emitter, name=f'qdd{i + 1}') for i in range(n)]
    R0 = model.base_transform[:3, :3]
    base_acc = tuple(_snap(v) for v in (-(R0.T @ np.array(GRAVITY))).tolist())
    zero = (0.0, 0.0, 0.0)
    recursion = rnea_mdh if model.convention is Convention.MDH else rnea_dh
    tau = recursion(links, cos_theta, sin_theta, d, qd, qdd, base_acc, zero, zero)
    outputs = []
    for i, t in enumerate(tau):
        total = (t if isinstance(t, Symbol) else Symbol(emitter, value=_snap(t)))
        armature = _snap(model.armature[i])
        total = total + qdd[i] * armature
        outputs.append(total.text())
    # Keep only what the efforts need (quantities whose every use was multiplied by a
    # zero parameter were emitted in the outward pass but are never read).
    needed = {word for text in outputs for word in text.lstrip('-').split()}
    lines = []
    for line in reversed(emitter.lines):
        if line[0] in needed:
            lines.append(line)
            needed.update((line[1], line[3]))
    emitter.lines = lines[::-1]
    trig = [t for t in trig if t[0] in needed]
    operations = emitter.operations()
    operations['add'] += sum(1 for line in trig if line[3] != 0.0)
    operations['trig'] = len(trig)
    return GeneratedDynamics(list(model.joint_names), model.convention.value, trig,
                             emitter.lines, outputs, operations, model.standard_parameters())


def _python_lines(program, indent='    '):
    out = []
    n = len(program.joint_names)
    out.append(f'{indent}' + ', '.join(f'q{i + 1}' for i in range(n)) + (',' if n == 1 else '')
               + ' = q')
    out.append(f'{indent}' + ', '.join(f'qd{i + 1}' for i in range(n))
               + (',' if n == 1 else '') + ' = qd')
    out.append(f'{indent}' + ', '.join(f'qdd{i + 1}' for i in range(n))
               + (',' if n == 1 else '') + ' = qdd')
    for name, function, joint, offset, _ in program.trig:
        argument = f'q{joint + 1}' if offset == 0.0 else f'q{joint + 1} + {_literal(offset)}'
        out.append(f'{indent}{name} = {function}({argument})')
    for name, left, operator, right in program.lines:
        out.append(f'{indent}{name} = {left} {operator} {right}')
    return out


def python_source(program, robot='robot'):
    """Return a Python module with ``JOINT_NAMES``, ``OPERATIONS``, ``rnea``, ``rnea_batch``.

    ``rnea(q, qd, qdd)`` takes sequences of n floats (URDF joint order as
    ``JOINT_NAMES``) and returns a list of n efforts (N·m / N); ``rnea_batch`` takes (N, n)
    arrays and returns (N, n), through the same lines (NumPy arithmetic).
    """
    n = len(program.joint_names)
    names = ', '.join(f'{v:.17g}' for v in program.parameters)
    body = _python_lines(program)
    outputs = ', '.join(program.outputs)
    ops = program.operations
    header = (
        f'"""Inverse dynamics of {robot}, generated by ne-dynamics codegen (ne_dynamics_ros).\n\n'
        f'Joints: {program.joint_names}; {program.convention.upper()} frames; gravity '
        '(0, 0, -9.81) m/s^2 in the base link frame;\n'
        'tau = M(q) qdd + C(q, qd) qd + g(q) + armature * qdd, N*m (N), URDF joint '
        'coordinates.\n'
        f'{ops["mul"]} multiplications + {ops["add"]} additions ({ops["trig"]} sin/cos apart).\n'
        'Method: the Newton-Euler recursion (000 Craig MDH / 001 eqs 3.21-3.27) on symbols,\n'
        "zeros and ones folded, every quantity named once, base parameters (Renaud 004,\n"
        "Gautier's QR) so that parameters occurring together are gathered.\n"
        'Standard parameters (XX XY XZ YY YZ ZZ MX MY MZ M Ia Fv Fc per joint):\n'
        f'{names}\n"""\n')
    return (header + 'import math\n\n'
            f'JOINT_NAMES = {program.joint_names!r}\n'
            f"OPERATIONS = {{'mul': {ops['mul']}, 'add': {ops['add']}}}\n\n\n"
            'def _rnea(q, qd, qdd, sin, cos):\n'
            + '\n'.join(body) + f'\n    return [{outputs}]\n\n\n'
            'def rnea(q, qd, qdd):\n'
            '    """Return the n joint efforts for one state (sequences of n floats)."""\n'
            '    return _rnea(q, qd, qdd, math.sin, math.cos)\n\n\n'
            'def rnea_batch(q, qd, qdd):\n'
            '    """Return the (N, n) efforts for (N, n) arrays of states."""\n'
            '    import numpy as np\n'
            '    q, qd, qdd = (np.asarray(a, dtype=float) for a in (q, qd, qdd))\n'
            '    tau = _rnea(q.T, qd.T, qdd.T, np.sin, np.cos)\n'
            f'    return np.stack([np.broadcast_to(t, q.shape[:1]) for t in tau], axis=-1)\n'
            + f'\n\nassert len(JOINT_NAMES) == {n}\n')


def c_source(program, robot='robot', function='ne_rnea'):
    """Return a C99 source with ``void <function>(q, qd, qdd, tau)`` (arrays of n doubles).

    Embed it in a C++ ros2_control controller: compile it with the controller (it needs
    only ``<math.h>``), call it once per ``update()`` with the state in ``JOINT_NAMES``
    order; ``NE_N`` and ``ne_joint_names`` describe the arguments.
    """
    n = len(program.joint_names)
    ops = program.operations
    names = ', '.join(f'"{name}"' for name in program.joint_names)
    params = ', '.join(f'{v:.17g}' for v in program.parameters)
    lines = [
        f'/* Inverse dynamics of {robot}, generated by ne-dynamics codegen (ne_dynamics_ros).',
        f' * Joints: {", ".join(program.joint_names)}; {program.convention.upper()} frames;',
        ' * gravity (0, 0, -9.81) m/s^2 in the base link frame; URDF joint coordinates.',
        ' * tau = M(q) qdd + C(q, qd) qd + g(q) + armature * qdd, N*m (N).',
        f' * {ops["mul"]} multiplications + {ops["add"]} additions ({ops["trig"]} sin/cos).',
        ' * Method: Newton-Euler recursion (000 Craig MDH / 001 eqs 3.21-3.27) on symbols,',
        ' * zeros and ones folded, every quantity named once, base parameters (Renaud 004).',
        ' * Standard parameters (XX XY XZ YY YZ ZZ MX MY MZ M Ia Fv Fc per joint):',
        f' * {params}',
        ' */',
        '#include <math.h>',
        '',
        f'#define NE_N {n}',
        f'static const char *const ne_joint_names[NE_N] = {{{names}}};',
        '',
        f'void {function}(const double *q, const double *qd, const double *qdd, double *tau)',
        '{',
    ]
    for i in range(n):
        lines.append(f'    const double q{i + 1} = q[{i}], qd{i + 1} = qd[{i}], '
                     f'qdd{i + 1} = qdd[{i}];')
        lines.append(f'    (void)q{i + 1}; (void)qd{i + 1}; (void)qdd{i + 1};')
    for name, function_name, joint, offset, _ in program.trig:
        argument = f'q{joint + 1}' if offset == 0.0 else f'q{joint + 1} + {_literal(offset)}'
        lines.append(f'    const double {name} = {function_name}({argument});')
    for name, left, operator, right in program.lines:
        lines.append(f'    const double {name} = {left} {operator} {right};')
    for i, output in enumerate(program.outputs):
        lines.append(f'    tau[{i}] = {output};')
    lines += ['    (void)ne_joint_names;', '}', '']
    return '\n'.join(lines)


def count_operations(source):
    """Recount ``{'mul', 'add'}`` from a generated Python source's ``_rnea`` body.

    Multiplications and binary additions/subtractions, including those inside sin/cos
    arguments; unary minus is a sign and is not counted.
    """
    tree = ast.parse(source)
    function = next(node for node in tree.body
                    if isinstance(node, ast.FunctionDef) and node.name == '_rnea')
    counts = {'mul': 0, 'add': 0}
    for node in ast.walk(function):
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Mult):
                counts['mul'] += 1
            elif isinstance(node.op, (ast.Add, ast.Sub)):
                counts['add'] += 1
    return counts


def load_python(source):
    """Execute a generated module's source and return its namespace (a dict)."""
    namespace = {'__name__': 'ne_dynamics_generated'}
    exec(compile(source, '<generated>', 'exec'), namespace)   # noqa: S102 (our own output)
    return namespace


__all__ = ['c_source', 'CompiledDynamics', 'count_operations', 'Emitter', 'generate',
           'GeneratedDynamics',
           'load_python', 'python_source', 'reduced_model', 'Symbol']


class CompiledDynamics:
    """A :class:`RobotModel` whose inverse dynamics run the generated program.

    ``rnea`` and ``gravity_torques`` use the generated code for the gravity it was
    generated for, (0, 0, -9.81) m/s², and no tip wrench; any other gravity or a tip
    wrench falls back to the recursion. Everything else (names, limits, friction,
    ``mass_matrix``...) is the wrapped model's. On construction the generated function is
    checked against the recursion on random states; a mismatch raises.

    Args:
        model: the :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        states: how many random states to check (positions within the joint limits).
        tolerance: largest accepted difference, relative to the largest effort.

    Raises:
        ModelError: the generated function differs from the recursion (the message gives
            the difference and the state).
    """

    def __init__(self, model, states=50, tolerance=1e-9, seed=0):
        self.model = model
        namespace = load_python(python_source(generate(model), model.tip_link))
        self._single = namespace['rnea']
        self._batch = namespace['rnea_batch']
        self.operations = namespace['OPERATIONS']
        self.check(states, tolerance, seed)

    def __getattr__(self, name):
        return getattr(self.model, name)

    def check(self, states=50, tolerance=1e-9, seed=0):
        """Compare with the recursion on random states; raise ModelError on a mismatch."""
        model = self.model
        rng = np.random.default_rng(seed)
        lower = np.where(np.isfinite(model.lower_limits), model.lower_limits, -math.pi)
        upper = np.where(np.isfinite(model.upper_limits), model.upper_limits, math.pi)
        q = rng.uniform(lower, upper, (states, model.n))
        qd, qdd = rng.normal(0, 2, (2, states, model.n))
        expected = model.rnea(q, qd, qdd)
        got = self._batch(q, qd, qdd)
        scale = max(1.0, float(np.abs(expected).max()))
        error = np.abs(got - expected).max(axis=1) / scale
        worst = int(np.argmax(error))
        if not error[worst] <= tolerance:
            raise ModelError(
                f'the generated inverse dynamics differ from the recursion by '
                f'{error[worst]:.3g} (relative) at q={q[worst].tolist()}, '
                f'qd={qd[worst].tolist()}, qdd={qdd[worst].tolist()}')

    def rnea(self, q, qd, qdd, gravity=GRAVITY, f_tip=None):
        """Inverse dynamics as :meth:`RobotModel.rnea`, by the generated program."""
        if f_tip is not None or tuple(float(g) for g in gravity) != GRAVITY:
            return self.model.rnea(q, qd, qdd, gravity, f_tip)
        s = self.model._states(q=q, qd=qd, qdd=qdd)
        if s['q'].ndim == 1:
            return np.array(self._single(s['q'].tolist(), s['qd'].tolist(), s['qdd'].tolist()))
        return self._batch(s['q'], s['qd'], s['qdd'])

    def gravity_torques(self, q, gravity=GRAVITY):
        """Gravity efforts g(q) = rnea(q, 0, 0), by the generated program."""
        q = self.model._vector(q, 'q')
        zero = np.zeros_like(q)
        return self.rnea(q, zero, zero, gravity)
