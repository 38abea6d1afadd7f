"""Slotine & Li's step with a load's parameters, generated as straight-line Python.

The adaptive law of :mod:`ne_dynamics_ros.control.adaptive` needs, per control step,

    τ = Y(q, q̇, q̇_r, a) π̂ + …  and  g = Y_loadᵀ s,   a = q̈_r + K s,

(K_D = K M̂(q) folded into the acceleration argument: ``M̂ a = M̂ q̈_r + K_D s``). Built
from the NumPy regressor (:func:`~ne_dynamics_ros.dynamics.regressor.reference_regressor`)
that is a (n, 13 n) array per step; here it is one generated function, as Renaud
(``004_6b1448616b3233f9.txt``) generates the inverse dynamics
(:mod:`ne_dynamics_ros.codegen.tracing`): the two-rate recursion
(:func:`~ne_dynamics_ros.dynamics.rnea.rnea_reference`) runs on symbols over the arm's
base parameters, the load's 10 parameters ``p`` (in its link's frame, mapped to the
body's DH frame by the constant T of
:func:`~ne_dynamics_ros.control.adaptive.link_frame`) added to its body as symbols; and
``g`` is the power of the load's wrench map in the body's twist at rates s
(:func:`~ne_dynamics_ros.dynamics.rnea.body_twist`,
:func:`~ne_dynamics_ros.dynamics.rnea.wrench_power`): ``sᵀ Y_load = ξ_b(s)ᵀ A_b T``,
no regressor formed.

The generated ``step(q, qd, q_d, qd_d, qdd_d, lam, k, p)`` takes sequences of floats
(n each; ``p`` 10) and returns ``(tau, g)``: n efforts (N·m, N; armature included,
friction not) and the 10 entries of ``Y_loadᵀ s``. It is checked against the NumPy
regressor when built (:class:`PayloadStep`).
"""
import dataclasses
import math

import numpy as np

from ne_dynamics_ros.codegen.python_emitter import python_lines, load_python
from ne_dynamics_ros.codegen.symbols import Symbol
from ne_dynamics_ros.codegen.tracing import GRAVITY, reduced_model, Trace
from ne_dynamics_ros.dynamics.dh import Convention
from ne_dynamics_ros.dynamics.parameters import PER_JOINT
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
    default = tuple(float(g) for g in gravity) == GRAVITY
    trace = Trace(reduced_model(model) if default else model)
    emitter, n = trace.emitter, model.n
    qd, qr, qa, sl = ([Symbol(emitter, name=f'{v}{i + 1}') for i in range(n)]
                      for v in ('qd', 'qr', 'qa', 'sl'))
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
    v, w = body_twist(links, mdh, trace.cos_theta, trace.sin_theta, trace.d, sl, body)
    g_body = wrench_power(*frames[body][1 if mdh else 2:], v, w)
    outputs = []
    for i, t in enumerate(tau):
        total = t if isinstance(t, Symbol) else Symbol(emitter, value=t)
        outputs.append((total + qa[i] * trace.armature[i]).text())
    for j in range(10):
        total = Symbol(emitter, value=0.0)
        for k in range(10):
            total = total + g_body[k] * float(T[k][j])
        outputs.append(total.text() if isinstance(total, Symbol) else repr(float(total)))
    program = trace.program(outputs)
    names = ', '.join(f'q{i + 1}' for i in range(n)) + (',' if n == 1 else '')
    prelude = [f'    {names} = q', '    p0, p1, p2, p3, p4, p5, p6, p7, p8, p9 = p']
    for i in range(n):
        prelude += [f'    qd{i + 1} = qd[{i}]',
                    f'    qr{i + 1} = qd_d[{i}] + lam[{i}] * (q_d[{i}] - q{i + 1})',
                    f'    sl{i + 1} = qr{i + 1} - qd{i + 1}',
                    f'    qa{i + 1} = qdd_d[{i}] + lam[{i}] * (qd_d[{i}] - qd{i + 1})'
                    f' + k[{i}] * sl{i + 1}']
    body_lines = python_lines(program, unpack=False)
    return ('from math import cos, sin\n\n\n'
            'def step(q, qd, q_d, qd_d, qdd_d, lam, k, p):\n'
            '    """Return (tau, Y_load^T s) of one state (codegen.payload_step)."""\n'
            + '\n'.join(prelude + body_lines) + '\n'
            f'    return [{", ".join(program.outputs[:n])}], '
            f'[{", ".join(program.outputs[n:])}]\n')


class PayloadStep:
    """The generated step of one arm and load link, checked when built.

    Args:
        model, body, T, gravity: as :func:`payload_step_source`.
        states: random states it is checked on against the NumPy regressor.

    Attributes:
        step: the generated function (module docstring).

    Raises:
        ModelError: the generated step differs from the regressor (relative 1e-9).
    """

    def __init__(self, model, body, T, gravity=(0.0, 0.0, -9.81), states=10):
        self.step = load_python(payload_step_source(model, body, T, gravity))['step']
        nominal = model.standard_parameters().copy()
        nominal[11::PER_JOINT] = 0.0
        nominal[12::PER_JOINT] = 0.0
        rng = np.random.default_rng(0)
        col = PER_JOINT * body
        for _ in range(states):
            q, qd, q_d, qd_d, qdd_d = rng.normal(0, 1, (5, model.n))
            lam, k = rng.uniform(1, 50, (2, model.n))
            p = rng.normal(0, 1, 10)
            tau, g = self.step(*(v.tolist() for v in (q, qd, q_d, qd_d, qdd_d, lam, k, p)))
            qd_r = qd_d + lam * (q_d - q)
            s = qd_r - qd
            a = qdd_d + lam * (qd_d - qd) + k * s
            Y = reference_regressor(model, q, qd, qd_r, a, gravity)
            Y_load = Y[:, col:col + 10] @ T
            expected_tau = Y @ nominal + Y_load @ p
            expected_g = Y_load.T @ s
            scale = max(1.0, float(np.abs(expected_tau).max()), float(np.abs(expected_g).max()))
            error = max(float(np.abs(np.array(tau) - expected_tau).max()),
                        float(np.abs(np.array(g) - expected_g).max())) / scale
            if not error <= 1e-9:
                raise ModelError(f'the generated adaptive step differs from the regressor by '
                                 f'{error:.3g} (relative) at q={q.tolist()}')
        if not math.isfinite(error):
            raise ModelError('the generated adaptive step is not finite')


__all__ = ['payload_step_source', 'PayloadStep']
