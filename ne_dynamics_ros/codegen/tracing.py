"""Robot-specific inverse dynamics traced into straight-line code (Renaud's computation).

Renaud (1987) computes a given arm's dynamic model *analytically*
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
count, counted from the lines themselves;
:func:`~ne_dynamics_ros.codegen.python_emitter.python_source` and
:func:`~ne_dynamics_ros.codegen.c_emitter.c_source` wrap them. ``tau = M(q) q̈ + C(q, q̇) q̇
+ g(q) + armature q̈`` with gravity (0, 0, -9.81) m/s² in the base link frame, URDF joint
coordinates, like :meth:`~ne_dynamics_ros.dynamics.model.RobotModel.rnea` without
friction.
"""
import dataclasses
import math

import numpy as np

from ne_dynamics_ros.codegen.symbols import Emitter, SNAP, snap, Symbol
from ne_dynamics_ros.dynamics.base_parameters import numeric_base
from ne_dynamics_ros.dynamics.dh import Convention
from ne_dynamics_ros.dynamics.standard_parameters import inertial_index
from ne_dynamics_ros.dynamics.rnea import (inertia_times, link_wrench, rnea_dh, rnea_mdh,
                                           vector_add, vector_cross, vector_scale)

#: Gravity the generated programs are written for, m/s² in the base link frame.
GRAVITY = (0.0, 0.0, -9.81)


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
            link, a=snap(link.a), d=snap(link.d), cos_alpha=snap(link.cos_alpha),
            sin_alpha=snap(link.sin_alpha), mass=snap(link.mass),
            first_moment=tuple(snap(v) for v in link.first_moment),
            inertia_origin=tuple(tuple(snap(v) for v in row) for row in link.inertia_origin)))
    return links


def _differ(a, b):
    """Return a - b, exactly 0 when equal to within SNAP of their size (a symmetric link)."""
    return 0.0 if abs(a - b) <= SNAP * max(abs(a), abs(b)) else a - b


def body_wrench_products(link, w, wd, vd, b):
    """Return the body wrench of :func:`~ne_dynamics_ros.dynamics.rnea.link_wrench`, symbolically.

    Same F and N, but the gyroscopic moment ω × (J ω) is written on the products
    ω_x ω_y, ω_x ω_z, ω_y ω_z, ω_x², ω_y², ω_z² that b already formed (Renaud 1987, step 2:
    δ = ω ⊗ ω), with the inertia differences as constants (Khalil's customised
    Newton–Euler):

        (ω × Jω)_x = J_xz ω_x ω_y + J_yz (ω_y² - ω_z²) + (J_zz - J_yy) ω_y ω_z - J_xy ω_x ω_z

    and cyclically. With the base parameters' sparse J (YY grouped away, most products
    zero) a term costs one multiplication instead of the 15 M + 9 A of Jω then ω × Jω.
    """
    ms = link.first_moment
    J = link.inertia_origin
    F = vector_add(vector_scale(link.mass, vd), inertia_times(b, ms))
    xx, yy, zz = w[0] * w[0], w[1] * w[1], w[2] * w[2]
    xy, xz, yz = w[0] * w[1], w[0] * w[2], w[1] * w[2]
    (jxx, jxy, jxz), (_, jyy, jyz), (_, _, jzz) = J
    gyro = (jxz * xy + jyz * (yy - zz) + _differ(jzz, jyy) * yz - jxy * xz,
            jxy * yz + jxz * (zz - xx) + _differ(jxx, jzz) * xz - jyz * xy,
            jyz * xz + jxy * (xx - yy) + _differ(jyy, jxx) * xy - jxz * yz)
    N = vector_add(vector_add(inertia_times(J, wd), gyro), vector_cross(ms, vd))
    return F, N


def body_wrench_b(link, w, wd, vd, b):
    """Return the body wrench of :func:`~ne_dynamics_ros.dynamics.rnea.link_wrench`, on b.

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
    F = vector_add(vector_scale(link.mass, vd), inertia_times(b, ms))
    (jxx, jxy, jxz), (_, jyy, jyz), (_, _, jzz) = J
    xy, xz, yz = w[0] * w[1], w[0] * w[2], w[1] * w[2]
    N = (jxx * wd[0] + _differ(jzz, jyy) * yz - jxy * b[2][0] + jxz * b[1][0]
         + jyz * (b[1][1] - b[2][2]),
         jyy * wd[1] + _differ(jxx, jzz) * xz + jxy * b[2][1] + jxz * (b[2][2] - b[0][0])
         - jyz * b[0][1],
         jzz * wd[2] + _differ(jyy, jxx) * xy + jxy * (b[0][0] - b[1][1]) - jxz * b[1][2]
         + jyz * b[0][2])
    N = vector_add(N, vector_cross(ms, vd))
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
    inertia = tuple(tuple(snap(link.inertia_origin[r][c] + armature * z[r] * z[c])
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
    :func:`body_wrench_products`; on the elements of b, :func:`body_wrench_b`) gives the
    shorter program, chosen link by link from the outermost.
    """
    if use_base_parameters:
        model = reduced_model(model)
    forms = [body_wrench_b] * model.n
    best = _program(model, forms)
    for index in range(model.n - 1, -1, -1):
        for form in (body_wrench_products, link_wrench):
            trial = forms[:index] + [form] + forms[index + 1:]
            candidate = _program(model, trial)
            if _total(candidate) < _total(best):
                best, forms = candidate, trial
    return best


def _total(program):
    return program.operations['mul'] + program.operations['add']


def _program(model, forms):
    """Generate ``model``'s program, link i's body wrench by ``forms[i]``.

    In steps (:class:`Trace`): the joints' symbols (angles with quarter turns folded),
    the runs of parallel joints turned at once, the recursion traced, then the program
    pruned to what the efforts read and named after the quantities.
    """
    trace = Trace(model)
    trace.joint_symbols()
    trace.combine_parallel_joints()
    outputs = trace.efforts(forms)
    return trace.program(outputs)


class Trace:
    """One model's recursion traced symbol by symbol.

    The state of :func:`_program`, and of
    :func:`~ne_dynamics_ros.codegen.payload_step.payload_step_source`, which traces the
    two-rate recursion with it.
    """

    def __init__(self, model):
        self.model = model
        self.emitter = Emitter()
        self.links = _exact_links(model)
        self.armature = [snap(value) for value in model.armature]
        links, armature = self.links, self.armature
        if links and not links[0].prismatic and armature[0]:
            links[0], armature[0] = _with_first_armature(links[0], armature[0],
                                                         model.convention), 0.0
        self.trig, self.cos_theta, self.sin_theta, self.d = [], [], [], []
        self.angles, self.combined, self.symmetric = [], None, None
        self.labels = {}     # emitted name -> the quantity it first is (w3z, F6z, ...)

    def trig_pair(self, label, argument, theta):
        """Return the cos and sin of ``argument + theta`` as symbols (quarter turns folded)."""
        quarter = theta / (math.pi / 2)
        emitter, trig = self.emitter, self.trig
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

    def joint_symbols(self, symmetric_tail=True):
        """Make each joint's cos, sin of its angle and its offset d, symbols or numbers.

        ``symmetric_tail`` False: every joint turns, even the last of an axis-symmetric
        tail (whose frames other quantities than the efforts may need).
        """
        for i, link in enumerate(self.links):
            if link.prismatic:
                self.cos_theta.append(snap(math.cos(link.theta)))
                self.sin_theta.append(snap(math.sin(link.theta)))
                self.d.append(Symbol(self.emitter, name=f'q{i + 1}') + link.d)
                continue
            self.d.append(link.d)
            c, s = self.trig_pair(f'{i + 1}', f'q{i + 1}', link.theta)
            self.cos_theta.append(c)
            self.sin_theta.append(s)
        # In MDH frames joint i turns frame i about its own z (in DH, about z_{i-1}).
        if self.model.convention is Convention.MDH and symmetric_tail:
            self.symmetric = _axis_symmetric_tail(self.links)
        if self.symmetric is not None:
            self.cos_theta[self.symmetric], self.sin_theta[self.symmetric] = 1.0, 0.0

    def combine_parallel_joints(self):
        """Turn runs of parallel revolute joints (MDH alpha = 0 between them) at once.

        Their ω, ω̇ are turned through the summed angle, as Renaud (1987) does with s23, c23
        (forward_mdh).
        """
        if self.model.convention is not Convention.MDH:
            return
        links, symmetric = self.links, self.symmetric
        self.combined, start = [None] * self.model.n, None
        for i, link in enumerate(links):
            if (start is None or link.prismatic or i == symmetric
                    or (link.cos_alpha, link.sin_alpha) != (1.0, 0.0)):
                start = None if link.prismatic or i == symmetric else i
                continue
            label = f'{start + 1}_{i + 1}'
            self.angles.append((f'q{label}', f'q{i}' if i - 1 == start
                                else f'q{start + 1}_{i}', f'q{i + 1}'))
            self.combined[i] = self.trig_pair(
                label, f'q{label}', sum(links[j].theta for j in range(start, i + 1)))

    def label(self, name, vector):
        """Name an emitted quantity after the first vector component it is (w3z, F6z)."""
        for axis, value in zip('xyz', vector):
            if (isinstance(value, Symbol) and value.value is None and value.sign > 0
                    and value.name[0] == 'x' and value.name not in self.labels):
                self.labels[value.name] = f'{name}{axis}'

    def efforts(self, forms):
        """Trace the recursion; return each joint's effort (armature added) as text."""
        model, emitter = self.model, self.emitter
        n = model.n
        qd = [Symbol(emitter, name=f'qd{i + 1}') for i in range(n)]
        qdd = [Symbol(emitter, name=f'qdd{i + 1}') for i in range(n)]
        R0 = model.base_transform[:3, :3]
        base_acc = tuple(snap(v) for v in (-(R0.T @ np.array(GRAVITY))).tolist())
        zero = (0.0, 0.0, 0.0)
        recursion = rnea_mdh if model.convention is Convention.MDH else rnea_dh
        by_link = {id(link): form for link, form in zip(self.links, forms)}

        def body_wrench(link, *motion):
            return by_link[id(link)](link, *motion)

        tau = recursion(self.links, self.cos_theta, self.sin_theta, self.d, qd, qdd,
                        base_acc, zero, zero, body_wrench=body_wrench, label=self.label,
                        **({} if self.combined is None else {'combined': self.combined}))
        outputs = []
        for i, t in enumerate(tau):
            total = (t if isinstance(t, Symbol) else Symbol(emitter, value=snap(t)))
            total = total + qdd[i] * self.armature[i]
            outputs.append(total.text())
        return outputs

    def program(self, outputs):
        """Prune to what ``outputs`` need, name the quantities; return the program."""
        emitter, labels, model = self.emitter, self.labels, self.model
        # Keep only what the efforts need (quantities whose every use was multiplied by a
        # zero parameter were emitted in the outward pass but are never read).
        needed = {word for text in outputs for word in text.lstrip('-').split()}
        lines = []
        for line in reversed(emitter.lines):
            if line[0] in needed:
                lines.append(line)
                needed.update((line[1], line[3]))
        # named after the quantities (OpenSYMORO's style: w3z, wd4x, F6z, N5y); the other
        # intermediates keep their x numbers
        emitter.lines = [(labels.get(name, name), labels.get(left, left), operator,
                          labels.get(right, right))
                         for name, left, operator, right in lines[::-1]]
        outputs = [('-' if text.startswith('-') else '')
                   + labels.get(text.lstrip('-'), text.lstrip('-')) for text in outputs]
        trig = [t for t in self.trig if t[0] in needed]
        needed.update(t[2] for t in trig)
        kept = []
        for name, left, right in reversed(self.angles):
            if name in needed:
                kept.append((name, left, right))
                needed.update((left, right))
        angles = kept[::-1]
        operations = emitter.operations()
        operations['add'] += sum(1 for line in trig if line[3] != 0.0) + len(angles)
        operations['trig'] = len(trig)
        return GeneratedDynamics(list(model.joint_names), model.convention.value, angles,
                                 trig, emitter.lines, outputs, operations,
                                 model.standard_parameters())
