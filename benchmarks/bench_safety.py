#!/usr/bin/env python3
"""Benchmark: goals checked against the effort limits (issue 33's torque goals).

The issue's goal: on the UR5e, shoulder_lift moved 1.2 rad in 0.25 s from home (one
quintic point, zero end velocity and acceleration), which needs about twice the
shoulder's 150 N·m. Printed beside the goals:

* ``reject`` (the default) refuses it before any motion, with the joint, the time, the
  effort needed and the limit (the controller's own message);
* ``scale`` (Hollerbach's dynamic time scaling): the stretch, and the smallest stretch a
  brute-force search finds (each stretched trajectory interpolated anew and its inverse
  dynamics evaluated; grid in 1/c, then bisection), goal: equal to 1e-6; then the goal run
  at 500 Hz on both plants (Pinocchio, MuJoCo; 0.1 kg·m² rotors known to the model):
  the largest command against the 150 N·m clamp (goal: none clamped) and the final error
  against a 0.01 rad goal tolerance;
* what the check costs where trajectories are prepared: a 50 000-point trajectory (1 ms
  apart, 50 s) checked at 500 Hz, wall time and per sample.

In process, the controller as the node runs it (no DDS). Figures are printed, never
asserted. Usage: python benchmarks/bench_safety.py
"""
import argparse
import pathlib
import time

import numpy as np

from ne_dynamics_ros.control import ComputedTorqueController
from ne_dynamics_ros.control.effort_check import (check_trajectory, effort_terms,
                                                  fit_to_limits, smallest_stretch, stretched)
from ne_dynamics_ros.control.trajectory import (DesiredState, trajectory_from_points,
                                                TrajectoryError, TrajectoryPoint)
from ne_dynamics_ros.simulation.closed_loop import run_lockstep, TrajectoryMessage
from ne_dynamics_ros.simulation.mujoco_arm import MujocoArm
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm

ROOT = pathlib.Path(__file__).resolve().parent.parent
UR5E = str(ROOT / 'config' / 'ur5e.urdf')
HOME = np.radians([0.0, -90.0, 90.0, -90.0, -90.0, 0.0])
RATE, ARMATURE, GOAL_TOLERANCE = 500.0, [0.1] * 6, 0.01
GRAVITY = np.array([0.0, 0.0, -9.81])


def shoulder_goal():
    target = HOME.copy()
    target[1] += 1.2
    return [TrajectoryPoint(0.25, target, np.zeros(6), np.zeros(6))]


def controller(policy):
    return ComputedTorqueController.from_urdf(
        UR5E, armature=ARMATURE, settings={'kp': 2500.0, 'kd': 100.0,
                                           'infeasible_trajectory': policy})


def brute_force(model, trajectory, limits, grid=2000):
    """Smallest stretch by trying stretches (see the module docstring)."""
    t0 = trajectory.time_before
    times = t0 + np.arange(int((trajectory.end_time - t0) * RATE) + 1) / RATE

    def fits(c):
        q, qd, qdd = stretched(trajectory, c).sample_many(t0 + c * (times - t0))
        tau = model.rnea(q, qd, qdd, gravity=GRAVITY) + model.damping * qd \
            + model.friction * np.tanh(qd * c / 0.003)
        return bool(np.all(np.abs(tau) <= limits))

    u = np.linspace(1.0, 1e-3, grid)
    first = next(k for k in range(grid) if fits(1.0 / u[k]))
    if first == 0:
        return 1.0, times
    hi, lo = u[first - 1], u[first]
    while hi - lo > 1e-12:
        mid = 0.5 * (hi + lo)
        hi, lo = (hi, mid) if fits(1.0 / mid) else (mid, lo)
    return 1.0 / lo, times


def goal_figures():
    c = controller('reject')
    names = c.model.joint_names
    c.update(0, names, HOME, np.zeros(6), steady_ns=0)
    try:
        c.set_trajectory(names, shoulder_goal(), 0, 2_000_000)
        refused = 'ACCEPTED (goal missed)'
    except TrajectoryError as err:
        refused = str(err)
    sent = trajectory_from_points(names, shoulder_goal(), names, None, 0.0,
                                  DesiredState(HOME, np.zeros(6), np.zeros(6)))
    need = check_trajectory(c.model, sent, names, c.effort_limits, RATE, GRAVITY)
    limits = c.effort_limits * (1 - c.settings.effort_margin)
    q, qd, qdd = sent.sample_many(np.arange(int(0.25 * RATE) + 1) / RATE)
    closed = smallest_stretch(*effort_terms(c.model, q, qd, qdd, GRAVITY), limits)
    brute, _ = brute_force(c.model, sent, limits)
    print('UR5e, shoulder_lift 1.2 rad in 0.25 s from home (one quintic point), '
          'effort_margin 0.1')
    print(f'  effort needed by the model: {need.peak_ratio * 150:.1f} N*m at the shoulder '
          f'({need.peak_ratio:.2f}x its 150 N*m)')
    print(f'  reject:  {refused}')
    print(f'  scale:   closed form c = {closed:.9f}, brute force {brute:.9f}, '
          f'difference {abs(closed - brute):.1e} (goal <= 1e-6)')
    scaling = controller('scale')
    fitted, c_node = fit_to_limits(scaling.model, sent, names, scaling.effort_limits,
                                   scaling.settings)
    print(f'           as the node stretches it (re-checked at 500 Hz on its own clock): '
          f'c = {c_node:.6f}, {fitted.times[-1]:.4f} s')
    print(f'  {"plant":<10} {"max |shoulder command|":>24} {"clamp":>7} '
          f'{"commands at a clamp":>20} {"final |e|":>11} {"goal tol.":>10}')
    for plant in ('pinocchio', 'mujoco'):
        arm = (SimulatedArm(UR5E, armature=ARMATURE) if plant == 'pinocchio'
               else MujocoArm(UR5E, armature=ARMATURE))
        arm.reset(HOME)
        c = controller('scale')
        run = run_lockstep(c, arm, 2.0, rate=RATE,
                           trajectory=TrajectoryMessage(names, shoulder_goal(), 0))
        clamped = int(np.sum(np.any(np.abs(run.effort) >= c.effort_limits, axis=1)))
        final = float(np.abs(run.q[-1] - shoulder_goal()[0].positions).max())
        print(f'  {plant:<10} {np.abs(run.effort[:, 1]).max():>20.1f} N*m {150:>5} '
              f'{clamped:>20d} {final:>9.1e} rad {GOAL_TOLERANCE:>8} rad')


def cost_figures():
    c = controller('reject')
    names = c.model.joint_names
    m = 50_000
    t = np.arange(1, m + 1) * 1e-3
    q = HOME + 0.3 * np.sin(2 * np.pi * t / 10.0)[:, None]
    points = [TrajectoryPoint(float(ti), qi) for ti, qi in zip(t, q)]
    sent = trajectory_from_points(names, points, names, None, 0.0,
                                  DesiredState(HOME, np.zeros(6), np.zeros(6)))
    start = time.perf_counter()
    result = check_trajectory(c.model, sent, names, c.effort_limits * 0.9, RATE, GRAVITY)
    wall = time.perf_counter() - start
    print(f'check of a {m}-point trajectory (50 s) at {RATE:.0f} Hz: {result.samples} '
          f'samples in {wall * 1e3:.0f} ms ({wall / result.samples * 1e6:.1f} us per sample); '
          f'runs on the node\'s trajectory thread, not in the control loop')


def main():
    argparse.ArgumentParser(description=__doc__.split('\n')[0]).parse_args()
    goal_figures()
    print()
    cost_figures()


if __name__ == '__main__':
    main()
