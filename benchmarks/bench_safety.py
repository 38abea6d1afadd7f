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

Contacts (the momentum observer, ``contact.*``), on the UR5e held at a pose at 500 Hz:

* a known constant external torque on the Pinocchio plant, no friction, the plant's own
  model: ``|r - tau_ext| / |tau_ext|`` at steady state (goal <= 1 %);
* a 40 N horizontal push at the forearm_link origin on MuJoCo with dry friction, through
  ``mj_applyFT`` into ``qfrc_applied`` (the true external joint effort): first with the
  plant's own model, then the issue's case, the hidden UR5e of ``bench_mujoco.py``
  (rotor inertia, damping, dry friction, 1.2 kg) identified first by
  ``ne-dynamics-demo --identify`` and the controller loaded from the shipped and the
  identified YAML, thresholds as ``identify`` wrote them. Per joint: the steady-state
  ``|r - tau_ext|`` against ``10 % |tau_ext| + Fc``, the time to 90 % of ``tau_ext``
  where ``|tau_ext| > 4 Fc`` (goal <= 50 ms), and when "contact" was reported (goal
  within 50 ms);
* states paused while the identified arm holds a pose (the node's state_timeout 0.1 s,
  state_loss_policy hold_gravity): the sag over 0.3 s (goal <= 5 mrad per joint, no zero
  command), and zero effort after state_loss_hold in a longer pause;
* false contacts (goal 0) at those thresholds over the demo's 3 s quintic, the
  excitation played again under the identified model, and three pick-and-place cycles of
  2 kg in adaptive mode, each load declared as the gripper takes or leaves it
  (``declare_payload``, the node's ``~/declared_payload``).

In process, the controller as the node runs it (no DDS). Figures are printed, never
asserted. Usage: python benchmarks/bench_safety.py [--no-identified] (skip the hidden
UR5e, ~1.5 min) [--plot PNG] (r against tau_ext during the identified arm's push)
"""
import argparse
import pathlib
import time

import numpy as np

from ne_dynamics_ros.control.laws import InertiaInput
from ne_dynamics_ros.control import ComputedTorqueController
from ne_dynamics_ros.control.reference.effort_check import (check_trajectory, effort_terms,
                                                            fit_to_limits, smallest_stretch,
                                                            stretched)
from ne_dynamics_ros.control.reference.trajectory import (DesiredState, trajectory_from_points,
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


PUSH_POSE = np.radians([0.0, -60.0, 70.0, -90.0, -90.0, 0.0])
PUSH = ('forearm_link', (0.0, 0.0, 0.0), (40.0, 0.0, 0.0))
PUSH_START, PUSH_END, PUSH_RUN = 1.0, 3.0, 3.5


def hold_and_push(c, arm, push=True, external=None):
    """Hold PUSH_POSE; push (MuJoCo) or add ``external`` (n,) from PUSH_START to PUSH_END.

    Returns (t, r, true external effort, contact times) as arrays / list.
    """
    names = c.model.joint_names
    arm.reset(PUSH_POSE)
    ts, rs, true, contacts = [], [], [], []
    for k in range(int(PUSH_RUN * RATE)):
        t = k / RATE
        on = PUSH_START <= t < PUSH_END
        ns = round(t * 1e9)
        out = c.update(ns, names, arm.position, arm.velocity, steady_ns=ns)
        if out.contact is not None:
            contacts.append(t)
        extra = np.zeros(6)
        if push:
            arm.push(*PUSH) if on else arm.push(None)
        elif on:
            extra = np.asarray(external, dtype=float)
        arm.step(np.asarray(out.effort) + extra, 1.0 / RATE)
        ts.append(t)
        rs.append(out.external_effort_values)
        true.append(arm.external_effort.copy() if push else extra)
    return np.array(ts), np.array(rs), np.array(true), contacts


def push_table(label, c, arm, coulomb):
    """Print the push figures of one controller and plant; return the run."""
    t, r, true, contacts = hold_and_push(c, arm)
    steady = (t > PUSH_END - 0.3) & (t < PUSH_END)
    tau = true[steady].mean(axis=0)
    error = np.abs(r[steady] - true[steady]).max(axis=0)
    bound = 0.1 * np.abs(tau) + coulomb
    print(f'  {label}; thresholds {np.round(c.settings.contact_threshold, 2).tolist()} N*m')
    print(f'    {"joint":<22}{"tau_ext":>9}{"|r - tau_ext|":>15}{"bound":>8}'
          f'{"90 % after":>12}')
    for j, name in enumerate(c.model.joint_names):
        reach = ''
        if abs(tau[j]) > 4 * coulomb[j]:
            hit = t[(t >= PUSH_START) & (np.abs(r[:, j]) >= 0.9 * abs(tau[j]))]
            reach = f'{(hit[0] - PUSH_START) * 1e3:.0f} ms' if hit.size else 'never'
        print(f'    {name:<22}{tau[j]:>9.2f}{error[j]:>15.3f}{bound[j]:>8.2f}{reach:>12}')
    during = [x for x in contacts if PUSH_START <= x < PUSH_END]
    before = [x for x in contacts if x < PUSH_START]
    first = f'{(during[0] - PUSH_START) * 1e3:.0f} ms after the push began' if during \
        else 'never'
    print(f'    contact reported {first} (goal <= 50 ms); {len(before)} before it (goal 0)')
    return t, r, true


def held_push(c, arm, joint, effort, seconds):
    """Hold PUSH_POSE; ``effort`` N·m on ``joint`` (index) for ``seconds`` from 1 s.

    Returns the contacts reported: (time after the push began s, sustained level) each.
    """
    names = c.model.joint_names
    arm.reset(PUSH_POSE)
    found = []
    for k in range(int((PUSH_START + seconds + 0.5) * RATE)):
        t = k / RATE
        ns = round(t * 1e9)
        out = c.update(ns, names, arm.position, arm.velocity, steady_ns=ns)
        if out.contact is not None:
            found.append((t - PUSH_START, out.contact.sustained))
        extra = np.zeros(6)
        if PUSH_START <= t < PUSH_START + seconds:
            extra[joint] = effort
        arm.step(np.asarray(out.effort) + extra, 1.0 / RATE)
    return found


def held_push_figures(label, make_controller, make_arm, joint, coulomb):
    """Print the contacts of pushes at 0.9 of the threshold on one joint, held 0.3-3 s."""
    c = make_controller()
    h = c.settings.contact_threshold[joint]
    print(f'  {label}: {0.9 * h:.2f} N*m (0.9 of the threshold {h:.2f}) on '
          f'{c.model.joint_names[joint]}, whose Coulomb friction is {coulomb:.2f} N*m')
    for seconds in (0.3, 1.0, 3.0):
        found = held_push(make_controller(), make_arm(), joint, 0.9 * h, seconds)
        during = [(t, s) for t, s in found if 0.0 <= t < seconds]
        text = (f'flagged {1e3 * during[0][0]:.0f} ms after it began by the '
                f'{"sustained level" if during[0][1] else "threshold"}' if during
                else 'not flagged')
        after = [f'{1e3 * t:.0f} ms ({"sustained" if s else "threshold"})'
                 for t, s in found if not 0.0 <= t < seconds]
        print(f'    held {seconds:g} s: {text}; others (goal none): '
              f'{", ".join(after) or "none"}')


def contact_figures(identified):
    D, F = [6.0, 6.0, 4.0, 1.0, 1.0, 1.0], [2.5, 2.5, 1.5, 0.4, 0.4, 0.4]
    print('contacts: the momentum observer, UR5e held at a pose, 500 Hz')
    c = ComputedTorqueController.from_urdf(UR5E, armature=ARMATURE, damping=[0.0] * 6,
                                           friction=[0.0] * 6,
                                           settings={'kp': 400.0, 'kd': 40.0})
    external = np.array([4.0, -6.0, 3.0, 1.0, -0.5, 0.3])
    t, r, true, _ = hold_and_push(c, SimulatedArm(UR5E, armature=ARMATURE), push=False,
                                  external=external)
    steady = (t > PUSH_END - 0.3) & (t < PUSH_END)
    relative = (np.abs(r[steady] - true[steady]) / np.abs(external)).max()
    print(f'  Pinocchio plant, constant external torque {external.tolist()} N*m, no friction: '
          f'|r - tau_ext| / |tau_ext| at most {relative:.1e} (goal <= 1e-2)')
    known = ComputedTorqueController.from_urdf(
        UR5E, armature=ARMATURE, damping=D, friction=F,
        settings={'kp': 400.0, 'kd': 40.0, 'contact.reaction': 'ignore',
                  'contact.threshold': [6.0, 6.0, 4.0, 1.5, 1.5, 1.5]})
    push_table('MuJoCo, 40 N at the forearm, the plant\'s own model (damping, dry friction)',
               known, MujocoArm(UR5E, armature=ARMATURE, damping=D, friction=F),
               np.array(F))
    print('pushes held below the threshold (goal: flagged; the second contact level, '
          'contact.sustained_time 0.2 s, contact.sustained_level 0.6):')
    held_push_figures(
        'Pinocchio plant, no friction, thresholds [3, 3, 2, 0.5, 0.5, 0.5]',
        lambda: ComputedTorqueController.from_urdf(
            UR5E, armature=ARMATURE, damping=[0.0] * 6, friction=[0.0] * 6,
            settings={'kp': 400.0, 'kd': 40.0, 'contact.reaction': 'ignore',
                      'contact.threshold': [3.0, 3.0, 2.0, 0.5, 0.5, 0.5]}),
        lambda: SimulatedArm(UR5E, armature=ARMATURE), 1, 0.0)
    if identified is not None:
        identified_figures(*identified)


def identified_figures(folder, summary, plot):
    """Print the hidden UR5e's figures, identified: the push, false contacts; plot."""
    from bench_adaptive import ARMS, hidden_plant, identified_controller, MOVE, REST, schedule
    from ne_dynamics_ros.identification import FourierTrajectory
    from ne_dynamics_ros.simulation.closed_loop import (cycles_trajectory,
                                                        excitation_trajectory,
                                                        profile_trajectory)
    import yaml
    files = [ROOT / 'config' / 'ur5e_sim.yaml', summary['identified']['identified_params']]
    urdf = summary['identified']['identified_urdf']
    hidden = hidden_plant()

    def controller(mode='computed_torque'):
        c = identified_controller(urdf, files, mode)
        c.reconfigure(**{'contact.reaction': 'ignore'})
        return c

    a, b = ARMS['ur5e'][3], ARMS['ur5e'][4]
    c = controller()
    run = push_table('MuJoCo, the hidden UR5e, identified (thresholds from identify)', c,
                     MujocoArm(UR5E, **hidden), np.array(hidden['friction']))
    held_push_figures('MuJoCo, the hidden UR5e, identified (its thresholds are mostly its '
                      'friction)', controller, lambda: MujocoArm(UR5E, **hidden), 1,
                      hidden['friction'][1])
    false = []
    quintic = profile_trajectory(c.model.joint_names, 'quintic', HOME,
                                 HOME + np.radians([30, -20, 25, 30, 30, 30]), 3.0, 1 / RATE)
    for label, make, seconds, mode in (
            ('the demo\'s 3 s quintic', lambda names: quintic, 3.5, 'computed_torque'),
            ('the excitation, played again', lambda names: excitation_trajectory(
                FourierTrajectory.from_dict(yaml.safe_load(
                    (pathlib.Path(folder) / 'excitation.yaml').read_text())),
                HOME, 2.0, 1, 1 / RATE), None, 'computed_torque'),
            ('3 pick-and-place cycles of 2 kg (declared)', lambda names: cycles_trajectory(
                names, 'quintic', a, b, MOVE, 3, REST, 1 / RATE, REST),
             3 * 2 * (MOVE + REST) - 1 / RATE, 'adaptive')):
        c = controller(mode)
        trajectory = make(c.model.joint_names)
        end = seconds or trajectory.points[-1].time_from_start + 0.5
        load = schedule(3, hidden['payload_mass']) if mode == 'adaptive' else None
        arm = MujocoArm(UR5E, **dict(hidden, payload_schedule=load, payload_link='tool0')
                        if load else hidden)
        arm.reset(a if load else HOME)
        declared = list(schedule(3).entries) if load else []

        def declare(t):
            # the gripper declares each load as it closes (opens) on it
            while declared and declared[0][0] <= t + 1e-9:
                _, mass, com = declared.pop(0)
                c.take_input('declared_payload', InertiaInput(mass, com))

        done = run_lockstep(c, arm, end, RATE, trajectory, declare)
        worst = np.abs(done.external_effort).max(axis=0) / c.settings.contact_threshold
        false.append((label, len(done.contacts), worst.max()))
    print('    false contacts at these thresholds (goal 0):')
    for label, count, worst in false:
        print(f'      {label:<44} {count}   (largest |r| / threshold {worst:.2f})')
    state_loss_figures(controller, hidden)
    if plot:
        plot_push(plot, c.model.joint_names, *run)


def pause(c, arm, seconds):
    """Hold PUSH_POSE 0.5 s, then no state for ``seconds``: (sag (n,) rad, efforts (N, n))."""
    names = c.model.joint_names
    arm.reset(PUSH_POSE)
    effort = np.zeros(6)
    for k in range(int(0.5 * RATE)):
        ns = round(k / RATE * 1e9)
        effort = np.asarray(c.update(ns, names, arm.position, arm.velocity,
                                     steady_ns=ns).effort)
        arm.step(effort, 1.0 / RATE)
    held, paused_at = arm.position.copy(), k / RATE
    sag, applied = np.zeros(6), []
    for j in range(1, int(round(seconds * RATE)) + 1):
        report = c.check_timeout(round((paused_at + j / RATE) * 1e9))
        if report is not None:
            effort = np.asarray(report.effort)
        applied.append(effort)
        arm.step(effort, 1.0 / RATE)
        sag = np.maximum(sag, np.abs(arm.position - held))
    return sag, np.array(applied)


def state_loss_figures(controller, hidden):
    """States paused while the identified arm holds a pose (state_loss_policy default)."""
    def node_defaults():
        c = controller()
        c.reconfigure(state_timeout=0.1)        # the node's (bench_adaptive sets 10 s)
        return c

    c = node_defaults()
    hold, timeout = c.settings.state_loss_hold, c.settings.state_timeout
    sag, applied = pause(c, MujocoArm(UR5E, **hidden), 0.3)
    zeros = int(np.sum(np.all(applied == 0.0, axis=1)))
    print(f'    states paused 0.3 s (state_timeout {timeout:g} s, {c.settings.state_loss_policy}'
          f', state_loss_hold {hold:g} s): sag per joint {np.round(sag * 1e3, 2).tolist()} mrad '
          f'(goal <= 5), {zeros} zero commands (goal 0)')
    c = node_defaults()
    sag, applied = pause(c, MujocoArm(UR5E, **hidden), timeout + hold + 0.5)
    steps = np.arange(1, len(applied) + 1) / RATE
    after = applied[steps > timeout + hold + 2.0 / RATE]
    before = applied[(steps > timeout + 2.0 / RATE) & (steps <= timeout + hold - 2.0 / RATE)]
    print(f'    paused {timeout + hold + 0.5:g} s: zero commands while holding '
          f'{int(np.sum(np.all(before == 0.0, axis=1)))} of {len(before)}, after '
          f'state_loss_hold {int(np.sum(np.all(after == 0.0, axis=1)))} of {len(after)} '
          f'(as documented: all)')


def plot_push(path, names, t, r, true):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(3, 1, figsize=(7, 6), sharex=True)
    for ax, j in zip(axes, range(3)):
        ax.plot(t, true[:, j], 'k', lw=1.5, label='true external torque (qfrc_applied)')
        ax.plot(t, r[:, j], 'C1', lw=1.2, label='momentum observer r')
        ax.set_ylabel(f'{names[j]}\n[N m]')
        ax.grid(alpha=0.3)
    axes[0].legend(loc='upper right', fontsize=8)
    axes[-1].set_xlabel('time [s]')
    fig.suptitle('UR5e (hidden plant, identified model), 40 N push at the forearm')
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f'wrote {path}')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--no-identified', action='store_true',
                        help='skip the hidden UR5e identified first (~1.5 min)')
    parser.add_argument('--plot', metavar='PNG', help='plot the identified arm\'s push')
    args = parser.parse_args()
    goal_figures()
    print()
    cost_figures()
    print()
    if args.no_identified:
        contact_figures(None)
        return
    import sys
    import tempfile
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from bench_adaptive import identify_ur5e
    with tempfile.TemporaryDirectory() as scratch:
        folder = pathlib.Path(scratch) / 'ur5e_identify'
        print('UR5e, hidden drive model and 1.2 kg payload, identified first:', flush=True)
        summary = identify_ur5e(folder)
        contact_figures((folder, summary, args.plot))


if __name__ == '__main__':
    main()
