#!/usr/bin/env python3
"""Benchmark: identification of a 60 s, 500 Hz recording of a 6-joint arm.

Makes the recording first (not timed): the simulated PUMA 560 (Pinocchio) with a hidden
2 kg payload, 30 % more rotor inertia than config/puma560.yaml says, and viscous and
Coulomb friction tracks an excitation trajectory under computed
torque with the nominal model; joint states with 1 % effort noise go into a rosbag2 (MCAP)
with ``rosbags``. Then runs ``ne-dynamics identify`` on it as a user would (a separate
process, wall clock), and, in this process, each stage apart: reading the bag, filtering
and least squares, the consistency SDP, writing the URDF. Goal of the identification
issue: the whole command under 30 s on this 2-core machine.

Then scale: the same command on a CSV of 2 million rows (``--rows``; the 60 s recording
tiled, the excitation being periodic), as a user exports a long log; time, rows per
second and peak memory (the child's maximum resident set) are printed beside the 60 s
bag's. Goal of the real-arms issue: at most 30 s and 1 GiB.

Usage: python benchmarks/bench_identify.py [--duration 60] [--rate 500] [--rows 2000000]
"""
import argparse
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

from ne_dynamics_ros import load_model
from ne_dynamics_ros.identification.estimation import identify
from ne_dynamics_ros.identification.physical_fit import DriveModel, select_model
from ne_dynamics_ros.identification import design_excitation, read_bag, write_bag
from ne_dynamics_ros.identification.thresholds import contact_thresholds
from ne_dynamics_ros.identification.validation import DEFAULT_FRACTION, split, validate
from ne_dynamics_ros.identification import identified_urdf
from ne_dynamics_ros.simulation.recorder import record_tracking
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm

ROOT = pathlib.Path(__file__).resolve().parent.parent
URDF = ROOT / 'config' / 'puma560.urdf'


def main():
    """Make the recording, then time the identification."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--duration', type=float, default=60.0, help='recording length, s')
    parser.add_argument('--rate', type=float, default=500.0, help='joint_states rate, Hz')
    parser.add_argument('--rows', type=int, default=2_000_000,
                        help='rows of the long CSV recording (0: skip it)')
    args = parser.parse_args()
    import yaml
    armature = yaml.safe_load((ROOT / 'config' / 'puma560.yaml').read_text())[
        'computed_torque_node']['ros__parameters']['armature']
    model = load_model(str(URDF), tip_link='flange', armature=armature)
    arm = SimulatedArm(str(URDF), joints=model.joint_names,
                       armature=[1.3 * a for a in armature], payload_mass=2.0,
                       joint_friction=[3.0, 3.0, 2.0, 0.5, 0.5, 0.5],
                       coulomb_friction=[2.0, 2.0, 1.0, 0.3, 0.3, 0.3])
    print('making the recording (not timed)...', flush=True)
    excitation, _ = design_excitation(model, 10.0, harmonics=5, starts=1, iterations=100)
    record = record_tracking(arm, model, lambda t: tuple(a[0] for a in excitation.evaluate(t)),
                             args.duration, rate=args.rate, position_noise=1e-5,
                             effort_noise=0.01)
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        bag = write_bag(folder / 'bag', model.joint_names, record.t, record.q, record.qd,
                        record.effort)
        size = sum(p.stat().st_size for p in bag.iterdir()) / 1e6
        print(f'recording: {record.t.size} JointState messages, {args.duration:g} s at '
              f'{args.rate:g} Hz, {size:.1f} MB MCAP')
        command = [str(pathlib.Path(sys.executable).parent / 'ne-dynamics'), 'identify',
                   '--urdf', str(URDF), '--bag', str(bag), '--tip-link', 'flange',
                   '--output-urdf', str(folder / 'out.urdf'),
                   '--output-params', str(folder / 'out.yaml'),
                   '--armature', *(str(a) for a in armature)]
        total, peak = _run(command)
        long_run = None
        if args.rows > 0:
            long_run = _long_csv(folder, model, record, args.rows, command)
        stages = []
        t0 = time.perf_counter()
        recording = read_bag(bag, model.joint_names, progress=False)
        stages.append(('read the bag (rosbags)', time.perf_counter() - t0))
        fit, held = split(recording, DEFAULT_FRACTION)
        t0 = time.perf_counter()
        found = identify(model, fit)
        stages.append(('filter, regressor, decimate, least squares', time.perf_counter() - t0))
        t0 = time.perf_counter()
        physical = select_model(found.folds, 1.0 / found.sigma ** 2,
                                model.standard_parameters(), model.n,
                                DriveModel.full(model.n), model.joint_names)
        stages.append(('physical fit, cross-validated (cvxpy)', time.perf_counter() - t0))
        t0 = time.perf_counter()
        validate(model, physical.model(model), held, found.cutoff)
        stages.append(('both models on the held-out 25 %', time.perf_counter() - t0))
        t0 = time.perf_counter()
        contact_thresholds(physical.model(model), fit)
        stages.append(('contact thresholds (observer over the fit)', time.perf_counter() - t0))
        t0 = time.perf_counter()
        identified_urdf(URDF.read_text(), model, physical.parameters)
        stages.append(('write and check the URDF', time.perf_counter() - t0))
    print(f'\n{"stage":<46}{"s":>8}')
    for label, seconds in stages:
        print(f'{label:<46}{seconds:>8.2f}')
    print(f'{"ne-dynamics identify, whole command":<46}{total:>8.2f}   (goal < 30 s)')
    print(f'\n{"ne-dynamics identify":<46}{"s":>8}{"peak MiB":>10}')
    print(f'{f"{args.duration:g} s bag, {record.t.size} samples":<46}{total:>8.2f}{peak:>10.0f}')
    if long_run is not None:
        label, seconds, mib, rows = long_run
        print(f'{label:<46}{seconds:>8.2f}{mib:>10.0f}   (goal: 30 s, 1024 MiB); '
              f'{rows / seconds:,.0f} rows/s')
    relative = found.residual_rms / found.effort_rms
    print('residual after identification, % of effort RMS per joint: '
          + ' '.join(f'{100 * r:.2f}' for r in relative))


def _run(command):
    """Run ``command``; return (wall seconds, peak resident MiB of the largest child so far)."""
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        print(result.stdout, result.stderr)
        raise SystemExit('identify failed')
    return seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0


def _long_csv(folder, model, record, rows, bag_command):
    """Tile the recording to ``rows``, write it as CSV, identify; (label, s, MiB, rows)."""
    import numpy as np
    period = record.t[-1] + (record.t[1] - record.t[0])
    copies = max(1, int(round(rows / record.t.size)))
    names = model.joint_names
    path = folder / 'long.csv'
    header = ','.join(['time'] + [f'position/{j}' for j in names]
                      + [f'velocity/{j}' for j in names] + [f'effort/{j}' for j in names])
    block = np.column_stack([record.q, record.qd, record.effort])
    print(f'writing a {copies * period / 3600:.2f} h CSV ({copies} copies of the '
          f'{period:g} s recording; not timed)...', flush=True)
    with open(path, 'w', encoding='utf-8') as stream:
        stream.write(header + '\n')
        for k in range(copies):
            np.savetxt(stream, np.column_stack([record.t + k * period, block]),
                       delimiter=',', fmt='%.9g')
    rows = copies * record.t.size
    size = path.stat().st_size / 2**20
    command = list(bag_command)
    where = command.index('--bag')
    command[where:where + 2] = ['--csv', str(path)]
    seconds, peak = _run(command)
    return (f'{copies * period / 3600:.2f} h CSV, {rows} rows, {size:.0f} MiB', seconds, peak,
            rows)


if __name__ == '__main__':
    main()
