"""The controller drives the Pinocchio plant in-process: Lee et al.'s PUMA run without DDS.

The plant (:class:`SimulatedArm`) is Pinocchio's ABA, not our RNEA; the reference error
is the closed-form profile at each sample minus the measured position, independent of the
controller's own interpolation. test_demo checks that the demo over real topics gives the
same figures.
"""
import numpy as np
import pytest

from references import PUMA560_URDF
from ne_dynamics_ros.control import ComputedTorqueController
from ne_dynamics_ros.simulation.closed_loop import ClosedLoopError, run_lockstep, TrajectoryMessage
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm
from ne_dynamics_ros.control.reference.trajectory import TrajectoryPoint
from references import LEE_BOUND_RAD, LEE_GOAL, lee_run, PUMA_ARMATURE, PUMA_JOINTS


def test_lee_puma_experiment_in_process_stays_below_the_ad_resolution():
    run, error = lee_run()
    assert run.t.shape == (451,) and run.q.shape == (451, 6)
    np.testing.assert_allclose(run.t, np.arange(451) * 0.01, atol=1e-9)
    max_error = np.abs(error).max(axis=0)
    assert np.all(max_error < LEE_BOUND_RAD), max_error
    assert np.all(max_error > 0)
    # the controller's own q_d - q is the closed-form profile's
    np.testing.assert_allclose(run.position_error, error, atol=1e-12)
    # the arm ends at the goal, at rest
    np.testing.assert_allclose(run.q[-1], LEE_GOAL, atol=LEE_BOUND_RAD)
    np.testing.assert_allclose(run.qd[-1], 0.0, atol=1e-3)


def test_an_unknown_payload_gives_a_larger_but_bounded_error():
    _, exact = lee_run(settle=0.5)
    _, loaded = lee_run(payload=2.0, settle=0.5)
    exact, loaded = np.abs(exact).max(axis=0), np.abs(loaded).max(axis=0)
    assert np.all(loaded >= exact)
    assert loaded.max() > 10 * LEE_BOUND_RAD
    assert np.all(loaded < 0.2), loaded


def test_sasaki_trapezoid_and_a_faster_sampling_rate():
    _, error = lee_run(profile='trapezoidal', settle=0.2)
    assert np.all(np.abs(error).max(axis=0) < 1e-3)
    # 1 kHz sampling: the zero-order hold shrinks, and so does the error (about tenfold)
    _, slow = lee_run(settle=0.2)
    _, fast = lee_run(settle=0.2, rate=1000.0)
    assert np.abs(fast).max() < 0.2 * np.abs(slow).max()


def test_feedforward_pd_tracks_and_stiffer_gains_help_until_the_sampling_limits_them():
    # joint PD gains in N*m/rad, N*m*s/rad; with the exact feedforward only the
    # zero-order hold is left to correct
    _, soft = lee_run(mode='feedforward', kp=50.0, kd=5.0, settle=0.2)
    _, stiff = lee_run(mode='feedforward', kp=200.0, kd=20.0, settle=0.2)
    assert np.abs(stiff).max() < LEE_BOUND_RAD
    assert np.abs(stiff).max() < 0.5 * np.abs(soft).max()
    # kd = 50 N m s/rad over 0.01 s on a wrist of ~0.2 kg m^2 rotor inertia: the sampled
    # loop rings (kd * dt / J > 2), far worse than the softer gains
    _, ringing = lee_run(mode='feedforward', kp=500.0, kd=50.0, settle=0.2)
    assert np.abs(ringing[:, 3:]).max() > 10 * np.abs(stiff[:, 3:]).max()


def test_mismatched_joints_and_refused_trajectories_stop_the_loop():
    arm = SimulatedArm(str(PUMA560_URDF), joints=PUMA_JOINTS[:5], armature=PUMA_ARMATURE[:5])
    controller = ComputedTorqueController.from_urdf(str(PUMA560_URDF))
    with pytest.raises(ClosedLoopError, match='not the arm'):
        run_lockstep(controller, arm, 0.1)
    arm = SimulatedArm(str(PUMA560_URDF), joints=PUMA_JOINTS)
    bad = TrajectoryMessage(PUMA_JOINTS[:5], [TrajectoryPoint(0.0, [0.0] * 5)])
    with pytest.raises(ClosedLoopError, match='trajectory rejected'):
        run_lockstep(controller, arm, 0.1, trajectory=bad)
    # a controller that cannot command (overflowing gains) stops the loop
    arm = SimulatedArm(str(PUMA560_URDF), joints=PUMA_JOINTS)
    controller = ComputedTorqueController.from_urdf(str(PUMA560_URDF),
                                                    settings={'kp': 1e308})
    far = TrajectoryMessage(PUMA_JOINTS, [TrajectoryPoint(0.0, [1e10] * 6)])
    with pytest.raises(ClosedLoopError, match='no command'):
        run_lockstep(controller, arm, 0.1, trajectory=far)
