"""Generated robot-specific inverse dynamics (Renaud 1987) against the recursion and Pinocchio.

The generated module is executed from its source text; its ``rnea`` must equal
``RobotModel.rnea`` (gravity (0, 0, -9.81), armature, no friction) to 1e-12 relative, and
Pinocchio's, on random states; its ``OPERATIONS`` must be what the source itself contains.
"""
from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from random_urdf import PinocchioReference, random_chains
import yaml

from references import CONFIG_DIR, PUMA560_URDF, UR5E_URDF
from ne_dynamics_ros import load_model
from ne_dynamics_ros.codegen import (
    count_operations, Emitter, generate, load_python, python_source, Symbol)

PUMA_ARMATURE = yaml.safe_load((CONFIG_DIR / 'puma560.yaml').read_text())[
    'computed_torque_node']['ros__parameters']['armature']


def assert_rel(ours, ref, rel=1e-11):
    # 1e-11 of the largest effort: the generated program sums the base parameters in
    # another order than the recursion, and a random chain's cancellations cost a few
    # digits (hypothesis found 7.6e-12 of 6.9 N m on a 4-joint chain with a skew axis)
    scale = max(1.0, float(np.max(np.abs(ref))))
    np.testing.assert_allclose(ours, ref, rtol=0, atol=rel * scale)


def check_generated(model, rng, prismatic=None, count=8, use_base_parameters=True):
    program = generate(model, use_base_parameters)
    source = python_source(program, 'test robot')
    module = load_python(source)
    assert module['JOINT_NAMES'] == model.joint_names
    assert module['OPERATIONS'] == count_operations(source)
    assert module['OPERATIONS'] == {k: program.operations[k] for k in ('mul', 'add')}
    q = rng.uniform(-np.pi, np.pi, (count, model.n))
    if prismatic is not None and np.any(prismatic):
        q[:, prismatic] = rng.uniform(-0.5, 0.5, (count, int(np.sum(prismatic))))
    qd, qdd = rng.normal(0, 2, (count, model.n)), rng.normal(0, 5, (count, model.n))
    expected = model.rnea(q, qd, qdd)
    single = np.array([module['rnea'](list(q[k]), list(qd[k]), list(qdd[k]))
                       for k in range(count)])
    assert_rel(single, expected)
    assert_rel(module['rnea_batch'](q, qd, qdd), expected)        # the loop (< 64 states)
    reps = -(-70 // count)                                         # NumPy's ufuncs (>= 64)
    tiled = [np.tile(a, (reps, 1)) for a in (q, qd, qdd)]
    assert_rel(module['rnea_batch'](*tiled), np.tile(expected, (reps, 1)))
    return program, module


@pytest.mark.parametrize('convention', ['mdh', 'dh'])
@pytest.mark.parametrize('robot', ['puma560', 'ur5e'])
def test_shipped_arms_match_the_recursion_and_pinocchio(robot, convention):
    path, tip, armature = {'puma560': (PUMA560_URDF, 'flange', PUMA_ARMATURE),
                           'ur5e': (UR5E_URDF, 'tool0', [0.1, 0.2, 0.3, 0.04, 0.05, 0.06])}[robot]
    xml = path.read_text()
    model = load_model(xml, tip_link=tip, convention=convention, armature=armature)
    rng = np.random.default_rng(11)
    program, module = check_generated(model, rng)
    ref = PinocchioReference(xml, model.joint_names, tip, armature)
    q, qd, qdd = rng.uniform(-2, 2, 6), rng.normal(0, 2, 6), rng.normal(0, 5, 6)
    assert_rel(module['rnea'](q, qd, qdd), ref.rnea(q, qd, qdd), 1e-10)
    # far fewer operations than the general recursion (Lee et al. 1982, Table 2: 690 M + 621 A)
    assert program.operations['mul'] < 300 and program.operations['add'] < 250
    assert program.operations['trig'] <= 12


def planar_chain(thetas):
    """A revolute joint about y, then three about parallel z axes; yaw offsets ``thetas``."""
    links = ''.join(
        f'<link name="l{i}"><inertial><origin xyz="0.1 0.02 {0.01 * i}"/><mass value="{1 + i}"/>'
        f'<inertia ixx="0.02" ixy="0.001" ixz="0.002" iyy="0.025" iyz="0.003" izz="0.03"/>'
        '</inertial></link>' for i in range(1, 5))
    joints = ''.join(
        f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
        f'<origin xyz="{0.3 if i > 1 else 0} 0 {0.05 * i}" rpy="0 0 {theta}"/>'
        f'<axis xyz="{"0 1 0" if i == 1 else "0 0 1"}"/>'
        '<limit lower="-3" upper="3" effort="10" velocity="1"/></joint>'
        for i, theta in enumerate(thetas, start=1))
    return (f'<robot name="planar"><link name="l0"/>{links}{joints}'
            '<link name="tip"/><joint name="tip_joint" type="fixed"><parent link="l4"/>'
            '<child link="tip"/><origin xyz="0.2 0 0"/></joint></robot>')


@pytest.mark.parametrize('thetas', [(0.0, 0.0, 0.0, 0.0), (0.3, -1.1, 0.7, 2.0),
                                    (0.0, np.pi / 2, np.pi, -np.pi / 2)])
def test_parallel_joints_turn_at_once(thetas):
    """Renaud's (1987) s23, c23: ω and ω̇ of a run of parallel joints are turned through the summed
    angle (q2_3 = q2 + q3, ...), with the joints' offsets; the efforts stay the
    recursion's and Pinocchio's, and the shipped arms' runs are found."""
    xml = planar_chain(thetas)
    model = load_model(xml, tip_link='tip', convention='mdh')
    rng = np.random.default_rng(5)
    program, module = check_generated(model, rng)
    assert [name for name, _, _ in program.angles] == ['q2_3', 'q2_4']
    ref = PinocchioReference(xml, model.joint_names, 'tip', None)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-3, 3, 4), rng.normal(0, 2, 4), rng.normal(0, 5, 4)
        assert_rel(module['rnea'](q, qd, qdd), ref.rnea(q, qd, qdd), 1e-10)
    runs = {'puma560': (PUMA560_URDF, 'flange', ['q2_3']),
            'ur5e': (UR5E_URDF, 'tool0', ['q2_3', 'q2_4'])}
    for path, tip, angles in runs.values():
        program = generate(load_model(path.read_text(), tip_link=tip, convention='mdh'))
        assert [name for name, _, _ in program.angles] == angles


def test_quarter_turn_sums_are_angle_addition():
    """The table the batch turns summed angles by: cos and sin of L + R + k pi/2 from
    cos and sin of L and R, each as s1 x1 y1 + s2 x2 y2."""
    from ne_dynamics_ros.codegen.batch_emitter import QUARTER_SUMS
    rng = np.random.default_rng(4)
    for left, right in rng.uniform(-7, 7, (20, 2)):
        value = {'cL': np.cos(left), 'sL': np.sin(left), 'cR': np.cos(right), 'sR': np.sin(right)}
        for k, sums in enumerate(QUARTER_SUMS):
            angle = left + right + k * np.pi / 2
            for function, terms in zip((np.cos, np.sin), sums):
                got = sum(sign * value[x] * value[y] for sign, x, y in terms)
                assert abs(got - function(angle)) < 1e-14


HARD_ANGLES = [0.0, 1e-300, np.pi / 2, -np.pi / 2, np.pi, -np.pi, np.nextafter(np.pi, 0.0),
               3 * np.pi, -5 * np.pi, np.pi - 1e-9, 2 * np.pi, 50.0, -1e3, 0.5, -2.5]


@pytest.mark.parametrize('robot', ['puma560', 'ur5e', 'planar k=1', 'planar k=3'])
def test_batch_trig_at_hard_angles(robot):
    """``rnea_batch`` takes its sin and cos from tan(q/2) and angle addition; at multiples
    of pi/2, odd multiples of pi (where q/2 is nearly a pole of tan), large angles and
    tiny ones the efforts stay the recursion's (1e-12 relative), both conventions."""
    path, tip = {'puma560': (PUMA560_URDF, 'flange'), 'ur5e': (UR5E_URDF, 'tool0')}.get(
        robot, (None, 'tip'))
    # the planar chains' offsets make the second part of q2_3 (k=1) or of q2_4 (k=3)
    # a quarter turn away from the summed angle's
    xml = path.read_text() if path else planar_chain(
        (0.0, np.pi / 2, 0.3, 0.0) if robot == 'planar k=1' else (0.0, -np.pi / 2, 0.3, np.pi / 2))
    rng = np.random.default_rng(8)
    for convention in ('mdh', 'dh'):
        model = load_model(xml, tip_link=tip, convention=convention)
        source = python_source(generate(model))
        module = load_python(source)
        if convention == 'mdh':
            batch_source = source.split('def rnea_batch')[1]
            assert 'add(q2, q3,' not in batch_source, 'q2_3 turned by angle addition'
        q = rng.choice(HARD_ANGLES, (200, model.n))
        qd, qdd = rng.normal(0, 2, (2, 200, model.n))
        assert_rel(module['rnea_batch'](q, qd, qdd), model.rnea(q, qd, qdd))


def test_batch_runs_block_by_block(monkeypatch):
    from ne_dynamics_ros.codegen import python_emitter
    monkeypatch.setattr(python_emitter, 'BATCH_BLOCK', 100)   # 3 blocks for 250 states
    model = load_model(str(UR5E_URDF), tip_link='tool0')
    module = load_python(python_source(generate(model)))
    rng = np.random.default_rng(5)
    q, qd, qdd = rng.uniform(-2, 2, (3, 250, 6))
    assert_rel(module['rnea_batch'](q, qd, qdd), model.rnea(q, qd, qdd))
    # one state broadcast against many, and a wrong width
    assert_rel(module['rnea_batch'](q[0], qd, qdd), model.rnea(np.tile(q[0], (250, 1)), qd, qdd))
    with pytest.raises(ValueError, match=r'expected \(N, 6\) states'):
        module['rnea_batch'](q[:, :5], qd[:, :5], qdd[:, :5])


def test_base_parameters_shorten_the_program():
    model = load_model(str(PUMA560_URDF), armature=PUMA_ARMATURE)
    rng = np.random.default_rng(2)
    full, _ = check_generated(model, rng, use_base_parameters=False)
    base, _ = check_generated(model, rng)
    assert sum(base.operations[k] for k in ('mul', 'add')) < \
        sum(full.operations[k] for k in ('mul', 'add'))


# 15 chains in each convention: every generated line is also checked on the shipped arms,
# on prismatic and parallel-axis chains above, and by the adaptive law's generated step
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(robot=random_chains(), seed=st.integers(0, 2**32 - 1))
def test_random_chains_both_conventions(robot, seed):
    rng = np.random.default_rng(seed)
    prismatic = np.array([t == 'prismatic' for t in robot['types']])
    armature = rng.uniform(0, 1, len(robot['joints'])) * (rng.random() < 0.5)
    for convention in ('mdh', 'dh'):
        model = load_model(robot['xml'], tip_link=robot['tip'], convention=convention,
                           armature=armature)
        check_generated(model, rng, prismatic, count=4)


def test_symbols_fold_zeros_ones_and_reuse_quantities():
    e = Emitter()
    x, y = Symbol(e, name='x'), Symbol(e, name='y')
    assert (0.0 * x).value == 0.0 and (x * 1.0) is x and (x + 0.0) is x
    assert (-1.0 * x).text() == '-x' and not e.lines        # a sign, not an operation
    assert (x - x).value == 0.0 and (2.0 * Symbol(e, value=3.0)).value == 6.0
    a = x * y
    b = y * x                                               # commutative: computed once
    assert a.name == b.name and len(e.lines) == 1
    c = (-x) * y                                            # the sign is carried
    assert c.name == a.name and c.sign == -1.0 and len(e.lines) == 1
    d = x - y
    f = -(y - x)                                            # the same difference
    assert (d.name, d.sign) == (f.name, f.sign) and len(e.lines) == 2
    assert e.operations() == {'mul': 1, 'add': 1}
    g = (x + y) - x                                         # a sum that cancels: y, free
    h = d - x                                               # (x - y) - x = -y
    assert (g.name, g.sign, h.name, h.sign) == ('y', 1.0, 'y', -1.0)
    assert len(e.lines) == 3                                # only x + y was emitted


def bench_rnea():
    """Import benchmarks/bench_rnea.py (not a package) as a module."""
    import importlib.util
    from references import REPO_ROOT
    spec = importlib.util.spec_from_file_location(
        'bench_rnea', REPO_ROOT / 'benchmarks' / 'bench_rnea.py')
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_renauds_example_robot_in_fewer_operations_than_his_own_count():
    """Renaud's (1987) 6R example (its MDH table and assumptions, built by the benchmark): our
    program equals the recursion and needs fewer than Renaud's final 164 M + 115 A = 279."""
    bench = bench_rnea()
    model = load_model(bench.renaud_example_urdf(), tip_link='link_6', convention='mdh')
    program, _ = check_generated(model, np.random.default_rng(8))
    assert program.operations['mul'] + program.operations['add'] < 164 + 115


def test_the_benchmarks_interpreter_floor_counts_its_operations():
    """bench_rnea's floor for the Python single call: exactly the asked number of float
    operations, two interpreter instructions each (a load and the operation), and the
    values the chained expressions say."""
    import dis
    bench = bench_rnea()
    for operations in (1, 9, 10, 279, 307):
        chained = bench.chained_floats(operations)
        names = [i.opname for i in dis.get_instructions(chained)]
        assert names.count('BINARY_OP') == operations
        lines = -(-operations // 10)
        # one load per operation, plus each chain's head, q, qd, qdd and the returned list
        assert names.count('LOAD_FAST') == operations + lines + 3 + min(lines, 6)
        # every input 1.0: a chain of (x * 1 + 1) steps
        ones = [1.0] * 6
        first = 1.0
        for j in range(min(10, operations)):
            first = first * 1.0 if j % 2 == 0 else first + 1.0
        assert chained(ones, ones, ones)[0] == first


def test_the_three_body_wrench_forms_agree():
    """ω × (Jω), the form on ω's products and the form on b's elements: one wrench."""
    from ne_dynamics_ros.codegen import tracing
    from ne_dynamics_ros.dynamics.rnea import b_matrix, link_wrench, LinkDynamics
    rng = np.random.default_rng(4)
    for _ in range(20):
        J = rng.normal(size=(3, 3))
        J = J + J.T
        link = LinkDynamics(False, 0.1, 0.2, 0.3, 0.0, 0.9, 0.2, float(rng.uniform(0, 5)),
                            tuple(rng.normal(size=3)), tuple(map(tuple, J)))
        w, wd, vd = (tuple(rng.normal(size=3)) for _ in range(3))
        b = b_matrix(w, wd)
        F, N = link_wrench(link, w, wd, vd, b)
        for form in (tracing.body_wrench_products, tracing.body_wrench_b):
            F2, N2 = form(link, w, wd, vd, b)
            np.testing.assert_allclose(F2, F, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(N2, N, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('convention', ['mdh', 'dh'])
def test_first_joint_armature_costs_no_operation(convention):
    """Ia_1 joins ZZ of link 1 (the base does not move): same program length, right efforts."""
    xml = PUMA560_URDF.read_text()
    bare = load_model(xml, tip_link='flange', convention=convention)
    first = load_model(xml, tip_link='flange', convention=convention,
                       armature=[0.78, 0, 0, 0, 0, 0])
    program, _ = check_generated(first, np.random.default_rng(12))
    assert program.operations == generate(bare).operations


def test_a_program_is_generated_once_per_arm_and_still_checked():
    """Building the same arm again reuses its program (a node reconfigured, a test's
    fixture); another armature is another program; the check against the recursion runs
    every time and still refuses a program that is not the model's."""
    from ne_dynamics_ros.codegen import CompiledDynamics
    from ne_dynamics_ros.errors import ModelError
    xml = UR5E_URDF.read_text()
    first = CompiledDynamics(load_model(xml, tip_link='tool0'))
    again = CompiledDynamics(load_model(xml, tip_link='tool0'))
    other = CompiledDynamics(load_model(xml, tip_link='tool0', armature=[0.1] * 6))
    assert again.program is first.program and other.program is not first.program
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.normal(0, 1, (3, 6))
    for compiled in (first, other):
        assert_rel(compiled.rnea(q, qd, qdd), compiled.model.rnea(q, qd, qdd))
    first.model = other.model               # the program of no armature, the model with it
    with pytest.raises(ModelError, match='differ from the recursion'):
        first.check()
