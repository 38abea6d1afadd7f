#!/usr/bin/env python3
"""Benchmark: our RNEA against Pinocchio and Robotics Toolbox, side by side.

For the PUMA 560 and the UR5e, prints per-call time of ``model.rnea`` (one state), batch
time per state at N = 1, 100, 10 000, and the same work done by ``pinocchio.rnea`` called
in a Python loop and by Robotics Toolbox ``rne`` (PUMA 560 only: RTB ships that arm's
published DH model, not the UR5e's), with ratios against Pinocchio.  Medians over
repeats; wall-clock ``time.perf_counter``.

Usage: python benchmarks/bench_rnea.py [--repeats R] [--quick]
"""
import argparse
import pathlib
import statistics
import time

import numpy as np
import pinocchio as pin
import yaml

from ne_dynamics_ros import load_model

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARMS = {
    'puma560': (ROOT / 'config' / 'puma560.urdf', 'flange'),
    'ur5e': (ROOT / 'config' / 'ur5e.urdf', 'tool0'),
}


def median_time(fn, repeats, inner):
    """Median over ``repeats`` of the mean time of ``inner`` calls, seconds."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def puma_armature():
    """Armature G²·J_m of the PUMA 560 from config/puma560.yaml."""
    with open(ROOT / 'config' / 'puma560.yaml') as f:
        return yaml.safe_load(f)['computed_torque_node']['ros__parameters']['armature']


def bench_arm(name, repeats, sizes):
    """Time our RNEA (both conventions), Pinocchio and RTB on one arm; return rows."""
    path, tip = ARMS[name]
    armature = puma_armature() if name == 'puma560' else [0.0] * 6
    rows = []
    pm = pin.buildModelFromUrdf(str(path))
    pm.armature[:] = armature
    pd = pm.createData()
    rtb = None
    if name == 'puma560':
        import roboticstoolbox as rtb_module
        rtb = rtb_module.models.DH.Puma560().nofriction(coulomb=True, viscous=True)
    rng = np.random.default_rng(0)
    for convention in ('mdh', 'dh'):
        model = load_model(str(path), tip_link=tip, convention=convention, armature=armature)
        q, qd, qdd = rng.uniform(-1, 1, (3, 6))
        t_single = median_time(lambda: model.rnea(q, qd, qdd), repeats, 200)
        rows.append((name, convention, 'single call', 1, t_single))
        for N in sizes:
            Q, QD, QDD = rng.uniform(-1, 1, (3, N, 6))
            inner = max(1, 2000 // N)
            t = median_time(lambda: model.rnea(Q, QD, QDD), repeats, inner) / N
            rows.append((name, convention, 'batch', N, t))
    q, qd, qdd = rng.uniform(-1, 1, (3, 6))
    rows.append((name, 'pinocchio', 'single call', 1,
                 median_time(lambda: pin.rnea(pm, pd, q, qd, qdd), repeats, 2000)))
    for N in sizes:
        Q, QD, QDD = rng.uniform(-1, 1, (3, N, 6))

        def loop():
            for k in range(N):
                pin.rnea(pm, pd, Q[k], QD[k], QDD[k])
        rows.append((name, 'pinocchio loop', 'batch', N,
                     median_time(loop, repeats, max(1, 2000 // N)) / N))
    if rtb is not None:
        g = [0, 0, -9.81]
        rows.append((name, 'rtb rne', 'single call', 1,
                     median_time(lambda: rtb.rne(q, qd, qdd, gravity=g), repeats, 200)))
        for N in sizes:
            Q, QD, QDD = rng.uniform(-1, 1, (3, N, 6))
            rows.append((name, 'rtb rne', 'batch', N,
                         median_time(lambda: rtb.rne(Q, QD, QDD, gravity=g), repeats,
                                     max(1, 200 // N)) / N))
    return rows


def main():
    """Print the side-by-side table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeats', type=int, default=7)
    parser.add_argument('--quick', action='store_true', help='N up to 1000, 3 repeats')
    args = parser.parse_args()
    sizes = [1, 100, 1000] if args.quick else [1, 100, 10000]
    repeats = 3 if args.quick else args.repeats
    print(f'{"robot":<8} {"implementation":<15} {"mode":<12} {"N":>6} {"µs/state":>10} '
          f'{"vs pinocchio":>13}')
    for name in ARMS:
        rows = bench_arm(name, repeats, sizes)
        ref = {(r[2], r[3]): r[4] for r in rows if r[1].startswith('pinocchio')}
        for robot, impl, mode, N, t in rows:
            ratio = t / ref[(mode, N)]
            print(f'{robot:<8} {impl:<15} {mode:<12} {N:>6} {t * 1e6:>10.2f} {ratio:>12.2f}x')


if __name__ == '__main__':
    main()
