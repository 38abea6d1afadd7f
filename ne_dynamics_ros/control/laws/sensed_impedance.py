"""Cartesian impedance on a flange force-torque sensor: the impedance as an admittance (no ROS).

With ``cartesian.flange_sensor`` the Cartesian law
(:mod:`ne_dynamics_ros.control.laws.cartesian`) reads the wrench on the tool from the
sensor (:mod:`.flange_sensor`) and makes the impedance a reference the arm tracks, rather
than a force on the arm: the joints the drives' stiction holds give way as far as the law
says, because the tracking loop, not the push, moves them::

    Lambda v' = F + K e_r - D v,      e_r = pose_error(target, T(q_r))
    qd_r = J(q_r)^+ v,   q_r += qd_r dt,   qdd_r = (qd_r - qd_r,prev) / dt
    tau = M(q) (qdd_r + kd (qd_r - qd) + kp (q_r - q)) + C(q, qd) qd + g(q) + tau_f(qd_r)
          - J^T F + (the null space's posture torque)

``Lambda``, ``K``, ``D`` are the law's own (the task-space inertia, ``cartesian.stiffness``
and Albu-Schäffer et al. 2003's damping design): without friction the tip moves as the
impedance would. Integrated semi-implicitly in the damping (``(Lambda + dt D) v = Lambda
v + dt (F + K e_r)``). A steady push F holds the tip at ``K^-1 F`` from the target, the
drives' friction taken by the tracking loop (computed torque with the node's ``kp``,
``kd``; Lee, Chung, Mudge & Turney 1982, eqs 4.1, 4.4) and ``-J^T F`` taking out the push
itself (the admittance of hand guiding, :mod:`.hand_guiding`, with a spring to the
target).

Units: q in rad (m), efforts in N·m (N), wrenches N and N·m, the base link frame.
"""
import numpy as np

from ne_dynamics_ros.control.laws.computed_torque import ComputedTorqueLaw
from ne_dynamics_ros.control.laws.flange_sensor import FlangeSensor
from ne_dynamics_ros.control.laws.hand_guiding import twist_reference
from ne_dynamics_ros.dynamics.kinematics import pose_error


class SensedImpedance:
    """The admittance of one run of the Cartesian law on a flange sensor (module docstring).

    Args:
        context: the law's :class:`~.base.LawContext`. kinematics: the chain's
            :class:`~ne_dynamics_ros.dynamics.kinematics.ChainKinematics`.
    """

    def __init__(self, context, kinematics):
        self.context, self.kinematics = context, kinematics
        #: the flange sensor's readings
        self.sensor = FlangeSensor(context.settings, context.model, context.gains.gravity)
        #: the joint reference (q_r, qd_r), None before the run's first state
        self.q_ref = self.qd_ref = None
        #: the tip's reference twist, (6,) m/s then rad/s, base frame
        self.twist = np.zeros(6)
        #: the wrench on the tool at the last state, (6,) base frame
        self.wrench = np.zeros(6)
        self._acceleration = np.zeros(3)

    def effort(self, step, target, dt, task_inertia, damping, stiffness, dynamics, extra):
        """Return the n clamped efforts of one state.

        ``target``: (4, 4) the pose the impedance pulls to; ``dt``: s since the last state;
        ``task_inertia``, ``damping``: (6, 6) Lambda and D at the measured state;
        ``stiffness``: (6,) K; ``dynamics``: the model the law calls (its load);
        ``extra``: (n,) efforts added (the null space's posture torque).
        """
        q = np.asarray(step.q, dtype=float)
        T, J = self.kinematics.pose_and_jacobian(q)
        if self.q_ref is None:
            self.q_ref, self.qd_ref = q.copy(), np.zeros_like(q)
        T_ref, J_ref = self.kinematics.pose_and_jacobian(self.q_ref)
        self.wrench = self.sensor.wrench(step.t, T[:3, :3], self._acceleration)
        if dt > 0.0:
            twist = np.linalg.solve(
                task_inertia + dt * damping, task_inertia @ self.twist + dt * (
                    self.wrench + stiffness * pose_error(target, T_ref)))
            self._acceleration = (twist[:3] - self.twist[:3]) / dt
            self.twist = twist
        q_ref, qd_ref, qdd_ref = twist_reference(self.q_ref, self.qd_ref, self.twist, J_ref,
                                                 dt)
        self.q_ref, self.qd_ref = q_ref, qd_ref
        return ComputedTorqueLaw.joint_effort(
            dynamics, self.context.gains, step.q, step.qd, q_ref.tolist(), qd_ref.tolist(),
            qdd_ref.tolist(), (np.asarray(extra, dtype=float) - J.T @ self.wrench).tolist())


__all__ = ['SensedImpedance']
