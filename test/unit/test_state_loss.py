"""States that pause: what the controller commands meanwhile, on both simulated plants.

The arm holds a pose under computed torque at 500 Hz; then no state reaches the
controller for a while, as when a driver or the network stalls. Until ``state_timeout``
the effort controller keeps the last command (ros2_control's forward controllers do);
from then on it applies what ``check_timeout`` returns (``state_loss_policy``). The sag
is measured on the plant, which is not the controller's model: Pinocchio's ABA or
MuJoCo's own import of the URDF, with drive damping, dry friction and a 0.3 kg payload
the controller is not told of (with the exact model every policy that holds gives 0).
"""

import numpy as np
import pytest
from references import UR5E_URDF

from ne_dynamics_ros.control import ComputedTorqueController
from ne_dynamics_ros.control.run_state import Timeout
from ne_dynamics_ros.simulation.mujoco_arm import MujocoArm
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm

RATE = 500.0
DAMPING, FRICTION = [6.0, 6.0, 4.0, 1.0, 1.0, 1.0], [2.5, 2.5, 1.5, 0.4, 0.4, 0.4]
PAYLOAD = 0.3          # kg at the tip, unknown to the controller
POSE = np.radians([0.0, -90.0, 90.0, -90.0, -90.0, 0.0]) + np.radians([0, 30, -20, 0, 0, 0])


def hold_and_pause(plant, policy, pause, hold=1.0, timeout=0.1):
    """Hold POSE 0.5 s, then ``pause`` s without states; return (max sag per joint (6,)
    rad during the pause, the efforts applied in the pause (N, 6))."""
    if plant == 'mujoco':
        arm = MujocoArm(str(UR5E_URDF), armature=[0.1] * 6, damping=DAMPING,
                        friction=FRICTION, payload_mass=PAYLOAD)
    else:
        arm = SimulatedArm(str(UR5E_URDF), armature=[0.1] * 6, joint_friction=DAMPING,
                           coulomb_friction=FRICTION, payload_mass=PAYLOAD)
    arm.reset(POSE)
    c = ComputedTorqueController.from_urdf(
        str(UR5E_URDF), armature=[0.1] * 6,
        settings={'kp': 2500.0, 'kd': 100.0, 'state_timeout': timeout,
                  'state_loss_policy': policy, 'state_loss_hold': hold})
    names, dt, effort = c.model.joint_names, 1.0 / RATE, np.zeros(6)
    for k in range(int(0.5 * RATE)):
        ns = round(k * dt * 1e9)
        effort = c.update(ns, names, arm.position, arm.velocity, steady_ns=ns).effort
        arm.step(effort, dt)
    paused_at, held = k * dt, arm.position.copy()
    sag, applied = np.zeros(6), []
    for j in range(1, int(round(pause * RATE)) + 1):
        report = c.check_timeout(round((paused_at + j * dt) * 1e9))
        if report is not None:
            assert isinstance(report, Timeout)
            effort = report.effort
        applied.append(effort)
        arm.step(effort, dt)
        sag = np.maximum(sag, np.abs(arm.position - held))
    return sag, np.array(applied)


@pytest.mark.parametrize('plant', ['pinocchio', 'mujoco'])
def test_a_pause_holds_the_arm_up_with_gravity_and_drops_it_with_zero(plant):
    """0.3 s without states: gravity held at the last position keeps every joint within
    5 mrad (the issue's bound) and sends no zero command; zero effort drops it; the last
    command, which holds the payload the model lacks too, keeps the arm closer still."""
    sag, applied = hold_and_pause(plant, 'hold_gravity', 0.3)
    assert np.all(sag < 5e-3), sag
    assert not np.any(np.all(applied == 0.0, axis=1))
    dropped, zeros = hold_and_pause(plant, 'zero', 0.3)
    assert dropped.max() > 0.05, dropped
    assert np.all(zeros[-100:] == 0.0)
    held_last, _ = hold_and_pause(plant, 'hold_last', 0.3)
    assert np.all(held_last < 5e-4) and held_last.max() < sag.max(), (held_last, sag)


def test_past_state_loss_hold_the_command_is_zero():
    sag, applied = hold_and_pause('pinocchio', 'hold_gravity', 0.6, hold=0.2)
    steps = np.arange(1, len(applied) + 1) / RATE
    holding = (steps > 0.1 + 2 / RATE) & (steps <= 0.3 - 2 / RATE)
    assert not np.any(np.all(applied[holding] == 0.0, axis=1))
    assert np.all(applied[steps > 0.3 + 2 / RATE] == 0.0)
    assert sag.max() > 0.05                    # and then it falls, as documented
