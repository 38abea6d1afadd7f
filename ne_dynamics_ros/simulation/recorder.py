"""Record an arm tracking a trajectory: the synthetic ``/joint_states`` of identification.

:func:`record_tracking` drives a :class:`~ne_dynamics_ros.simulation.simulated_arm.SimulatedArm`
(Pinocchio's dynamics, not ours) along a desired motion with a PD law plus a feedforward
from a model that may be wrong (the computed torque of Lee et al. 1982, eq. 4.1, with the
nominal model), and records what ``joint_state_broadcaster`` would publish: the measured
positions, velocities and the effort applied, optionally with noise, at the control rate.
"""
from dataclasses import dataclass

import numpy as np

from ne_dynamics_ros.codegen.compiled import CompiledDynamics


@dataclass(frozen=True)
class TrackingRecord:
    """What the arm did.

    Attributes:
        t: (N,) s. q, qd: (N, n) measured (noise added when asked). effort: (N, n) applied
        effort as measured (noise added when asked), N·m or N. qdd: (N, n) the plant's
        exact accelerations under the applied effort (for tests). tau: (N, n) the applied
        effort without noise.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    effort: np.ndarray
    tau: np.ndarray


def record_tracking(arm, model, desired, duration, rate=500.0, kp=100.0, kd=20.0,
                    position_noise=0.0, effort_noise=0.0, seed=0):
    """Run the arm along ``desired`` under computed torque with ``model`` and record it.

    Args:
        arm: :class:`SimulatedArm` (the plant; reset to the desired start at rest).
        model: the controller's :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        desired: callable t (s) -> (q_d, qd_d, qdd_d), each (n,).
        duration: s. rate: control and recording rate, Hz.
        kp, kd: PD gains of ``tau = model(q, qd, qdd_d + kd e' + kp e)``, 1/s², 1/s.
        position_noise: standard deviation added to recorded positions (rad or m).
        effort_noise: standard deviation added to recorded efforts, relative to each
            joint's RMS effort.
        seed: random seed of the noise.

    Returns:
        :class:`TrackingRecord`.
    """
    dt = 1.0 / rate
    steps = int(round(duration * rate))
    q0, qd0, _ = desired(0.0)
    arm.reset(positions=q0, velocities=qd0)
    n = arm.n
    t = np.arange(steps) * dt
    q, qd, qdd, tau = (np.empty((steps, n)) for _ in range(4))
    model = CompiledDynamics(model)          # its generated program: ~10x the recursion
    for k in range(steps):
        qk, qdk = arm.position, arm.velocity
        q_d, qd_d, qdd_d = desired(t[k])
        command = qdd_d + kd * (qd_d - qdk) + kp * (q_d - qk)
        effort = model.rnea(qk, qdk, command) + model.friction_torques(qdk)
        q[k], qd[k], tau[k] = qk, qdk, effort
        qdd[k] = arm.acceleration(qk, qdk, effort)
        arm.step(effort, dt)
    rng = np.random.default_rng(seed)
    scale = np.sqrt((tau ** 2).mean(axis=0))
    return TrackingRecord(t, q + rng.normal(0.0, position_noise, q.shape) if position_noise
                          else q, qd, qdd,
                          tau + rng.normal(0.0, 1.0, tau.shape) * effort_noise * scale, tau)


__all__ = ['record_tracking', 'TrackingRecord']
