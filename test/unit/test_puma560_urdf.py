"""config/puma560.urdf + config/puma560.yaml reproduce the published PUMA 560 model.

Reference: roboticstoolbox-python ``models.DH.Puma560`` (Armstrong, Khatib & Burdick 1986
inertial parameters, Corke & Armstrong-Helouvry 1994 consensus kinematics / motor data), with
friction removed and motor (armature) inertia kept.

Conventions verified here (see the tests that pin them):

* ``Puma560().nofriction()`` removes only Coulomb friction (its default is
  ``viscous=False``); ``nofriction(coulomb=True, viscous=True)`` removes both B and Tc.
  ``rne`` then returns the rigid-body torque plus ``G**2 * Jm * qdd``.
* RTB's ``gravity`` argument is the gravitational acceleration vector itself (default
  ``[0, 0, -9.81]``, z up), the same convention as Pinocchio's ``model.gravity``; passing
  ``[0, 0, +9.81]`` flips the sign of the gravity torque.
* RTB's Puma560 has identity base and tool transforms.
"""
import math
import pathlib
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
import yaml
from roboticstoolbox.models.DH import Puma560

CONFIG_DIR = pathlib.Path(__file__).resolve().parents[2] / 'config'
URDF_PATH = CONFIG_DIR / 'puma560.urdf'
YAML_PATH = CONFIG_DIR / 'puma560.yaml'

JOINT_NAMES = [f'joint_{i}' for i in range(1, 7)]
GRAVITY = np.array([0.0, 0.0, -9.81])
RTOL = 1e-9
N_SAMPLES = 50


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------

def _armature():
    with open(YAML_PATH) as f:
        params = yaml.safe_load(f)['computed_torque_node']['ros__parameters']
    arm = np.asarray(params['armature'], dtype=float)
    assert arm.shape == (6,)
    return arm


def _rtb_no_friction():
    """Puma560 with viscous AND Coulomb friction removed, motor inertia kept."""
    robot = Puma560().nofriction(coulomb=True, viscous=True)
    for link in robot.links:
        assert link.B == 0.0
        assert np.all(np.asarray(link.Tc) == 0.0)
        assert link.Jm > 0.0 and link.G != 0.0
    return robot


def _pin_model():
    model = pin.buildModelFromUrdf(str(URDF_PATH))
    assert [model.names[i] for i in range(1, model.njoints)] == JOINT_NAMES
    model.armature = _armature()
    model.gravity.linear = GRAVITY
    return model


def _samples(seed, n=N_SAMPLES, zero_velocity=False):
    rng = np.random.default_rng(seed)
    qlim = np.array([link.qlim for link in Puma560().links])  # (6, 2)
    q = rng.uniform(qlim[:, 0], qlim[:, 1], size=(n, 6))
    qd = np.zeros((n, 6)) if zero_velocity else rng.uniform(-3.0, 3.0, size=(n, 6))
    qdd = rng.uniform(-10.0, 10.0, size=(n, 6))
    return q, qd, qdd


def _assert_close(actual, desired, what):
    desired = np.asarray(desired)
    scale = max(1.0, float(np.max(np.abs(desired))))
    rel = float(np.max(np.abs(np.asarray(actual) - desired))) / scale
    print(f'{what}: max |error| / max |reference| = {rel:.3e}')
    np.testing.assert_allclose(actual, desired, rtol=RTOL, atol=RTOL * scale, err_msg=what)
    return rel


def _full_mass_matrix(model, data, q):
    M = pin.crba(model, data, q)
    return np.triu(M) + np.triu(M, 1).T


def _urdf_inertials():
    """{link name: (mass, com xyz, 3x3 inertia about COM in the link frame)} from the URDF."""
    root = ET.parse(URDF_PATH).getroot()
    out = {}
    for link in root.findall('link'):
        inertial = link.find('inertial')
        if inertial is None:
            continue
        origin = inertial.find('origin')
        xyz = np.array([float(v) for v in origin.get('xyz', '0 0 0').split()])
        rpy = np.array([float(v) for v in origin.get('rpy', '0 0 0').split()])
        R = pin.rpy.rpyToMatrix(*rpy)
        i = inertial.find('inertia').attrib
        inertia = np.array([[float(i['ixx']), float(i['ixy']), float(i['ixz'])],
                            [float(i['ixy']), float(i['iyy']), float(i['iyz'])],
                            [float(i['ixz']), float(i['iyz']), float(i['izz'])]])
        out[link.get('name')] = (float(inertial.find('mass').get('value')), xyz,
                                 R @ inertia @ R.T)
    return out


def _rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


# ---------------------------------------------------------------------------------------
# RTB conventions the comparison relies on
# ---------------------------------------------------------------------------------------

def test_rtb_conventions():
    robot = Puma560()
    assert np.array_equal(robot.base.A, np.eye(4))
    assert np.array_equal(robot.tool.A, np.eye(4))
    np.testing.assert_array_equal(robot.gravity, GRAVITY)
    # nofriction() with its defaults keeps the viscous term: not what we want.
    assert all(link.B > 0.0 for link in robot.nofriction().links)
    # Friction removed -> rne(q, 0, qdd, g=0) - rne(q, 0, 0, g=0) = M(q) qdd including G^2 Jm.
    nf = _rtb_no_friction()
    q, qd, qdd = _samples(1, n=1)
    zero = np.zeros(6)
    tau_v = nf.rne(q[0], qd[0], zero, gravity=[0, 0, 0])
    tau_v2 = nf.rne(q[0], 2 * qd[0], zero, gravity=[0, 0, 0])
    np.testing.assert_allclose(tau_v2, 4 * tau_v, rtol=1e-12, atol=1e-12)  # purely quadratic
    M = nf.inertia(q[0])
    arm = np.array([link.G ** 2 * link.Jm for link in nf.links])
    np.testing.assert_allclose(M @ qdd[0], nf.rne(q[0], zero, qdd[0], gravity=[0, 0, 0]),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(arm, _armature(), rtol=0, atol=0)


# ---------------------------------------------------------------------------------------
# Pinocchio on the URDF vs RTB
# ---------------------------------------------------------------------------------------

def test_armature_matches_rtb_exactly():
    robot = Puma560()
    np.testing.assert_array_equal(_armature(), [link.G ** 2 * link.Jm for link in robot.links])


def test_pinocchio_rnea_matches_rtb():
    robot = _rtb_no_friction()
    model = _pin_model()
    data = model.createData()
    worst = 0.0
    for seed, zero_velocity in ((11, False), (12, True)):
        q, qd, qdd = _samples(seed, zero_velocity=zero_velocity)
        tau_rtb = robot.rne(q, qd, qdd, gravity=GRAVITY)
        assert tau_rtb.shape == (N_SAMPLES, 6)
        tau_pin = np.array([pin.rnea(model, data, q[k], qd[k], qdd[k]) for k in range(len(q))])
        worst = max(worst, _assert_close(tau_pin, tau_rtb,
                                         f'rnea (zero_velocity={zero_velocity})'))
        # the Python RNE of RTB must agree as well (independent of the C extension)
        tau_py = robot.rne_python(q[:5], qd[:5], qdd[:5], gravity=GRAVITY)
        _assert_close(tau_pin[:5], tau_py, 'rnea vs rne_python')
    print(f'worst relative error Pinocchio vs RTB rne: {worst:.3e}')


def test_pinocchio_gravity_and_mass_matrix_match_rtb():
    robot = _rtb_no_friction()
    model = _pin_model()
    data = model.createData()
    q, _, _ = _samples(21)
    g_rtb = robot.gravload(q, gravity=GRAVITY)
    g_pin = np.array([pin.computeGeneralizedGravity(model, data, qk) for qk in q])
    _assert_close(g_pin, g_rtb, 'gravity torque')
    # sign convention: RTB's "gravity" is the acceleration vector; +9.81 flips the torque
    g_flipped = robot.gravload(q[0], gravity=-GRAVITY)
    np.testing.assert_allclose(g_flipped, -g_pin[0], rtol=1e-9, atol=1e-9)
    M_pin = np.array([_full_mass_matrix(model, data, qk) for qk in q[:20]])
    M_rtb = np.array([robot.inertia(qk) for qk in q[:20]])
    _assert_close(M_pin, M_rtb, 'mass matrix (incl. armature)')


def test_kinematics_and_limits_match_rtb():
    robot = Puma560()
    model = _pin_model()
    data = model.createData()
    flange = model.getFrameId('flange')
    q, _, _ = _samples(31, n=20)
    for qk in q:
        pin.framesForwardKinematics(model, data, qk)
        np.testing.assert_allclose(data.oMf[flange].homogeneous, robot.fkine(qk).A,
                                   rtol=0, atol=1e-12)
        # joint i frame = DH frame (i-1) rotated by q_i about its z axis
        T_all = robot.fkine_all(qk)
        for i in range(6):
            T_dh_prev = T_all[i].A
            Rz = np.eye(4)
            Rz[:3, :3] = pin.rpy.rpyToMatrix(0.0, 0.0, qk[i])
            np.testing.assert_allclose(data.oMi[i + 1].homogeneous, T_dh_prev @ Rz,
                                       rtol=0, atol=1e-12)
    qlim = np.array([link.qlim for link in robot.links])
    np.testing.assert_allclose(model.lowerPositionLimit, qlim[:, 0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(model.upperPositionLimit, qlim[:, 1], rtol=0, atol=1e-15)
    np.testing.assert_allclose(model.effortLimit, [97.6, 186.4, 89.4, 24.2, 20.1, 21.3])
    np.testing.assert_allclose(model.velocityLimit,
                               [1.917, 1.512, 2.402, 5.340, 5.089, 5.738])


# ---------------------------------------------------------------------------------------
# physical consistency and the documented regrouping
# ---------------------------------------------------------------------------------------

def test_urdf_inertias_are_physical():
    inertials = _urdf_inertials()
    assert sorted(inertials) == [f'link_{i}' for i in range(1, 7)]
    for name, (mass, _, I) in inertials.items():
        assert mass >= 0.0, name
        np.testing.assert_array_equal(I, I.T)
        eig = np.linalg.eigvalsh(I)
        tol = 1e-12 * max(1e-12, float(np.max(np.abs(eig))))
        assert eig[0] >= -tol, f'{name}: not PSD, principal moments {eig}'
        assert eig[0] + eig[1] >= eig[2] - tol, f'{name}: triangle inequality, {eig}'
        # every permutation (implied by the sorted one, checked for clarity)
        a, b, c = eig
        assert a + b >= c - tol and a + c >= b - tol and b + c >= a - tol, name


def test_urdf_inertias_are_rtb_plus_documented_regrouping():
    """URDF tensor, rotated back to DH frame i, = RTB I_i + exactly the regrouping terms."""
    robot = Puma560()
    inertials = _urdf_inertials()
    regroup = {  # in DH frame i (documented in the URDF header)
        1: 0.175 * np.diag([1.0, 0.0, 1.0]),     # + about the joint-1 axis (y of DH frame 1)
        2: -0.0075 * np.diag([1.0, 1.0, 0.0]),   # - moved to link 3 (joint-3 axis = z of DH 2)
        3: 0.0075 * np.diag([1.0, 0.0, 1.0]),    # + (joint-3 axis = -y of DH frame 3)
    }
    for i, link in enumerate(robot.links, start=1):
        mass, com, I_link = inertials[f'link_{i}']
        R = _rx(link.alpha)
        assert mass == link.m
        np.testing.assert_allclose(com, np.array([link.a, 0.0, link.d]) + R @ link.r,
                                   rtol=0, atol=1e-15)
        I_dh = R.T @ I_link @ R
        np.testing.assert_allclose(I_dh - link.I, regroup.get(i, np.zeros((3, 3))),
                                   rtol=0, atol=1e-15, err_msg=f'link_{i}')
    # the moved tensor is delta (E3 - u u^T) with u = the joint-3 axis in both frames
    u3_in_dh3 = _rx(robot.links[2].alpha).T @ np.array([0.0, 0.0, 1.0])
    np.testing.assert_allclose(regroup[3], 0.0075 * (np.eye(3) - np.outer(u3_in_dh3, u3_in_dh3)),
                               atol=1e-15)
    u1_in_dh1 = _rx(robot.links[0].alpha).T @ np.array([0.0, 0.0, 1.0])
    np.testing.assert_allclose(regroup[1], 0.175 * (np.eye(3) - np.outer(u1_in_dh1, u1_in_dh1)),
                               atol=1e-15)


# ---------------------------------------------------------------------------------------
# our own model API (ne_dynamics_ros.load_model) vs RTB
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize('convention', ['dh', 'mdh'])
def test_load_model_rnea_matches_rtb(convention):
    from ne_dynamics_ros import load_model  # ImportError until model.py exists: intended

    armature = _armature()
    model = load_model(str(URDF_PATH), convention=convention, armature=armature)
    assert list(model.joint_names) == JOINT_NAMES
    robot = _rtb_no_friction()
    for seed, zero_velocity in ((41, False), (42, True)):
        q, qd, qdd = _samples(seed, zero_velocity=zero_velocity)
        tau_rtb = robot.rne(q, qd, qdd, gravity=GRAVITY)
        batch = np.asarray(model.rnea(q, qd, qdd, gravity=(0, 0, -9.81)))
        assert batch.shape == (N_SAMPLES, 6)
        _assert_close(batch, tau_rtb, f'load_model({convention!r}).rnea batch')
        single = np.array([np.asarray(model.rnea(q[k], qd[k], qdd[k], gravity=(0, 0, -9.81)))
                           for k in range(10)])
        assert single.shape == (10, 6)
        _assert_close(single, tau_rtb[:10], f'load_model({convention!r}).rnea single')


def test_load_model_dh_table_matches_rtb():
    from ne_dynamics_ros import load_model  # ImportError until model.py exists: intended

    model = load_model(str(URDF_PATH), convention='dh', armature=_armature())
    rows = list(model.dh_table())
    robot = Puma560()
    print('joint   type  a          alpha       d          theta   | RTB a, alpha, d, offset')
    for row, link in zip(rows, robot.links):
        print(f'{row.joint:7s} {row.type!s:5s} {row.a: .6f} {row.alpha: .6f} {row.d: .6f} '
              f'{row.theta: .6f} | {link.a: .6f} {link.alpha: .6f} {link.d: .6f} '
              f'{link.offset: .6f}')
    assert len(rows) == 6
    for row, link, name in zip(rows, robot.links, JOINT_NAMES):
        assert row.joint == name
        assert str(getattr(row.type, 'value', row.type)) == 'R'
        np.testing.assert_allclose([row.a, row.alpha, row.d, row.theta],
                                   [link.a, link.alpha, link.d, link.offset],
                                   rtol=0, atol=1e-9, err_msg=name)
