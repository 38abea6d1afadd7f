"""Mode joint_impedance on the UR5e on MuJoCo: tracking beside computed torque, compliance.

1. Tracking: quintic goals between two poses (``bench_adaptive.ARMS['ur5e']``, 3 s each
   way, a rest between) at 500 Hz, in lockstep on MuJoCo: the exact plant with its own
   model, and with ``--identified`` the hidden plant of ``bench_mujoco.py`` (its armature,
   damping, dry friction and 1.2 kg at the flange) with the model ``ne-dynamics identify``
   gives. Computed torque with the gains the rule gives (``ne-dynamics gains``: kp, kd for
   500 Hz) beside joint_impedance with the stiffest K the same rule allows, ``K_i = M_ii,max
   (rate / 10)²``, damping ratio 1. Goal: joint_impedance's worst ``|q_d - q|`` within 2x
   computed torque's; the same law without the feed-forward
   (``joint_impedance.feedforward`` false: the PD with gravity alone) printed beside it.
   With ``--identified`` the model is judged also on the hidden plant with its drives' dry
   friction halved and doubled (the model identified at x1).
2. Compliance: the arm holding its pose, 20 N at the flange along x, y, then z for 2.5 s:
   the tip's motion along the force beside ``J K^-1 J^T F`` (goal within 15 %), and
   across it.
3. Cost: the controller's update per state in process beside computed torque's (the
   node's is ``bench_node.py --modes``; goal <= 1.1x).

Figures are printed, never asserted. Usage::

    python benchmarks/bench_joint_impedance.py [--identified]
"""
import argparse
import pathlib
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_adaptive import ARMS, hidden_plant, identified_controller  # noqa: E402

from ne_dynamics_ros.control import ComputedTorqueController  # noqa: E402
from ne_dynamics_ros.control.laws.gains import recommended_gains, stiffness_bound  # noqa: E402
from ne_dynamics_ros.dynamics.kinematics import jacobian, tip_pose  # noqa: E402
from ne_dynamics_ros.simulation.closed_loop import (cycles_trajectory,  # noqa: E402
                                                    run_lockstep)
from ne_dynamics_ros.simulation.mujoco_arm import MujocoArm  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent
RATE, MOVE, REST, CYCLES = 500.0, 3.0, 0.5, 2
FORCE = 20.0
URDF, TIP, ARMATURE, A, B = ARMS['ur5e']


def stiffness(model):
    """K_i = M_ii,max (rate / 10)²: the stiffest joint stiffness the sampling rule allows."""
    rule = recommended_gains(model, RATE)
    return stiffness_bound(rule.inertia_max, RATE), rule


def exact_controller(mode):
    """Return the exact plant's own model, set as :func:`configured` says."""
    c = ComputedTorqueController.from_urdf(str(URDF), tip_link=TIP, armature=ARMATURE,
                                           settings={'state_timeout': 10.0})
    return configured(c, mode)


def configured(c, mode):
    """Set ``c`` to ``mode`` with the rule's kp, kd or joint stiffness for RATE."""
    k, rule = stiffness(c.model)
    c.reconfigure(mode=mode, kp=rule.kp.tolist(), kd=rule.kd.tolist(),
                  **{'joint_impedance.stiffness': k.tolist(),
                     'joint_impedance.damping_ratio': 1.0})
    return c


def exact_plant():
    return MujocoArm(str(URDF), armature=ARMATURE)


def hidden(friction_scale=1.0):
    """Return the hidden plant, its drives' dry friction scaled by ``friction_scale``."""
    plant = hidden_plant()
    plant['friction'] = [friction_scale * f for f in plant['friction']]
    return MujocoArm(str(URDF), payload_link=TIP, **plant)


def tracking(make_controller, make_plant, mode, **settings):
    """Return (worst |q_d - q| per joint during the moves (n,), µs per update median)."""
    c = make_controller(mode)
    if settings:
        c.reconfigure(**settings)
    arm = make_plant()
    arm.reset(A)
    spent, update = [], c.update

    def timed(*args, **kwargs):
        begin = time.perf_counter_ns()
        out = update(*args, **kwargs)
        spent.append(time.perf_counter_ns() - begin)
        return out
    c.update = timed
    period = 2 * (MOVE + REST)
    record = run_lockstep(c, arm, CYCLES * period - 1.0 / RATE, RATE, cycles_trajectory(
        c.model.joint_names, 'quintic', A, B, MOVE, CYCLES, REST, 1.0 / RATE, REST))
    phase = record.t % period
    moving = ((phase >= REST) & (phase < REST + MOVE)) | (phase >= 2 * REST + MOVE)
    return np.abs(record.position_error[moving]).max(axis=0), 1e-3 * np.median(spent[100:])


def compliance(make_controller, make_plant):
    """Return [(axis, along mm, predicted mm, across mm)] for 20 N along x, y, z."""
    rows = []
    for axis in range(3):
        c = make_controller('joint_impedance')
        arm = make_plant()
        arm.reset(A)
        names = c.model.joint_names
        force = np.zeros(3)
        force[axis] = FORCE
        t = [0.0]

        def run(seconds):
            for _ in range(int(round(seconds * RATE))):
                ns = int(round(t[0] * 1e9))
                out = c.update(ns, names, arm.position, arm.velocity, steady_ns=ns)
                arm.step(out.effort, 1.0 / RATE)
                t[0] += 1.0 / RATE
            return tip_pose(c.model, arm.position)[:3, 3]
        start = run(1.0)
        q0 = arm.position.copy()
        arm.push(TIP, (0.0, 0.0, 0.0), force)
        moved = run(2.5) - start
        J = jacobian(c.model, q0)[:3]
        k = c.law.stiffness                 # set, or sized for the arm (the default)
        predicted = J @ ((J.T @ force) / k)
        rows.append(('xyz'[axis], 1e3 * moved[axis], 1e3 * predicted[axis],
                     1e3 * np.linalg.norm(np.delete(moved, axis))))
    return rows


def print_plant(title, make_controller, make_plant):
    print(f'{title}')
    ct, ct_cost = tracking(make_controller, make_plant, 'computed_torque')
    ji, ji_cost = tracking(make_controller, make_plant, 'joint_impedance')
    pd, _ = tracking(make_controller, make_plant, 'joint_impedance',
                     **{'joint_impedance.feedforward': False})
    print(f'  1. tracking, worst |q_d - q| during the moves [rad]: computed torque '
          f'{ct.max():.3e}, joint_impedance {ji.max():.3e}, ratio {ji.max() / ct.max():.2f} '
          f'(goal <= 2); without the feed-forward {pd.max():.3e}, ratio '
          f'{pd.max() / ct.max():.2f}')
    print('     per joint: ' + ', '.join(f'{a:.2e}/{b:.2e}/{c:.2e}' for a, b, c in zip(
        ct, ji, pd)) + ' (computed torque/joint_impedance/without the feed-forward)')
    print('  2. 20 N at the flange, 2.5 s (goal: along the force within 15 % of '
          'J K^-1 J^T F)')
    for axis, along, predicted, across in compliance(make_controller, make_plant):
        print(f'     {axis}: along {along:7.3f} mm, J K^-1 J^T F {predicted:7.3f} mm '
              f'({100 * (along / predicted - 1):+5.1f} %), across {across:6.3f} mm')
    print(f'  3. update per state, median: computed torque {ct_cost:.1f} us, '
          f'joint_impedance {ji_cost:.1f} us, ratio {ji_cost / ct_cost:.2f} (goal <= 1.1)',
          flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--identified', action='store_true',
                        help='also the hidden plant with its identified model (~1 min more)')
    parser.add_argument('--defaults', action='store_true',
                        help='instead: the identified model as a user gets it (the YAML\'s '
                        'gains, joint_impedance.stiffness unset: sized for the arm) beside the '
                        'old default of 100 N*m/rad (~2 min)')
    args = parser.parse_args(argv)
    if args.defaults:
        return defaults()
    k, rule = stiffness(exact_controller('computed_torque').model)
    print(f'UR5e on MuJoCo at {RATE:g} Hz, quintic goals {MOVE:g} s each way; exact model: '
          f'kp {np.round(rule.kp).tolist()}, K = M_ii,max (rate/10)^2 = '
          f'{np.round(k).tolist()} N*m/rad')
    print_plant('exact plant, its own model:', exact_controller, exact_plant)
    if not args.identified:
        return
    from bench_adaptive import identify_ur5e
    with tempfile.TemporaryDirectory() as scratch:
        summary = identify_ur5e(pathlib.Path(scratch) / 'ur5e_identify')
        files = [REPO / 'config' / 'ur5e_sim.yaml',
                 summary['identified']['identified_params']]
        urdf = summary['identified']['identified_urdf']

        def make(mode):
            c = identified_controller(urdf, files, 'computed_torque')
            return configured(c, mode)
        print_plant('hidden plant (drives, dry friction, 1.2 kg), identified model:', make,
                    hidden)
        for scale in (0.5, 2.0):
            print_plant(f'the same model on the hidden plant with its dry friction x{scale:g} '
                        '(not identified on):', make, lambda: hidden(scale))


def defaults():
    """Print the identified hidden UR5e as a user gets it: the law's default stiffness."""
    from bench_adaptive import identify_ur5e
    with tempfile.TemporaryDirectory() as scratch:
        summary = identify_ur5e(pathlib.Path(scratch) / 'ur5e_identify')
        files = [REPO / 'config' / 'ur5e_sim.yaml',
                 summary['identified']['identified_params']]
        urdf = summary['identified']['identified_urdf']
        old = {'joint_impedance.stiffness': [100.0]}
        for title, extra in (('joint_impedance.stiffness unset (sized for the arm)', {}),
                             ('the old default, 100 N*m/rad', old)):
            def make(mode, extra=extra):
                c = identified_controller(urdf, files, mode)
                if extra:
                    c.reconfigure(**extra)
                return c
            law = make('joint_impedance')
            law.update(0, law.model.joint_names, A, np.zeros(6), steady_ns=0)
            print(f'  K = {np.round(law.law.stiffness, 1).tolist()} N*m/rad')
            print_plant(f'hidden plant, identified model, the YAML\'s gains, {title}:', make,
                        hidden)


if __name__ == '__main__':
    main()
