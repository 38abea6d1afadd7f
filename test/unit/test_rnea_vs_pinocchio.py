"""RNEA against Pinocchio on the PUMA 560, the UR5e and random URDF chains, both conventions.

Pinocchio (PyPI ``pin``) builds its own model from the same URDF text, with its
``model.armature`` set to the same values: an independent implementation of the same
physics.  Agreement is required to 1e-9 relative.
"""
from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from random_urdf import PinocchioReference, random_chains
import yaml

from references import PUMA560_URDF, UR5E_URDF
from ne_dynamics_ros import fk_residual, load_model
from ne_dynamics_ros.dynamics.dh import DISTANCE_TOL

CONVENTIONS = ('dh', 'mdh')


def assert_close(ours, ref, rel=1e-9):
    scale = max(1.0, float(np.max(np.abs(ref))))
    np.testing.assert_allclose(ours, ref, rtol=0, atol=rel * scale)


def puma_armature():
    with open(PUMA560_URDF.with_suffix('.yaml')) as f:
        return yaml.safe_load(f)['computed_torque_node']['ros__parameters']['armature']


def random_states(rng, n, count, prismatic=None):
    q = rng.uniform(-np.pi, np.pi, size=(count, n))
    if prismatic is not None:
        q[:, prismatic] = rng.uniform(-0.5, 0.5, size=(count, int(np.sum(prismatic))))
    return q, rng.normal(0, 2, size=(count, n)), rng.normal(0, 5, size=(count, n))


@pytest.mark.parametrize('convention', CONVENTIONS)
@pytest.mark.parametrize('robot', ['puma560', 'ur5e'])
def test_real_arms_match_pinocchio(robot, convention):
    path, tip = {'puma560': (PUMA560_URDF, 'flange'), 'ur5e': (UR5E_URDF, 'tool0')}[robot]
    xml = path.read_text()
    rng = np.random.default_rng(1)
    armature = puma_armature() if robot == 'puma560' else rng.uniform(0, 0.5, 6)
    model = load_model(xml, tip_link=tip, convention=convention, armature=armature)
    ref = PinocchioReference(xml, model.joint_names, tip, armature)
    q, qd, qdd = random_states(rng, model.n, 40)
    batch = model.rnea(q, qd, qdd)
    gravities = [(0, 0, -9.81), (1.0, -2.0, -9.0)]
    for k in range(len(q)):
        g = gravities[k % 2]
        f_tip = rng.normal(0, 20, 6) if k % 3 == 0 else None
        assert_close(model.rnea(q[k], qd[k], qdd[k], g, f_tip),
                     ref.rnea(q[k], qd[k], qdd[k], g, f_tip))
        assert_close(batch[k], ref.rnea(q[k], qd[k], qdd[k]))
    assert_close(model.mass_matrix(q[0]), ref.mass_matrix(q[0]))


@settings(max_examples=220, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(robot=random_chains(), seed=st.integers(0, 2**32 - 1))
def test_random_chains_match_pinocchio(robot, seed):
    rng = np.random.default_rng(seed)
    n = len(robot['joints'])
    armature = rng.uniform(0, 1, n) * (rng.random() < 0.5)
    prismatic = np.array([t == 'prismatic' for t in robot['types']])
    ref = PinocchioReference(robot['xml'], robot['joints'], robot['tip'], armature,
                             robot['locked'])
    q, qd, qdd = random_states(rng, n, 3, prismatic)
    f_tip = rng.normal(0, 10, 6)
    gravity = rng.normal(0, 5, 3)
    for convention in CONVENTIONS:
        model = load_model(robot['xml'], tip_link=robot['tip'], convention=convention,
                           armature=armature)
        assert model.joint_names == robot['joints']
        # exact but for gaps of at most DISTANCE_TOL between axes, which the converter
        # takes as intersections (the DH frames then move by up to twice the gap)
        assert fk_residual(model, samples=5) < 2.5 * DISTANCE_TOL
        batch = model.rnea(q, qd, qdd, gravity)
        for k in range(len(q)):
            expected = ref.rnea(q[k], qd[k], qdd[k], gravity)
            assert_close(batch[k], expected)
            assert_close(model.rnea(q[k], qd[k], qdd[k], gravity), expected)
            assert_close(model.rnea(q[k], qd[k], qdd[k], gravity, f_tip),
                         ref.rnea(q[k], qd[k], qdd[k], gravity, f_tip))


@pytest.mark.parametrize('convention', CONVENTIONS)
def test_side_joint_is_lumped_with_warning(convention):
    xml = """<robot name="gripper"><link name="base"/>
      <link name="arm"><inertial><mass value="2"/><origin xyz="0.1 0 0"/>
        <inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="finger_a"><inertial><mass value="0.5"/><origin xyz="0 0.05 0"/>
        <inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="finger_b"><inertial><mass value="0.5"/><origin xyz="0 -0.05 0"/>
        <inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/>
        <axis xyz="0 1 0"/><limit effort="10" velocity="1" lower="-1" upper="1"/></joint>
      <joint name="fa" type="prismatic"><parent link="arm"/><child link="finger_a"/>
        <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>
        <limit effort="10" velocity="1" lower="0" upper="0.04"/></joint>
      <joint name="fb" type="prismatic"><parent link="arm"/><child link="finger_b"/>
        <origin xyz="0.3 0 0"/><axis xyz="0 -1 0"/>
        <limit effort="10" velocity="1" lower="0" upper="0.04"/></joint>
    </robot>"""
    model = load_model(xml, tip_link='arm', convention=convention)
    assert model.joint_names == ['shoulder']
    assert len(model.warnings) == 2 and 'fa' in model.warnings[0] + model.warnings[1]
    ref = PinocchioReference(xml, ['shoulder'], 'arm', locked=['fa', 'fb'])
    for q in (-0.7, 0.0, 0.4):
        assert_close(model.rnea([q], [0.3], [1.1]), ref.rnea([q], [0.3], [1.1]))
