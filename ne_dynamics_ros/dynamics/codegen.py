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
from ne_dynamics_ros.dynamics.rnea import (_add, _body_wrench, _cross, _inertia_times, _scale,
                                           rnea_dh, rnea_mdh)
from ne_dynamics_ros.dynamics.model import _finite
from ne_dynamics_ros.errors import ModelError

#: Values within this of 0 or ±1 (relative to 1) are taken as exact: the round-off of
#: the URDF -> DH conversion (a few ulps), not a length anyone would write (1e-12 m is).
SNAP = 1e-14
GRAVITY = (0.0, 0.0, -9.81)


class Emitter:
    """Collects the straight-line program: one assignment per new operation."""

    def __init__(self):
        self.lines = []          # (name, left, operator, right)
        self._known = {}
        self._sums = {}          # name of an emitted sum -> {operand: +-1}
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
            if operator != '*':
                self._sums[name] = {key[1]: 1.0, key[2]: 1.0 if operator == '+' else -1.0}
        return name

    def cancelled(self, sa, a, sb, b):
        """``(sign, name)`` if ``sa a + sb b`` reduces to one term, a sum cancelling out.

        E.g. ``(u + v) - u = v`` (Renaud's b for a link whose incoming ω has no z
        component: ω_x ω_z + ω̇_y holds ω_x q̇ twice, once with each sign). Else None.
        """
        terms = {}
        for sign, name in ((sa, a), (sb, b)):
            for operand, coefficient in self._sums.get(name, {name: 1.0}).items():
                terms[operand] = terms.get(operand, 0.0) + sign * coefficient
        left = [(c, operand) for operand, c in terms.items() if c != 0.0]
        if len(left) == 1 and abs(left[0][0]) == 1.0 and not left[0][1][0].isdigit():
            return left[0]
        return None

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
        single = self.emitter.cancelled(sa, a, sb, b)
        if single is not None:
            return self._named(single[1], single[0])
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


def _differ(a, b):
    """Return a - b, exactly 0 when equal to within SNAP of their size (a symmetric link)."""
    return 0.0 if abs(a - b) <= SNAP * max(abs(a), abs(b)) else a - b


def _body_wrench_products(link, w, wd, vd, b):
    """Return the body wrench of :func:`~ne_dynamics_ros.dynamics.rnea._body_wrench`, symbolically.

    Same F and N, but the gyroscopic moment ω × (J ω) is written on the products
    ω_x ω_y, ω_x ω_z, ω_y ω_z, ω_x², ω_y², ω_z² that b already formed (Renaud 004, step 2:
    δ = ω ⊗ ω), with the inertia differences as constants (Khalil's customised
    Newton–Euler):

        (ω × Jω)_x = J_xz ω_x ω_y + J_yz (ω_y² - ω_z²) + (J_zz - J_yy) ω_y ω_z - J_xy ω_x ω_z

    and cyclically. With the base parameters' sparse J (YY grouped away, most products
    zero) a term costs one multiplication instead of the 15 M + 9 A of Jω then ω × Jω.
    """
    ms = link.first_moment
    J = link.inertia_origin
    F = _add(_scale(link.mass, vd), _inertia_times(b, ms))
    xx, yy, zz = w[0] * w[0], w[1] * w[1], w[2] * w[2]
    xy, xz, yz = w[0] * w[1], w[0] * w[2], w[1] * w[2]
    (jxx, jxy, jxz), (_, jyy, jyz), (_, _, jzz) = J
    gyro = (jxz * xy + jyz * (yy - zz) + _differ(jzz, jyy) * yz - jxy * xz,
            jxy * yz + jxz * (zz - xx) + _differ(jxx, jzz) * xz - jyz * xy,
            jyz * xz + jxy * (xx - yy) + _differ(jyy, jxx) * xy - jxz * yz)
    N = _add(_add(_inertia_times(J, wd), gyro), _cross(ms, vd))
    return F, N


def _body_wrench_b(link, w, wd, vd, b):
    """Return the body wrench of :func:`~ne_dynamics_ros.dynamics.rnea._body_wrench`, on b.

    ``N = J ω̇ + ω × (J ω) + MS × v̇`` gathered parameter by parameter (Khalil's
    customised Newton–Euler): each product of inertia multiplies one 3-vector whose
    components are elements of Renaud's b = ω̇^ + ω^ω^ (already formed for b·MS and b·p),
    e.g. XY (ω̇_y - ω_x ω_z, ω̇_x + ω_y ω_z, ω_x² - ω_y²) = XY (-b_20, b_21, b_00 - b_11):

        N_x = XX ω̇_x + (ZZ - YY) ω_y ω_z - XY b_20 + XZ b_10 + YZ (b_11 - b_22)
        N_y = YY ω̇_y + (XX - ZZ) ω_x ω_z + XY b_21 + XZ (b_22 - b_00) - YZ b_01
        N_z = ZZ ω̇_z + (YY - XX) ω_x ω_y + XY (b_00 - b_11) - XZ b_12 + YZ b_02

    so a product of inertia costs 3 multiplications instead of 5.
    """
    ms = link.first_moment
    J = link.inertia_origin
    F = _add(_scale(link.mass, vd), _inertia_times(b, ms))
    (jxx, jxy, jxz), (_, jyy, jyz), (_, _, jzz) = J
    xy, xz, yz = w[0] * w[1], w[0] * w[2], w[1] * w[2]
    N = (jxx * wd[0] + _differ(jzz, jyy) * yz - jxy * b[2][0] + jxz * b[1][0]
         + jyz * (b[1][1] - b[2][2]),
         jyy * wd[1] + _differ(jxx, jzz) * xz + jxy * b[2][1] + jxz * (b[2][2] - b[0][0])
         - jyz * b[0][1],
         jzz * wd[2] + _differ(jyy, jxx) * xy + jxy * (b[0][0] - b[1][1]) - jxz * b[1][2]
         + jyz * b[0][2])
    N = _add(N, _cross(ms, vd))
    return F, N


def _with_first_armature(link, armature, convention):
    """Link 1 with the first joint's armature added to its inertia about the joint axis.

    The base does not move, so ω_1 = q̇_1 z and ω̇_1 = q̈_1 z (z the joint axis in frame 1):
    J + Ia z zᵀ adds Ia q̈_1 z + ω_1 × (Ia q̇_1 z) = Ia q̈_1 z to the moment of link 1 and
    nothing else, i.e. Ia q̈_1 to tau_1 alone, the armature term. Khalil's grouping of
    Ia_1 with ZZ_1: one multiplication and one addition fewer.
    """
    if convention is Convention.MDH:
        z = (0.0, 0.0, 1.0)
    else:                                  # z_0 in DH frame 1
        z = (0.0, link.sin_alpha, link.cos_alpha)
    inertia = tuple(tuple(_snap(link.inertia_origin[r][c] + armature * z[r] * z[c])
                          for c in range(3)) for r in range(3))
    return dataclasses.replace(link, inertia_origin=inertia)


def _axis_symmetric_tail(links):
    """Index of a last revolute link whose rotation about its own axis cannot matter, or None.

    When every link after it carries no inertia and its own (reduced) inertia is
    symmetric about z (J = diag(XX, XX, ZZ) about its origin, MS along z), turning it
    about its axis changes nothing: its theta rotation may be taken as the identity
    (Renaud's intrinsic computation projects such a body on the previous frame).
    """
    for index in range(len(links) - 1, -1, -1):
        link = links[index]
        J = link.inertia_origin
        if link.mass or any(link.first_moment) or any(any(row) for row in J):
            break
    else:
        return None
    if link.prismatic:
        return None
    symmetric = (J[0][1] == 0.0 and J[0][2] == 0.0 and J[1][2] == 0.0
                 and _differ(J[0][0], J[1][1]) == 0.0
                 and link.first_moment[0] == 0.0 and link.first_moment[1] == 0.0)
    return index if symmetric else None


@dataclasses.dataclass
class GeneratedDynamics:
    """A straight-line inverse-dynamics program for one model.

    Attributes:
        joint_names: the chain's joints (argument order).
        convention: ``'dh'`` or ``'mdh'``.
        angles: lines ``(name, left, right)``: ``name = left + right``, sums of joint
            angles (``q2_3 = q2 + q3``) of parallel joints, before the trig lines.
        trig: lines ``(name, function, argument, offset, sign)``: ``name = sign *
            function(argument + offset)``, function ``'sin'``/``'cos'``, argument a joint
            angle ``q<i>`` or a sum from ``angles``.
        lines: ``(name, left, operator, right)`` in computation order.
        outputs: n expressions (text) for the efforts.
        operations: ``{'mul': M, 'add': A}`` counted from ``lines`` and ``trig``
            offsets; sin/cos apart in ``'trig'``.
        parameters: (13 n,) the standard parameters the program was generated from.
    """

    joint_names: list
    convention: str
    angles: list
    trig: list
    lines: list
    outputs: list
    operations: dict
    parameters: np.ndarray


def generate(model, use_base_parameters=True):
    """Generate the robot-specific Newton–Euler program of ``model`` (module docstring).

    Every model :func:`load_model` accepts can be generated; ``use_base_parameters=False``
    keeps all standard parameters (a longer program, same efforts). The moment of each
    link is written in whichever of its three equal forms (ω × (Jω); on the products of ω,
    :func:`_body_wrench_products`; on the elements of b, :func:`_body_wrench_b`) gives the
    shorter program, chosen link by link from the outermost.
    """
    if use_base_parameters:
        model = reduced_model(model)
    forms = [_body_wrench_b] * model.n
    best = _program(model, forms)
    for index in range(model.n - 1, -1, -1):
        for form in (_body_wrench_products, _body_wrench):
            trial = forms[:index] + [form] + forms[index + 1:]
            candidate = _program(model, trial)
            if _total(candidate) < _total(best):
                best, forms = candidate, trial
    return best


def _total(program):
    return program.operations['mul'] + program.operations['add']


def _program(model, forms):
    """Generate ``model``'s program, link i's body wrench by ``forms[i]``."""
    emitter = Emitter()
    links = _exact_links(model)
    armature = [_snap(value) for value in model.armature]
    if links and not links[0].prismatic and armature[0]:
        links[0], armature[0] = _with_first_armature(links[0], armature[0],
                                                     model.convention), 0.0
    n = model.n
    trig, cos_theta, sin_theta, d = [], [], [], []

    def trig_pair(label, argument, theta):
        """Return the cos and sin of ``argument + theta`` as symbols (quarter turns folded)."""
        quarter = theta / (math.pi / 2)
        if abs(quarter - round(quarter)) < SNAP:
            # cos(q + k pi/2), sin(q + k pi/2) as +-cos q, +-sin q
            k = int(round(quarter)) % 4
            c_fn, c_sign, s_fn, s_sign = [('cos', 1, 'sin', 1), ('sin', -1, 'cos', 1),
                                          ('cos', -1, 'sin', -1), ('sin', 1, 'cos', -1)][k]
            trig.append((f'c{label}', 'cos', argument, 0.0, 1))
            trig.append((f's{label}', 'sin', argument, 0.0, 1))
            names = {'cos': f'c{label}', 'sin': f's{label}'}
            return (Symbol(emitter, name=names[c_fn], sign=float(c_sign)),
                    Symbol(emitter, name=names[s_fn], sign=float(s_sign)))
        trig.append((f'c{label}', 'cos', argument, theta, 1))
        trig.append((f's{label}', 'sin', argument, theta, 1))
        return Symbol(emitter, name=f'c{label}'), Symbol(emitter, name=f's{label}')

    for i, link in enumerate(links):
        if link.prismatic:
            cos_theta.append(_snap(math.cos(link.theta)))
            sin_theta.append(_snap(math.sin(link.theta)))
            d.append(Symbol(emitter, name=f'q{i + 1}') + link.d)
            continue
        d.append(link.d)
        c, s = trig_pair(f'{i + 1}', f'q{i + 1}', link.theta)
        cos_theta.append(c)
        sin_theta.append(s)
    qd = [Symbol(emitter, name=f'qd{i + 1}') for i in range(n)]
    qdd = [Symbol(emitter, name=f'qdd{i + 1}') for i in range(n)]
    R0 = model.base_transform[:3, :3]
    base_acc = tuple(_snap(v) for v in (-(R0.T @ np.array(GRAVITY))).tolist())
    zero = (0.0, 0.0, 0.0)
    recursion = rnea_mdh if model.convention is Convention.MDH else rnea_dh
    # In MDH frames joint i turns frame i about its own z (in DH, about z_{i-1}).
    symmetric = _axis_symmetric_tail(links) if model.convention is Convention.MDH else None
    if symmetric is not None:
        cos_theta[symmetric], sin_theta[symmetric] = 1.0, 0.0
    # Runs of parallel revolute joints (MDH alpha = 0 between them): their ω, ω̇ turned
    # at once through the summed angle, as 004 does with s23, c23 (forward_mdh).
    angles, combined = [], None
    if model.convention is Convention.MDH:
        combined, start = [None] * n, None
        for i, link in enumerate(links):
            if (start is None or link.prismatic or i == symmetric
                    or (link.cos_alpha, link.sin_alpha) != (1.0, 0.0)):
                start = None if link.prismatic or i == symmetric else i
                continue
            label = f'{start + 1}_{i + 1}'
            angles.append((f'q{label}', f'q{i}' if i - 1 == start else f'q{start + 1}_{i}',
                           f'q{i + 1}'))
            combined[i] = trig_pair(label, f'q{label}',
                                    sum(links[j].theta for j in range(start, i + 1)))
    forms = {id(link): form for link, form in zip(links, forms)}

    def body_wrench(link, *motion):
        return forms[id(link)](link, *motion)

    tau = recursion(links, cos_theta, sin_theta, d, qd, qdd, base_acc, zero, zero,
                    body_wrench=body_wrench,
                    **({} if combined is None else {'combined': combined}))
    outputs = []
    for i, t in enumerate(tau):
        total = (t if isinstance(t, Symbol) else Symbol(emitter, value=_snap(t)))
        total = total + qdd[i] * armature[i]
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
    needed.update(t[2] for t in trig)
    kept = []
    for name, left, right in reversed(angles):
        if name in needed:
            kept.append((name, left, right))
            needed.update((left, right))
    angles = kept[::-1]
    operations = emitter.operations()
    operations['add'] += sum(1 for line in trig if line[3] != 0.0) + len(angles)
    operations['trig'] = len(trig)
    return GeneratedDynamics(list(model.joint_names), model.convention.value, angles, trig,
                             emitter.lines, outputs, operations, model.standard_parameters())


#: Deepest nesting of inlined single-use quantities in the Python single call.
_INLINE_DEPTH = 6
#: States per block in the generated ``rnea_batch`` (bounds its buffer's memory).
BATCH_BLOCK = 16384
#: Below this many states ``rnea_batch`` loops over the single call instead.
_SMALL_BATCH = 64


def _unpack(n, indent):
    comma = ',' if n == 1 else ''
    return [f'{indent}' + ', '.join(f'{v}{i + 1}' for i in range(n)) + f'{comma} = {v}'
            for v in ('q', 'qd', 'qdd')]


def _trig_argument(argument, offset):
    return argument if offset == 0.0 else f'{argument} + {_literal(offset)}'


def _uses(program):
    uses = {}
    for _, left, _, right in program.lines:
        for operand in (left, right):
            uses[operand] = uses.get(operand, 0) + 1
    for text in program.outputs:
        word = text.lstrip('-')
        uses[word] = uses.get(word, 0) + 2     # an output stays a name
    return uses


def _python_lines(program, indent='    '):
    """Write the single-call body: one statement per quantity used more than once.

    A quantity used exactly once is written inside the expression that uses it (up to
    ``_INLINE_DEPTH`` levels): the same operations in the same order, fewer loads and
    stores for the interpreter.
    """
    out = _unpack(len(program.joint_names), indent)
    for name, left, right in program.angles:
        out.append(f'{indent}{name} = {left} + {right}')
    for name, function, argument, offset, _ in program.trig:
        out.append(f'{indent}{name} = {function}({_trig_argument(argument, offset)})')
    uses = _uses(program)
    inline = {}                      # name -> (text, depth) of a single-use quantity
    for name, left, operator, right in program.lines:
        parts, depth = [], 0
        for operand in (left, right):
            text, level = inline.pop(operand, (operand, 0))
            parts.append(text)
            depth = max(depth, level)
        text = f'{parts[0]} {operator} {parts[1]}'
        if uses.get(name, 0) == 1 and depth < _INLINE_DEPTH:
            inline[name] = (f'({text})', depth + 1)
        else:
            out.append(f'{indent}{name} = {text}')
    return out


_UFUNC = {'*': 'mul', '+': 'add', '-': 'sub'}

# Angle addition through a quarter turn k: (cos, sin) of L + R + k pi/2, each as
# s1 * x1 * y1 + s2 * x2 * y2 over the names cL, sL, cR, sR.
_QUARTER_SUMS = [
    (((1, 'cL', 'cR'), (-1, 'sL', 'sR')), ((1, 'sL', 'cR'), (1, 'cL', 'sR'))),
    (((-1, 'sL', 'cR'), (-1, 'cL', 'sR')), ((1, 'cL', 'cR'), (-1, 'sL', 'sR'))),
    (((-1, 'cL', 'cR'), (1, 'sL', 'sR')), ((-1, 'sL', 'cR'), (-1, 'cL', 'sR'))),
    (((1, 'sL', 'cR'), (1, 'cL', 'sR')), ((-1, 'cL', 'cR'), (1, 'sL', 'sR'))),
]


def _trig_groups(program):
    """Group the sin/cos the program reads by angle: {argument: (offset, {'cos': name})}."""
    groups = {}
    for name, function, argument, offset, _ in program.trig:
        groups.setdefault(argument, (offset, {}))[1][function] = name
    return groups


def _trig_steps(program):
    """Return the steps computing the program's sin and cos for a NumPy block.

    A summed angle (``q2_3``) whose two parts' sin and cos are both computed is turned by
    angle addition (4 multiplications, 2 additions instead of two libm calls, which cost
    14-25 ns per value in NumPy against under 1 ns for an addition); an angle whose sin and
    cos are both read goes through the tangent of its half, one libm call:
    ``t = tan(x/2)``, ``cos x = 2/(1 + t^2) - 1``, ``sin x = t * 2/(1 + t^2)`` (finite
    for every finite x: x/2 is never an odd multiple of pi/2 in floating point); a lone
    sin or cos is called directly. Returns (outputs, operands, kind, data) tuples.
    """
    groups = _trig_groups(program)
    sums = {name: (left, right) for name, left, right in program.angles}
    steps, summed = [], set()

    def need_angle(argument):
        if argument in sums and argument not in summed:
            left, right = sums[argument]
            need_angle(left)
            summed.add(argument)
            steps.append(((argument,), (left, right), 'sum', None))

    for argument, (offset, names) in groups.items():
        outputs = tuple(names[f] for f in ('cos', 'sin') if f in names)
        parts = [groups.get(part) for part in sums.get(argument, ())]
        if parts and all(part and len(part[1]) == 2 for part in parts):
            quarter = (offset - parts[0][0] - parts[1][0]) / (math.pi / 2)
            if abs(quarter - round(quarter)) < SNAP:
                operands = {f'{f[0]}{side}': part[1][f]
                            for side, part in zip('LR', parts) for f in ('cos', 'sin')}
                sums_of = dict(zip(('cos', 'sin'), _QUARTER_SUMS[int(round(quarter)) % 4]))
                steps.append((outputs, tuple(operands.values()), 'turn',
                              [(names[f], sums_of[f], operands) for f in names]))
                continue
        need_angle(argument)
        kind = 'half' if len(outputs) == 2 else next(iter(names))
        steps.append((outputs, (argument,), kind, offset))
    return steps


class _Rows:
    """Rows of the batch block's buffer.

    A row is taken at a quantity's first write and given back after its last read (last
    in, first out, so recent rows stay in cache).
    """

    def __init__(self, last, keep):
        self.row, self.free, self.count = {}, [], 0
        self.last, self.keep = last, keep
        self.constants = {}

    def ref(self, name):
        """Return the row of a quantity, an input's own name, or a constant's 0-d array.

        A ufunc takes a 0-d float64 array about 0.4 µs faster than a Python float (NumPy 2
        resolves the float's type on every call), so each constant is made an array once.
        """
        if name in self.row:
            return f'b{self.row[name]}'
        if not _is_number(name):
            return name
        return self.constants.setdefault(_literal(float(name)), f'k{len(self.constants)}')

    def take(self, name):
        if self.free:
            self.row[name] = self.free.pop()
        else:
            self.row[name], self.count = self.count, self.count + 1
        return f'b{self.row[name]}'

    def release(self, operands, index):
        for operand in dict.fromkeys(operands):
            if operand in self.row and self.last[operand] == index and operand not in self.keep:
                self.free.append(self.row[operand])

    def drop(self, name):
        """Give the row of a step's own temporary back at once."""
        self.free.append(self.row.pop(name))


_SCRATCH = ' scratch'     # not a name the program can have


def _trig_code(rows, outputs, operands, kind, data, indent):
    """Lines of one trig step (its operands' rows are still held)."""
    args = [rows.ref(operand) for operand in operands]
    targets = [rows.take(name) for name in outputs]
    body = []
    if kind == 'sum':
        body.append(f'{indent}add({args[0]}, {args[1]}, {targets[0]})')
    elif kind == 'turn':
        scratch = rows.take(_SCRATCH)
        for name, ((s1, x1, y1), (s2, x2, y2)), names in data:
            target = rows.ref(name)
            ref = {key: rows.ref(value) for key, value in names.items()}
            first, second = ((x1, y1), (x2, y2)) if s1 > 0 or s2 < 0 else ((x2, y2), (x1, y1))
            body.append(f'{indent}mul({ref[first[0]]}, {ref[first[1]]}, {target})')
            body.append(f'{indent}mul({ref[second[0]]}, {ref[second[1]]}, {scratch})')
            body.append(f'{indent}{"add" if s1 == s2 else "sub"}({target}, {scratch}, {target})')
            if s1 < 0 and s2 < 0:
                body.append(f'{indent}neg({target}, {target})')
        rows.drop(_SCRATCH)
    elif kind == 'half':
        tangent, cosine, sine = targets[1], targets[0], targets[1]
        half, one, two = (rows.ref(_literal(value)) for value in (0.5, 1.0, 2.0))
        body.append(f'{indent}mul({args[0]}, {half}, {tangent})')
        if data != 0.0:
            body.append(f'{indent}add({tangent}, {rows.ref(_literal(data / 2))}, {tangent})')
        body += [f'{indent}tan({tangent}, {tangent})',
                 f'{indent}mul({tangent}, {tangent}, {cosine})',
                 f'{indent}add({cosine}, {one}, {cosine})',
                 f'{indent}div({two}, {cosine}, {cosine})',
                 f'{indent}mul({tangent}, {cosine}, {sine})',
                 f'{indent}sub({cosine}, {one}, {cosine})']
    else:
        source = args[0]
        if data != 0.0:
            body.append(f'{indent}add({source}, {rows.ref(_literal(data))}, {targets[0]})')
            source = targets[0]
        body.append(f'{indent}{kind}({source}, {targets[0]})')
    return body


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _batch_lines(program, indent='    '):
    """Write the block body of ``rnea_batch``: NumPy ufuncs writing into reused buffer rows.

    Each quantity goes into a row of ``buf`` (bound once per block as ``b0, b1, ...``)
    that is given back once its last use has read it (an elementwise ufunc may write over
    its own operand), so a block needs only as many rows as quantities alive at once. The
    sin and cos come from :func:`_trig_steps`. Returns (unpacking lines, body, rows,
    lines making the constants 0-d arrays).
    """
    steps = _trig_steps(program)
    steps += [((name,), (left, right), _UFUNC[operator], None)
              for name, left, operator, right in program.lines]
    last = {}
    for index, (_, operands, _, _) in enumerate(steps):
        for operand in operands:
            last[operand] = index
    rows = _Rows(last, {text.lstrip('-') for text in program.outputs})
    body = []
    for index, (outputs, operands, kind, data) in enumerate(steps):
        if kind in _UFUNC.values():
            args = [rows.ref(operand) for operand in operands]
            rows.release(operands, index)
            body.append(f'{indent}{kind}({args[0]}, {args[1]}, {rows.take(outputs[0])})')
        else:
            body += _trig_code(rows, outputs, operands, kind, data, indent)
            rows.release(operands, index)
    for i, text in enumerate(program.outputs):
        source = rows.ref(text.lstrip('-'))
        if text.startswith('-'):
            body.append(f'{indent}neg({source}, tau[{i}])')
        else:
            body.append(f'{indent}tau[{i}] = {source}')
    count = max(rows.count, 1)
    unpack = _unpack(len(program.joint_names), indent)
    unpack.append(f'{indent}' + ', '.join(f'b{k}' for k in range(count))
                  + (',' if count == 1 else '') + ' = buf')
    constants = [f'    {name} = np.array({value})' for value, name in rows.constants.items()]
    return unpack, body, count, constants


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
    unpack, batch_body, rows, constants = _batch_lines(program, '        ')
    return (header + 'from math import cos, sin\n\n'
            f'JOINT_NAMES = {program.joint_names!r}\n'
            f"OPERATIONS = {{'mul': {ops['mul']}, 'add': {ops['add']}}}\n\n\n"
            'def rnea(q, qd, qdd):\n'
            '    """Return the n joint efforts for one state (sequences of n floats)."""\n'
            + '\n'.join(body) + f'\n    return [{outputs}]\n\n\n'
            'def rnea_batch(q, qd, qdd):\n'
            '    """Return the (N, n) efforts for (N, n) arrays of states.\n\n'
            f'    The lines of ``rnea`` as NumPy ufuncs, {BATCH_BLOCK} states at a time, each\n'
            '    quantity written into a reused row of one buffer (fewer than\n'
            f'    {_SMALL_BATCH} states: ``rnea`` in a loop). The sin and cos are the same\n'
            '    values found more cheaply for arrays: a summed angle by angle addition, a\n'
            '    sin-cos pair from the tangent of the half angle.\n'
            '    """\n'
            '    import numpy as np\n'
            '    mul, add, sub, div = np.multiply, np.add, np.subtract, np.divide\n'
            '    neg, sin, cos, tan = np.negative, np.sin, np.cos, np.tan\n'
            '    q_all, qd_all, qdd_all = np.broadcast_arrays(\n'
            '        *(np.atleast_2d(np.asarray(a, dtype=float)) for a in (q, qd, qdd)))\n'
            f'    if q_all.ndim != 2 or q_all.shape[1] != {n}:\n'
            f"        raise ValueError(f'expected (N, {n}) states, got shape {{q_all.shape}}')\n"
            '    count = q_all.shape[0]\n'
            f'    if count < {_SMALL_BATCH}:    # a ufunc call per line costs more than a loop\n'
            '        states = zip(q_all.tolist(), qd_all.tolist(), qdd_all.tolist())\n'
            f'        return np.array([rnea(*s) for s in states]).reshape(count, {n})\n'
            + ''.join(line + '\n' for line in constants)
            + f'    result = np.empty((count, {n}))\n'
            f'    buffer = np.empty(({rows}, min(count, {BATCH_BLOCK})))\n'
            f'    for start in range(0, count, {BATCH_BLOCK}):\n'
            f'        stop = min(count, start + {BATCH_BLOCK})\n'
            '        # a joint\'s column read and written in place (strided): cheaper than\n'
            '        # copying the (N, n) arrays to rows and back\n'
            '        q, qd, qdd = (a[start:stop].T for a in (q_all, qd_all, qdd_all))\n'
            '        tau = result[start:stop].T\n'
            '        buf = buffer[:, :stop - start]\n'
            + '\n'.join(unpack) + '\n' + '\n'.join(batch_body) + '\n'
            '    return result\n'
            + f'\n\nassert len(JOINT_NAMES) == {n}\n')


def c_source(program, robot='robot', function='ne_rnea'):
    """Return a C99 source with ``void <function>(q, qd, qdd, tau)`` (arrays of n doubles).

    Embed it in a C++ ros2_control controller: compile it with the controller (it needs
    only ``<math.h>``), call it once per ``update()`` with the state in ``JOINT_NAMES``
    order; ``NE_N`` and ``ne_joint_names`` describe the arguments. A second function,
    ``void <function>_batch(long count, q, qd, qdd, tau)``, runs ``count`` states stored
    row by row ((count, n) arrays, C order), for offline work called through cffi or ctypes.
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
    for name, left, right in program.angles:
        lines.append(f'    const double {name} = {left} + {right};')
    for name, function_name, argument, offset, _ in program.trig:
        lines.append(f'    const double {name} = '
                     f'{function_name}({_trig_argument(argument, offset)});')
    for name, left, operator, right in program.lines:
        lines.append(f'    const double {name} = {left} {operator} {right};')
    for i, output in enumerate(program.outputs):
        lines.append(f'    tau[{i}] = {output};')
    lines += ['    (void)ne_joint_names;', '}', '',
              f'void {function}_batch(long count, const double *q, const double *qd,',
              '                   const double *qdd, double *tau)',
              '{',
              '    for (long k = 0; k < count; ++k)',
              f'        {function}(q + k * NE_N, qd + k * NE_N, qdd + k * NE_N, tau + k * NE_N);',
              '}', '']
    return '\n'.join(lines)


def count_operations(source):
    """Recount ``{'mul', 'add'}`` from a generated Python source's ``rnea`` body.

    Multiplications and binary additions/subtractions, including those inside sin/cos
    arguments; unary minus is a sign and is not counted.
    """
    tree = ast.parse(source)
    function = next(node for node in tree.body
                    if isinstance(node, ast.FunctionDef) and node.name == 'rnea')
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
        self._checked_gravity = (None, False)
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

    def _is_default_gravity(self, gravity):
        """Tell whether ``gravity`` is (0, 0, -9.81), the program's (last answer cached)."""
        if gravity is self._checked_gravity[0]:
            return self._checked_gravity[1]
        answer = tuple(float(g) for g in gravity) == GRAVITY
        if isinstance(gravity, np.ndarray) and not gravity.flags.writeable or \
                isinstance(gravity, tuple):
            self._checked_gravity = (gravity, answer)
        return answer

    def rnea_values(self, q, qd, qdd, gravity=GRAVITY):
        """Return the n efforts of one state as a list, or None if this cannot answer.

        ``q, qd, qdd``: lists of n floats (rad, rad/s, rad/s²; m for prismatic joints) in
        the model's joint order. None when ``gravity`` is not the program's (0, 0, -9.81)
        or the result is not finite (NaN/inf inputs, overflow): use :meth:`rnea`, which
        answers or raises :class:`~ne_dynamics_ros.errors.StateError`. The control path's
        single call, without array checks or conversions.
        """
        if not self._is_default_gravity(gravity):
            return None
        try:
            tau = self._single(q, qd, qdd)
        except (ValueError, OverflowError, TypeError):
            return None
        return tau if math.isfinite(sum(tau)) else None

    def rnea(self, q, qd, qdd, gravity=GRAVITY, f_tip=None):
        """Inverse dynamics as :meth:`RobotModel.rnea`, by the generated program."""
        if f_tip is not None or not self._is_default_gravity(gravity):
            return self.model.rnea(q, qd, qdd, gravity, f_tip)
        n = self.model.n
        if (type(q) is np.ndarray and type(qd) is np.ndarray and type(qdd) is np.ndarray
                and q.shape == qd.shape == qdd.shape == (n,)):
            # One state: no array validators. NaN/inf inputs or an overflow give None and
            # take the checked path below, which raises the right StateError.
            tau = self.rnea_values(q.tolist(), qd.tolist(), qdd.tolist(), gravity)
            if tau is not None:
                return np.array(tau)
        s = self.model._states(q=q, qd=qd, qdd=qdd)
        if s['q'].ndim == 1:
            return _finite(np.array(self._single(s['q'].tolist(), s['qd'].tolist(),
                                                 s['qdd'].tolist())), 'rnea')
        return self._batch(s['q'], s['qd'], s['qdd'])

    def gravity_torques(self, q, gravity=GRAVITY):
        """Gravity efforts g(q) = rnea(q, 0, 0), by the generated program."""
        q = self.model._vector(q, 'q')
        zero = np.zeros_like(q)
        return self.rnea(q, zero, zero, gravity)
