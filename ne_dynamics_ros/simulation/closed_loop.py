"""A closed loop in one process: the controller drives the simulated arm, sample by sample.

The same sampled-data experiment as ``ne-dynamics-demo`` runs over ROS 2 topics
(``sim_arm_node`` in lockstep, ``computed_torque_node`` on simulated time), without DDS:

1. at ``t_0 = 0`` the arm's state (position, velocity, stamped ``t_0``) goes to
   :meth:`ComputedTorqueController.update`, whose first answer holds the measured
   position; then the trajectory (if any) is handed to
   :meth:`ComputedTorqueController.set_trajectory`, received at ``t = 0`` as in the demo;
2. every answer ``tau_k`` to the state at ``t_k = k / rate`` is held constant over
   ``[t_k, t_(k+1))`` while :class:`SimulatedArm` integrates (Pinocchio ABA + RK4);
3. until ``t_k`` reaches ``end_time``.

That is a digital controller sampling at ``rate`` with negligible computation delay
(Lee, Chung, Mudge & Turney 1982, §5: 0.01 s sampling).
Given the same settings, the demo's lockstep run and this loop produce the same states
(the messages carry float64 values unchanged), so this is what the fast control tests
use; the demo keeps exercising the real topics.

No ROS import.
"""
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ne_dynamics_ros.control import ComputedTorqueController, JointStateSample, NoCommand
from ne_dynamics_ros.control.reference.profiles import sample_cycles, sample_profile
from ne_dynamics_ros.control.reference.trajectory import TrajectoryPoint
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm


class ClosedLoopError(RuntimeError):
    """The loop cannot go on: the controller did not command, or the arm and it disagree."""


@dataclass(frozen=True)
class TrajectoryMessage:
    """What a ``trajectory_msgs/JointTrajectory`` carries, as plain values.

    Attributes:
        joint_names: the trajectory's joints.
        points: waypoints, values in ``joint_names`` order, ``time_from_start`` in s.
        stamp_ns: ``header.stamp`` in ns on the controller's clock (0: start on receipt).
    """

    joint_names: Sequence[str]
    points: Sequence[TrajectoryPoint]
    stamp_ns: int = 0


def profile_trajectory(joint_names, profile, start, goal, duration, sample_period=0.01,
                       start_time=0.0) -> TrajectoryMessage:
    """Sample a point-to-point profile as ``trajectory_source`` does.

    Args:
        joint_names: (n,) joint names.
        profile: ``'quintic'`` or ``'trapezoidal'``
            (:mod:`ne_dynamics_ros.control.reference.profiles`).
        start, goal: (n,) rad (m). duration: s. sample_period: s between waypoints.
        start_time: s on the controller's clock at which the motion starts (0: on receipt).

    Returns:
        The waypoints with positions, velocities and accelerations, times rounded to the
        nanosecond as a message carries them.

    Raises:
        ValueError: as :func:`~ne_dynamics_ros.control.reference.profiles.sample_profile`.
    """
    return _message(joint_names, *sample_profile(profile, start, goal, duration,
                                                 sample_period), start_time)


def cycles_trajectory(joint_names, profile, start, goal, duration, cycles, dwell,
                      sample_period=0.01, start_time=0.0) -> TrajectoryMessage:
    """Sample pick-and-place cycles as ``trajectory_source`` does with ``cycles``, ``dwell``.

    Round trips ``start -> goal -> start`` with ``dwell`` s of rest at each end
    (:func:`~ne_dynamics_ros.control.reference.profiles.sample_cycles`); arguments as
    :func:`profile_trajectory`.

    Raises:
        ValueError: as :func:`~ne_dynamics_ros.control.reference.profiles.sample_cycles`.
    """
    return _message(joint_names, *sample_cycles(profile, start, goal, duration, cycles, dwell,
                                                sample_period), start_time)


def _message(joint_names, times, q, qd, qdd, start_time):
    """Return samples as a :class:`TrajectoryMessage`, times rounded to the nanosecond."""
    points = [TrajectoryPoint(round(t * 1e9) * 1e-9, q[k], qd[k], qdd[k])
              for k, t in enumerate(times)]
    return TrajectoryMessage(list(joint_names), points, round(start_time * 1e9))


def excitation_trajectory(excitation, start, move_duration, periods=1, sample_period=0.01,
                          start_time=0.0) -> TrajectoryMessage:
    """Sample an excitation as ``trajectory_source``'s ``profile: excitation`` does.

    A quintic move of ``move_duration`` s from ``start`` to the excitation's rest pose,
    then ``periods`` periods (:func:`~ne_dynamics_ros.identification.excitation.
    sample_excitation`); ``start_time`` as in :func:`profile_trajectory`.

    Raises:
        ValueError: as ``sample_excitation``.
    """
    from ne_dynamics_ros.identification import sample_excitation
    return _message(excitation.joints, *sample_excitation(excitation, start, move_duration,
                                                          periods, sample_period),
                    start_time)


@dataclass(frozen=True)
class ClosedLoopRun:
    """The record of a closed-loop run; arrays in the arm's joint order.

    Attributes:
        joint_names: (n,) the arm's joints.
        t: (N,) sample times, s.
        q: (N, n) measured positions at ``t``, rad (m).
        qd: (N, n) measured velocities, rad/s (m/s).
        effort: (N, n) the controller's answer to each state, N*m (N), applied over
            ``[t_k, t_(k+1))``.
        position_error: (N, n) the controller's ``q_d - q`` for each state, rad (m).
        external_effort: (N, n) the controller's momentum observer at each state, N*m
            (N) (:mod:`~ne_dynamics_ros.control.sensing.observer`); NaN where it was not run
            (``external_effort_wanted`` False and no contact threshold).
        contacts: the :class:`~ne_dynamics_ros.control.sensing.observer.Contact` items the
            controller reported, in order.
    """

    joint_names: Sequence[str]
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    effort: np.ndarray
    position_error: np.ndarray
    external_effort: Optional[np.ndarray] = None
    contacts: tuple = ()


def run_lockstep(controller: ComputedTorqueController, arm: SimulatedArm, end_time: float,
                 rate: float = 100.0,
                 trajectory: Optional[TrajectoryMessage] = None,
                 observe=None, report_effort=False) -> ClosedLoopRun:
    """Run the sampled-data loop from the arm's current state up to ``end_time``.

    Args:
        controller: the controller (its joints must be the arm's joints, any order).
        arm: the plant, at time 0 in the state to start from.
        end_time: last sample time, s of simulated time.
        rate: sampling rate, Hz (0.01 s sampling = 100 Hz).
        trajectory: handed to the controller after its answer to the first state.
        observe: called as ``observe(t)`` after each answer (t the sample time, s), e.g.
            to read the controller's load estimate as it evolves.
        report_effort: each state carries the effort applied over the step that ended at
            it (zeros on the first), as ``sim_arm_node`` publishes it (for the composite
            adaptation).

    Returns:
        :class:`ClosedLoopRun`, one row per sample ``t_k = k / rate <= end_time``.

    Raises:
        ClosedLoopError: the controller's joints differ from the arm's, the controller
            did not command a state (the lockstep arm would wait for ever), or it
            rejected the trajectory.
    """
    names = list(arm.joint_names)
    if sorted(controller.joints) != sorted(names):
        raise ClosedLoopError(f'controller joints {controller.joints} are not the arm\'s '
                              f'{names}')
    to_arm = np.array([controller.joints.index(name) for name in names])
    dt = 1.0 / rate
    steps = int(np.floor(end_time * rate + 1e-9))
    t, q, qd, effort, error, external, contacts = [], [], [], [], [], [], []
    applied = np.zeros(len(names))
    for k in range(steps + 1):
        stamp_ns = round(arm.time * 1e9)
        position, velocity = arm.position, arm.velocity
        out = controller.update(stamp_ns, JointStateSample(
            names, position, velocity, applied if report_effort else (), stamp_ns=stamp_ns))
        if isinstance(out, NoCommand):
            raise ClosedLoopError(f'no command at t = {arm.time:.6f} s: {out.message}')
        tau = out.effort[to_arm]
        t.append(arm.time)
        q.append(position)
        qd.append(velocity)
        effort.append(tau)
        error.append(out.position_error[to_arm])
        r = out.external_effort_values
        external.append(np.full(len(names), np.nan) if r is None else np.asarray(r)[to_arm])
        if out.contact is not None:
            contacts.append(out.contact)
        if observe is not None:
            observe(arm.time)
        if k == 0 and trajectory is not None:
            try:
                controller.set_trajectory(trajectory.joint_names, trajectory.points,
                                          trajectory.stamp_ns, stamp_ns)
            except ValueError as err:
                raise ClosedLoopError(f'trajectory rejected: {err}') from err
        if k < steps:
            arm.step(tau, dt)
            applied = tau
    return ClosedLoopRun(names, np.array(t), np.array(q), np.array(qd), np.array(effort),
                         np.array(error), np.array(external), tuple(contacts))
