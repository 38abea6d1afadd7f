"""Base parameters: the closed-form rules against Gautier's numeric QR, and exact torques.

A grouping is checked by its torques, on states the grouping never saw: a model built
from the base parameters alone (every other inertial parameter zero) must give the same
``rnea`` as the full model, and ``W_base @ beta`` must equal ``W @ pi``.
"""
import re

from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from random_urdf import random_chains

from references import PUMA560_URDF, UR5E_URDF
from ne_dynamics_ros import load_model
from ne_dynamics_ros.dynamics.base_parameters import (
    base_parameters, closed_form_grouping, numeric_base, stacked_regressor)
from ne_dynamics_ros.dynamics.standard_parameters import inertial_index, parameter_names, PER_JOINT


def fresh_states(model, seed=99, count=6):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-2, 2, (count, model.n)), rng.normal(0, 2, (count, model.n)),
            rng.normal(0, 3, (count, model.n)))


def assert_same_torques(model, result, seed=99):
    """A model from the base parameters alone (plus the drive ones) has the same torques."""
    source = model if result.convention == model.convention.value else load_model_like(
        model, result.convention)
    pi = source.standard_parameters()
    reduced = result.standard_from_base(result.values(pi))
    drive = np.ones(pi.size, dtype=bool)
    drive[inertial_index(model.n)] = False
    reduced[drive] = pi[drive]
    q, qd, qdd = fresh_states(model, seed)
    expected = source.rnea(q, qd, qdd)
    got = source.with_parameters(reduced).rnea(q, qd, qdd)
    np.testing.assert_allclose(got, expected, rtol=0,
                               atol=1e-9 * max(1.0, np.abs(expected).max()))


def load_model_like(model, convention):
    from ne_dynamics_ros.dynamics.model import RobotModel
    return RobotModel(model.chain, convention, model.armature, model.coulomb_velocity)


def evaluate(expression, values):
    """Evaluate '1.5*M3 + ZZ1 - YY2' with the standard parameter values, independently."""
    total = 0.0
    for sign, coefficient, name in re.findall(
            r'([+-]?)\s*(?:([0-9.eE+-]+)\*)?([A-Z]{1,2}[a-z]?\d+)', expression):
        value = (float(coefficient) if coefficient else 1.0) * values[name]
        total += -value if sign == '-' else value
    return total


@pytest.mark.parametrize('convention', ['mdh', 'dh'])
@pytest.mark.parametrize('urdf', [PUMA560_URDF, UR5E_URDF], ids=['puma560', 'ur5e'])
def test_shipped_arms_closed_form_equals_numeric_rank(urdf, convention):
    model = load_model(str(urdf), convention=convention)
    result = base_parameters(model)
    assert result.standard_count == 60
    assert result.base_count == result.numeric_rank == 36
    assert result.closed_form_complete and result.method == 'closed_form'
    assert result.convention == 'mdh' and not result.notes
    assert len(result.drive_parameters) == 18
    assert_same_torques(model, result)
    # names, expressions and values agree with each other
    mdh = load_model(str(urdf), convention='mdh')
    values = dict(zip(parameter_names(6), mdh.standard_parameters()))
    for p in result.parameters:
        assert p.value == pytest.approx(evaluate(p.expression, values), rel=1e-9, abs=1e-9)
        assert p.name.rstrip('R') in p.expression.replace('-', ' ').split() or \
            p.name.endswith('R')
    names = [p.name for p in result.parameters]
    assert 'ZZ1R' in names and 'M6' not in names and 'YY6' not in names


def test_puma_joint_1_keeps_only_zz1():
    result = base_parameters(load_model(str(PUMA560_URDF)))
    link_1 = [p.name for p in result.parameters if p.name.rstrip('R').endswith('1')]
    assert link_1 == ['ZZ1R']
    zz1 = result.parameters[0]
    assert zz1.expression.startswith('ZZ1 + YY2')


def test_the_numeric_grouping_reproduces_the_regressor():
    model = load_model(str(PUMA560_URDF))
    kept, K, dependent, rank = numeric_base(model)
    W = stacked_regressor(model, seed=7)            # other states than the QR's
    np.testing.assert_allclose(W[:, dependent], W[:, kept] @ K, atol=1e-8 * np.abs(W).max())
    assert rank == np.linalg.matrix_rank(W)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(robot=random_chains(), seed=st.integers(0, 1000))
def test_random_chains_give_exact_torques_and_a_consistent_count(robot, seed):
    model = load_model(robot['xml'], tip_link=robot['tip'], convention='mdh')
    result = base_parameters(model, seed=seed)
    assert result.numeric_rank == np.linalg.matrix_rank(
        stacked_regressor(model, seed=seed + 1), tol=None)
    assert result.base_count == result.numeric_rank
    assert_same_torques(model, result)
    # The closed-form rules are exact even where they are not minimal: never fewer
    # parameters than the rank, and W_kept (G pi) == W pi.
    G, kept, _ = closed_form_grouping(model)
    assert kept.size >= result.numeric_rank
    assert result.closed_form_complete == (kept.size == result.numeric_rank)
    W = stacked_regressor(model, seed=seed + 2)
    pi = model.standard_parameters()[inertial_index(model.n)]
    np.testing.assert_allclose(W[:, kept] @ (G @ pi)[kept], W @ pi, rtol=0,
                               atol=1e-8 * max(1.0, np.abs(W @ pi).max()))
    if not result.closed_form_complete:
        assert result.method == 'numeric' and 'numeric' in result.notes[-1]


def test_layout_of_the_grouping_matrix():
    model = load_model(str(UR5E_URDF))
    result = base_parameters(model)
    assert result.grouping.shape == (36, PER_JOINT * 6)
    drive = [k for k in range(PER_JOINT * 6) if k % PER_JOINT >= 10]
    assert not np.any(result.grouping[:, drive])


def chain_urdf(joints):
    """URDF of a serial chain: joints as (type, xyz, rpy, axis); every link has a full inertia."""
    links = ['<link name="base"/>']
    body = []
    for i, (jtype, xyz, rpy, axis) in enumerate(joints):
        links.append(
            f'<link name="l{i}"><inertial><origin xyz="0.11 -0.07 0.05" rpy="0.3 0.2 0.1"/>'
            '<mass value="1.5"/><inertia ixx="0.03" ixy="0.001" ixz="-0.002" iyy="0.04" '
            'iyz="0.003" izz="0.05"/></inertial></link>')
        parent = 'base' if i == 0 else f'l{i - 1}'
        body.append(
            f'<joint name="j{i}" type="{jtype}"><parent link="{parent}"/><child link="l{i}"/>'
            f'<origin xyz="{" ".join(map(str, xyz))}" rpy="{" ".join(map(str, rpy))}"/>'
            f'<axis xyz="{" ".join(map(str, axis))}"/>'
            '<limit lower="-1" upper="1" effort="10" velocity="1"/></joint>')
    return '<robot name="chain">' + ''.join(links) + ''.join(body) + '</robot>'


Z, X = (0, 0, 1), (1, 0, 0)


@pytest.mark.parametrize('joints, count', [
    # horizontal planar 3R (axes along gravity): ZZ1R, then ZZjR, MXjR, MYj: 1 + 2*3
    ([('revolute', (0, 0, 0), (0, 0, 0), Z), ('revolute', (0.4, 0, 0.1), (0, 0, 0), Z),
      ('revolute', (0.3, 0, 0), (0, 0, 0), Z)], 7),
    # vertical planar 3R (axes across gravity): link 1 keeps MX1R, MY1 too
    ([('revolute', (0, 0, 0), (0, 0, 0), X), ('revolute', (0, 0.4, 0), (0, 0, 0), X),
      ('revolute', (0, 0.3, 0.1), (0, 0, 0), X)], 9),
    # three revolute joints on one vertical line: only ZZ of each
    ([('revolute', (0, 0, 0), (0, 0, 0), Z), ('revolute', (0, 0, 0.2), (0, 0, 0), Z),
      ('revolute', (0, 0, 0.3), (0, 0, 0), Z)], 3),
    # a Cartesian PP stage carrying a revolute joint
    ([('prismatic', (0, 0, 0), (0, 0, 0), X), ('prismatic', (0, 0, 0.1), (0, 0, 0), (0, 1, 0)),
      ('revolute', (0.1, 0, 0), (0, 0, 0), Z)], 5),
])
def test_particular_cases_are_closed_form(joints, count):
    model = load_model(chain_urdf(joints), tip_link=f'l{len(joints) - 1}', convention='mdh')
    result = base_parameters(model)
    assert result.numeric_rank == count
    assert result.closed_form_complete and result.method == 'closed_form' and not result.notes
    assert_same_torques(model, result)


@st.composite
def generic_chains(draw):
    """Chains with random axes and offsets: no two axes parallel, none along gravity."""
    n = draw(st.integers(2, 6))
    joints = []
    for _ in range(n):
        jtype = draw(st.sampled_from(['revolute', 'revolute', 'prismatic']))
        xyz = tuple(draw(st.floats(0.05, 0.5)) * draw(st.sampled_from([-1, 1]))
                    for _ in range(3))
        rpy = tuple(draw(st.floats(0.2, 1.3)) for _ in range(3))
        joints.append((jtype, xyz, rpy, Z))
    return joints


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(joints=generic_chains())
def test_generic_chains_are_closed_form(joints):
    model = load_model(chain_urdf(joints), tip_link=f'l{len(joints) - 1}', convention='mdh')
    result = base_parameters(model)
    assert result.closed_form_complete, (joints, result.notes)
    assert_same_torques(model, result)
