"""Tip pose, geometric Jacobian and J̇q̇ against Pinocchio; rotations against SciPy.

Pinocchio (PyPI ``pin``) builds its own model from the same URDF text: the tip frame's
placement, its ``LOCAL_WORLD_ALIGNED`` frame Jacobian and its classical acceleration after
``forwardKinematics(q, q̇, 0)`` must match ours in both conventions, on random chains
(:func:`random_urdf.random_chains`), the PUMA 560, the UR5e and example-robot-data's
Panda.  The Jacobian is also checked against central differences of the pose, J̇q̇
against central differences of J along q̇, and the rotation vector against SciPy's
``Rotation.as_rotvec``, angles near 0 and π included.
"""
import math
import pathlib
import sys

from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from random_urdf import PinocchioReference, random_chains
from scipy.spatial.transform import Rotation

from references import PUMA560_URDF, UR5E_URDF
from ne_dynamics_ros import load_model
from ne_dynamics_ros.dynamics.kinematics import (
    chain_kinematics, jacobian, jacobian_dot_qd, link_pose, manipulability,
    matrix_to_quaternion, pose_error, quaternion_to_matrix, rotation_exp, rotation_log,
    tip_kinematics, tip_pose)
from ne_dynamics_ros.dynamics.urdf_import import read_urdf_text
from ne_dynamics_ros.errors import ModelError, StateError

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'benchmarks'))
import bench_real  # noqa: E402 - the benchmark's reader of example-robot-data's Panda

CONVENTIONS = ('dh', 'mdh')
PANDA_FINGERS = ['panda_finger_joint1', 'panda_finger_joint2']


def assert_close(ours, ref, tol):
    scale = max(1.0, float(np.max(np.abs(ref))))
    np.testing.assert_allclose(ours, ref, rtol=0, atol=tol * scale)


def random_state(rng, prismatic):
    q = np.where(prismatic, rng.uniform(-0.5, 0.5, len(prismatic)),
                 rng.uniform(-np.pi, np.pi, len(prismatic)))
    return q, rng.normal(0, 2, len(prismatic))


def check_against_pinocchio(model, ref, q, qd):
    T, J, a = tip_kinematics(model, q, qd)
    T_ref, J_ref, a_ref = ref.tip_kinematics(q, qd)
    assert T.shape == (4, 4) and J.shape == (6, model.n) and a.shape == (6,)
    assert_close(T, T_ref, 1e-10)
    assert_close(J, J_ref, 1e-10)
    assert_close(a, a_ref, 1e-9)
    assert_close(tip_pose(model, q), T, 1e-15)
    assert_close(model.dh_forward_kinematics(q)[-1], T, 1e-10)
    assert_close(jacobian(model, q), J, 1e-15)
    assert_close(jacobian_dot_qd(model, q, qd), a, 1e-15)


def pose_derivatives(model, q, qd, h=1e-6):
    """J by central differences of the pose, J̇q̇ by central differences of J along q̇."""
    columns = []
    for i in range(model.n):
        step = np.zeros(model.n)
        step[i] = h
        plus, minus = tip_pose(model, q + step), tip_pose(model, q - step)
        columns.append(np.concatenate([(plus[:3, 3] - minus[:3, 3]),
                                       rotation_log(plus[:3, :3] @ minus[:3, :3].T)]) / (2 * h))
    J_dot = (jacobian(model, q + h * qd) - jacobian(model, q - h * qd)) / (2 * h)
    return np.array(columns).T, J_dot @ qd


def check_finite_differences(model, q, qd):
    J_fd, a_fd = pose_derivatives(model, q, qd)
    assert_close(jacobian(model, q), J_fd, 1e-7)
    assert_close(jacobian_dot_qd(model, q, qd), a_fd, 1e-6 * max(1.0, float(qd @ qd)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(robot=random_chains(), seed=st.integers(0, 2**32 - 1))
def test_random_chains_match_pinocchio(robot, seed):
    rng = np.random.default_rng(seed)
    prismatic = np.array([t == 'prismatic' for t in robot['types']])
    ref = PinocchioReference(robot['xml'], robot['joints'], robot['tip'],
                             locked=robot['locked'])
    q, qd = random_state(rng, prismatic)
    for convention in CONVENTIONS:
        model = load_model(robot['xml'], tip_link=robot['tip'], convention=convention)
        check_against_pinocchio(model, ref, q, qd)
    check_finite_differences(model, q, qd)


def arm(name, convention):
    """(model, Pinocchio reference) of a shipped arm or the Panda."""
    if name == 'panda':
        try:
            xml = read_urdf_text(str(bench_real.panda_urdf()))
        except SystemExit as exc:
            pytest.skip(str(exc))
        tip, locked = 'panda_hand_tcp', PANDA_FINGERS
    else:
        path, tip = {'puma560': (PUMA560_URDF, 'flange'), 'ur5e': (UR5E_URDF, 'tool0')}[name]
        xml, locked = path.read_text(), ()
    model = load_model(xml, tip_link=tip, convention=convention)
    return model, PinocchioReference(xml, model.joint_names, tip, locked=locked)


@pytest.mark.parametrize('convention', CONVENTIONS)
@pytest.mark.parametrize('name', ['puma560', 'ur5e', 'panda'])
def test_real_arms_match_pinocchio(name, convention):
    model, ref = arm(name, convention)
    rng = np.random.default_rng(3)
    for k in range(10):
        q, qd = random_state(rng, model.prismatic)
        check_against_pinocchio(model, ref, q, qd)
    check_finite_differences(model, q, qd)
    # the URDF links of the chain, by name, where the URDF puts them
    for joint, expected in zip(model.chain.joints, model.urdf_forward_kinematics(q)):
        assert_close(link_pose(model, q, joint.child_link), expected, 1e-10)
    assert_close(link_pose(model, q, model.tip_link), tip_pose(model, q), 0)
    assert_close(link_pose(model, q, model.base_link), np.eye(4), 0)
    for k, frame in enumerate(model.dh_forward_kinematics(q)[:-1]):
        assert_close(link_pose(model, q, k), frame, 1e-12)


def test_links_off_the_chain_are_named():
    model, _ = arm('panda', 'mdh')
    q = np.zeros(model.n)
    with pytest.raises(ModelError, match="'panda_rightfinger' is lumped into the body of "
                                         "link 'panda_link7'"):
        link_pose(model, q, 'panda_rightfinger')
    with pytest.raises(ModelError, match="'world' is not on the chain panda_link0 -> "
                                         'panda_hand_tcp'):
        link_pose(model, q, 'world')
    for index in (-1, model.n + 1, True):
        with pytest.raises(ModelError):
            link_pose(model, q, index)


def test_bad_joint_arrays_are_refused():
    model, _ = arm('ur5e', 'dh')
    kinematics = chain_kinematics(model)
    assert chain_kinematics(model) is kinematics
    for q in ([0.0] * 5, [0.0] * 5 + [math.nan], 'abcdef', None, np.zeros((2, 6))):
        with pytest.raises(StateError, match='q'):
            kinematics.update(q, [0.0] * 6)
    with pytest.raises(StateError, match='qd contains NaN'):
        tip_kinematics(model, np.zeros(6), [0, 0, math.inf, 0, 0, 0])
    # finite values whose sum overflows are finite
    assert np.all(np.isfinite(jacobian(model, [1e308, 1e308, 0, 0, 0, 0])))


def test_controller_call_takes_lists_and_matches_arrays():
    model, _ = arm('puma560', 'mdh')
    q, qd = np.linspace(-1, 1, 6), np.linspace(2, -1, 6)
    for ours, arrays in zip(chain_kinematics(model).update(q.tolist(), qd.tolist()),
                            tip_kinematics(model, q, qd)):
        np.testing.assert_array_equal(ours, arrays)


ANGLES = [0.0, 1e-14, 1e-9, 1e-5, 0.3, math.pi / 2, 2.0, math.pi - 1e-3, math.pi - 1e-7,
          math.pi - 1e-10]


@pytest.mark.parametrize('angle', ANGLES)
def test_rotation_log_matches_scipy(angle):
    rng = np.random.default_rng(int(angle * 1e3))
    for _ in range(20):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        R = Rotation.from_rotvec(angle * axis).as_matrix()
        expected = Rotation.from_matrix(R).as_rotvec()
        np.testing.assert_allclose(rotation_log(R), expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(rotation_exp(angle * axis), R, rtol=0, atol=1e-15)
        np.testing.assert_allclose(rotation_log(rotation_exp(angle * axis)), angle * axis,
                                   rtol=0, atol=1e-12)


def test_rotation_log_at_pi_gives_either_sign():
    for axis in (np.array([1.0, 0, 0]), np.array([0, 0.6, -0.8]), np.ones(3) / math.sqrt(3)):
        R = Rotation.from_rotvec(math.pi * axis).as_matrix()
        w = rotation_log(R)
        assert min(np.abs(w - math.pi * axis).max(), np.abs(w + math.pi * axis).max()) < 1e-12


def test_pose_error():
    rng = np.random.default_rng(7)
    for _ in range(20):
        T, T_target = np.eye(4), np.eye(4)
        T[:3, :3], T_target[:3, :3] = Rotation.random(2, random_state=rng).as_matrix()
        T[:3, 3], T_target[:3, 3] = rng.normal(size=(2, 3))
        assert np.all(pose_error(T, T) == 0)
        e = pose_error(T_target, T)
        np.testing.assert_allclose(e[:3], T_target[:3, 3] - T[:3, 3], atol=1e-15)
        expected = Rotation.from_matrix(T_target[:3, :3] @ T[:3, :3].T).as_rotvec()
        np.testing.assert_allclose(e[3:], expected, atol=1e-12)
    with pytest.raises(ValueError, match='T_target'):
        pose_error(np.eye(3), np.eye(4))
    with pytest.raises(ValueError, match='T must'):
        pose_error(np.eye(4), np.full((4, 4), math.nan))


def test_small_pose_error_is_the_jacobian_step():
    model, _ = arm('ur5e', 'mdh')
    q, dq = np.array([0.3, -1.2, 1.0, -0.5, 0.8, 0.1]), 1e-6 * np.linspace(1, -1, 6)
    e = pose_error(tip_pose(model, q + dq), tip_pose(model, q))
    np.testing.assert_allclose(e, jacobian(model, q) @ dq, rtol=0, atol=1e-11)


def test_quaternions_match_scipy():
    rng = np.random.default_rng(5)
    rotations = Rotation.random(50, random_state=rng)
    angles = Rotation.from_rotvec([[math.pi, 0, 0], [0, math.pi, 0], [0, 0, math.pi],
                                   [0, 0, 0], [math.pi - 1e-9, 0, 0]])
    for r in list(rotations) + list(angles):
        x, y, z, w = r.as_quat()
        scale = rng.uniform(0.1, 10)
        R = quaternion_to_matrix(scale * x, scale * y, scale * z, scale * w)
        np.testing.assert_allclose(R, r.as_matrix(), rtol=0, atol=1e-15)
        ours = np.array(matrix_to_quaternion(R))
        assert ours[3] >= 0 and abs(np.linalg.norm(ours) - 1) < 1e-15
        assert min(np.abs(ours - r.as_quat()).max(), np.abs(ours + r.as_quat()).max()) < 1e-15


@pytest.mark.parametrize('bad', [(0, 0, 0, 0), (math.nan, 0, 0, 1), (0, math.inf, 0, 1),
                                 (0, 0, 'x', 1)])
def test_bad_quaternions_are_refused(bad):
    with pytest.raises(ValueError, match='quaternion'):
        quaternion_to_matrix(*bad)


def test_manipulability():
    model, _ = arm('puma560', 'dh')
    J = jacobian(model, [0.1, -0.4, 0.3, 0.2, 0.5, -0.3])
    assert manipulability(J) == pytest.approx(math.sqrt(np.linalg.det(J @ J.T)), rel=1e-12)
    assert manipulability(J) == pytest.approx(np.prod(np.linalg.svd(J)[1]), rel=1e-9)
    # at the PUMA's wrist singularity (q5 = 0: axes 4 and 6 aligned)
    assert manipulability(jacobian(model, [0.1, -0.4, 0.3, 0.2, 0.0, -0.3])) < 1e-12
    J3 = J[:, :3]
    assert manipulability(J3) == pytest.approx(math.sqrt(np.linalg.det(J3.T @ J3)), rel=1e-9)
    with pytest.raises(ValueError, match='J must'):
        manipulability(np.ones(6))
