"""Standard parameters and the regressor against our RNEA and Pinocchio's own regressor.

``W(q, q̇, q̈) · pi`` must equal ``rnea + friction`` (the recursion it is derived from, to
1e-10 relative), and column by column Pinocchio's ``computeJointTorqueRegressor`` once our
parameters (link frame = DH/MDH frame) are mapped to its own (link frame = URDF joint
frame) by the rigid transform between the two frames, computed here from our FK and the
URDF FK, not from the model's internals.
"""
from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pinocchio as pin
import pytest
from random_urdf import PinocchioReference, random_chains

from references import PUMA560_URDF, UR5E_URDF
from ne_dynamics_ros import load_model, ModelError, StateError
from ne_dynamics_ros.dynamics import standard_parameters as parameters
from ne_dynamics_ros.dynamics.standard_parameters import (
    inertial_index, model_with_parameters, parameter_names, PER_JOINT, standard_parameters)
from ne_dynamics_ros.dynamics.regressor import (reference_regressor, regressor,
                                                tip_wrench_torques)

CONVENTIONS = ('dh', 'mdh')
ARMS = {'puma560': (PUMA560_URDF, 'flange'), 'ur5e': (UR5E_URDF, 'tool0')}


def states(rng, n, count, prismatic=None):
    q = rng.uniform(-np.pi, np.pi, size=(count, n))
    if prismatic is not None and np.any(prismatic):
        q[:, prismatic] = rng.uniform(-0.5, 0.5, size=(count, int(np.sum(prismatic))))
    return q, rng.normal(0, 2, size=(count, n)), rng.normal(0, 5, size=(count, n))


def assert_rel(ours, ref, rel=1e-10):
    scale = max(1.0, float(np.max(np.abs(ref))))
    np.testing.assert_allclose(ours, ref, rtol=0, atol=rel * scale)


def check_against_rnea(model, rng, prismatic=None, gravity=(0.0, 0.0, -9.81)):
    pi = standard_parameters(model)
    q, qd, qdd = states(rng, model.n, 4, prismatic)
    W = regressor(model, q, qd, qdd, gravity)
    assert W.shape == (4, model.n, PER_JOINT * model.n)
    expected = model.rnea(q, qd, qdd, gravity) + model.friction_torques(qd)
    assert_rel(W @ pi, expected)
    assert_rel(regressor(model, q[0], qd[0], qdd[0], gravity) @ pi, expected[0])
    # linear in the parameters: any other vector, through a model built from it
    other = pi + rng.normal(0, 0.5, pi.size)
    changed = model_with_parameters(model, other)
    np.testing.assert_array_equal(standard_parameters(changed), other)
    assert_rel(W @ other, changed.rnea(q, qd, qdd, gravity) + changed.friction_torques(qd))


@pytest.mark.parametrize('convention', CONVENTIONS)
@pytest.mark.parametrize('robot', sorted(ARMS))
def test_regressor_times_parameters_is_rnea_plus_friction(robot, convention):
    rng = np.random.default_rng(7)
    path, tip = ARMS[robot]
    model = load_model(str(path), tip_link=tip, convention=convention,
                       armature=rng.uniform(0, 1, 6))
    check_against_rnea(model, rng)
    check_against_rnea(model, rng, gravity=(1.0, -2.0, -9.0))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(robot=random_chains(), seed=st.integers(0, 2**32 - 1))
def test_random_chains_with_prismatic_joints(robot, seed):
    rng = np.random.default_rng(seed)
    prismatic = np.array([t == 'prismatic' for t in robot['types']])
    for convention in CONVENTIONS:
        model = load_model(robot['xml'], tip_link=robot['tip'], convention=convention,
                           armature=rng.uniform(0, 1, len(robot['joints'])))
        check_against_rnea(model, rng, prismatic, gravity=tuple(rng.normal(0, 5, 3)))


#: Our order XX XY XZ YY YZ ZZ MX MY MZ M -> Pinocchio's m mx my mz Ixx Ixy Iyy Ixz Iyz Izz.
TO_PINOCCHIO = [9, 6, 7, 8, 0, 1, 3, 2, 4, 5]


def frame_change(X):
    """Map our parameters in frame A to Pinocchio's in frame B (X = pose of A in B).

    The library's map, checked here: the parameters it gives must be Pinocchio's own
    (test_columns_match_pinocchio_joint_torque_regressor, last block).
    """
    return parameters.frame_change(X)[TO_PINOCCHIO]


@pytest.mark.parametrize('convention', CONVENTIONS)
@pytest.mark.parametrize('robot', sorted(ARMS))
def test_columns_match_pinocchio_joint_torque_regressor(robot, convention):
    path, tip = ARMS[robot]
    xml = path.read_text()
    model = load_model(xml, tip_link=tip, convention=convention)
    ref = PinocchioReference(xml, model.joint_names, tip)
    zero = np.zeros(model.n)
    dh_poses = model.dh_forward_kinematics(zero)[1:model.n + 1]
    link_poses = model.urdf_forward_kinematics(zero)[:model.n]
    maps = [frame_change(np.linalg.inv(L) @ F) for F, L in zip(dh_poses, link_poses)]
    rng = np.random.default_rng(3)
    q, qd, qdd = states(rng, model.n, 5)
    for k in range(5):
        ours = regressor(model, q[k], qd[k], qdd[k])
        ref.model.gravity = pin.Motion(np.array([0.0, 0.0, -9.81, 0.0, 0.0, 0.0]))
        Y = pin.computeJointTorqueRegressor(ref.model, ref.data, ref.configuration(q[k]),
                                            ref._tangent(qd[k]), ref._tangent(qdd[k]))
        rows = [ref.model.joints[jid].idx_v for jid in ref.ids]
        for i, (jid, T) in enumerate(zip(ref.ids, maps)):
            pin_columns = Y[rows, 10 * (jid - 1):10 * jid] @ T
            ours_columns = ours[:, PER_JOINT * i:PER_JOINT * i + 10]
            np.testing.assert_allclose(ours_columns, pin_columns, rtol=0,
                                       atol=1e-10 * max(1.0, np.abs(pin_columns).max()))
    # and the parameters themselves map onto Pinocchio's
    pi = standard_parameters(model)
    for i, (jid, T) in enumerate(zip(ref.ids, maps)):
        np.testing.assert_allclose(T @ pi[PER_JOINT * i:PER_JOINT * i + 10],
                                   ref.model.inertias[jid].toDynamicParameters(), atol=1e-12)


def test_drive_columns_and_the_tip_wrench_kept_apart():
    path, tip = ARMS['puma560']
    xml = path.read_text()
    model = load_model(xml, tip_link=tip)
    rng = np.random.default_rng(5)
    q, qd, qdd = (a[0] for a in states(rng, 6, 1))
    W = regressor(model, q, qd, qdd)
    for j in range(6):
        column = PER_JOINT * j
        np.testing.assert_array_equal(W[:, column + 10], np.eye(6)[j] * qdd[j])
        np.testing.assert_array_equal(W[:, column + 11], np.eye(6)[j] * qd[j])
        np.testing.assert_allclose(W[:, column + 12], np.eye(6)[j] * np.tanh(qd[j] / 0.01))
    f_tip = rng.normal(0, 20, 6)
    ref = PinocchioReference(xml, model.joint_names, tip)
    expected = ref.rnea(q, qd, qdd, f_tip=f_tip) - ref.rnea(q, qd, qdd)
    assert_rel(tip_wrench_torques(model, q, f_tip), expected, 1e-9)
    assert_rel(W @ standard_parameters(model) + tip_wrench_torques(model, q, f_tip),
               model.rnea(q, qd, qdd, f_tip=f_tip) + model.friction_torques(qd))


def test_names_units_and_layout():
    names = parameter_names(2)
    assert names[:13] == ['XX1', 'XY1', 'XZ1', 'YY1', 'YZ1', 'ZZ1', 'MX1', 'MY1', 'MZ1', 'M1',
                          'Ia1', 'Fv1', 'Fc1']
    assert names[13] == 'XX2' and len(names) == 26
    assert inertial_index(2).tolist() == list(range(10)) + list(range(13, 23))
    model = load_model(str(PUMA560_URDF))
    pi = standard_parameters(model)
    # masses straight from the URDF file: total mass of the moving links
    import xml.etree.ElementTree as ET
    root = ET.parse(PUMA560_URDF).getroot()
    masses = {link.get('name'): float(link.find('inertial/mass').get('value'))
              for link in root.findall('link') if link.find('inertial') is not None}
    base = root.find("joint[@name='joint_1']/parent").get('link')
    total = sum(m for name, m in masses.items() if name != base and name != 'world')
    assert pi[9::13].sum() == pytest.approx(total, rel=1e-12)


@pytest.mark.parametrize('bad, match', [
    (np.zeros(77), '78'), (np.full(78, np.nan), 'NaN'), (np.zeros((2, 3)), '78')])
def test_bad_parameter_vectors(bad, match):
    model = load_model(str(PUMA560_URDF))
    with pytest.raises(ModelError, match=match):
        model_with_parameters(model, bad)


def test_bad_states_for_the_regressor():
    model = load_model(str(PUMA560_URDF))
    with pytest.raises(StateError, match='qd'):
        regressor(model, np.zeros(6), np.zeros(5), np.zeros(6))
    with pytest.raises(StateError, match='NaN'):
        regressor(model, np.full(6, np.nan), np.zeros(6), np.zeros(6))
    with pytest.raises(StateError, match='gravity'):
        regressor(model, np.zeros(6), np.zeros(6), np.zeros(6), gravity=(0, 0))


# ---- Slotine & Li's regressor: two rate vectors ---------------------------------------------

def check_reference_regressor(model, reference, rng, prismatic=None, gravity=(0, 0, -9.81)):
    """Y pi = M q̈_r + C q̇_r + g + friction(q̇_r) with Pinocchio's M, C, g; Y = W at q̇_r = q̇."""
    pi = standard_parameters(model)
    q, qd, qdd_r = states(rng, model.n, 3, prismatic)
    qd_r = rng.normal(0, 2, size=qd.shape)
    Y = reference_regressor(model, q, qd, qd_r, qdd_r, gravity)
    assert Y.shape == (3, model.n, PER_JOINT * model.n)
    for k in range(3):
        expected = (reference.mass_matrix(q[k]) @ qdd_r[k]
                    + reference.coriolis_matrix(q[k], qd[k]) @ qd_r[k]
                    + reference.gravity_torques(q[k], gravity)
                    + model.friction_torques(qd_r[k]))
        assert_rel(Y[k] @ pi, expected, rel=1e-9)
        assert_rel(reference_regressor(model, q[k], qd[k], qd_r[k], qdd_r[k], gravity), Y[k])
    assert_rel(reference_regressor(model, q, qd, qd, qdd_r, gravity),
               regressor(model, q, qd, qdd_r, gravity), rel=1e-12)


@pytest.mark.parametrize('convention', CONVENTIONS)
@pytest.mark.parametrize('robot', sorted(ARMS))
def test_slotine_li_regressor_against_pinocchio(robot, convention):
    rng = np.random.default_rng(11)
    path, tip = ARMS[robot]
    armature = rng.uniform(0, 1, 6)
    model = load_model(str(path), tip_link=tip, convention=convention, armature=armature)
    reference = PinocchioReference(path.read_text(), model.joint_names, tip,
                                   armature=armature)
    check_reference_regressor(model, reference, rng)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(robot=random_chains(), seed=st.integers(0, 2**32 - 1))
def test_slotine_li_regressor_on_random_chains(robot, seed):
    rng = np.random.default_rng(seed)
    prismatic = np.array([t == 'prismatic' for t in robot['types']])
    armature = rng.uniform(0, 1, len(robot['joints']))
    reference = PinocchioReference(robot['xml'], robot['joints'], robot['tip'],
                                   armature=armature, locked=robot['locked'])
    for convention in CONVENTIONS:
        model = load_model(robot['xml'], tip_link=robot['tip'], convention=convention,
                           armature=armature)
        check_reference_regressor(model, reference, rng, prismatic,
                                  gravity=tuple(rng.normal(0, 5, 3)))


@pytest.mark.parametrize('convention', CONVENTIONS)
def test_the_coriolis_matrix_of_the_regressor_makes_mdot_minus_2c_skew(convention):
    """C(q, q̇) column j = Y(q, q̇, e_j, 0) pi - g(q) - friction(e_j); Ṁ by differences."""
    rng = np.random.default_rng(5)
    model = load_model(str(PUMA560_URDF), tip_link='flange', convention=convention,
                       armature=rng.uniform(0, 1, 6), damping=np.zeros(6),
                       friction=np.zeros(6))
    pi = standard_parameters(model)
    for _ in range(3):
        q, qd = rng.uniform(-np.pi, np.pi, 6), rng.normal(0, 2, 6)
        g = model.gravity_torques(q)
        C = np.column_stack([reference_regressor(model, q, qd, e, np.zeros(6)) @ pi - g
                             for e in np.eye(6)])
        h = 1e-6
        Mdot = (model.mass_matrix(q + h * qd) - model.mass_matrix(q - h * qd)) / (2 * h)
        S = Mdot - 2 * C
        assert np.abs(S + S.T).max() < 1e-7 * max(1.0, np.abs(Mdot).max())
        # and C q̇ is the Coriolis and centrifugal effort of the recursion
        np.testing.assert_allclose(C @ qd, model.coriolis_torques(q, qd), atol=1e-10)
