"""DH / MDH extraction: UR's own table, degenerate geometries, FK equivalence."""
import math

import numpy as np
import pytest

from references import PUMA560_URDF, UR5E_URDF
from ne_dynamics_ros import Convention, fk_residual, JointType, load_model

# UR5e standard DH as published by Universal Robots (../shared/data/urdf/ur5e_facts.md).
UR5E_DH = [  # a, d, alpha, theta offset
    (0.0, 0.1625, math.pi / 2, 0.0),
    (-0.425, 0.0, 0.0, 0.0),
    (-0.3922, 0.0, 0.0, 0.0),
    (0.0, 0.1333, math.pi / 2, 0.0),
    (0.0, 0.0997, -math.pi / 2, 0.0),
    (0.0, 0.0996, 0.0, 0.0),
]


def _chain_xml(joints):
    """URDF of revolute joints given as (xyz, rpy, axis) triples, with a tip link."""
    links = ''.join(f'<link name="l{i}"/>' for i in range(len(joints) + 1)) + '<link name="tip"/>'
    body = ''
    for i, (xyz, rpy, axis) in enumerate(joints):
        body += (f'<joint name="j{i}" type="revolute"><parent link="l{i}"/>'
                 f'<child link="l{i + 1}"/><origin xyz="{xyz}" rpy="{rpy}"/>'
                 f'<axis xyz="{axis}"/><limit effort="1" velocity="1" lower="-3" upper="3"/>'
                 '</joint>')
    body += (f'<joint name="tip_joint" type="fixed"><parent link="l{len(joints)}"/>'
             '<child link="tip"/><origin xyz="0.1 0.2 0.3"/></joint>')
    return f'<robot name="t">{links}{body}</robot>'


def test_ur5e_table_equals_universal_robots():
    model = load_model(str(UR5E_URDF), tip_link='tool0', convention='dh')
    assert model.joint_names == ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint',
                                 'wrist_1_joint', 'wrist_2_joint', 'wrist_3_joint']
    for row, (a, d, alpha, theta) in zip(model.dh_table(), UR5E_DH):
        assert row.type is JointType.REVOLUTE
        # The URDF rounds pi/2 to 1.570796327, hence the 1e-9 tolerance.
        assert row.a == pytest.approx(a, abs=1e-9)
        assert row.d == pytest.approx(d, abs=1e-9)
        assert row.alpha == pytest.approx(alpha, abs=1e-9)
        assert row.theta == pytest.approx(theta, abs=1e-9)
    # DH frame 0 is UR's "base" frame (base_link turned by pi), DH frame 6 is tool0.
    np.testing.assert_allclose(model.base_transform[:3, :3], np.diag([-1.0, -1.0, 1.0]),
                               atol=1e-9)
    np.testing.assert_allclose(model.tool_transform, np.eye(4), atol=1e-9)


@pytest.mark.parametrize('convention', ['dh', 'mdh'])
@pytest.mark.parametrize('path,tip', [(UR5E_URDF, 'tool0'), (UR5E_URDF, None),
                                      (PUMA560_URDF, 'flange')])
def test_fk_equivalence_real_arms(path, tip, convention):
    model = load_model(str(path), tip_link=tip, convention=convention)
    assert fk_residual(model, samples=200) < 1e-10


def test_ur5e_mdh_table():
    model = load_model(str(UR5E_URDF), tip_link='tool0', convention='mdh')
    rows = model.dh_table()
    a_prev = [r.a for r in rows]
    alpha_prev = [r.alpha for r in rows]
    np.testing.assert_allclose(a_prev, [0, 0, -0.425, -0.3922, 0, 0], atol=1e-9)
    np.testing.assert_allclose(alpha_prev, [0, math.pi / 2, 0, 0, math.pi / 2, -math.pi / 2],
                               atol=1e-9)
    np.testing.assert_allclose([r.d for r in rows], [0.1625, 0, 0, 0.1333, 0.0997, 0.0996],
                               atol=1e-9)


@pytest.mark.parametrize('convention', ['dh', 'mdh'])
def test_antiparallel_axes_give_alpha_pi(convention):
    xml = _chain_xml([('0 0 0', '0 0 0', '0 0 1'), ('0.3 0 0', '0 0 0', '0 0 -1'),
                      ('0.3 0 0', '0 0 0', '0 0 1')])
    model = load_model(xml, tip_link='tip', convention=convention)
    rows = model.dh_table()
    alphas = [rows[0].alpha, rows[1].alpha] if convention == 'dh' else \
        [rows[1].alpha, rows[2].alpha]
    for alpha in alphas:
        assert abs(abs(alpha) - math.pi) < 1e-12
    assert fk_residual(model) < 1e-10


@pytest.mark.parametrize('convention', ['dh', 'mdh'])
def test_intersecting_axes_give_zero_a(convention):
    xml = _chain_xml([('0 0 0', '0 0 0', '0 0 1'), ('0 0 0.4', '0 0 0', '0 1 0'),
                      ('0.2 0 0', '0 0 0', '1 0 0')])
    model = load_model(xml, tip_link='tip', convention=convention)
    rows = model.dh_table()
    a_values = [rows[0].a, rows[1].a] if convention == 'dh' else [rows[1].a, rows[2].a]
    np.testing.assert_allclose(a_values, 0.0, atol=1e-12)
    np.testing.assert_allclose([abs(r.alpha) for r in rows[:2]] if convention == 'dh'
                               else [abs(r.alpha) for r in rows[1:]], math.pi / 2, atol=1e-12)
    assert fk_residual(model) < 1e-10


@pytest.mark.parametrize('convention', ['dh', 'mdh'])
def test_coincident_and_parallel_axes(convention):
    # j0 and j1 on the same line, j2 parallel to them 0.5 m away, j3 through the same line.
    xml = _chain_xml([('0 0 0', '0 0 0', '0 0 1'), ('0 0 0.3', '0 0 0', '0 0 1'),
                      ('0.5 0 0.2', '0 0 0', '0 0 1'), ('-0.5 0 0.1', '0 0 0', '0 0 -1')])
    model = load_model(xml, tip_link='tip', convention=convention)
    rows = model.dh_table()
    for r in rows:
        assert all(math.isfinite(v) for v in (r.a, r.alpha, r.d, r.theta))
    # d is zero where parallel axes leave it free.
    free_d = [r.d for r in rows[1:3]] if convention == 'dh' else [r.d for r in rows[1:3]]
    np.testing.assert_allclose(free_d, 0.0, atol=1e-12)
    assert fk_residual(model) < 1e-10


@pytest.mark.parametrize('convention', ['dh', 'mdh'])
def test_prismatic_joint_moves_d(convention):
    xml = """<robot name="p"><link name="b"/><link name="c"/><link name="s"/><link name="t"/>
      <joint name="rot" type="continuous"><parent link="b"/><child link="c"/>
        <axis xyz="0 0 1"/></joint>
      <joint name="lift" type="prismatic"><parent link="c"/><child link="s"/>
        <origin xyz="0.2 0 0.1" rpy="1.5707963267948966 0 0"/><axis xyz="0 0 -1"/>
        <limit effort="100" velocity="1" lower="0" upper="0.5"/></joint>
      <joint name="t" type="fixed"><parent link="s"/><child link="t"/>
        <origin xyz="0 0 0.05"/></joint></robot>"""
    model = load_model(xml, convention=convention)
    assert model.tip_link == 't'
    assert [r.type for r in model.dh_table()] == [JointType.REVOLUTE, JointType.PRISMATIC]
    assert model.convention is Convention(convention)
    assert fk_residual(model) < 1e-10
    assert np.isinf(model.lower_limits[0]) and model.upper_limits[1] == 0.5


@pytest.mark.parametrize('tilt', [1e-12, 1e-9, 6e-8, 1e-5])
@pytest.mark.parametrize('convention', ['dh', 'mdh'])
def test_nearly_parallel_axes_stay_usable(tilt, convention):
    """DH is ill-conditioned here (Hayati's objection); the model must still be sound."""
    from random_urdf import PinocchioReference
    joints = [('0 0 0', '0 0 0', '0 0 1'), ('0.4 0 0', f'0 {tilt} 0', '0 0 1'),
              ('0.3 0.1 0', '0 0 0', '0 1 0')]
    xml = _chain_xml(joints).replace('<link name="l2"/>', (
        '<link name="l2"><inertial><mass value="2"/><origin xyz="0.1 0 0"/>'
        '<inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>'))
    model = load_model(xml, tip_link='tip', convention=convention)
    assert fk_residual(model) < 1e-7
    ref = PinocchioReference(xml, model.joint_names, 'tip')
    q, qd, qdd = np.array([[0.3, -0.7, 1.1], [0.5, 0.2, -0.4], [1.0, -2.0, 0.5]])
    np.testing.assert_allclose(model.rnea(q, qd, qdd), ref.rnea(q, qd, qdd), atol=1e-6)


@pytest.mark.parametrize('gap_in_tolerances', [0.3, 1.0, 1.5, 1e4])
@pytest.mark.parametrize('convention', ['dh', 'mdh'])
def test_a_gap_up_to_the_distance_tolerance_is_an_intersection(gap_in_tolerances, convention):
    """Axes closer than DISTANCE_TOL (1e-10 m) intersect; the frames move by <= 2 gaps."""
    from ne_dynamics_ros.dynamics.dh import DISTANCE_TOL
    gap = gap_in_tolerances * DISTANCE_TOL
    joints = [('0 0 0', '0 0 0', '0 0 1'), ('0 0 0', '0 0 0', '0 1 0'),
              (f'{gap!r} 0 0', '-3.141592653589793 -3.141592653589793 -1.5707963267948966',
               '1 0 0')]
    model = load_model(_chain_xml(joints), tip_link='tip', convention=convention)
    residual = fk_residual(model, samples=20)
    if gap <= DISTANCE_TOL:
        assert residual <= 2.0 * gap + 1e-15
    else:
        assert residual < 1e-12                  # a kept gap is exact
