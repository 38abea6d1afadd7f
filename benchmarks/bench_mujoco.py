#!/usr/bin/env python3
"""Benchmark: the controller on a plant it did not write (MuJoCo), issue 19's goals.

Runs ``ne-dynamics-demo`` as a user would (its own process, real rclpy over DDS, the
arm in lockstep) and prints its figures beside the goals:

1. The PUMA 560 run of Lee et al. (1982), §5, on ``--plant mujoco`` with the exact model:
   every joint under 4.26e-4 rad.
2. The UR5e on MuJoCo with a plant the controller is not told of (0.1 kg m^2 of rotor
   inertia per joint, gearbox damping 6,6,4,1,1,1 N m s/rad, dry friction
   2.5,2.5,1.5,0.4,0.4,0.4 N m, a 1.2 kg payload at the tool), 500 Hz: the 3 s quintic
   with the nominal URDF at Kp = 100, Kd = 20, then, after ``--identify`` (excitation
   under feedforward + joint PD, rosbag2, ``ne-dynamics identify``), with the identified
   URDF and YAML loaded as a user loads them (the YAML carries the gains ``identify``
   recommends, :mod:`ne_dynamics_ros.control.laws.gains`): every joint under 4.26e-4 rad.
3. The identified drive values against the plant's: damping and dry friction within 5 %,
   armature within 10 % where it is identifiable (Ia1, Ia2 fold into link inertias).

Figures are printed, never asserted. Usage: python benchmarks/bench_mujoco.py [--keep DIR]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

from ne_dynamics_ros.identification import drive_errors

BOUND = 4.26e-4
UR5E_PLANT = ['--payload', '1.2', '--plant-armature', '0.1', '--plant-damping', '6,6,4,1,1,1',
              '--plant-friction', '2.5,2.5,1.5,0.4,0.4,0.4']


def demo(output, *options):
    """Run ne-dynamics-demo into ``output``; return (summary.json, wall seconds)."""
    command = [sys.executable, '-m', 'ne_dynamics_ros.tools.demo', '--output', str(output),
               *options]
    print('$', ' '.join(['ne-dynamics-demo', *command[3:]]), flush=True)
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:], sep='\n')
        raise SystemExit(f'the demo failed with exit status {done.returncode}')
    summary = json.loads((output / 'summary.json').read_text())
    return summary, time.monotonic() - started


def errors_table(names, columns):
    """Print max |e| per joint for each (label, values) column, with the bound."""
    width = max(len(n) for n in names) + 2
    print(f'{"joint":<{width}}' + ''.join(f'{label:>22}' for label, _ in columns)
          + f'{"goal":>12}')
    for j, name in enumerate(names):
        print(f'{name:<{width}}' + ''.join(f'{values[j]:>22.3e}' for _, values in columns)
              + f'{"< 4.26e-4":>12}')
    worst = [max(values) for _, values in columns]
    print(f'{"worst":<{width}}' + ''.join(f'{w:>22.3e}' for w in worst) + '\n')


def drive_table(summary):
    """Print the plant's armature, damping, friction beside the identified values."""
    facts = summary['identified']
    names = summary['joint_names']
    rows = [('armature', 'plant_armature', 'identified_armature', 0.10),
            ('damping', 'plant_damping', 'identified_damping', 0.05),
            ('dry friction', 'plant_friction', 'identified_friction', 0.05)]
    print(f'{"":<22}' + ''.join(f'{n[:14]:>16}' for n in names) + f'{"worst":>9}{"goal":>7}')
    for label, plant_key, found_key, goal in rows:
        plant, found = summary[plant_key], facts[found_key]
        error = drive_errors(plant, found, facts['armature_identifiable']
                             if label == 'armature' else None)
        cells = ''.join(f'{p:>7.4g}/{f:<8.4g}' for p, f in zip(plant, found))
        print(f'{label + " plant/id":<22}{cells}{100 * np.nanmax(error):>8.2f}%'
              f'{100 * goal:>6.0f}%')
        cells = ''.join('     (folded)   ' if np.isnan(e) else f'{100 * e:>15.2f}%'
                        for e in error)
        print(f'{"  error":<22}{cells}')
    print()


def main():
    """Run both demos and print the goals."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--keep', default=None,
                        help='write the demos\' outputs (bags, PNGs) here instead of a '
                        'temporary directory')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        base = pathlib.Path(args.keep or scratch)
        base.mkdir(parents=True, exist_ok=True)
        puma, puma_wall = demo(base / 'puma560_mujoco', '--robot', 'puma560', '--plant',
                               'mujoco')
        ur5e, ur5e_wall = demo(base / 'ur5e_mujoco_identify', '--robot', 'ur5e', '--plant',
                               'mujoco', '--rate', '500', *UR5E_PLANT, '--identify')
    print(f'\n1. PUMA 560, Lee et al.\'s run on MuJoCo ({puma["plant"]}, implicitfast), exact '
          f'model, {puma["rate_hz"]:g} Hz; {puma_wall:.0f} s wall')
    errors_table(puma['joint_names'], [('max |e| [rad]', puma['max_abs_error_rad'])])
    gains = ur5e['identified'].get('identified_gains', {})
    print(f'2. UR5e on MuJoCo, hidden plant, {ur5e["rate_hz"]:g} Hz, 3 s quintic; nominal URDF '
          f'at Kp = {ur5e["kp"]:g}, Kd = {ur5e["kd"]:g}; identified with the gains identify '
          f'recommends, Kp = {gains.get("kp")}, Kd = {gains.get("kd")}; {ur5e_wall:.0f} s '
          'wall for both runs and the identification')
    errors_table(ur5e['joint_names'],
                 [('nominal URDF', ur5e['max_abs_error_rad']),
                  ('identified', ur5e['identified']['max_abs_error_rad'])])
    print('3. identified drive values against the plant\'s')
    drive_table(ur5e)
    warnings = ur5e['identified']['identification_warnings']
    print(f'identification warnings: {warnings or "none"}')


if __name__ == '__main__':
    main()
