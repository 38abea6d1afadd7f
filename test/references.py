"""Independent references the tests share: Pinocchio, the URDF's own numbers, Lee's run.

Pure (no DDS, no ROS messages): :class:`PinocchioArm` evaluates Pinocchio on a URDF in
our chain's joint order, :func:`urdf_joint_values` reads joint attributes straight from
the URDF file with ElementTree, :func:`lee_run` is Lee et al.'s PUMA experiment closed
in-process against Pinocchio's plant; and the PUMA 560 constants the controller and node
tests use.
"""
import math
import pathlib
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import yaml

from ne_dynamics_ros.control import ComputedTorqueController
from ne_dynamics_ros.control.reference.profiles import evaluate
from ne_dynamics_ros.simulation.closed_loop import profile_trajectory, run_lockstep
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm

REPO = REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIG_DIR = REPO / 'config'
PUMA_URDF = PUMA560_URDF = CONFIG_DIR / 'puma560.urdf'
UR5E_URDF = CONFIG_DIR / 'ur5e.urdf'
GRAVITY = np.array([0.0, 0.0, -9.81])
PUMA_JOINTS = [f'joint_{i}' for i in range(1, 7)]
PUMA_ARMATURE = yaml.safe_load((CONFIG_DIR / 'puma560.yaml').read_text())[
    'computed_torque_node']['ros__parameters']['armature']
KP, KD = 100.0, 20.0


class PinocchioArm:
    """Pinocchio reference for a URDF, indexed by our chain's joint names."""

    def __init__(self, urdf_path, joint_names, armature):
        self.model = pin.buildModelFromUrdf(str(urdf_path))
        self.data = self.model.createData()
        assert self.model.nq == self.model.nv == len(joint_names)
        self.idx = np.array([self.model.joints[self.model.getJointId(name)].idx_v
                             for name in joint_names])
        self.model.armature[self.idx] = armature

    def _to_pin(self, x):
        out = np.zeros(self.model.nv)
        out[self.idx] = x
        return out

    def rnea(self, q, qd, qdd, gravity=GRAVITY):
        self.model.gravity.linear = np.asarray(gravity, dtype=float)
        tau = pin.rnea(self.model, self.data, self._to_pin(q), self._to_pin(qd),
                       self._to_pin(qdd))
        return np.asarray(tau)[self.idx]

    def mass_matrix(self, q):
        M = pin.crba(self.model, self.data, self._to_pin(q))
        M = np.triu(M) + np.triu(M, 1).T
        return M[np.ix_(self.idx, self.idx)]

    def bias(self, q, qd, gravity=GRAVITY):
        """H(q, qd) + G(q) of Lee et al. (1982), eq. 3.6."""
        self.model.gravity.linear = np.asarray(gravity, dtype=float)
        h = pin.nonLinearEffects(self.model, self.data, self._to_pin(q), self._to_pin(qd))
        return np.asarray(h)[self.idx]

    def aba(self, q, qd, tau, gravity=GRAVITY):
        self.model.gravity.linear = np.asarray(gravity, dtype=float)
        qdd = pin.aba(self.model, self.data, self._to_pin(q), self._to_pin(qd),
                      self._to_pin(tau))
        return np.asarray(qdd)[self.idx]


def urdf_joint_values(urdf_path, joint_names, element, attribute, default):
    """Read ``<joint><element attribute=...>`` per joint straight from the URDF file."""
    root = ET.parse(urdf_path).getroot()
    joints = {j.get('name'): j for j in root.findall('joint') if j.get('type') != 'fixed'}
    values = []
    for name in joint_names:
        node = joints[name].find(element)
        text = None if node is None else node.get(attribute)
        values.append(default if text is None else float(text))
    return np.array(values)


PUMA_LIMITS = urdf_joint_values(PUMA_URDF, PUMA_JOINTS, 'limit', 'effort', math.inf)


def expected_effort(ref, mode, q, qd, q_d, qd_d, qdd_d, kp=KP, kd=KD, limits=PUMA_LIMITS):
    """Return (raw, clamped) effort of ``mode``'s law by the Pinocchio reference ``ref``."""
    q, qd, q_d, qd_d, qdd_d = (np.asarray(a, dtype=float) for a in (q, qd, q_d, qd_d, qdd_d))
    zero = np.zeros_like(q)
    if mode == 'computed_torque':
        raw = ref.rnea(q, qd, qdd_d + kd * (qd_d - qd) + kp * (q_d - q))
    elif mode == 'feedforward':
        raw = ref.rnea(q_d, qd_d, qdd_d) + kp * (q_d - q) + kd * (qd_d - qd)
    else:
        raw = ref.rnea(q, zero, zero)
    return raw, np.clip(raw, -limits, limits)


Q0 = np.array([0.1, -0.3, 0.4, 0.2, -0.5, 0.3])
QD0 = np.array([0.05, -0.02, 0.03, 0.1, -0.1, 0.2])
SET_Q = Q0 + np.array([0.02, -0.01, 0.015, -0.03, 0.02, 0.01])
SET_QD = np.array([0.1, 0.0, -0.1, 0.05, 0.0, 0.0])
SET_QDD = np.array([0.2, -0.1, 0.0, 0.3, 0.0, -0.2])


BAD_STATES = {
    'NaN position': (PUMA_JOINTS, [math.nan] + list(Q0[1:]), list(QD0), []),
    'inf velocity': (PUMA_JOINTS, list(Q0), [math.inf] + list(QD0[1:]), []),
    'one NaN velocity': (PUMA_JOINTS, list(Q0), [math.nan] + list(QD0[1:]), []),
    'missing joint': (PUMA_JOINTS[:5], list(Q0[:5]), list(QD0[:5]), []),
    'short position': (PUMA_JOINTS, list(Q0[:5]), list(QD0), []),
    'short velocity': (PUMA_JOINTS, list(Q0), list(QD0[:3]), []),
    'short effort': (PUMA_JOINTS, list(Q0), list(QD0), [0.0]),
    'duplicate joint': (PUMA_JOINTS + ['joint_1'], list(Q0) + [0.0], list(QD0) + [0.0], []),
}


#: Lee et al. (1982), section 5: one count of a 12-bit A/D converter, rad.
LEE_BOUND_RAD = 4.26e-4
LEE_START = np.radians([90.0, 0.0, 90.0, 0.0, 0.0, 0.0])
LEE_GOAL = np.radians([45.0, 30.0, 0.0, 45.0, 60.0, 90.0])


def lee_run(payload=0.0, settle=1.0, profile='quintic', start_time=0.5, duration=3.0,
            rate=100.0, mode='computed_torque', kp=100.0, kd=20.0):
    """Lee et al.'s experiment as ne-dynamics-demo sets it up; returns (run, error)."""
    arm = SimulatedArm(str(PUMA_URDF), joints=PUMA_JOINTS, armature=PUMA_ARMATURE,
                       payload_mass=payload, initial_positions=LEE_START)
    controller = ComputedTorqueController.from_urdf(
        str(PUMA_URDF), armature=PUMA_ARMATURE, joints=PUMA_JOINTS,
        settings={'mode': mode, 'kp': [kp] * 6, 'kd': [kd] * 6, 'state_timeout': 10.0,
                  # Lee's start (joint 3 at 90 deg) is outside RTB's joint 3 range
                  'position_limit_margin': math.inf})
    trajectory = profile_trajectory(PUMA_JOINTS, profile, LEE_START, LEE_GOAL, duration,
                                    1.0 / rate, start_time)
    run = run_lockstep(controller, arm, start_time + duration + settle, rate, trajectory)
    q_d = evaluate(profile, run.t - start_time, LEE_START, LEE_GOAL, duration)[0]
    return run, q_d - run.q
