#!/usr/bin/env python3
"""Benchmark: contact thresholds from a real arm's recording, judged on its raw free motion.

The KUKA LWR4+ of ``../shared/data/real`` (200 Hz, link-side joint torque sensors; GPL/LGPL
data read from there, never copied): identified from run 1 as ``ne-dynamics identify``
does it (its contact thresholds included), then runs 2 (the same excitation again) and 3
(another motion) replayed *raw*, as the node would see them (their own time steps,
irregular ones included, no resampling, no filter), through the momentum observer with
the identified model: the contacts the node would report (``contact.debounce`` 3) and the
largest ``|r| / threshold`` per run. Free motion: the goal is 0.

Usage: python benchmarks/bench_contacts_real.py [--data ../shared/data/real]
"""
import argparse
import pathlib

import numpy as np

from ne_dynamics_ros import load_model
from ne_dynamics_ros.control.sensing.observer import SUSTAINED_LEVEL, SUSTAINED_TIME
from ne_dynamics_ros.dynamics.urdf_import import read_urdf_text
from ne_dynamics_ros.identification import identify_model, JointRecording
from ne_dynamics_ros.identification.thresholds import first_order_lag, observed_effort
from ne_dynamics_ros.identification.validation import count_contacts

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT.parent / 'shared' / 'data' / 'real'


def run(folder, model, k):
    """Return run ``k`` of the KUKA as a JointRecording, its own time steps."""
    d = np.load(folder / f'measurements_{k}.npz')
    return JointRecording(tuple(model.joint_names), d['times'] - d['times'][0],
                          d['positions'], d['velocities'], d['torques'],
                          f'kuka_lwr4/measurements_{k}.npz')


def sustained_margin(t, r, thresholds, band):
    """Per joint: the largest (|r filtered| - b) / (h - b), the second level's measure."""
    filtered = first_order_lag(r, t, 1.0 / SUSTAINED_TIME)
    b = np.minimum(band, thresholds)
    return ((np.abs(filtered) - b) / (thresholds - b)).max(axis=0)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--data', type=pathlib.Path, default=DATA)
    args = parser.parse_args(argv)
    folder = args.data / 'kuka_lwr4'
    urdf = folder / 'kuka_lwr4.urdf'
    text = read_urdf_text(str(urdf))
    model = load_model(text, tip_link='lwr_7_link')
    found = identify_model(text, model, run(folder, model, 1), validation=0.0)
    physical = found.physical
    identified = model.with_parameters(physical.parameters)
    identified.set_friction_shape(physical.friction_velocity, physical.friction_offset)
    thresholds = np.asarray(found.thresholds.values)
    print(f'KUKA LWR4+, identified on run 1; thresholds (N*m) {np.round(thresholds, 3).tolist()}')
    for k in (2, 3):
        raw = run(folder, model, k)
        steps = np.diff(raw.t)
        r = observed_effort(identified, raw.t, raw.q, raw.qd, raw.effort)
        contacts, ratio = count_contacts(r, thresholds, t=raw.t, band=identified.friction)
        first, _ = count_contacts(r, thresholds, sustained_time=0.0)
        level = sustained_margin(raw.t, r, thresholds, identified.friction)
        print(f'  run {k} raw ({raw.t.size} states, steps {1e3 * steps.min():.2f} to '
              f'{1e3 * steps.max():.2f} ms): contacts {contacts} (goal 0; the threshold '
              f'alone {first}), largest |r|/threshold {ratio.max():.2f} on '
              f'{model.joint_names[int(ratio.argmax())]}; filtered over '
              f'{SUSTAINED_TIME:g} s, largest share of the margin above the friction band '
              f'{level.max():.2f} on {model.joint_names[int(level.argmax())]} (the second '
              f'level: {SUSTAINED_LEVEL:g})')


if __name__ == '__main__':
    main()
