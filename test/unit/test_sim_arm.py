"""The simulated arm (Pinocchio ABA + RK4, ZOH effort): physics checks without ROS."""
import numpy as np
import pinocchio as pin
import pytest

from references import PUMA560_URDF, UR5E_URDF
from ne_dynamics_ros.errors import ModelError, StateError, URDFError
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm

PUMA_ARMATURE = [0.784029968642, 2.324814845, 0.576873331938,
                 0.19079062612368, 0.170706291657, 0.194064505668]
G = 9.81


def _one_link_urdf(joint_type='revolute', axis='0 0 1', length=0.5, mass=2.0,
                   inertia='0.01 0.01 0.01'):
    """A single link on one joint; its centre of mass ``length`` along x, axis along z."""
    ixx, iyy, izz = inertia.split()
    limit = ('<limit lower="-10" upper="10" effort="100" velocity="10"/>'
             if joint_type != 'continuous' else '')
    return f"""<?xml version="1.0"?>
<robot name="one_link">
  <link name="base"/>
  <link name="arm">
    <inertial><origin xyz="{length} 0 0"/><mass value="{mass}"/>
      <inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="tool"/>
  <joint name="j1" type="{joint_type}"><parent link="base"/><child link="arm"/>
    <origin xyz="0 0 0"/><axis xyz="{axis}"/>{limit}</joint>
  <joint name="tool_joint" type="fixed"><parent link="arm"/><child link="tool"/>
    <origin xyz="{2 * length} 0 0"/></joint>
</robot>"""


def _two_link_urdf(joint_type):
    """Two links; joint axes along y (the first) and z (the second), gravity matters."""
    limit = ('<limit lower="-100" upper="100" effort="100" velocity="10"/>'
             if joint_type != 'continuous' else '')
    return f"""<?xml version="1.0"?>
<robot name="two_link">
  <link name="base"/>
  <link name="l1"><inertial><origin xyz="0.2 0.05 0"/><mass value="3"/>
    <inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0.001" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><origin xyz="0.1 0 0.1"/><mass value="1.5"/>
    <inertia ixx="0.01" iyy="0.012" izz="0.009" ixy="0" ixz="0.001" iyz="0"/></inertial></link>
  <joint name="a" type="{joint_type}"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>{limit}</joint>
  <joint name="b" type="{joint_type}"><parent link="l1"/><child link="l2"/>
    <origin xyz="0.4 0 0" rpy="0.3 0 0"/><axis xyz="0 0 1"/>{limit}</joint>
</robot>"""


@pytest.mark.parametrize('urdf, armature', [(UR5E_URDF, 0.05), (PUMA560_URDF, PUMA_ARMATURE)])
def test_energy_is_conserved_without_effort_friction_and_gravity(urdf, armature):
    rng = np.random.default_rng(1)
    arm = SimulatedArm(str(urdf), armature=armature, gravity=(0, 0, 0))
    arm.reset(rng.uniform(-1.5, 1.5, arm.n), rng.uniform(-1.0, 1.0, arm.n))
    energy = arm.energy()
    for _ in range(200):  # 2 s at 100 Hz publishing, 1 kHz RK4
        arm.step(np.zeros(arm.n), 0.01)
    assert np.linalg.norm(arm.velocity) > 0.1  # it really moved
    assert abs(arm.energy() - energy) < 1e-7 * energy


def test_energy_is_conserved_with_gravity_too():
    rng = np.random.default_rng(2)
    arm = SimulatedArm(str(UR5E_URDF), armature=0.05)
    arm.reset(rng.uniform(-1.5, 1.5, arm.n), rng.uniform(-0.5, 0.5, arm.n))
    energy = arm.energy()
    scale = arm.kinetic_energy() + abs(arm.potential_energy())
    for _ in range(100):
        arm.step(np.zeros(arm.n), 0.01)
    assert abs(arm.energy() - energy) < 1e-6 * scale


@pytest.mark.parametrize('urdf', [UR5E_URDF, PUMA560_URDF])
def test_gravity_compensation_holds_the_arm_still(urdf):
    rng = np.random.default_rng(3)
    arm = SimulatedArm(str(urdf), armature=0.2)
    q0 = rng.uniform(-1.5, 1.5, arm.n)
    arm.reset(q0)
    # The holding torque from an independent Pinocchio model of the same URDF.
    model = pin.buildModelFromXML(urdf.read_text())
    tau = pin.computeGeneralizedGravity(model, model.createData(), q0)
    assert np.linalg.norm(tau) > 1.0
    for _ in range(100):
        arm.step(tau, 0.01)
    np.testing.assert_allclose(arm.position, q0, atol=1e-9)
    np.testing.assert_allclose(arm.velocity, 0.0, atol=1e-8)
    np.testing.assert_allclose(arm.effort, tau, atol=0)
    # Without it the arm falls.
    arm.reset(q0)
    arm.step(np.zeros(arm.n), 0.1)
    assert np.max(np.abs(arm.position - q0)) > 1e-3


def test_payload_adds_m_g_lever_to_the_gravity_torque():
    # Joint axis horizontal (y), link along x: the tip (payload) is 2 * 0.5 m out.
    mass = 1.7
    plain = SimulatedArm(_one_link_urdf(axis='0 1 0'))
    loaded = SimulatedArm(_one_link_urdf(axis='0 1 0'), payload_mass=mass)
    assert loaded.payload_link == 'tool'
    q, v = np.zeros(1), np.zeros(1)
    # Torque that holds the plain link horizontal (about +y gravity pulls the arm down,
    # i.e. towards positive rotation about y): tau = -m g l.
    hold = np.array([-2.0 * G * 0.5])
    np.testing.assert_allclose(plain.acceleration(q, v, hold), 0.0, atol=1e-12)
    extra = np.array([-mass * G * 1.0])
    np.testing.assert_allclose(loaded.acceleration(q, v, hold + extra), 0.0, atol=1e-12)
    # At 60 degrees the lever is cos(60 deg) times shorter.
    q60 = np.array([np.radians(60.0)])
    tau60 = (hold + extra) * np.cos(q60)
    np.testing.assert_allclose(loaded.acceleration(q60, v, tau60), 0.0, atol=1e-12)


def test_payload_on_a_real_arm_matches_the_tip_jacobian():
    mass = 2.0
    rng = np.random.default_rng(4)
    plain = SimulatedArm(str(UR5E_URDF))
    loaded = SimulatedArm(str(UR5E_URDF), payload_mass=mass)
    assert loaded.payload_link == 'tool0'
    model = pin.buildModelFromXML(UR5E_URDF.read_text())
    data = model.createData()
    tool0 = model.getFrameId('tool0')
    for _ in range(5):
        q = rng.uniform(-np.pi, np.pi, 6)
        gravity = pin.computeGeneralizedGravity(model, data, q)
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        jacobian = pin.getFrameJacobian(model, data, tool0, pin.LOCAL_WORLD_ALIGNED)[:3]
        extra = -jacobian.T @ (mass * np.array([0.0, 0.0, -G]))
        np.testing.assert_allclose(plain.acceleration(q, np.zeros(6), gravity), 0, atol=1e-9)
        np.testing.assert_allclose(loaded.acceleration(q, np.zeros(6), gravity + extra), 0,
                                   atol=1e-9)


def test_viscous_friction_decays_velocity_exponentially():
    # Free spin about a vertical axis, no gravity torque: I qdd = -b qd.
    inertia_about_axis = 2.0 * 0.5 ** 2 + 0.01
    armature, friction = 0.3, 0.4
    arm = SimulatedArm(_one_link_urdf(), armature=armature, joint_friction=friction,
                       integration_rate=2000.0)
    arm.reset([0.0], [2.0])
    arm.step([0.0], 1.0)
    rate = friction / (inertia_about_axis + armature)
    np.testing.assert_allclose(arm.velocity, 2.0 * np.exp(-rate), rtol=1e-9)
    np.testing.assert_allclose(arm.position, 2.0 / rate * (1 - np.exp(-rate)), rtol=1e-9)


def test_continuous_joints_keep_unwrapped_urdf_angles():
    # Pinocchio stores a continuous joint as (cos, sin): nq = 2 per joint.
    arm = SimulatedArm(_two_link_urdf('continuous'))
    assert arm.model.nq == 4 and arm.model.nv == 2
    twin = SimulatedArm(_two_link_urdf('revolute'))
    rng = np.random.default_rng(5)
    for _ in range(5):
        q = rng.uniform(-9.0, 9.0, 2)   # well past +-pi
        v, tau = rng.normal(size=2), rng.normal(size=2)
        np.testing.assert_allclose(arm.acceleration(q, v, tau), twin.acceleration(q, v, tau),
                                   rtol=1e-12, atol=1e-12)
    # A free spin about a vertical axis turns three times: q reads 6 pi, not 0.
    spinner = SimulatedArm(_one_link_urdf('continuous'), gravity=(0, 0, -G))
    spinner.reset([0.0], [2 * np.pi])
    for _ in range(300):
        spinner.step([0.0], 0.01)
    np.testing.assert_allclose(spinner.position, [6 * np.pi], rtol=1e-12)
    # And the trajectories of the two twins agree over time.
    arm.reset([3.0, -2.0], [1.0, 2.0])
    twin.reset([3.0, -2.0], [1.0, 2.0])
    for _ in range(50):
        arm.step([0.5, -0.2], 0.01)
        twin.step([0.5, -0.2], 0.01)
    np.testing.assert_allclose(arm.position, twin.position, atol=1e-10)


def test_joint_subset_and_order():
    full = SimulatedArm(str(UR5E_URDF))
    order = list(reversed(full.joint_names))
    reordered = SimulatedArm(str(UR5E_URDF), joints=order)
    assert reordered.joint_names == order
    rng = np.random.default_rng(6)
    q, v, tau = rng.normal(size=(3, 6))
    np.testing.assert_allclose(reordered.acceleration(q[::-1], v[::-1], tau[::-1]),
                               full.acceleration(q, v, tau)[::-1], rtol=1e-12, atol=1e-12)
    subset = SimulatedArm(str(UR5E_URDF), joints=['shoulder_lift_joint', 'elbow_joint'])
    assert subset.n == 2 and subset.model.nv == 2
    assert subset.payload_link == 'tool0'   # the locked wrist still carries the tip
    with pytest.raises(ModelError, match='not movable joints'):
        SimulatedArm(str(UR5E_URDF), joints=['nope'])


def test_rk4_converges_with_the_integration_rate():
    def run(rate):
        arm = SimulatedArm(str(UR5E_URDF), integration_rate=rate)
        arm.reset(np.full(6, 0.3), np.full(6, 0.5))
        for _ in range(50):
            arm.step(np.zeros(6), 0.01)
        return arm.position
    coarse, fine, finest = run(200.0), run(1000.0), run(4000.0)
    error_fine = np.max(np.abs(fine - finest))
    assert error_fine < 1e-7
    # Fourth order: five times the step gives about 5^4 = 625 times the error.
    assert np.max(np.abs(coarse - finest)) > 200 * error_fine


def test_effort_limits_clip_the_applied_effort():
    arm = SimulatedArm(_one_link_urdf(), effort_limits=[1.5])
    arm.step([10.0], 0.01)
    np.testing.assert_allclose(arm.effort, [1.5])


def test_bad_input_is_refused():
    with pytest.raises(URDFError, match='not found'):
        SimulatedArm('/nonexistent/arm.urdf')
    with pytest.raises(URDFError):
        SimulatedArm('<robot name="x"><link name="a"/><joint name="j"/></robot>')
    with pytest.raises(ModelError, match='armature'):
        SimulatedArm(str(UR5E_URDF), armature=[1.0, 2.0])
    with pytest.raises(ModelError, match='payload_link'):
        SimulatedArm(str(UR5E_URDF), payload_mass=1.0, payload_link='nowhere')
    arm = SimulatedArm(str(UR5E_URDF))
    with pytest.raises(StateError, match='efforts'):
        arm.step(np.zeros(5), 0.01)
    with pytest.raises(StateError, match='NaN'):
        arm.step([np.nan] * 6, 0.01)
    with pytest.raises(StateError, match='dt'):
        arm.step(np.zeros(6), 0.0)


def test_a_push_at_the_flange_acts_as_j_transpose_f_and_its_sensor_reads_it():
    # Pinocchio's UR5e with a 1.5 kg load at tool0: pushed there with F, the arm moves as
    # under the command plus J^T F (the link's Jacobian), and the sensor at tool0 reads
    # F and the load's weight m g in tool0's axes (the closed form)
    from ne_dynamics_ros import load_model
    from ne_dynamics_ros.dynamics.kinematics import jacobian, tip_pose
    q0 = np.array([0.2, -1.4, 1.4, -1.5, -1.5, 0.1])
    force = np.array([3.0, -6.0, 8.0])
    pushed = SimulatedArm(str(UR5E_URDF), payload_mass=1.5, payload_link='tool0')
    plain = SimulatedArm(str(UR5E_URDF), payload_mass=1.5, payload_link='tool0')
    model = load_model(str(UR5E_URDF), tip_link='tool0')
    for arm in (pushed, plain):
        arm.reset(q0)
    pushed.push('tool0', (0.0, 0.0, 0.0), force)
    R = tip_pose(model, q0)[:3, :3]
    reading, torque = pushed.flange_wrench()
    np.testing.assert_allclose(reading, R.T @ (force + [0.0, 0.0, -9.81 * 1.5]), atol=1e-9)
    np.testing.assert_array_equal(torque, np.zeros(3))
    effort = np.full(6, 0.5)
    pushed.step(effort, 0.001)
    plain.step(effort + jacobian(model, q0)[:3].T @ force, 0.001)
    np.testing.assert_allclose(pushed.position, plain.position, atol=1e-9)
    pushed.push(None)
    np.testing.assert_allclose(pushed.flange_wrench()[0],
                               tip_pose(model, pushed.position)[:3, :3].T
                               @ [0.0, 0.0, -9.81 * 1.5], atol=1e-9)
