"""Slotine & Li's step with a load's parameters, generated as straight-line Python.

The adaptive law of :mod:`ne_dynamics_ros.control.laws.slotine_li` needs, per control step,

    τ = Y(q, q̇, q̇_r, a) π̂ + …  and  g = Y_loadᵀ s,   a = q̈_r + K s,

(K_D = K M̂(q) folded into the acceleration argument: ``M̂ a = M̂ q̈_r + K_D s``). Built
from the NumPy regressor (:func:`~ne_dynamics_ros.dynamics.regressor.reference_regressor`)
that is a (n, 13 n) array per step; here it is one generated function, as Renaud (1987)
generates the inverse dynamics
(:mod:`ne_dynamics_ros.codegen.tracing`): the two-rate recursion
(:func:`~ne_dynamics_ros.dynamics.rnea.rnea_reference`) runs on symbols over the arm's
base parameters, the load's 10 parameters ``p`` (in its link's frame, mapped to the
body's DH frame by the constant T of
:func:`~ne_dynamics_ros.control.laws.slotine_li.link_frame`) added to its body as symbols; and
``g`` is the power of the load's wrench map in the body's twist at rates s
(:func:`~ne_dynamics_ros.dynamics.rnea.body_twist`,
:func:`~ne_dynamics_ros.dynamics.rnea.wrench_power`): ``sᵀ Y_load = ξ_b(s)ᵀ A_b T``,
no regressor formed.

The generated ``step(q, qd, q_d, qd_d, qdd_d, lam, k, p)`` takes sequences of floats
(n each; ``p`` 10) and returns ``(tau, g)``: n efforts (N·m, N; armature included,
friction not) and the 10 entries of ``Y_loadᵀ s``. It is checked against the NumPy
regressor when built (:class:`PayloadStep`).
"""
import collections
import dataclasses
import threading

import numpy as np

from ne_dynamics_ros.codegen.compiled import program_key
from ne_dynamics_ros.codegen.python_emitter import python_lines, load_python
from ne_dynamics_ros.codegen.symbols import Symbol
from ne_dynamics_ros.codegen.tracing import GRAVITY, reduced_model, Trace
from ne_dynamics_ros.dynamics.base_parameters import numeric_base
from ne_dynamics_ros.dynamics.dh import Convention
from ne_dynamics_ros.dynamics.standard_parameters import inertial_index, PER_JOINT
from ne_dynamics_ros.dynamics.regressor import reference_regressor
from ne_dynamics_ros.dynamics.rnea import body_twist, rnea_reference, wrench_power
from ne_dynamics_ros.errors import ModelError


def _loaded_link(link, T, p):
    """``link`` with the load ``T p`` (symbols) added to its 10 parameters."""
    load = []
    for row in T:
        total = p[0] * 0.0
        for coefficient, value in zip(row, p):
            total = total + value * float(coefficient)
        load.append(total)
    xx, xy, xz, yy, yz, zz, mx, my, mz, m = load
    J = link.inertia_origin
    return dataclasses.replace(
        link, mass=m + link.mass,
        first_moment=tuple(a + b for a, b in zip((mx, my, mz), link.first_moment)),
        inertia_origin=((xx + J[0][0], xy + J[0][1], xz + J[0][2]),
                        (xy + J[1][0], yy + J[1][1], yz + J[1][2]),
                        (xz + J[2][0], yz + J[2][1], zz + J[2][2])))


def _rate_symbols(emitter, n):
    """Return the symbols q̇, q̇_r, q̈_r + K s and s of the generated step."""
    return ([Symbol(emitter, name=f'{v}{i + 1}') for i in range(n)]
            for v in ('qd', 'qr', 'qa', 'sl'))


def _source(trace, model, tau, qa, powers, count, doc):
    """Return the module text of ``step`` from the traced efforts and powers."""
    emitter, n = trace.emitter, model.n
    outputs = []
    for i, t in enumerate(tau):
        total = t if isinstance(t, Symbol) else Symbol(emitter, value=t)
        outputs.append((total + qa[i] * trace.armature[i]).text())
    outputs += [g.text() if isinstance(g, Symbol) else repr(float(g)) for g in powers]
    program = trace.program(outputs)
    names = ', '.join(f'q{i + 1}' for i in range(n)) + (',' if n == 1 else '')
    parameters = ', '.join(f'p{k}' for k in range(count)) + (',' if count == 1 else '')
    prelude = [f'    {names} = q', f'    {parameters} = p']
    for i in range(n):
        prelude += [f'    qd{i + 1} = qd[{i}]',
                    f'    qr{i + 1} = qd_d[{i}] + lam[{i}] * (q_d[{i}] - q{i + 1})',
                    f'    sl{i + 1} = qr{i + 1} - qd{i + 1}',
                    f'    qa{i + 1} = qdd_d[{i}] + lam[{i}] * (qd_d[{i}] - qd{i + 1})'
                    f' + k[{i}] * sl{i + 1}']
    return ('from math import cos, sin\n\n\n'
            'def step(q, qd, q_d, qd_d, qdd_d, lam, k, p):\n'
            f'    """Return (tau, Y^T s) of one state: {doc}."""\n'
            + '\n'.join(prelude + python_lines(program, unpack=False)) + '\n'
            f'    return [{", ".join(program.outputs[:n])}], '
            f'[{", ".join(program.outputs[n:])}]\n')


def _is_default(gravity):
    return tuple(float(g) for g in gravity) == GRAVITY


def _powers(emitter, links, mdh, trace, frames, rates, spec):
    """Return ``Σ_k c_k P_k`` per ``(body, c)`` of ``spec``.

    P is the body's :func:`wrench_power` in its twist at ``rates`` (one twist per body,
    shared).
    """
    by_body, out = {}, []
    for body, coefficients in spec:
        if body not in by_body:
            v, w = body_twist(links, mdh, trace.cos_theta, trace.sin_theta, trace.d, rates,
                              body)
            by_body[body] = wrench_power(*frames[body][1 if mdh else 2:], v, w)
        total = Symbol(emitter, value=0.0)
        for c, power in zip(coefficients, by_body[body]):
            if c:
                total = total + power * float(c)
        out.append(total)
    return out


def payload_spec(body, T):
    """Return the adapted parameters of a load on ``body``: ``(body, T[:, j])``, j < 10."""
    T = np.asarray(T, dtype=float)
    return [(body, T[:, j].tolist()) for j in range(10)]


def base_spec(columns):
    """Return the adapted parameters ``columns`` (standard indices): ``(body, unit vector)``."""
    return [(int(c) // PER_JOINT, [1.0 if k == int(c) % PER_JOINT else 0.0 for k in range(10)])
            for c in columns]


def measured_rows_source(model, spec, gravity=(0.0, 0.0, -9.81), fixed_inertia=True):
    """Return the source of ``rows(q, qd, qdd)``: the measured state's prediction terms.

    ``(tau_fixed, W)``: the efforts of what stays (the model's bodies when
    ``fixed_inertia``, else none; its armature; no friction), n, and the rows of the
    adapted parameters' regressor ``W(q, q̇, q̈)``, n lists of len(spec): row i the power
    in the twist of unit rate on joint i. For the composite update's prediction error.
    """
    base = reduced_model(model) if _is_default(gravity) and fixed_inertia else model
    trace = Trace(base)
    n, emitter = model.n, trace.emitter
    if not fixed_inertia:
        trace.armature = [float(a) for a in model.armature]
        trace.links = [dataclasses.replace(
            link, mass=0.0, first_moment=(0.0, 0.0, 0.0),
            inertia_origin=((0.0,) * 3,) * 3) for link in trace.links]
    trace.joint_symbols(symmetric_tail=False)          # the rows need every frame
    qd, qdd = ([Symbol(emitter, name=f'{v}{i + 1}') for i in range(n)] for v in ('qd', 'qa'))
    mdh = model.convention is Convention.MDH
    base_acc = tuple(float(v) for v in model.base_acceleration(gravity))
    tau, frames = rnea_reference(trace.links, mdh, trace.cos_theta, trace.sin_theta, trace.d,
                                 qd, qd, qdd, base_acc)
    rows = [_powers(emitter, trace.links, mdh, trace, frames,
                    [1.0 if j == i else 0.0 for j in range(n)], spec) for i in range(n)]
    outputs = []
    for i, t in enumerate(tau):
        total = t if isinstance(t, Symbol) else Symbol(emitter, value=t)
        outputs.append((total + qdd[i] * trace.armature[i]).text())
    m = len(spec)
    outputs += [g.text() if isinstance(g, Symbol) else repr(float(g.value)) for row in rows
                for g in row]
    program = trace.program(outputs)
    names = ', '.join(f'q{i + 1}' for i in range(n)) + (',' if n == 1 else '')
    prelude = [f'    {names} = q'] + [f'    qd{i + 1}, qa{i + 1} = qd[{i}], qdd[{i}]'
                                      for i in range(n)]
    out = program.outputs
    rows_text = ', '.join('[' + ', '.join(out[n + i * m:n + (i + 1) * m]) + ']'
                          for i in range(n))
    return ('from math import cos, sin\n\n\n'
            'def rows(q, qd, qdd):\n'
            '    """Return (tau_fixed, W rows) of one measured state."""\n'
            + '\n'.join(prelude + python_lines(program, unpack=False)) + '\n'
            f'    return [{", ".join(out[:n])}], [{rows_text}]\n')


def payload_step_source(model, body, T, gravity=(0.0, 0.0, -9.81)):
    """Return the Python source of ``step`` (module docstring) for a load on ``body``.

    Args:
        model: the arm's :class:`~ne_dynamics_ros.dynamics.model.RobotModel` (its
            friction is not used).
        body: the chain body (0-based) the load is fixed to.
        T: (10, 10) the load's parameters in the body's DH frame from those in its link's
            frame.
        gravity: (3,) m/s² in the base link frame, written into the program.
    """
    # the base parameters are grouped under the default gravity (a parameter no state can
    # move under it may under another): under any other, the standard ones
    trace = Trace(reduced_model(model) if _is_default(gravity) else model)
    emitter, n = trace.emitter, model.n
    qd, qr, qa, sl = _rate_symbols(emitter, n)
    p = [Symbol(emitter, name=f'p{k}') for k in range(10)]
    links = trace.links
    # the load before the joints' symbols: a body with symbolic parameters is never taken
    # for an axis-symmetric tail whose last rotation could be dropped
    links[body] = _loaded_link(links[body], np.asarray(T, dtype=float).tolist(), p)
    trace.joint_symbols()
    mdh = model.convention is Convention.MDH
    base_acc = tuple(float(v) for v in model.base_acceleration(gravity))
    tau, frames = rnea_reference(links, mdh, trace.cos_theta, trace.sin_theta, trace.d,
                                 qd, qr, qa, base_acc, label=trace.label)
    powers = _powers(emitter, links, mdh, trace, frames, sl, payload_spec(body, T))
    return _source(trace, model, tau, qa, powers, 10, f'a load on body {body + 1}')


def base_columns(model, gravity=(0.0, 0.0, -9.81)):
    """Return ``(columns, values)``: the adapted parameters of ``adaptation: base``.

    Under the default gravity the base parameters (Gautier's QR,
    :func:`~ne_dynamics_ros.dynamics.base_parameters.numeric_base`): ``columns`` the
    standard indices of the kept parameters, ``values`` their grouped values
    ``π_kept + K π_dependent`` of ``model``; under any other gravity (the grouping is
    the default gravity's) every inertial parameter.
    """
    inertial = inertial_index(model.n)
    pi = model.standard_parameters()
    if not _is_default(gravity):
        return inertial, pi[inertial]
    kept, K, dependent, _ = numeric_base(model)
    values = pi[inertial[kept]] + (K @ pi[inertial[dependent]] if dependent.size else 0.0)
    return inertial[kept], values


def base_step_source(model, columns, gravity=(0.0, 0.0, -9.81)):
    """Return the Python source of ``step`` with the parameters ``columns`` as symbols.

    Every inertial parameter not in ``columns`` (standard indices) is zero, the armature
    is the model's; ``g = (Y_columns)ᵀ s``, each body's part the power of its wrench map
    in its twist at rates s.
    """
    trace = Trace(model)
    emitter, n = trace.emitter, model.n
    qd, qr, qa, sl = _rate_symbols(emitter, n)
    symbols = {int(c): Symbol(emitter, name=f'p{j}') for j, c in enumerate(columns)}
    trace.armature = [float(a) for a in model.armature]     # not folded into link 1
    links = trace.links
    for i, link in enumerate(links):
        xx, xy, xz, yy, yz, zz, mx, my, mz, m = (symbols.get(PER_JOINT * i + k, 0.0)
                                                 for k in range(10))
        links[i] = dataclasses.replace(
            link, mass=m, first_moment=(mx, my, mz),
            inertia_origin=((xx, xy, xz), (xy, yy, yz), (xz, yz, zz)))
    trace.joint_symbols()
    mdh = model.convention is Convention.MDH
    base_acc = tuple(float(v) for v in model.base_acceleration(gravity))
    tau, frames = rnea_reference(links, mdh, trace.cos_theta, trace.sin_theta, trace.d,
                                 qd, qr, qa, base_acc, label=trace.label)
    powers = _powers(emitter, links, mdh, trace, frames, sl, base_spec(columns))
    return _source(trace, model, tau, qa, powers, len(columns),
                   f'{len(columns)} parameters of the arm')


class GeneratedStep:
    """A generated step, checked against the NumPy regressor when built.

    The step's parameters p stand for the standard parameters ``fixed + mapping p``.

    Args:
        source: the module text (:func:`payload_step_source`, :func:`base_step_source`);
            rows_source: that of :func:`measured_rows_source` for the same parameters.
        model: the arm's model (its kinematics; friction is not used).
        fixed: (13 n,) standard parameters that stay; mapping: (13 n, m).
        gravity: (3,) m/s², the step's.
        states: random states it is checked on.

    Attributes:
        step: the generated function (module docstring); rows: the measured state's
            (:func:`measured_rows_source`).

    Raises:
        ModelError: the generated step differs from the regressor (relative 1e-9).
    """

    def __init__(self, source, rows_source, model, fixed, mapping,
                 gravity=(0.0, 0.0, -9.81), states=10):
        self.step = load_python(source)['step']
        self.rows = load_python(rows_source)['rows']
        rng = np.random.default_rng(0)
        worst = 0.0
        for _ in range(states):
            q, qd, q_d, qd_d, qdd_d = rng.normal(0, 1, (5, model.n))
            lam, k = rng.uniform(1, 50, (2, model.n))
            p = rng.normal(0, 1, mapping.shape[1])
            tau, g = self.step(*(v.tolist() for v in (q, qd, q_d, qd_d, qdd_d, lam, k, p)))
            qd_r = qd_d + lam * (q_d - q)
            s = qd_r - qd
            a = qdd_d + lam * (qd_d - qd) + k * s
            Y = reference_regressor(model, q, qd, qd_r, a, gravity)
            worst = max(worst, _relative(tau, Y @ (fixed + mapping @ p)),
                        _relative(g, (Y @ mapping).T @ s))
            tau_fixed, W = self.rows(q.tolist(), qd.tolist(), qdd_d.tolist())
            Y = reference_regressor(model, q, qd, qd, qdd_d, gravity)
            worst = max(worst, _relative(tau_fixed, Y @ fixed), _relative(W, Y @ mapping))
            if not worst <= 1e-9:
                raise ModelError(f'the generated adaptive step differs from the regressor by '
                                 f'{worst:.3g} (relative) at q={q.tolist()}')


def _relative(got, expected):
    """Largest difference relative to max(1, |expected|)."""
    expected = np.asarray(expected, dtype=float)
    return float(np.abs(np.asarray(got, dtype=float) - expected).max()
                 / max(1.0, float(np.abs(expected).max())))


def without_friction(model):
    """Return the model's (13 n,) standard parameters with Fv, Fc set to zero."""
    pi = model.standard_parameters().copy()
    pi[11::PER_JOINT] = 0.0
    pi[12::PER_JOINT] = 0.0
    return pi


#: Checked steps by everything they were generated and checked from, least recently used
#: first (at most 16): an adaptive law built again for the same arm and load (a node
#: reconfigured, a test's second controller) reuses its step; generating and checking one
#: takes ~40 ms for six joints.
_STEPS = collections.OrderedDict()
_STEPS_LOCK = threading.Lock()


def _step_key(kind, model, fixed, mapping, gravity, states):
    """Return what a generated step is made and checked from (:func:`_cached_step`)."""
    return (kind, program_key(model), fixed.tobytes(), mapping.shape, mapping.tobytes(),
            tuple(float(g) for g in gravity), states)


def _cached_step(instance, key, sources, model, fixed, mapping, gravity, states):
    """Give ``instance`` the step and rows of ``key``: checked once, then reused."""
    with _STEPS_LOCK:
        done = _STEPS.get(key)
        if done is not None:
            _STEPS.move_to_end(key)
    if done is not None:
        instance.step, instance.rows = done
        return
    GeneratedStep.__init__(instance, *sources(), model, fixed, mapping, gravity, states)
    with _STEPS_LOCK:
        _STEPS[key] = (instance.step, instance.rows)
        while len(_STEPS) > 16:
            _STEPS.popitem(last=False)


class PayloadStep(GeneratedStep):
    """The generated step of one arm and load link (:func:`payload_step_source`), checked.

    A step made from the same arm, load link, T, gravity and checks as one of the last 16
    is theirs (generated and checked once).
    """

    def __init__(self, model, body, T, gravity=(0.0, 0.0, -9.81), states=10):
        mapping = np.zeros((PER_JOINT * model.n, 10))
        mapping[PER_JOINT * body:PER_JOINT * body + 10] = T
        fixed = without_friction(model)
        _cached_step(self, _step_key('payload', model, fixed, mapping, gravity, states),
                     lambda: (payload_step_source(model, body, T, gravity),
                              measured_rows_source(model, payload_spec(body, T), gravity)),
                     model, fixed, mapping, gravity, states)


class BaseStep(GeneratedStep):
    """The generated step adapting ``columns`` (:func:`base_step_source`), checked.

    Reused as :class:`PayloadStep` is.
    """

    def __init__(self, model, columns, gravity=(0.0, 0.0, -9.81), states=10):
        fixed = without_friction(model)
        fixed[inertial_index(model.n)] = 0.0
        mapping = np.zeros((PER_JOINT * model.n, len(columns)))
        mapping[np.asarray(columns, dtype=int), np.arange(len(columns))] = 1.0
        _cached_step(self, _step_key('base', model, fixed, mapping, gravity, states),
                     lambda: (base_step_source(model, columns, gravity),
                              measured_rows_source(model, base_spec(columns), gravity,
                                                   fixed_inertia=False)),
                     model, fixed, mapping, gravity, states)


__all__ = ['base_columns', 'base_spec', 'base_step_source', 'BaseStep', 'GeneratedStep',
           'measured_rows_source', 'payload_spec', 'payload_step_source', 'PayloadStep',
           'without_friction']
