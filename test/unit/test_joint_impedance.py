"""Mode joint_impedance against Pinocchio, closed forms and the MuJoCo plant.

The independent references: Pinocchio's gravity and mass matrix (the law's g(q) and the
M_ii of its damping), the drive friction's closed form, Hooke's law in joint space (a
force F at the tip, the arm at rest: K dq = J^T F, so the tip moves J K^-1 J^T F), and
MuJoCo's forward dynamics for the closed loop (never our model).
"""
import numpy as np
import pytest
from references import PinocchioArm, UR5E_URDF

from ne_dynamics_ros.control.laws import InertiaInput
from ne_dynamics_ros.control import ComputedTorqueController
from ne_dynamics_ros.control.laws import ControlParameterError, LawStep, make_law
from ne_dynamics_ros.control.laws.joint_impedance import JointImpedanceLaw
from ne_dynamics_ros.control.reference.trajectory import TrajectoryPoint
from ne_dynamics_ros.dynamics.kinematics import jacobian, tip_pose
from ne_dynamics_ros.simulation.mujoco_arm import MujocoArm

RATE = 500.0
ARMATURE = [0.1] * 6
Q0 = np.array([0.2, -1.4, 1.4, -1.5, -1.5, 0.1])
K = [800.0, 800.0, 400.0, 60.0, 60.0, 30.0]


def controller(**settings):
    return ComputedTorqueController.from_urdf(
        str(UR5E_URDF), tip_link='tool0', armature=ARMATURE,
        settings=dict({'mode': 'joint_impedance', 'joint_impedance.stiffness': K,
                       'state_timeout': 10.0}, **settings))


@pytest.mark.parametrize('feedforward', [True, False])
def test_the_effort_is_k_e_plus_d_edot_plus_the_model_forces_as_pinocchio_gives_them(
        feedforward):
    """tau = K e + 2 zeta sqrt(K M_ii) e' + Fv qd_d + Fc tanh(qd_d / v_s) + Pinocchio's
    RNEA(q, qd_d, qdd_d) (the gravity and the reference's M qdd_d + C(q, qd_d) qd_d) with
    the feed-forward, its RNEA(q, 0, 0) (the gravity) without; M from Pinocchio (armature
    on the diagonal), on random states."""
    c = controller(**{'joint_impedance.damping_ratio': 0.7, 'friction_compensation': True,
                      'joint_impedance.feedforward': feedforward})
    damping, coulomb = np.array([0.5, 0.4, 0.3, 0.1, 0.1, 0.1]), np.array([2.0, 2.0, 1.5,
                                                                           0.4, 0.4, 0.4])
    c.model.damping[:], c.model.friction[:] = damping, coulomb
    names = c.model.joint_names
    pin = PinocchioArm(UR5E_URDF, names, ARMATURE)
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, qd = Q0 + rng.normal(0, 0.5, 6), rng.normal(0, 0.5, 6)
        q_d, qd_d = q + rng.normal(0, 0.05, 6), rng.normal(0, 0.5, 6)
        qdd_d = rng.normal(0, 2.0, 6)
        law = make_law(c.context)
        assert isinstance(law, JointImpedanceLaw)
        tau = law.effort(LawStep(0.0, 0.0, q.tolist(), qd.tolist(),
                                 (q_d.tolist(), qd_d.tolist(), qdd_d.tolist()), None, None))
        d = 2 * 0.7 * np.sqrt(np.array(K) * np.diag(pin.mass_matrix(q)))
        friction = damping * qd_d + coulomb * np.tanh(qd_d / 0.003)
        model = pin.rnea(q, qd_d, qdd_d) if feedforward else pin.rnea(q, 0 * q, 0 * q)
        expected = np.array(K) * (q_d - q) + d * (qd_d - qd) + model + friction
        expected = np.clip(expected, -c.effort_limits, c.effort_limits)
        np.testing.assert_allclose(tau, expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize('feedforward', [True, False])
def test_the_arm_is_held_where_it_is_and_follows_a_goal_then_holds_its_end(feedforward):
    """On MuJoCo's UR5e (exact model): the first state is held with g(q) only (no jump);
    a 0.3 rad quintic is followed within the lag M_ii qdd_d / K without the feed-forward
    and within 5 % of that lag with it; its end is held to 1e-4 rad (Takegaki & Arimoto:
    a set point without error)."""
    c = controller(**{'joint_impedance.feedforward': feedforward})
    arm = MujocoArm(str(UR5E_URDF), armature=ARMATURE, initial_positions=Q0)
    names = c.model.joint_names
    pin = PinocchioArm(UR5E_URDF, names, ARMATURE)
    out = c.update(0, names, arm.position, arm.velocity, steady_ns=0)
    np.testing.assert_allclose(out.effort, pin.rnea(Q0, 0 * Q0, 0 * Q0), atol=1e-9)
    goal = Q0 + np.array([0.3, -0.3, 0.3, 0.3, -0.3, 0.3])
    c.set_trajectory(names, [TrajectoryPoint(2.0, goal, np.zeros(6), np.zeros(6))], 0, 0)
    worst = np.zeros(6)
    for k in range(int(4.0 * RATE)):
        ns = round(k / RATE * 1e9)
        out = c.update(ns, names, arm.position, arm.velocity, steady_ns=ns)
        if k < 2.0 * RATE:
            worst = np.maximum(worst, np.abs(out.position_error))
        arm.step(out.effort, 1.0 / RATE)
    lag = np.diag(pin.mass_matrix(Q0)) * 5.77 * 0.3 / 4.0 / np.array(K)   # M qdd_max / K
    if feedforward:
        assert np.all(worst < 0.05 * lag), (worst, lag)
    else:
        assert np.all(worst < 2.0 * lag) and np.all(worst > 0.2 * lag), (worst, lag)
    np.testing.assert_allclose(arm.position, goal, atol=1e-4)


@pytest.mark.parametrize('axis', [0, 1, 2])
def test_a_push_at_the_flange_moves_the_tip_by_j_k_inverse_j_transpose_f(axis):
    """20 N at the flange on MuJoCo's UR5e (exact model, no friction), the arm at rest:
    the tip moves J K^-1 J^T F to 3 % (the Jacobian at the pose held); released, back
    within 0.1 mm. A ki is set and ignored: an integral would cancel the push."""
    c = controller(ki=100.0)
    arm = MujocoArm(str(UR5E_URDF), armature=ARMATURE, initial_positions=Q0)
    names = c.model.joint_names
    t = [0]

    def run(seconds):
        for _ in range(int(seconds * RATE)):
            ns = round(t[0] / RATE * 1e9)
            out = c.update(ns, names, arm.position, arm.velocity, steady_ns=ns)
            arm.step(out.effort, 1.0 / RATE)
            t[0] += 1
        return tip_pose(c.model, arm.position)[:3, 3]
    start = run(0.5)
    force = np.zeros(3)
    force[axis] = 20.0
    arm.push('tool0', (0.0, 0.0, 0.0), force)
    moved = run(3.0) - start
    J = jacobian(c.model, Q0)[:3]
    predicted = J @ ((J.T @ force) / np.array(K))
    assert abs(moved[axis] - predicted[axis]) < 0.03 * abs(predicted[axis]), (moved,
                                                                              predicted)
    arm.push(None)
    assert np.linalg.norm(run(3.0) - start) < 1e-4


def test_a_declared_load_is_carried_in_its_gravity():
    """A 2 kg load declared at the flange: the first command is Pinocchio's gravity of the
    arm with 2 kg at the flange's origin (the mode carries a load as cartesian_impedance)."""
    c = controller()
    names = c.model.joint_names
    c.take_input('declared_payload', InertiaInput(2.0))
    out = c.update(0, names, Q0, np.zeros(6), steady_ns=0)
    pin = PinocchioArm(UR5E_URDF, names, ARMATURE)
    J = np.zeros((3, 6))
    J[:] = jacobian(c.model, Q0)[:3]
    load = J.T @ np.array([0.0, 0.0, 2.0 * 9.81])        # m g at the flange, up
    np.testing.assert_allclose(out.effort, pin.rnea(Q0, 0 * Q0, 0 * Q0) + load, atol=1e-6)


@pytest.mark.parametrize('values, match', [
    ({'joint_impedance.stiffness': [-1.0] * 6}, 'joint_impedance.stiffness'),
    ({'joint_impedance.stiffness': [1.0] * 5}, 'joint_impedance.stiffness'),
    ({'joint_impedance.stiffness': [float('nan')] * 6}, 'joint_impedance.stiffness'),
    ({'joint_impedance.damping_ratio': 0.0}, 'joint_impedance.damping_ratio'),
    ({'joint_impedance.damping_ratio': 'soft'}, 'joint_impedance.damping_ratio'),
])
def test_bad_settings_are_refused_and_change_nothing(values, match):
    c = controller()
    before = c.settings
    with pytest.raises(ControlParameterError, match=match):
        c.reconfigure(**values)
    assert c.settings is before


def test_unset_the_stiffness_is_sized_for_the_arm_as_the_gains_are():
    # K_i = kp_i min M_ii over the workspace: Pinocchio's M_ii (armature included) at the
    # same configurations; at random others within the limits each joint's natural
    # frequency sqrt(K_i / M_ii(q)) stays within sqrt(kp_i); /diagnostics says so
    from ne_dynamics_ros.control.laws.gains import CONFIGURATIONS, workspace_configurations
    kp = np.array([1743.0, 1808.0, 2500.0, 2500.0, 2500.0, 2500.0])
    c = ComputedTorqueController.from_urdf(
        str(UR5E_URDF), tip_link='tool0', armature=ARMATURE,
        settings={'mode': 'joint_impedance', 'kp': kp.tolist(), 'kd': 80.0})
    names = c.model.joint_names
    c.update(0, names, Q0, np.zeros(6), steady_ns=0)
    pin = PinocchioArm(UR5E_URDF, names, ARMATURE)
    inertia = np.min([np.diag(pin.mass_matrix(q))
                      for q in workspace_configurations(c.model, CONFIGURATIONS, 0)], axis=0)
    np.testing.assert_allclose(c.law.stiffness, kp * inertia, rtol=1e-9)
    rng = np.random.default_rng(3)
    for q in rng.uniform(c.model.lower_limits, c.model.upper_limits, (50, 6)):
        assert np.all(c.law.stiffness / np.diag(pin.mass_matrix(q)) <= kp * (1 + 1e-9))
    assert 'sized for the arm' in c.law.facts()['joint impedance stiffness [N*m/rad]']
    c.reconfigure(**{'joint_impedance.stiffness': [300.0]})
    c.update(10_000_000, names, Q0, np.zeros(6), steady_ns=10_000_000)
    assert c.law.stiffness.tolist() == [300.0] * 6
    assert c.law.facts()['joint impedance stiffness [N*m/rad]'].endswith('(set)')
