"""The tip's external wrench from the joint efforts: closed forms and MuJoCo's pushes.

The independent references: ``J^T F`` itself (a wrench mapped to the joints and back),
the SVD's closed form of a damped direction, and MuJoCo's ``mj_applyFT`` pushes at the
flange (the force the plant was given), read through the controller's momentum observer.
"""
import numpy as np
import pytest
from references import UR5E_URDF

from ne_dynamics_ros.control import ComputedTorqueController
from ne_dynamics_ros.control.sensing.wrench import DAMPING, tip_wrench
from ne_dynamics_ros.dynamics.kinematics import tip_pose
from ne_dynamics_ros.simulation.mujoco_arm import MujocoArm

RATE = 500.0
ARMATURE = [0.1] * 6
Q0 = np.array([0.2, -1.4, 1.4, -1.5, -1.5, 0.1])


@pytest.mark.parametrize('n', [6, 7])
def test_a_wrench_mapped_to_the_joints_comes_back(n):
    """Random well-conditioned Jacobians of 6 and 7 joints: J^T F -> F to the damping's
    relative (lambda / s_min)^2, in the base frame and rotated into the tip's."""
    rng = np.random.default_rng(n)
    for _ in range(20):
        J = rng.normal(size=(6, n))
        s = np.linalg.svd(J, compute_uv=False)
        if s[-1] < 0.3:
            continue
        tolerance = 2 * (DAMPING * s[0] / s[-1]) ** 2
        F = rng.normal(size=6) * [20, 20, 20, 2, 2, 2]
        got = tip_wrench(J, J.T @ F)
        assert got.flagged == 0
        assert np.linalg.norm(np.r_[got.force, got.moment] - F) <= tolerance * np.linalg.norm(F)
        R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        tipped = tip_wrench(J, J.T @ F, R)
        np.testing.assert_allclose(np.r_[tipped.force, tipped.moment],
                                   np.r_[R.T @ got.force, R.T @ got.moment], rtol=1e-12,
                                   atol=1e-12)


def test_a_direction_the_joints_hardly_feel_is_flagged_and_damped_not_amplified():
    """J with one singular value 1e-6 of the largest: an effort along that direction gives
    s / (s^2 + lambda^2) of it (the closed form), not 1 / s; five joints: one direction
    never felt, flagged; the wrench is still one whose J^T is the effort."""
    U, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(6, 6)))
    V, _ = np.linalg.qr(np.random.default_rng(2).normal(size=(6, 6)))
    s = np.array([3.0, 2.0, 1.5, 1.0, 0.5, 3e-6])
    J = U @ np.diag(s) @ V.T
    tau = V[:, -1] * 1.0                       # 1 N*m along the weakest direction
    got = tip_wrench(J, tau)
    lam = DAMPING * s[0]
    assert got.flagged == 1
    assert np.linalg.norm(np.r_[got.force, got.moment]) == pytest.approx(
        s[-1] / (s[-1] ** 2 + lam ** 2), rel=1e-6)
    assert np.linalg.norm(np.r_[got.force, got.moment]) < 1.0 / (2 * lam)
    J5 = J[:, :5]
    F = np.array([5.0, -3.0, 2.0, 0.2, 0.1, -0.3])
    five = tip_wrench(J5, J5.T @ F)
    assert five.flagged >= 1
    np.testing.assert_allclose(J5.T @ np.r_[five.force, five.moment], J5.T @ F, atol=1e-4)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match='do not match'):
        tip_wrench(np.eye(6), np.zeros(5))
    with pytest.raises(ValueError, match='NaN'):
        tip_wrench(np.eye(6), [0, 0, np.nan, 0, 0, 0])


@pytest.mark.parametrize('frame', ['base', 'tip'])
def test_a_push_at_the_flange_reads_as_its_force_on_the_mujoco_ur5e(frame):
    """20 N along x, y, z (one at a time) and a 2 N*m moment (20 N at 0.1 m) at MuJoCo's
    UR5e flange while computed torque holds it (exact model): after 1 s the command's
    external_wrench is the push to 2 % of its size, in the frame asked for."""
    c = ComputedTorqueController.from_urdf(
        str(UR5E_URDF), tip_link='tool0', armature=ARMATURE,
        settings={'kp': 400.0, 'kd': 40.0, 'external_wrench_frame': frame})
    c.external_wrench_wanted = True
    arm = MujocoArm(str(UR5E_URDF), armature=ARMATURE, initial_positions=Q0)
    names = c.model.joint_names
    t = [0]

    def run(seconds):
        out = None
        for _ in range(int(seconds * RATE)):
            ns = round(t[0] / RATE * 1e9)
            out = c.update(ns, names, arm.position, arm.velocity, steady_ns=ns)
            arm.step(out.effort, 1.0 / RATE)
            t[0] += 1
        return out
    run(0.5)
    for point, force in (((0, 0, 0), (20.0, 0, 0)), ((0, 0, 0), (0, 20.0, 0)),
                         ((0, 0, 0), (0, 0, 20.0)), ((0.1, 0, 0), (0, 0, 20.0))):
        arm.push('tool0', point, force)
        out = run(1.0)
        R = tip_pose(c.model, arm.position)[:3, :3]
        f = np.array(force)
        m = np.cross(R @ np.array(point), f)             # about the flange's origin, base
        if frame == 'tip':
            f, m = R.T @ f, R.T @ m
        wrench = out.external_wrench
        assert wrench.frame_id == ('tool0' if frame == 'tip' else c.model.base_link)
        assert wrench.flagged == 0
        err = np.linalg.norm(np.r_[wrench.force - f, wrench.moment - m])
        assert err < 0.02 * np.linalg.norm(np.r_[f, m]), (wrench, f, m)
        arm.push(None)
        run(0.5)
