"""The tip's external wrench (``~/external_wrench``) for known pushes at the UR5e's flange.

MuJoCo's UR5e held by computed torque at 500 Hz (the rule's gains), pushed at the flange
(``MujocoArm.push``: ``mj_applyFT``) with 20 N along x, y, z of the base frame, then 20 N
along z at 0.1 m along the flange's x (a 2 N·m moment), each for 1 s: the controller's
``Command.external_wrench`` (the momentum observer's external effort through the damped
pseudo-inverse of J^T, :mod:`ne_dynamics_ros.control.sensing.wrench`), averaged over the push's
last 0.2 s, beside the push. On the exact plant with its own model; with
``--identified`` on the hidden plant of ``bench_mujoco.py`` (drives, dry friction, 1.2
kg) with its identified model, held by computed torque and then, compliant, in
``cartesian_impedance`` (K 500 N/m, 50 N·m/rad: the joints slide under the push, so the
drives' friction is the sliding one the model holds, not the stiction it cannot know);
and at a wrist singularity (wrist 2 at 0: axes 4 and 6 aligned), where the directions the
joints cannot tell apart are flagged, not amplified.

Figures are printed, never asserted. Usage::

    python benchmarks/bench_wrench.py [--identified]
"""
import argparse
import pathlib
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_adaptive import hidden_plant, identified_controller  # noqa: E402

from ne_dynamics_ros.control import ComputedTorqueController  # noqa: E402
from ne_dynamics_ros.control.laws.gains import recommended_gains  # noqa: E402
from ne_dynamics_ros.dynamics.kinematics import tip_pose  # noqa: E402
from ne_dynamics_ros.simulation.mujoco_arm import MujocoArm  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent
URDF = REPO / 'config' / 'ur5e.urdf'
RATE, ARMATURE = 500.0, [0.1] * 6
POSES = {'usual pose': np.array([0.2, -1.4, 1.4, -1.5, -1.5, 0.1]),
         'wrist singularity': np.array([0.2, -1.4, 1.4, -1.5, 0.0, 0.1])}
PUSHES = (('20 N along x', (0, 0, 0), (20.0, 0, 0)), ('20 N along y', (0, 0, 0), (0, 20.0, 0)),
          ('20 N along z', (0, 0, 0), (0, 0, 20.0)),
          ('20 N z at 0.1 m', (0.1, 0, 0), (0, 0, 20.0)))


#: the compliant case's Cartesian stiffness (N/m, then N·m/rad)
COMPLIANT = {'cartesian.stiffness': [500.0, 500.0, 500.0, 50.0, 50.0, 50.0]}


def held(c, mode='computed_torque', **settings):
    """Set ``mode`` with the rule's gains for RATE on ``c``, the wrench wanted in base."""
    rule = recommended_gains(c.model, RATE)
    c.reconfigure(mode=mode, kp=rule.kp.tolist(), kd=rule.kd.tolist(),
                  external_wrench_frame='base', state_timeout=10.0, **settings)
    c.external_wrench_wanted = True
    return c


def pushes(c, arm, q0):
    """Return [(label, applied, estimated, flagged, at 100 ms, |F| unpushed)] per push.

    ``applied``, ``estimated`` (the last 0.2 s's mean) and ``at 100 ms`` (the estimate
    100 ms after the push started) are (6,) [F; M]; ``|F| unpushed``: the largest force
    read in the 0.2 s before the push.
    """
    names = c.model.joint_names
    arm.reset(q0)
    t = [0]

    def run(seconds, keep=0.0):
        kept = []
        steps = int(seconds * RATE)
        for k in range(steps):
            ns = round(t[0] / RATE * 1e9)
            out = c.update(ns, names, arm.position, arm.velocity, steady_ns=ns)
            arm.step(out.effort, 1.0 / RATE)
            t[0] += 1
            if k >= steps - keep * RATE and out.external_wrench is not None:
                w = out.external_wrench
                kept.append((np.r_[w.force, w.moment], w.flagged))
        return kept
    run(0.8)
    rows = []
    for label, point, force in PUSHES:
        quiet = max(np.linalg.norm(w[:3]) for w, _ in run(0.2, keep=0.2))
        arm.push('tool0', point, force)
        early = run(0.1, keep=1.0 / RATE)[-1][0]
        kept = run(0.9, keep=0.2)
        R = tip_pose(c.model, arm.position)[:3, :3]
        applied = np.r_[force, np.cross(R @ np.array(point, float), force)]
        rows.append((label, applied, np.mean([w for w, _ in kept], axis=0),
                     max(f for _, f in kept), early, quiet))
        arm.push(None)
        run(0.5)
    return rows


def print_rows(title, rows):
    print(title)
    for label, applied, got, flagged, early, quiet in rows:
        error = np.linalg.norm(got - applied) / np.linalg.norm(applied)
        axis = np.abs(early[:3] - applied[:3]).max()
        print(f'    {label:<16} applied F {np.round(applied[:3], 2).tolist()} N, '
              f'M {np.round(applied[3:], 2).tolist()} N*m; estimated F '
              f'{np.round(got[:3], 2).tolist()}, M {np.round(got[3:], 2).tolist()}; '
              f'error {100 * error:5.1f} % of |W|; flagged {flagged}; at 100 ms worst axis '
              f'{axis:.2f} N (goal <= 2 N); unpushed |F| {quiet:.2f} N (goal < 2 N)',
              flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--identified', action='store_true',
                        help='also the hidden plant with its identified model (~1 min more)')
    args = parser.parse_args(argv)
    print(f'UR5e on MuJoCo at {RATE:g} Hz, computed torque holding; pushes at the flange for '
          '1 s, the estimate averaged over the last 0.2 s (|W| = |[F; M]|)')
    for pose, q0 in POSES.items():
        c = held(ComputedTorqueController.from_urdf(str(URDF), tip_link='tool0',
                                                    armature=ARMATURE))
        print_rows(f'exact plant, its own model, {pose}:',
                   pushes(c, MujocoArm(str(URDF), armature=ARMATURE), q0))
    if not args.identified:
        return
    from bench_adaptive import identify_ur5e
    with tempfile.TemporaryDirectory() as scratch:
        summary = identify_ur5e(pathlib.Path(scratch) / 'ur5e_identify')
        files = [REPO / 'config' / 'ur5e_sim.yaml',
                 summary['identified']['identified_params']]
        for mode, settings in (('computed_torque', {}), ('cartesian_impedance', COMPLIANT)):
            c = held(identified_controller(summary['identified']['identified_urdf'], files,
                                           'computed_torque'), mode, **settings)
            print_rows(f'hidden plant (drives, dry friction, 1.2 kg), identified model, '
                       f'usual pose, {mode}:',
                       pushes(c, MujocoArm(str(URDF), payload_link='tool0', **hidden_plant()),
                              POSES['usual pose']))


if __name__ == '__main__':
    main()
