"""Mode hand_guiding (control/laws/hand_guiding.py): the tip moved by a measured wrench.

References: Pinocchio's plant (SimulatedArm) and its RNEA for the hold; the closed form of
the admittance (a steady push moves the tip at F / D, let go it stops within |v| Md / D);
the URDF's joint limits; the sensor's conventions (a push along +x reads +x, the tool's
weight m g).
"""
import numpy as np
import pytest
from references import PinocchioArm, PUMA560_URDF, PUMA_ARMATURE, PUMA_JOINTS, UR5E_URDF

from ne_dynamics_ros.control import ComputedTorqueController
from ne_dynamics_ros.control.laws import LawInputError, WrenchInput
from ne_dynamics_ros.control.laws.hand_guiding import dead_band
from ne_dynamics_ros.control.reference.trajectory import TrajectoryError, TrajectoryPoint
from ne_dynamics_ros.dynamics.kinematics import jacobian, tip_pose
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm

RATE = 500.0
Q0 = np.array([0.2, -1.4, 1.4, -1.5, -1.5, 0.1])
UR5E_JOINTS = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
               'wrist_2_joint', 'wrist_3_joint']


def controller(source='sensor', **settings):
    return ComputedTorqueController.from_urdf(
        str(UR5E_URDF), tip_link='tool0',
        settings=dict({'mode': 'hand_guiding', 'hand_guiding.wrench': source,
                       'kp': 400.0, 'kd': 40.0, 'state_timeout': 10.0}, **settings))


class Guided:
    """The controller and Pinocchio's UR5e in lockstep; a force F (N, base frame) pushes
    the tip link's origin (``J^T F`` on the joints) and the sensor there reads it."""

    def __init__(self, c, q0=Q0, urdf=UR5E_URDF, joints=UR5E_JOINTS, bias=(0.0,) * 6,
                 armature=None):
        self.c = c
        self.arm = SimulatedArm(str(urdf), joints=joints, armature=armature)
        self.arm.reset(q0)
        self.t, self.force, self.bias = 0.0, np.zeros(3), np.asarray(bias, dtype=float)

    def run(self, seconds, sensor=True):
        names, tips = self.c.model.joint_names, []
        for _ in range(int(round(seconds * RATE))):
            q = self.arm.position
            R = tip_pose(self.c.model, q)[:3, :3]
            if sensor:
                reading = np.concatenate([R.T @ self.force, np.zeros(3)]) + self.bias
                self.c.take_input('flange_wrench', WrenchInput(reading[:3], reading[3:],
                                                               self.c.model.tip_link))
            ns = int(round(self.t * 1e9))
            out = self.c.update(ns, names, q, self.arm.velocity, stamp_ns=ns, steady_ns=ns)
            self.arm.step(np.asarray(out.effort) + jacobian(self.c.model, q)[:3].T @ self.force,
                          1.0 / RATE)
            self.t += 1.0 / RATE
            tips.append(tip_pose(self.c.model, self.arm.position)[:3, 3])
        return np.array(tips)


def test_with_no_push_the_arm_is_held_with_pinocchios_gravity():
    c = controller()
    out = c.update(0, UR5E_JOINTS, Q0, np.zeros(6), steady_ns=0)
    pin = PinocchioArm(UR5E_URDF, UR5E_JOINTS, np.zeros(6))
    np.testing.assert_allclose(out.effort, pin.rnea(Q0, np.zeros(6), np.zeros(6)), atol=1e-9)


@pytest.mark.parametrize('source', ['sensor', 'estimate'])
@pytest.mark.parametrize('axis', [0, 2])
def test_a_steady_push_moves_the_tip_at_f_over_d_and_it_stops_when_let_go(source, axis):
    damping, mass = 100.0, 1.0
    loop = Guided(controller(source, **{'hand_guiding.damping': [damping] * 3 + [10.0] * 3,
                                        'hand_guiding.mass': [mass] * 3 + [0.05] * 3}))
    loop.run(0.3, source == 'sensor')                 # the sensor tared, hands off
    loop.force[axis] = 10.0
    tips = loop.run(0.6, source == 'sensor')
    velocity = (tips[-1] - tips[-51]) * RATE / 50
    assert velocity[axis] == pytest.approx(10.0 / damping, rel=0.02), velocity
    assert np.linalg.norm(np.delete(velocity, axis)) < 0.02 * 10.0 / damping, velocity
    loop.force[:] = 0.0
    after = loop.run(1.0, source == 'sensor')
    # let go: v decays with Md / D = 10 ms, the tip goes on |v| Md / D = 1 mm (the
    # estimate lags the push by the observer's own time constant: a little more)
    on = np.linalg.norm(after[-1] - tips[-1])
    assert on < (1.5 if source == 'sensor' else 2.5) * 0.1 * mass / damping, on
    assert np.linalg.norm(after[-1] - after[-50]) < 1e-5


def pinocchio_admittance(urdf, joints, tip, effort_limits, velocity_limits, kd, count):
    """sized_admittance's rule on Pinocchio's frame Jacobian (world axes at the tip)."""
    import pinocchio as pin
    from ne_dynamics_ros.control.laws.gains import workspace_configurations
    from ne_dynamics_ros import load_model
    arm = PinocchioArm(urdf, joints, np.zeros(len(joints)))
    frame = arm.model.getFrameId(tip)
    reach, speeds = np.zeros((6, len(joints))), []
    for q in workspace_configurations(load_model(str(urdf), tip_link=tip), count):
        J = pin.computeFrameJacobian(arm.model, arm.data, arm._to_pin(q), frame,
                                     pin.LOCAL_WORLD_ALIGNED)[:, arm.idx]
        reach = np.maximum(reach, np.abs(J))
        pinv = np.linalg.pinv(J, rcond=0.02)
        speeds.append([min(v / abs(pinv[j, i]) for j, v in enumerate(velocity_limits)
                           if pinv[j, i] != 0.0) for i in range(6)])
    force = [min(e / reach[i, j] for j, e in enumerate(effort_limits) if reach[i, j] > 0.0)
             for i in range(6)]
    damping = np.array(force) / np.median(speeds, axis=0)
    return damping / min(kd), damping


@pytest.mark.parametrize('arm', ['ur5e', 'puma560'])
def test_unset_the_admittance_is_sized_from_the_arms_limits_and_the_gains(arm):
    """D = the force the arm holds at its effort limits over the tip speed its velocity
    limits allow (the rule on Pinocchio's Jacobian at the same configurations), Md = D /
    kd_min; said on /diagnostics; a damping set alone keeps Md = D / kd_min."""
    from ne_dynamics_ros.control.laws.gains import CONFIGURATIONS
    urdf, joints, tip = ((UR5E_URDF, UR5E_JOINTS, 'tool0') if arm == 'ur5e' else
                         (PUMA560_URDF, PUMA_JOINTS, 'flange'))
    kp, kd = [400.0, 900.0] + [1600.0] * 4, [40.0, 60.0] + [80.0] * 4
    c = ComputedTorqueController.from_urdf(
        str(urdf), tip_link=tip, settings={'mode': 'hand_guiding', 'kp': kp, 'kd': kd})
    c.update(0, joints, np.zeros(6), np.zeros(6), steady_ns=0)
    mass, damping = pinocchio_admittance(urdf, joints, tip, c.model.effort_limits,
                                         c.model.velocity_limits, kd, CONFIGURATIONS)
    np.testing.assert_allclose(c.law.damping, damping, rtol=1e-9)
    np.testing.assert_allclose(c.law.mass, mass, rtol=1e-9)
    facts = c.law.facts()
    assert facts['hand guiding damping [N*s/m, N*m*s/rad]'].endswith(
        '(sized for the arm: held force over allowed speed)')
    assert facts['hand guiding mass [kg, kg*m^2]'].endswith('(sized for the arm: D / kd)')
    if arm == 'ur5e':      # the docstring's figures
        assert np.round(damping[:3]).tolist() == [159.0] * 3
        assert np.all((damping[3:] > 8.5) & (damping[3:] < 9.3))
    alone = ComputedTorqueController.from_urdf(
        str(urdf), tip_link=tip, settings={'mode': 'hand_guiding', 'kp': kp, 'kd': kd,
                                           'hand_guiding.damping': [80.0] * 3 + [4.0] * 3})
    alone.update(0, joints, np.zeros(6), np.zeros(6), steady_ns=0)
    np.testing.assert_allclose(alone.law.mass, [2.0] * 3 + [0.1] * 3)
    assert alone.law.facts()['hand guiding damping [N*s/m, N*m*s/rad]'].endswith('(set)')


def test_an_arm_without_velocity_limits_is_told_to_set_the_admittance():
    # velocity="0": no limit (urdf_import)
    text = UR5E_URDF.read_text().replace('velocity="3.141592653589793"', 'velocity="0"')
    with pytest.raises(Exception, match='set hand_guiding.damping and hand_guiding.mass'):
        c = ComputedTorqueController.from_urdf(text, tip_link='tool0',
                                               settings={'mode': 'hand_guiding'})
        c.update(0, UR5E_JOINTS, Q0, np.zeros(6), steady_ns=0)
    c = ComputedTorqueController.from_urdf(text, tip_link='tool0', settings={
        'mode': 'hand_guiding', 'hand_guiding.damping': 100.0, 'hand_guiding.mass': 1.0})
    assert c.update(0, UR5E_JOINTS, Q0, np.zeros(6), steady_ns=0).effort is not None


def test_with_the_sized_defaults_a_push_on_the_puma_moves_it_at_f_over_d_and_it_stops():
    """The defaults on Pinocchio's PUMA 560 (rotors; the rule's gains for 500 Hz), a plant
    they were not chosen on: a 10 N push moves the tip at F / D within 2 %, let go it
    stops within 1.5 |v| Md / D."""
    from ne_dynamics_ros.control.laws.gains import recommended_gains
    from ne_dynamics_ros import load_model
    model = load_model(str(PUMA560_URDF), tip_link='flange', armature=PUMA_ARMATURE)
    gains = recommended_gains(model, RATE)
    c = ComputedTorqueController.from_urdf(
        str(PUMA560_URDF), tip_link='flange', armature=PUMA_ARMATURE,
        settings={'mode': 'hand_guiding', 'kp': gains.kp.tolist(), 'kd': gains.kd.tolist(),
                  'state_timeout': 10.0})
    q0 = np.array([0.0, 0.3, -2.5, 0.0, 0.5, 0.0])     # J's singular values >= 0.085 s_max
    loop = Guided(c, q0=q0, urdf=PUMA560_URDF, joints=PUMA_JOINTS, armature=PUMA_ARMATURE)
    loop.run(0.3)
    damping, mass = c.law.damping[0], c.law.mass[0]
    loop.force[0] = 10.0
    tips = loop.run(0.6)
    velocity = (tips[-1] - tips[-51]) * RATE / 50
    assert velocity[0] == pytest.approx(10.0 / damping, rel=0.02), velocity
    loop.force[:] = 0.0
    after = loop.run(0.5)
    on = np.linalg.norm(after[-1] - tips[-1])
    assert on < 1.5 * velocity[0] * mass / damping, (on, velocity[0] * mass / damping)


def test_the_sensors_bias_and_the_tools_weight_move_nothing():
    # a 1.5 kg tool: the sensor reads its weight (m g, downward) and a bias of 4 N, 0.3 N*m
    # on top; the bias is tared at the start, the weight taken out at every state
    c = controller(**{'ft_sensor.tool_mass': 1.5})
    bias = np.array([4.0, -2.0, 3.0, 0.3, 0.0, -0.2])
    loop = Guided(c, bias=bias)
    R = tip_pose(c.model, Q0)[:3, :3]
    loop.bias = bias + np.concatenate([R.T @ np.array([0.0, 0.0, -9.81 * 1.5]), np.zeros(3)])
    tips = loop.run(2.0)
    assert np.linalg.norm(tips[-1] - tips[0]) < 1e-4
    np.testing.assert_allclose(c.law.bias, bias, atol=1e-9)


def test_a_sensor_that_falls_silent_holds_the_arm():
    c = controller()
    loop = Guided(c)
    loop.run(0.3)
    loop.force[0] = 10.0
    loop.run(0.2)
    loop.force[:] = 0.0              # no more readings: the last one (a push) is stale soon
    tips = loop.run(1.0, sensor=False)
    assert np.linalg.norm(tips[-1] - tips[-100]) < 1e-5


def test_the_reference_stays_within_the_joint_limits():
    # the PUMA's joint 3 starts 0.05 rad inside its upper limit; pushes that turn it on
    c = ComputedTorqueController.from_urdf(
        str(PUMA560_URDF), tip_link='flange', armature=PUMA_ARMATURE,
        settings={'mode': 'hand_guiding', 'kp': 400.0, 'kd': 40.0, 'state_timeout': 10.0})
    upper = c.model.upper_limits
    q0 = np.array([0.0, 0.3, upper[2] - 0.05, 0.0, 0.5, 0.0])
    loop = Guided(c, q0, PUMA560_URDF, PUMA_JOINTS, armature=PUMA_ARMATURE)
    loop.run(0.3)
    J = jacobian(c.model, q0)[:3]
    loop.force = 30.0 * J[:, 2] / np.linalg.norm(J[:, 2])   # along joint 3's own motion
    loop.run(1.5)
    assert c.law.q_ref[2] <= upper[2] + 1e-12
    assert loop.arm.position[2] <= upper[2] + 2e-3


def test_bad_readings_and_other_modes_are_refused_naming_why():
    c = controller()
    c.update(0, UR5E_JOINTS, Q0, np.zeros(6), steady_ns=0)
    with pytest.raises(LawInputError, match="'camera'"):
        c.take_input('flange_wrench', WrenchInput((1.0, 0.0, 0.0), (0.0, 0.0, 0.0), 'camera'))
    with pytest.raises(LawInputError, match='finite'):
        c.take_input('flange_wrench', WrenchInput((np.nan, 0.0, 0.0), (0.0, 0.0, 0.0)))
    c.reconfigure(**{'ft_sensor.frame': 'tool0_controller'})
    c.take_input('flange_wrench', WrenchInput((1.0, 0.0, 0.0), (0.0, 0.0, 0.0),
                                              'tool0_controller'))
    with pytest.raises(TrajectoryError, match='hand_guiding follows the operator'):
        c.set_trajectory(UR5E_JOINTS, [TrajectoryPoint(1.0, Q0, np.zeros(6), np.zeros(6))],
                         0, 1_000_000)
    c.reconfigure(mode='computed_torque')
    with pytest.raises(LawInputError, match='taken in mode .*hand_guiding'):
        c.take_input('flange_wrench', WrenchInput((1.0, 0.0, 0.0), (0.0, 0.0, 0.0)))


@pytest.mark.parametrize('values, match', [
    ({'hand_guiding.damping': [0.0] * 6}, 'hand_guiding.damping'),
    ({'hand_guiding.mass': [1.0] * 5}, 'hand_guiding.mass'),
    ({'hand_guiding.dead_band': [-1.0, 0.1]}, 'hand_guiding.dead_band'),
    ({'hand_guiding.wrench': 'camera'}, 'hand_guiding.wrench'),
    ({'ft_sensor.tool_com': [0.0, 0.0]}, 'ft_sensor.tool_com'),
    ({'ft_sensor.tare_time': 0.0}, 'ft_sensor.tare_time'),
])
def test_bad_settings_are_refused_naming_them(values, match):
    from ne_dynamics_ros.errors import ControlParameterError
    c = controller()
    before = c.settings
    with pytest.raises(ControlParameterError, match=match):
        c.reconfigure(**values)
    assert c.settings is before


def test_the_dead_band_is_zero_within_exact_beyond_twice_and_continuous():
    direction = np.array([0.6, 0.0, 0.8])
    assert not dead_band(1.9 * direction, 2.0).any()
    np.testing.assert_allclose(dead_band(4.0 * direction, 2.0), 4.0 * direction)
    np.testing.assert_allclose(dead_band(3.0 * direction, 2.0), 2.0 * direction)
    sizes = np.linspace(0.0, 5.0, 501)
    norms = [np.linalg.norm(dead_band(s * direction, 2.0)) for s in sizes]
    assert np.max(np.abs(np.diff(norms))) <= 2.0 * 0.01 + 1e-12


def test_a_push_detected_as_a_contact_still_guides_the_arm():
    # contact detection on (thresholds a push crosses): the push is hand guiding's input,
    # not a collision: no hold, no new tare, the tip moves at F / D
    c = controller(**{'contact.threshold': [1.0] * 6})
    loop = Guided(c)
    loop.run(0.3)
    loop.force[1] = 10.0
    tips = loop.run(0.6)
    assert c.contacts >= 1
    velocity = (tips[-1] - tips[-51]) * RATE / 50
    assert velocity[1] == pytest.approx(10.0 / c.law.damping[1], rel=0.02), velocity
