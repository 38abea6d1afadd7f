"""Derived quantities: mass matrix, forward dynamics, gravity, Coriolis, friction.

References are independent: Pinocchio's CRBA for M(q), the potential energy computed
from the URDF link poses (not from our recursion) for g(q), and closed-form identities.
"""
import numpy as np
import pytest
from random_urdf import PinocchioReference

from references import PUMA560_URDF, UR5E_URDF
from ne_dynamics_ros import load_model

ARMS = [(PUMA560_URDF, 'flange'), (UR5E_URDF, 'tool0')]


@pytest.fixture(params=[(p, t, c) for p, t in ARMS for c in ('dh', 'mdh')],
                ids=lambda p: f'{p[0].stem}-{p[2]}')
def model(request):
    path, tip, convention = request.param
    model = load_model(str(path), tip_link=tip, convention=convention,
                       armature=np.linspace(0.1, 0.6, 6))
    model.test_urdf_text = path.read_text()
    return model


def potential_energy(model, q, gravity):
    """-Σ m_k gᵀ c_k from the URDF forward kinematics and the lumped URDF bodies."""
    chain = model.chain
    energy = 0.0
    for T, body in zip(chain.link_poses(q), chain.bodies):
        com = T[:3, :3] @ body.com + T[:3, 3]
        energy -= body.mass * float(np.asarray(gravity) @ com)
    return energy


def test_mass_matrix_spd_and_matches_crba(model):
    rng = np.random.default_rng(3)
    ref = PinocchioReference(model.test_urdf_text, model.joint_names, model.tip_link,
                             model.armature)
    for _ in range(20):
        q = rng.uniform(-np.pi, np.pi, 6)
        M = model.mass_matrix(q)
        np.testing.assert_allclose(M, M.T, atol=0)
        assert np.min(np.linalg.eigvalsh(M)) > 0
        np.testing.assert_allclose(M, ref.mass_matrix(q), atol=1e-9 * np.max(np.abs(M)))


def test_forward_dynamics_inverts_rnea(model):
    rng = np.random.default_rng(4)
    for _ in range(20):
        q, qd, qdd = rng.uniform(-2, 2, (3, 6))
        f_tip = rng.normal(0, 5, 6)
        tau = model.rnea(q, qd, qdd, f_tip=f_tip)
        np.testing.assert_allclose(model.forward_dynamics(q, qd, tau, f_tip=f_tip), qdd,
                                   atol=1e-8)


def test_gravity_is_gradient_of_potential_energy(model):
    rng = np.random.default_rng(5)
    gravity = np.array([0.3, -0.5, -9.81])
    h = 1e-6
    for _ in range(10):
        q = rng.uniform(-np.pi, np.pi, 6)
        grad = np.array([(potential_energy(model, q + h * e, gravity)
                          - potential_energy(model, q - h * e, gravity)) / (2 * h)
                         for e in np.eye(6)])
        np.testing.assert_allclose(model.gravity_torques(q, gravity), grad, atol=1e-6)


def test_coriolis_is_rnea_without_gravity_and_acceleration(model):
    rng = np.random.default_rng(6)
    q, qd, qdd = rng.uniform(-2, 2, (3, 6))
    total = model.rnea(q, qd, qdd)
    parts = (model.mass_matrix(q) @ qdd + model.coriolis_torques(q, qd)
             + model.gravity_torques(q))
    np.testing.assert_allclose(total, parts, atol=1e-9 * max(1, np.max(np.abs(total))))
    # Quadratic in q̇: C(q, 2q̇)2q̇ = 4 C(q, q̇)q̇.
    np.testing.assert_allclose(model.coriolis_torques(q, 2 * qd),
                               4 * model.coriolis_torques(q, qd), atol=1e-9)


def test_batch_gravity_and_coriolis(model):
    rng = np.random.default_rng(7)
    Q, QD = rng.uniform(-2, 2, (2, 8, 6))
    G = model.gravity_torques(Q)
    C = model.coriolis_torques(Q, QD)
    for k in range(8):
        np.testing.assert_allclose(G[k], model.gravity_torques(Q[k]), atol=1e-12)
        np.testing.assert_allclose(C[k], model.coriolis_torques(Q[k], QD[k]), atol=1e-12)


def test_friction_torques_from_urdf():
    xml = """<robot name="f"><link name="b"/><link name="a"/><link name="c"/>
      <joint name="j1" type="continuous"><parent link="b"/><child link="a"/>
        <dynamics damping="0.5" friction="2.0"/></joint>
      <joint name="j2" type="prismatic"><parent link="a"/><child link="c"/><axis xyz="1 0 0"/>
        <limit effort="10" velocity="1" lower="0" upper="1"/><dynamics damping="3"/></joint>
    </robot>"""
    model = load_model(xml, coulomb_velocity=0.05)
    np.testing.assert_allclose(model.damping, [0.5, 3.0])
    np.testing.assert_allclose(model.friction, [2.0, 0.0])
    qd = np.array([1.0, -0.2])
    np.testing.assert_allclose(model.friction_torques(qd),
                               [0.5 * 1.0 + 2.0 * np.tanh(1.0 / 0.05), 3.0 * -0.2])
    np.testing.assert_allclose(model.friction_torques(np.zeros(2)), 0.0)
    # Odd in q̇ and continuous through zero.
    np.testing.assert_allclose(model.friction_torques(-qd), -model.friction_torques(qd))
    assert abs(model.friction_torques([1e-6, 0])[0]) < 1e-3


def test_armature_adds_to_diagonal():
    plain = load_model(str(UR5E_URDF), tip_link='tool0')
    armature = np.array([1.0, 2.0, 3.0, 0.1, 0.2, 0.3])
    geared = load_model(str(UR5E_URDF), tip_link='tool0', armature=armature)
    q = np.array([0.1, -1.0, 1.2, 0.3, 0.4, 0.5])
    np.testing.assert_allclose(geared.mass_matrix(q) - plain.mass_matrix(q), np.diag(armature),
                               atol=1e-12)
