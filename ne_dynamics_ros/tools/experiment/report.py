"""The experiment's report: analysis of the records, and the files (CSV, JSON, bag, plots).

Every file goes through :func:`ne_dynamics_ros.tools.files.write_outputs` (atomic, never
over an input or anything that is not a regular file).
"""
import csv
import io
import json
import math
import pathlib

import numpy as np

from ne_dynamics_ros.control.laws.registry import DEFAULT_MODE
from ne_dynamics_ros.tools.experiment.setup import DemoError, EXIT_USAGE, is_lee_default, log


def analyse(setup, run):
    """Time series and per-joint figures from the recorded messages."""
    stamps = np.array(sorted(run.states))
    stamps = stamps[stamps <= run.start_stamp + setup.t_end + 1e-9]
    t = stamps - run.start_stamp
    q = np.array([run.states[s][0] for s in stamps])
    applied = np.array([run.states[s][2] for s in stamps])
    n = len(setup.joint_names)
    reported = np.full((len(stamps), n), np.nan)
    commanded = np.full((len(stamps), n), np.nan)
    for k, s in enumerate(stamps):
        entry = run.tracking.get(s)
        if entry is not None and entry[0].size == n:
            reported[k] = entry[0]
            if entry[2].size == n:
                commanded[k] = entry[2]
    # tau_k: the effort applied over [t_k, t_k+1), which the next state reports; the
    # controller's own report for sample k where the arm's is not available.
    tau = np.vstack([applied[1:], np.full((1, n), np.nan)])
    tau = np.where(np.isnan(tau), commanded, tau)

    if run.sim is not None:
        q_d = setup.desired(t)
        error = q_d - q
        error_source = 'closed-form profile at each state stamp minus measured q'
    else:
        error = reported
        q_d = q + reported
        error_source = "computed_torque_node's ~/tracking_error"
    mismatch = np.abs(error - reported)
    result = {
        't': t, 'q_d': q_d, 'q': q, 'e': error, 'tau': tau, 'reported': reported,
        'error_source': error_source,
        'max_abs_error_rad': np.nanmax(np.abs(error), axis=0),
        'rms_error_rad': np.sqrt(np.nanmean(error ** 2, axis=0)),
        'final_abs_error_rad': np.abs(error[-1]),
        'reported_max_abs_error_rad': np.nanmax(np.abs(reported), axis=0)
        if np.isfinite(reported).any() else None,
        'reported_vs_reference_max_diff_rad': float(np.nanmax(mismatch))
        if np.isfinite(mismatch).any() else None,
        'max_abs_effort': np.nanmax(np.abs(tau), axis=0),
    }
    if setup.pick_and_place is not None:
        result.update(_cycles(setup, run, t, error))
    return result


def _cycles(setup, run, t, error):
    """Per pick-and-place cycle: each joint's worst error during the moves; the mass estimate.

    ``cycle_max_abs_error_rad`` (cycles, n) rad; ``payload_estimate`` (m, 2): time s and
    the estimated mass kg as ``~/payload`` reported it (empty unless mode adaptive);
    ``true_load`` (N, 2): time s and the load picked then, kg (the plant's own
    ``--payload``, which an identified model includes, not counted).
    """
    load, cycles, dwell = setup.pick_and_place
    moving = setup.moving(t)
    cycle = np.floor((t - setup.t_start) / setup.period)
    worst = np.full((cycles, error.shape[1]), np.nan)
    for c in range(cycles):
        inside = moving & (cycle == c)
        if inside.any():
            worst[c] = np.nanmax(np.abs(error[inside]), axis=0)
    estimates = np.array([(stamp - run.start_stamp, mass) for stamp, mass in run.payload]
                         ).reshape(-1, 2)
    # picked at the start of each cycle, released a rest and a move later
    released = (t % setup.period) >= dwell + setup.args.duration
    true_load = np.where((t < cycles * setup.period) & ~released, load, 0.0)
    return {'cycle_max_abs_error_rad': worst, 'payload_estimate': estimates,
            'true_load': np.column_stack([t, true_load])}


def _write(path, content, setup):
    """Write one output with the tools' writer (atomic; never a device or an input)."""
    from ne_dynamics_ros.tools.files import OutputError, write_outputs
    try:
        write_outputs([(path, content)], [setup.urdf_path, setup.params_file])
    except OutputError as exc:
        raise DemoError(str(exc), EXIT_USAGE) from exc


def _save_figure(fig, path, setup, dpi):
    """Render ``fig`` as PNG and write it with :func:`_write`; close it."""
    import matplotlib.pyplot as plt
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format='png', dpi=dpi)
    finally:
        plt.close(fig)
    _write(path, buffer.getvalue(), setup)


def write_csv(path, setup, result):
    """Write ``log.csv``: t, then q_d, q, e = q_d - q and tau for every joint."""
    names = setup.joint_names
    header = (['t_s'] + [f'q_d_{j}' for j in names] + [f'q_{j}' for j in names]
              + [f'e_{j}' for j in names] + [f'tau_{j}' for j in names])
    stream = io.StringIO(newline='')
    writer = csv.writer(stream)
    writer.writerow(header)
    for k, t in enumerate(result['t']):
        row = [t, *result['q_d'][k], *result['q'][k], *result['e'][k], *result['tau'][k]]
        writer.writerow([f'{v:.9g}' for v in row])
    _write(path, stream.getvalue(), setup)


def write_summary(path, setup, run, result, wall_time, identified=None):
    """Write ``summary.json`` and return its content as a dict.

    ``identified``: for ``--identify``, the identification and the second run's figures,
    stored under ``"identified"``.
    """
    args = setup.args

    def floats(values):
        return None if values is None else [float(v) for v in values]

    summary = {
        'robot': setup.robot,
        'urdf': str(setup.urdf_path),
        'joint_names': list(setup.joint_names),
        'experiment': ('Lee, Chung, Mudge & Turney 1982, section 5' if setup.is_lee_experiment
                       and is_lee_default(args) else 'custom'),
        'max_abs_error_rad': floats(result['max_abs_error_rad']),
        'rms_error_rad': floats(result['rms_error_rad']),
        'final_abs_error_rad': floats(result['final_abs_error_rad']),
        'error_source': result['error_source'],
        'bound_rad': setup.bound,
        'below_bound': (None if setup.bound is None else
                        [bool(v < setup.bound) for v in result['max_abs_error_rad']]),
        'rate_hz': args.rate,
        'sample_time_s': 1.0 / args.rate,
        'integration_rate_hz': args.integration_rate,
        'payload_kg': args.payload,
        'payload_link': run.sim.arm.payload_link if run.sim is not None else None,
        'plant_joint_friction': args.friction,
        'plant': args.plant,
        'plant_armature': setup.plant_armature,
        'plant_damping': setup.plant_damping,
        'plant_friction': setup.plant_friction,
        'kp': setup.kp if args.rule_gains else args.kp,
        'kd': setup.kd if args.rule_gains else args.kd,
        'mode': args.mode,
        'armature': setup.armature,
        'profile': args.profile,
        'duration_s': args.duration,
        'motion_start_s': setup.t_start,
        'settle_s': args.settle,
        'start_deg': np.degrees(setup.start).tolist(),
        'goal_deg': np.degrees(setup.goal).tolist(),
        'samples': int(len(result['t'])),
        'commands_received': run.commands,
        'commands_dropped_by_arm': run.sim.commands_dropped if run.sim is not None else None,
        'timing': ('lockstep: one command per sample, simulated time on /clock'
                   if run.sim is not None else 'external arm, wall-clock time'),
        'controller_reported_max_abs_error_rad': floats(result['reported_max_abs_error_rad']),
        'controller_vs_reference_max_diff_rad': result['reported_vs_reference_max_diff_rad'],
        'max_abs_effort': floats(result['max_abs_effort']),
        'wall_time_s': round(wall_time, 3),
        'ros_domain_id': run.domain_id,
        'rosbag2': str(pathlib.Path(path).parent / 'run_bag'),
    }
    if setup.pick_and_place is not None:
        summary['pick_and_place'] = cycle_summary(setup, result)
    if identified is not None:
        summary['identified'] = identified
    _write(path, json.dumps(summary, indent=2) + '\n', setup)
    return summary


def cycle_summary(setup, result):
    """Return the pick-and-place figures of ``summary.json`` (``pick_and_place``)."""
    load, cycles, dwell = setup.pick_and_place
    worst = result['cycle_max_abs_error_rad']
    estimates = result['payload_estimate']
    return {
        'load_kg': load, 'cycles': cycles, 'dwell_s': dwell, 'period_s': setup.period,
        'cycle_max_abs_error_rad': worst.tolist(),
        'max_abs_error_from_cycle_3_rad': (np.nanmax(worst[2:], axis=0).tolist()
                                           if cycles > 2 else None),
        'payload_estimate': estimates.tolist(),
    }


def plot_pick_and_place(path, setup, result, label=''):
    """Write ``tracking_error.png`` of pick and place: the error over time, per cycle, the mass."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    args = setup.args
    load, cycles, _ = setup.pick_and_place
    fig, (top, middle, bottom) = plt.subplots(3, 1, figsize=(9.0, 9.0))
    t, error = result['t'], np.abs(result['e'])
    floor = 1e-7
    for j, name in enumerate(setup.joint_names):
        top.semilogy(t, np.maximum(error[:, j], floor), lw=0.7, label=name)
        middle.semilogy(np.arange(1, cycles + 1), result['cycle_max_abs_error_rad'][:, j],
                        'o-', ms=4, lw=1.0, label=name)
    for ax in (top, middle):
        if setup.bound is not None:
            ax.axhline(setup.bound, color='tab:red', ls='--', lw=0.9, label='4.26e-4 rad')
        ax.tick_params(labelsize=8)
    top.set_ylabel('|q_d - q| [rad]', fontsize=9)
    top.set_xlabel('t [s]', fontsize=9)
    top.legend(fontsize=7, ncol=4, loc='upper right')
    middle.set_ylabel('worst |e| in the moves [rad]', fontsize=9)
    middle.set_xlabel('cycle', fontsize=9)
    middle.set_xticks(np.arange(1, cycles + 1))
    truth = result['true_load']
    bottom.step(truth[:, 0], truth[:, 1], where='post', color='0.3', lw=1.2,
                label='load picked')
    estimates = result['payload_estimate']
    if len(estimates):
        bottom.plot(estimates[:, 0], estimates[:, 1], '.', ms=3, color='tab:blue',
                    label='estimate on ~/payload')
    bottom.set_ylabel('mass [kg]', fontsize=9)
    bottom.set_xlabel('t [s]', fontsize=9)
    bottom.legend(fontsize=7, loc='upper right')
    bottom.tick_params(labelsize=8)
    fig.suptitle(f'{setup.robot} on {args.plant}{label}: pick and place of {load:g} kg, '
                 f'{cycles} cycles, mode {args.mode or DEFAULT_MODE}, {args.rate:g} Hz',
                 fontsize=10)
    fig.tight_layout()
    _save_figure(fig, path, setup, dpi=100)


def plot(path, setup, result):
    """Write ``tracking_error.png``: one panel per joint, error against time."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    args = setup.args
    n = len(setup.joint_names)
    cols = 3 if n > 4 else min(n, 2)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.9 * rows), sharex=True,
                             squeeze=False)
    t = result['t']
    for j, name in enumerate(setup.joint_names):
        ax = axes[j // cols][j % cols]
        ax.axvspan(setup.t_start, setup.t_start + args.duration, color='0.92', lw=0)
        ax.plot(t, 1e3 * result['e'][:, j], lw=1.0, color='tab:blue')
        if setup.bound is not None:
            for sign in (1, -1):
                ax.axhline(1e3 * sign * setup.bound, color='tab:red', ls='--', lw=0.9,
                           label='4.26e-4 rad (12-bit A/D)' if sign > 0 else None)
        ax.set_title(f'{name}: max |e| = {result["max_abs_error_rad"][j]:.2e} rad',
                     fontsize=9)
        ax.tick_params(labelsize=8)
        if j % cols == 0:
            ax.set_ylabel('q_d - q [mrad]', fontsize=9)
        if j // cols == rows - 1:
            ax.set_xlabel('t [s]', fontsize=9)
    for j in range(n, rows * cols):
        axes[j // cols][j % cols].axis('off')
    if setup.bound is not None:
        axes[0][0].legend(fontsize=7, loc='lower right')
    fig.suptitle(f'{setup.robot}: computed-torque tracking error, {args.rate:g} Hz sampling, '
                 f'Kp={args.kp:g}, Kv={args.kd:g}, payload {args.payload:g} kg '
                 f'(shaded: {args.duration:g} s {args.profile} motion)', fontsize=10)
    fig.tight_layout()
    _save_figure(fig, path, setup, dpi=110)


def plot_comparison(path, setup, results):
    """Write ``tracking_error.png`` for ``--identify``: one row per joint, one column per run."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    args = setup.args
    n = len(setup.joint_names)
    fig, axes = plt.subplots(n, len(results), figsize=(5.0 * len(results), 1.9 * n),
                             sharex=True, squeeze=False)
    for c, (label, result) in enumerate(results):
        for j, name in enumerate(setup.joint_names):
            ax = axes[j][c]
            ax.axvspan(setup.t_start, setup.t_start + args.duration, color='0.92', lw=0)
            ax.plot(result['t'], 1e3 * result['e'][:, j], lw=1.0,
                    color='tab:orange' if c == 0 else 'tab:blue')
            if setup.bound is not None:
                for sign in (1, -1):
                    ax.axhline(1e3 * sign * setup.bound, color='tab:red', ls='--', lw=0.8)
            ax.set_title(f'{label}: {name}, max |e| = {result["max_abs_error_rad"][j]:.2e} rad',
                         fontsize=8)
            ax.tick_params(labelsize=7)
            if c == 0:
                ax.set_ylabel('q_d - q [mrad]', fontsize=8)
        axes[-1][c].set_xlabel('t [s]', fontsize=8)
    fig.suptitle(f'{setup.robot} with a {args.payload:g} kg payload: computed torque with the '
                 'nominal URDF (left) and with the model identified from a recording (right)'
                 + ('; dashed: 4.26e-4 rad' if setup.bound is not None else ''), fontsize=9)
    fig.tight_layout()
    _save_figure(fig, path, setup, dpi=100)


def write_run_bag(path, setup, run):
    """Write the run as a rosbag2 (MCAP), replacing an older one.

    Every state the arm published (``/joint_states``) and the controller's ``q_d - q``
    (``/computed_torque_node/tracking_error``), as ``ros2 bag record`` of both topics
    would keep them.
    """
    import shutil
    from ne_dynamics_ros.identification import write_bag
    stamps = np.array(sorted(run.states))
    if path.exists() or path.is_symlink():
        if path.is_symlink() or not (path / 'metadata.yaml').is_file():
            raise DemoError(f'{path} exists and is not a bag of an earlier run: the demo '
                            'does not replace it (give another --output)', EXIT_USAGE)
        shutil.rmtree(path)      # the demo's own output of an earlier run
    rows = [run.states[s] for s in stamps]
    tracked = np.array([s for s in sorted(run.tracking)
                        if len(run.tracking[s][0]) == len(setup.joint_names)])
    tracking = None
    if tracked.size:
        tracking = (tracked - stamps[0], np.array([run.tracking[s][0] for s in tracked]))
    write_bag(path, setup.joint_names, stamps - stamps[0], np.array([r[0] for r in rows]),
              np.array([r[1] for r in rows]), np.array([r[2] for r in rows]),
              start_ns=int(round(stamps[0] * 1e9)), tracking_error=tracking)
    return path


def print_drive_table(setup, model, found, values):
    """Print the plant's armature, damping, dry friction beside the identified ones."""
    from ne_dynamics_ros.identification import drive_errors

    identifiable = [f'Ia{j + 1}' in found.names for j in range(model.n)]
    rows = [('armature [kg m^2]', setup.plant_armature, values['armature'], identifiable,
             0.10),
            ('damping [N m s/rad]', setup.plant_damping, values['damping'], None, 0.05),
            ('dry friction [N m]', setup.plant_friction, values['friction'], None, 0.05)]
    log('identification: the plant\'s drive values (unknown to the controller) and the '
        'identified ones; goals: armature within 10 % where identifiable, damping and '
        'friction within 5 %')
    for label, plant, identified, mask, goal in rows:
        error = drive_errors(plant, identified, mask)
        cells = ' '.join(f'{p:.4g}/{i:.4g}' + ('' if np.isnan(e) else f' ({100 * e:.1f}%)')
                         for p, i, e in zip(plant, identified, error))
        met = np.nanmax(error) <= goal if np.any(np.isfinite(error)) else None
        log(f'  {label:<20} plant/identified: {cells}'
            + ('' if met is None else f'  goal {"met" if met else "MISSED"}'))
