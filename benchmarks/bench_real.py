#!/usr/bin/env python3
"""Benchmark: identification on recordings of real arms, judged on motion not fitted on.

Two public recordings of real robots, read from ``../shared/data/real`` (third-party data
under GPL/LGPL: read from there, never copied into this repository):

- **KUKA LWR4+** (FloBaRoID, 200 Hz, link-side joint torque sensors; its URDF's inertias
  are placeholders of 2 kg a link): fitted on run 1, validated on run 3 (another motion).
- **Franka Emika Panda** (Gaz et al., RA-L 2019; ~1 kHz with irregular steps; nominal
  model: example-robot-data's URDF): fitted on the first 70 % of the excitation,
  validated on the last 30 %, beside Gaz et al.'s Table IV (RMS on their own validation
  trajectories, with their feasible parameters).

Each is identified as ``ne-dynamics identify`` does it (:func:`~ne_dynamics_ros.
identification.pipeline.identify_model`: resampled when irregular, the physical fit
with the prior and drive terms chosen by cross-validation on the fitted part only), then
the per-joint RMS of measured minus predicted effort on the held-out motion is printed
for the identified model, the nominal URDF as it is (its ``<dynamics>`` friction
included) and the nominal rigid body alone (friction left out), with the same
preprocessing for all (:mod:`~ne_dynamics_ros.identification.validation`); then the
contact thresholds written, the contacts they would report on the held-out motion, the
masses nominal vs identified and each link's margin of physical consistency.

Usage: python benchmarks/bench_real.py [--data ../shared/data/real] [--only kuka|panda]
"""
import argparse
import pathlib
import sys
import time

import numpy as np

from ne_dynamics_ros import load_model, resources
from ne_dynamics_ros.dynamics.standard_parameters import PER_JOINT
from ne_dynamics_ros.dynamics.urdf_import import read_urdf_text
from ne_dynamics_ros.identification.physical_fit import (MARGIN, nominal_pseudo_inertias,
                                                         relative_margins)
from ne_dynamics_ros.identification.pipeline import identify_model, regular
from ne_dynamics_ros.identification import JointRecording, split, validate

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT.parent / 'shared' / 'data' / 'real'
#: Gaz et al. 2019, supplementary Table IV: RMS per joint on their validation
#: trajectories with feasible parameters (sqrt of the mean square errors), N·m.
GAZ_TABLE_IV = (0.64, 1.01, 0.77, 0.65, 0.42, 0.20, 0.16)


def panda_urdf():
    """Return the path of example-robot-data's Panda URDF (or exit saying how to get it)."""
    path = resources.panda_urdf()
    if path is None:
        sys.exit('bench_real: the Panda needs example-robot-data (pip install '
                 'example-robot-data)')
    return path


def kuka_recordings(folder, model):
    """Return (run 1, run 3) as JointRecordings."""
    out = []
    for run in (1, 3):
        d = np.load(folder / f'measurements_{run}.npz')
        out.append(JointRecording(tuple(model.joint_names), d['times'] - d['times'][0],
                                  d['positions'], d['velocities'], d['torques'],
                                  f'kuka_lwr4/measurements_{run}.npz'))
    return out


def panda_recording(folder, model):
    """Return the excitation as one JointRecording (times from the time file)."""
    def lines(name):
        return np.loadtxt(folder / f'exciting_traj_{name}.txt')
    t = lines('time')
    q, qd, tau = (lines(k).reshape(-1, 7) for k in ('positions', 'velocity', 'torques'))
    return JointRecording(tuple(model.joint_names), t - t[0], q, qd, tau,
                          'panda_gaz2019/exciting_traj')


def rigid_only(model):
    """Return the nominal model without its URDF friction (armature, damping, Coulomb 0)."""
    p = model.standard_parameters().copy()
    for k in (10, 11, 12):
        p[k::PER_JOINT] = 0.0
    return model.with_parameters(p)


def report(name, text, model, fit, held, reference=None):
    """Identify from ``fit``, judge on ``held``, print the tables; return the figures."""
    t0 = time.perf_counter()
    found = identify_model(text, model, fit, validation=held)
    seconds = time.perf_counter() - t0
    physical = found.physical
    identified = model.with_parameters(physical.parameters)
    identified.set_friction_shape(physical.friction_velocity, physical.friction_offset)
    v = found.validation
    cutoff = found.result.cutoff
    rigid = validate(rigid_only(model), identified, regular(held), cutoff)
    print(f'\n=== {name}: fitted on {fit.source} ({fit.t.size} samples), validated on '
          f'{held.source} ({v.samples} samples compared); identify took {seconds:.1f} s; '
          f'low-pass {cutoff:g} Hz for every model')
    header = (f'{"joint":<14} {"effort RMS":>10} | {"identified":>10} {"rel":>6} | '
              f'{"URDF":>8} {"rel":>6} | {"rigid body":>10} {"rel":>6}')
    if reference is not None:
        header += f' | {"Gaz T.IV":>8}'
    print(header)
    for j, joint in enumerate(model.joint_names):
        e = v.effort_rms[j]
        line = (f'{joint:<14} {e:>10.3f} | {v.identified_rms[j]:>10.3f} '
                f'{v.identified_rms[j] / e:>6.3f} | {v.nominal_rms[j]:>8.3f} '
                f'{v.nominal_rms[j] / e:>6.3f} | {rigid.nominal_rms[j]:>10.3f} '
                f'{rigid.nominal_rms[j] / e:>6.3f}')
        if reference is not None:
            line += f' | {reference[j]:>8.2f}'
        print(line)
    best_nominal = np.minimum(v.nominal_rms, rigid.nominal_rms)
    better = int(np.count_nonzero(v.identified_rms < best_nominal))
    print(f'identified better than both nominal models on {better} of {model.n} joints')
    if reference is not None:
        under = int(np.count_nonzero(v.identified_rms <= np.asarray(reference)))
        print(f'identified RMS <= Gaz et al.\'s Table IV on {under} of {model.n} joints')
    limits = np.asarray(model.effort_limits, dtype=float)
    thresholds = np.asarray(found.thresholds.values)
    print(f'contact thresholds (N*m): {np.round(thresholds, 3).tolist()}; largest share of '
          f'an effort limit {np.max(thresholds / limits):.3f}; contacts reported on the '
          f'held-out motion: {v.false_contacts} (largest |r|/threshold '
          f'{np.max(v.largest_ratio):.2f})')
    nominal = model.standard_parameters()
    margins = relative_margins(physical.parameters, nominal_pseudo_inertias(nominal, model.n),
                               model.n)
    masses0 = nominal[9::PER_JOINT]
    masses = physical.parameters[9::PER_JOINT]
    print(f'{"link of":<14} {"mass nominal":>12} {"identified":>10} {"ratio":>6} '
          f'{"margin":>7}   (margin: smallest eigenvalue of J0^-1/2 J J0^-1/2, asked '
          f'>= {MARGIN:g})')
    for joint, m0, m, g in zip(model.joint_names, masses0, masses, margins):
        print(f'{joint:<14} {m0:>12.3f} {m:>10.3f} {m / m0:>6.2f} {g:>7.3f}')
    print('drive terms: ' + '; '.join(f'{joint} {physical.drives.describe(j)}' for j, joint
                                      in enumerate(model.joint_names)))
    return v


def main():
    """Run both arms (or the one asked for)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--data', type=pathlib.Path, default=DATA,
                        help='folder with kuka_lwr4/ and panda_gaz2019/')
    parser.add_argument('--only', choices=('kuka', 'panda'), default=None)
    args = parser.parse_args()
    if not args.data.is_dir():
        sys.exit(f'bench_real: no recordings of real arms at {args.data}')
    if args.only in (None, 'kuka'):
        folder = args.data / 'kuka_lwr4'
        text = read_urdf_text(str(folder / 'kuka_lwr4.urdf'))
        model = load_model(text, tip_link='lwr_7_link')
        fit, held = kuka_recordings(folder, model)
        report('KUKA LWR4+', text, model, fit, held)
    if args.only in (None, 'panda'):
        text = read_urdf_text(str(panda_urdf()))
        model = load_model(text, tip_link='panda_link8')
        fit, held = split(regular(panda_recording(args.data / 'panda_gaz2019', model)), 0.3)
        report('Franka Emika Panda', text, model, fit, held, GAZ_TABLE_IV)


if __name__ == '__main__':
    main()
