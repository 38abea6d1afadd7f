#!/usr/bin/env python3
"""Benchmark: our RNEA (recursive and generated) against Pinocchio and Robotics Toolbox.

For the PUMA 560 and the UR5e, prints per-call time of ``model.rnea`` (one state), batch
time per state at N = 1, 100, 10 000, the same for the generated robot-specific program
(the method of Renaud 1987, :mod:`ne_dynamics_ros.codegen`: Python single call and
``rnea_batch``; its C99 source compiled through ``cffi`` and called from Python, when a C
compiler and cffi are present), and the same work done by ``pinocchio.rnea`` called in a
Python loop and by Robotics Toolbox ``rne`` (PUMA 560 only: RTB ships that arm's
published DH model, not the UR5e's), with ratios against Pinocchio.  Medians over
repeats; wall-clock ``time.perf_counter``. Then a table of operation counts: our general
recursion (counted by running it on counting numbers), the generated program (counted from
its own source), and those of Lee et al. (1982), Table 2; Angeles (2007), eq. 7.43 and
Table 7.4; and Renaud (1987).  Then what the momentum observer and the effort check cost,
and the tip kinematics a Cartesian law needs per state (pose, Jacobian and J̇q̇ in one
walk of the chain, :mod:`ne_dynamics_ros.dynamics.kinematics`) beside the RNEA.

Usage: python benchmarks/bench_rnea.py [--repeats R] [--quick]
"""
import argparse
import dataclasses
import math
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pinocchio as pin
import yaml

from ne_dynamics_ros import load_model
from ne_dynamics_ros.codegen import c_source, count_operations, generate, load_python
from ne_dynamics_ros.codegen import python_source

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARMS = {
    'puma560': (ROOT / 'config' / 'puma560.urdf', 'flange'),
    'ur5e': (ROOT / 'config' / 'ur5e.urdf', 'tool0'),
}


def median_time(fn, repeats, inner):
    """Median over ``repeats`` of the mean time of ``inner`` calls, seconds."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def puma_armature():
    """Armature G²·J_m of the PUMA 560 from config/puma560.yaml."""
    with open(ROOT / 'config' / 'puma560.yaml') as f:
        return yaml.safe_load(f)['computed_torque_node']['ros__parameters']['armature']


def compile_c(model, workdir):
    """Compile the generated C through cffi; return (function, ffi) or (None, reason)."""
    try:
        import cffi
    except ImportError:
        return None, 'cffi is not installed'
    if shutil.which('cc') is None and shutil.which('gcc') is None:
        return None, 'no C compiler on this machine'
    ffi = cffi.FFI()
    ffi.cdef('void ne_rnea(const double *q, const double *qd, const double *qdd, '
             'double *tau);\n'
             'void ne_rnea_batch(long count, const double *q, const double *qd, '
             'const double *qdd, double *tau);')
    module = f'_ne_generated_{model.tip_link}_{model.convention.value}'
    ffi.set_source(module, c_source(generate(model)), extra_compile_args=['-O2'])
    ffi.compile(tmpdir=str(workdir), verbose=False)
    sys.path.insert(0, str(workdir))
    compiled = __import__(module)
    return compiled.lib, compiled.ffi


def bench_generated(name, model, repeats, sizes, rng, workdir):
    """Rows for the generated program: Python single and batch, C single through cffi."""
    rows, notes = [], []
    source = python_source(generate(model))
    module = load_python(source)
    q, qd, qdd = rng.uniform(-1, 1, (3, 6))
    ql, qdl, qddl = q.tolist(), qd.tolist(), qdd.tolist()
    impl = f'gen {model.convention.value}'
    rows.append((name, impl, 'single call', 1,
                 median_time(lambda: module['rnea'](ql, qdl, qddl), repeats, 2000)))
    for N in sizes:
        Q, QD, QDD = rng.uniform(-1, 1, (3, N, 6))
        rows.append((name, impl, 'batch', N,
                     median_time(lambda: module['rnea_batch'](Q, QD, QDD), repeats,
                                 max(1, 2000 // N)) / N))
    lib, ffi = compile_c(model, workdir)
    if lib is None:
        notes.append(f'C through cffi not measured: {ffi}')
    else:
        function = lib.ne_rnea
        qc, qdc, qddc = (ffi.new('double[6]', v) for v in (ql, qdl, qddl))
        tau = ffi.new('double[6]')
        function(qc, qdc, qddc, tau)
        expected = model.rnea(q, qd, qdd)
        assert np.allclose(list(tau), expected, rtol=1e-12, atol=1e-12), 'C differs'
        rows.append((name, f'gen C {model.convention.value}', 'single call', 1,
                     median_time(lambda: function(qc, qdc, qddc, tau), repeats, 20000)))
        for N in sizes:
            Q, QD, QDD = (np.ascontiguousarray(a) for a in rng.uniform(-1, 1, (3, N, 6)))
            out = np.empty((N, 6))
            args = [ffi.from_buffer('double[]', a) for a in (Q, QD, QDD)]
            target = ffi.from_buffer('double[]', out)
            lib.ne_rnea_batch(N, *args, target)
            assert np.allclose(out, model.rnea(Q, QD, QDD), rtol=1e-12, atol=1e-12), 'C differs'
            rows.append((name, f'gen C {model.convention.value}', 'batch', N,
                         median_time(lambda: lib.ne_rnea_batch(N, *args, target), repeats,
                                     max(1, 20000 // N)) / N))
    return rows, notes, count_operations(source)


class Counting:
    """A number that counts the multiplications and additions made with it."""

    counts = {'mul': 0, 'add': 0}

    def __init__(self, value=0.0):
        self.value = value

    def _op(self, kind, other, result):
        Counting.counts[kind] += 1
        return Counting(result)

    def __add__(self, other):
        return self._op('add', other, 0.0)

    __radd__ = __sub__ = __rsub__ = __add__

    def __mul__(self, other):
        return self._op('mul', other, 0.0)

    __rmul__ = __mul__

    def __neg__(self):
        return self


def count_recursion(model):
    """Operations of our general recursion for one state: every quantity a counting number."""
    from ne_dynamics_ros.dynamics.rnea import rnea_dh, rnea_mdh
    C = Counting
    links = [dataclasses.replace(
        link, a=C(), d=C(), cos_alpha=C(), sin_alpha=C(), mass=C(),
        first_moment=(C(), C(), C()), inertia_origin=tuple((C(), C(), C()) for _ in range(3)))
        for link in model.links]
    n = model.n
    Counting.counts = {'mul': 0, 'add': 0}
    recursion = rnea_mdh if model.convention.value == 'mdh' else rnea_dh
    recursion(links, [C() for _ in range(n)], [C() for _ in range(n)],
              [C() for _ in range(n)], [C() for _ in range(n)], [C() for _ in range(n)],
              (C(), C(), C()), (C(), C(), C()), (C(), C(), C()))
    counts = dict(Counting.counts)
    counts['mul'] += n          # armature * qdd
    counts['add'] += n
    return counts


def pinocchio_model(path, armature):
    """Pinocchio's model of a URDF with the rotor inertias given, and its data."""
    pm = pin.buildModelFromUrdf(str(path))
    pm.armature[:] = armature
    return pm, pm.createData()


def pinocchio_loop(pm, pd, Q, QD, QDD):
    """Pinocchio's RNEA on (N, n) states, one call per state from a Python loop."""
    for k in range(len(Q)):
        pin.rnea(pm, pd, Q[k], QD[k], QDD[k])


def bench_arm(name, repeats, sizes):
    """Time our RNEA (both conventions), Pinocchio and RTB on one arm; return rows."""
    path, tip = ARMS[name]
    armature = puma_armature() if name == 'puma560' else [0.0] * 6
    rows = []
    pm, pd = pinocchio_model(path, armature)
    rtb = None
    if name == 'puma560':
        import roboticstoolbox as rtb_module
        rtb = rtb_module.models.DH.Puma560().nofriction(coulomb=True, viscous=True)
    rng = np.random.default_rng(0)
    notes, operations = [], {}
    workdir = pathlib.Path(tempfile.mkdtemp(prefix='ne_bench_'))
    for convention in ('mdh', 'dh'):
        model = load_model(str(path), tip_link=tip, convention=convention, armature=armature)
        q, qd, qdd = rng.uniform(-1, 1, (3, 6))
        t_single = median_time(lambda: model.rnea(q, qd, qdd), repeats, 200)
        rows.append((name, convention, 'single call', 1, t_single))
        for N in sizes:
            Q, QD, QDD = rng.uniform(-1, 1, (3, N, 6))
            inner = max(1, 2000 // N)
            t = median_time(lambda: model.rnea(Q, QD, QDD), repeats, inner) / N
            rows.append((name, convention, 'batch', N, t))
        generated_rows, generated_notes, counted = bench_generated(
            name, model, repeats, sizes, rng, workdir)
        rows += generated_rows
        notes += generated_notes
        operations[convention] = (count_recursion(model), counted)
    q, qd, qdd = rng.uniform(-1, 1, (3, 6))
    rows.append((name, 'pinocchio', 'single call', 1,
                 median_time(lambda: pin.rnea(pm, pd, q, qd, qdd), repeats, 2000)))
    for N in sizes:
        Q, QD, QDD = rng.uniform(-1, 1, (3, N, 6))
        rows.append((name, 'pinocchio loop', 'batch', N,
                     median_time(lambda: pinocchio_loop(pm, pd, Q, QD, QDD), repeats,
                                 max(1, 2000 // N)) / N))
    if rtb is not None:
        g = [0, 0, -9.81]
        rows.append((name, 'rtb rne', 'single call', 1,
                     median_time(lambda: rtb.rne(q, qd, qdd, gravity=g), repeats, 200)))
        for N in sizes:
            Q, QD, QDD = rng.uniform(-1, 1, (3, N, 6))
            rows.append((name, 'rtb rne', 'batch', N,
                         median_time(lambda: rtb.rne(Q, QD, QDD, gravity=g), repeats,
                                     max(1, 200 // N)) / N))
    shutil.rmtree(workdir, ignore_errors=True)
    return rows, notes, operations


def renaud_example_urdf():
    """Return the URDF of the 6R example robot of Renaud (1987).

    Its MDH table, centres of mass on one frame axis each, no inertia products (Renaud's
    stated assumptions), generic masses and principal moments.
    """
    h = math.pi / 2
    # (alpha_{i-1}, a_{i-1}, r_i, centre of mass in frame i, mass, principal moments)
    table = [(0, 0, 0, (0, 0, 0.1), 10, (0.3, 0.25, 0.2)),
             (h, 0, 0, (0.2, 0, 0), 8, (0.1, 0.4, 0.45)),
             (0, 0.4, 0, (0, 0.15, 0), 5, (0.2, 0.05, 0.21)),
             (h, 0, 0.4, (0, 0, -0.1), 2, (0.02, 0.03, 0.01)),
             (-h, 0, 0, (0, 0.05, 0), 1, (0.005, 0.004, 0.006)),
             (h, 0, 0, (0, 0, 0.05), 0.5, (0.001, 0.0012, 0.0008))]
    links, joints = ['<link name="base_link"/>'], []
    for i, (alpha, a, r, com, mass, moments) in enumerate(table, 1):
        links.append(
            f'<link name="link_{i}"><inertial><origin xyz="{com[0]} {com[1]} {com[2]}"/>'
            f'<mass value="{mass}"/><inertia ixx="{moments[0]}" ixy="0" ixz="0" '
            f'iyy="{moments[1]}" iyz="0" izz="{moments[2]}"/></inertial></link>')
        parent = 'base_link' if i == 1 else f'link_{i - 1}'
        joints.append(
            f'<joint name="joint_{i}" type="revolute"><parent link="{parent}"/>'
            f'<child link="link_{i}"/><origin xyz="{a} {-r * math.sin(alpha)} '
            f'{r * math.cos(alpha)}" rpy="{alpha} 0 0"/><axis xyz="0 0 1"/>'
            '<limit lower="-3" upper="3" effort="100" velocity="2"/></joint>')
    return '<robot name="renaud_6r">' + ''.join(links + joints) + '</robot>'


def chained_floats(operations):
    """Return a Python function doing ``operations`` float multiplications and additions.

    Ten operations per expression on 18 inputs (``((a * b + c) * d + ...)``): two
    interpreter instructions per operation, the fewest Python spends on one, in one
    repeated pattern (what the interpreter runs fastest: the same operations in an
    irregular order take longer). The yardstick for a generated ``rnea`` with that many
    operations on this machine.
    """
    lines, done, k = [], 0, 0
    while done < operations:
        width = min(10, operations - done)
        text = f'v{k % 18}'
        for j in range(width):
            text = f'({text} {"*+"[j % 2]} v{(k + 5 * j + 1) % 18})'
        lines.append(f'    t{k} = {text}')
        done, k = done + width, k + 1
    source = ('def chained(q, qd, qdd):\n'
              '    v0, v1, v2, v3, v4, v5 = q\n    v6, v7, v8, v9, v10, v11 = qd\n'
              '    v12, v13, v14, v15, v16, v17 = qdd\n' + '\n'.join(lines)
              + f'\n    return [{", ".join(f"t{i}" for i in range(min(k, 6)))}]\n')
    namespace = {}
    exec(compile(source, '<chained>', 'exec'), namespace)   # noqa: S102 (our own text)
    return namespace['chained']


def interleaved_medians(functions, repeats, inner):
    """Median over ``repeats`` of the mean time of ``inner`` calls of each function.

    The functions take turns in every repeat, so a slower minute of the machine hits all.
    """
    samples = [[] for _ in functions]
    for _ in range(repeats):
        for function, times in zip(functions, samples):
            start = time.perf_counter()
            for _ in range(inner):
                function()
            times.append((time.perf_counter() - start) / inner)
    return [statistics.median(times) for times in samples]


def print_goals(rows, rigid_total, generated, repeats):
    """Print issue 8's goals, each with this run's figure.

    The generated single call is timed again here, taking turns with two functions of
    chained float operations (:func:`chained_floats`) with its operation count and with
    Renaud's 279: the least a Python function of that many operations takes on this machine.
    The NumPy batch and Pinocchio's loop are timed again taking turns too, so that their
    ratio is not that of two different minutes of a shared machine.
    """
    t = {(r[0], r[1], r[2], r[3]): r[4] for r in rows}
    state = [0.9, 1.1, 0.95, 1.05, 1.0, 0.97]
    module = load_python(python_source(generated))
    program = module['rnea']
    total = generated.operations['mul'] + generated.operations['add']
    floor_ours, floor_renaud = chained_floats(total), chained_floats(279)
    single, floor, floor_279 = interleaved_medians(
        [lambda: program(state, state, state), lambda: floor_ours(state, state, state),
         lambda: floor_renaud(state, state, state)], repeats, 2000)
    # the NumPy batch and Pinocchio's loop again, taking turns, for their ratio
    pm, pd = pinocchio_model(ARMS['puma560'][0], puma_armature())
    Q, QD, QDD = np.random.default_rng(1).uniform(-1, 1, (3, 10000, 6))
    batch, loop = (value / 10000 for value in interleaved_medians(
        [lambda: module['rnea_batch'](Q, QD, QDD),
         lambda: pinocchio_loop(pm, pd, Q, QD, QDD)], repeats, 1))
    c_batch = t.get(('puma560', 'gen C mdh', 'batch', 10000))
    c_single = t.get(('puma560', 'gen C mdh', 'single call', 1))
    pin_single = t[('puma560', 'pinocchio', 'single call', 1)]
    verdict = {True: 'met', False: 'not met'}
    print(f'goals (PUMA 560, MDH, this run):\n'
          f'  operations, rigid bodies as Renaud 1987 counts: {rigid_total} (goal <= 300, '
          f'Renaud\'s 6R: 279): {verdict[rigid_total <= 300]}\n'
          f'  generated Python single call: {single * 1e6:.2f} µs (goal <= 8): '
          f'{verdict[single <= 8e-6]}\n'
          f'    taking turns with it, {total} float operations chained in one Python '
          f'function: {floor * 1e6:.2f} µs; Renaud\'s 279: {floor_279 * 1e6:.2f} µs '
          '(no sin/cos)\n'
          f'  NumPy batch at N = 10000: {batch * 1e6:.3f} µs/state = {batch / loop:.3f}x '
          f'Pinocchio in a loop ({loop * 1e6:.2f} µs; the two taking turns) (goal <= 0.1x): '
          f'{verdict[batch / loop <= 0.1]}')
    if c_single is None:
        print('  compiled C: not measured (no C compiler or cffi)')
        return
    loop_table = t[('puma560', 'pinocchio loop', 'batch', 10000)]
    print(f'  C batch at N = 10000: {c_batch * 1e6:.3f} µs/state = {c_batch / loop_table:.3f}x '
          f'(goal <= 0.1x): {verdict[c_batch / loop_table <= 0.1]}\n'
          f'  compiled C single call: {c_single * 1e6:.2f} µs, Pinocchio '
          f'{pin_single * 1e6:.2f} µs (goal <= Pinocchio): {verdict[c_single <= pin_single]}')


def print_safety_costs(repeats):
    """Print what the momentum observer adds per control cycle and the effort check costs.

    The observer: one :meth:`ContactSupervisor.observe` on plain floats (the control path),
    against the computed-torque command it rides along (``compute_effort_values``); the
    check: :func:`~ne_dynamics_ros.control.reference.effort_check.check_trajectory` per sample of a
    trajectory, on the node's trajectory thread.
    """
    from ne_dynamics_ros.control import ComputedTorqueController
    from ne_dynamics_ros.control.sensing.contact import ContactSupervisor
    from ne_dynamics_ros.control.reference.effort_check import check_trajectory
    from ne_dynamics_ros.control.laws import compute_effort_values
    from ne_dynamics_ros.control.sensing.activation import Sensing
    from ne_dynamics_ros.control.reference.trajectory import (DesiredState, trajectory_from_points,
                                                              TrajectoryPoint)
    print('safety costs (issue 33): per control cycle, one state; check per sample')
    print(f'{"robot":<8} {"computed torque µs":>19} {"observer µs":>12} {"ratio":>6} '
          f'{"effort check µs/sample":>23}')
    for name, (path, tip) in ARMS.items():
        c = ComputedTorqueController.from_urdf(str(path), tip_link=tip)
        n = c.n
        rng = np.random.default_rng(0)
        q, qd = rng.normal(0, 0.5, n).tolist(), rng.normal(0, 0.5, n).tolist()
        contact = ContactSupervisor(c.model, c.dynamics)
        contact.apply(c.settings, c.gains)
        sensing = Sensing.new(c.model.joint_names, c.settings)
        sensing.applied = [0.0] * n
        clock = [0.0]

        def observe():
            clock[0] += 0.002
            contact.observe(sensing, clock[0], q, qd)

        law = median_time(lambda: compute_effort_values(c.dynamics, c.gains, q, qd, q, qd,
                                                        qd), repeats, 2000)
        observer = median_time(observe, repeats, 2000)
        t = np.arange(1, 5001) * 1e-3
        points = [TrajectoryPoint(float(ti), np.sin(ti) * np.ones(n), np.cos(ti) * np.ones(n))
                  for ti in t]
        trajectory = trajectory_from_points(c.model.joint_names, points, c.model.joint_names,
                                            None, 0.0, DesiredState(*np.zeros((3, n))))
        start = time.perf_counter()
        checked = check_trajectory(c.model, trajectory, c.model.joint_names,
                                   np.full(n, np.inf), 500.0, np.array([0, 0, -9.81]))
        per_sample = (time.perf_counter() - start) / checked.samples
        print(f'{name:<8} {law * 1e6:>19.1f} {observer * 1e6:>12.1f} {observer / law:>6.2f} '
              f'{per_sample * 1e6:>23.2f}')


def print_kinematics_costs(rows, repeats):
    """Print the tip kinematics' cost per state beside the RNEA's.

    :meth:`~ne_dynamics_ros.dynamics.kinematics.ChainKinematics.update` (pose + Jacobian
    + J̇q̇, lists of floats in, as the control path calls it) taking turns with
    ``model.rnea`` on one state (both timed here, so their ratio is that of one minute of
    the machine), and the generated program's single call from the table above.
    """
    from ne_dynamics_ros.dynamics.kinematics import chain_kinematics
    t = {(r[0], r[1], r[2], r[3]): r[4] for r in rows}
    print('tip kinematics (pose + Jacobian + J̇q̇ update) per state, one call, taking turns '
          'with the RNEA')
    print(f'{"robot":<8} {"convention":<10} {"kinematics µs":>14} {"rnea µs":>8} '
          f'{"ratio":>6} {"generated rnea µs":>18}')
    for name, (path, tip) in ARMS.items():
        for convention in ('mdh', 'dh'):
            model = load_model(str(path), tip_link=tip, convention=convention)
            kinematics = chain_kinematics(model)
            q, qd, qdd = np.random.default_rng(2).uniform(-1, 1, (3, model.n))
            ql, qdl = q.tolist(), qd.tolist()
            update, rnea = interleaved_medians(
                [lambda: kinematics.update(ql, qdl), lambda: model.rnea(q, qd, qdd)],
                repeats, 2000)
            generated = t[(name, f'gen {convention}', 'single call', 1)]
            print(f'{name:<8} {convention:<10} {update * 1e6:>14.2f} {rnea * 1e6:>8.2f} '
                  f'{update / rnea:>6.2f} {generated * 1e6:>18.2f}')


def main():
    """Print the side-by-side table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeats', type=int, default=7)
    parser.add_argument('--quick', action='store_true', help='N up to 1000, 3 repeats')
    args = parser.parse_args()
    sizes = [1, 100, 1000] if args.quick else [1, 100, 10000]
    repeats = 3 if args.quick else args.repeats
    print(f'{"robot":<8} {"implementation":<15} {"mode":<12} {"N":>6} {"µs/state":>10} '
          f'{"vs pinocchio":>13}')
    all_operations, all_rows = {}, []
    for name in ARMS:
        rows, notes, operations = bench_arm(name, repeats, sizes)
        all_operations[name] = operations
        all_rows += rows
        ref = {(r[2], r[3]): r[4] for r in rows if r[1].startswith('pinocchio')}
        for robot, impl, mode, N, t in rows:
            ratio = t / ref[(mode, N)]
            print(f'{robot:<8} {impl:<15} {mode:<12} {N:>6} {t * 1e6:>10.2f} {ratio:>12.2f}x')
        for note in notes:
            print(f'{name:<8} note: {note}')
    print()
    print('operation counts for one state, n = 6 (with armature where the arm has it)')
    print(f'{"computation":<72}{"mul":>7}{"add":>7}{"total":>7}')
    table = []
    for name, operations in all_operations.items():
        for convention, (recursive, generated) in operations.items():
            table.append((f'{name} ours recursive {convention} (counted)', recursive))
            table.append((f'{name} ours generated {convention} (from its source)', generated))
    n = 6
    table += [('Lee et al. 1982 Table 2, Newton-Euler (119n-24, 107n-21)',
               {'mul': 119 * n - 24, 'add': 107 * n - 21}),
              ('Angeles 2007 eq 7.43, Newton-Euler with kinematics (137n-22, 110n-14)',
               {'mul': 137 * n - 22, 'add': 110 * n - 14}),
              ('Angeles 2007 Table 7.4, Khalil et al. (1986)', {'mul': 538, 'add': 478}),
              ('Renaud 1987, 6R example (first form)', {'mul': 181, 'add': 127}),
              ('Renaud 1987, 6R example (final)', {'mul': 164, 'add': 115})]
    renaud = load_model(renaud_example_urdf(), tip_link='link_6', convention='mdh')
    table.append(('Renaud 1987 6R example robot, ours generated mdh (from its source)',
                  count_operations(python_source(generate(renaud)))))
    # Renaud (1987) counts the rigid bodies alone (no rotor inertia): the PUMA likewise
    path, tip = ARMS['puma560']
    rigid = count_operations(python_source(generate(
        load_model(str(path), tip_link=tip, convention='mdh'))))
    table.append(('puma560 ours generated mdh, rigid bodies only as Renaud 1987', rigid))
    for label, counts in table:
        print(f'{label:<72}{counts["mul"]:>7}{counts["add"]:>7}'
              f'{counts["mul"] + counts["add"]:>7}')
    print()
    print_safety_costs(repeats)
    print()
    print_kinematics_costs(all_rows, repeats)
    print()
    if args.quick:
        print('goals: not judged with --quick (N = 10000 is the goals\' batch size)')
        return
    generated = generate(load_model(str(path), tip_link=tip, convention='mdh',
                                    armature=puma_armature()))
    print_goals(all_rows, rigid['mul'] + rigid['add'], generated, repeats)


if __name__ == '__main__':
    main()
