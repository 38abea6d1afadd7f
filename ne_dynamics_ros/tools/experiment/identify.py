"""The experiment's identify flow: excite the arm, record, identify, run again.

The same pipeline as ``ne-dynamics identify``
(:func:`ne_dynamics_ros.identification.pipeline.identify_model`) on a recording of the
simulated arm playing an optimised excitation (:mod:`ne_dynamics_ros.identification.
excitation`); the controller then loads the identified URDF and YAML as a user does.
"""
import numpy as np

from ne_dynamics_ros.tools.experiment.report import (
    analyse, print_drive_table, write_run_bag)
from ne_dynamics_ros.tools.experiment.run import Run
from ne_dynamics_ros.tools.experiment.setup import DemoError, EXIT_CRASH, EXIT_USAGE, log, Setup


def identify_and_rerun(args, output):
    """Excite the arm, record it, identify, and run the experiment with the identified model.

    Writes ``excitation.yaml``, ``excitation_bag``, ``identified.urdf``,
    ``identified.yaml`` and ``identified_run_bag`` in ``output``. Returns (setup, run,
    result, identification facts for summary.json).

    Raises:
        DemoError: a model the excitation cannot drive, an output that may not be
            written, or an identification that failed.
    """
    from ne_dynamics_ros import load_model
    from ne_dynamics_ros.dynamics.urdf_import import read_urdf_text
    nominal = Setup(args)
    urdf_text = read_urdf_text(str(nominal.urdf_path))
    model = load_model(urdf_text, armature=nominal.armature)
    excitation_file, period, condition = _write_excitation(args, output, nominal, model)
    bag = _record_excitation(args, output, excitation_file, period)
    identified, urdf_path, params = _identify(args, output, nominal, urdf_text, model, bag)
    print_drive_table(nominal, model, identified.result, identified.values)
    found = identified.result
    relative = found.residual_rms / found.effort_rms
    log('identification: effort residual, % of RMS per joint: nominal '
        + ' '.join(f'{100 * r:.1f}' for r in found.nominal_rms / found.effort_rms)
        + ' -> identified ' + ' '.join(f'{100 * r:.2f}' for r in relative))
    rerun = Setup(args)
    rerun.use_identified(urdf_path, params)
    log('identification: the experiment again, the controller now with the identified model')
    run = Run(rerun)
    wall = run.execute()
    result = analyse(rerun, run)
    write_run_bag(output / 'identified_run_bag', rerun, run)
    facts = {
        'excitation_file': str(excitation_file), 'excitation_bag': str(bag),
        'condition_number': condition, 'identified_urdf': str(urdf_path),
        'identified_params': str(params),
        'effort_residual_nominal': (found.nominal_rms / found.effort_rms).tolist(),
        'effort_residual_identified': relative.tolist(),
        'prior_weight': identified.physical.prior_weight, 'wall_time_s': round(wall, 3),
        'identified_armature': identified.values['armature'],
        'identified_damping': identified.values['damping'],
        'identified_friction': identified.values['friction'],
        'identified_gains': {name: identified.values[name]
                             for name in ('kp', 'kd', 'ki', 'integral_limit')},
        'armature_identifiable': [f'Ia{j + 1}' in found.names for j in range(model.n)],
        'identification_warnings': list(found.warnings),
        'max_abs_error_rad': [float(v) for v in result['max_abs_error_rad']],
        'rms_error_rad': [float(v) for v in result['rms_error_rad']],
        'below_bound': (None if rerun.bound is None else
                        [bool(v < rerun.bound) for v in result['max_abs_error_rad']]),
    }
    return rerun, run, result, facts


def _write_excitation(args, output, nominal, model):
    """Design the excitation (with its PD gains) and write ``excitation.yaml``."""
    import yaml
    from ne_dynamics_ros.errors import ModelError
    from ne_dynamics_ros.identification.excitation import design_excitation, excitation_gains
    from ne_dynamics_ros.tools.files import OutputError, write_outputs
    log(f'identification: optimising a {args.excitation_duration:g} s excitation trajectory')
    try:
        kp, kd = excitation_gains(model)
    except ModelError as exc:
        raise DemoError(f'identification: {exc}', EXIT_USAGE) from exc
    excitation, condition = design_excitation(model, args.excitation_duration, harmonics=4,
                                              starts=1, iterations=150)
    excitation = excitation.with_gains(kp, kd)
    excitation_file = output / 'excitation.yaml'
    try:
        write_outputs([(excitation_file, yaml.safe_dump(excitation.to_dict(), sort_keys=False))],
                      [nominal.urdf_path, nominal.params_file])
    except OutputError as exc:
        raise DemoError(str(exc), EXIT_USAGE) from exc
    log(f'identification: condition number {condition:.2f}; playing it on the arm '
        f'(payload {args.payload:g} kg) under the nominal feedforward + joint PD, kp '
        f'{np.round(kp, 3).tolist()} N m/rad, kd {np.round(kd, 3).tolist()} N m s/rad')
    return excitation_file, excitation.duration, condition


def _record_excitation(args, output, excitation_file, period):
    """Play the excitation on the arm and write the run as ``excitation_bag``."""
    excite = Setup(args)
    excite.use_excitation(excitation_file, args.excitation_periods, 2.0, period)
    excite_run = Run(excite)
    excite_run.execute()
    bag = write_run_bag(output / 'excitation_bag', excite, excite_run)
    log(f'identification: recorded {len(excite_run.states)} joint states to {bag}')
    return bag


def _identify(args, output, nominal, urdf_text, model, bag):
    """Identify from the bag; write ``identified.urdf`` and ``identified.yaml``.

    Returns (the :class:`~ne_dynamics_ros.identification.pipeline.IdentifiedModel`, its
    URDF path, its YAML path).
    """
    from ne_dynamics_ros.errors import IdentificationError, ModelError, RecordingError
    from ne_dynamics_ros.identification import identify_model, read_bag
    from ne_dynamics_ros.tools.files import OutputError, write_outputs
    urdf_path, params = output / 'identified.urdf', output / 'identified.yaml'
    try:
        recording = read_bag(bag, model.joint_names, progress=False)
        # each state carries the effort held over the sample before it (ros2_control's
        # read-update-write): half a sample behind the state's central differences;
        # the same pipeline as ne-dynamics identify
        identified = identify_model(urdf_text, model, recording, effort_delay=0.5 / args.rate,
                                    header=f'identified from {bag}')
        write_outputs([(urdf_path, identified.urdf), (params, identified.params_yaml)],
                      [nominal.urdf_path, nominal.params_file])
    except (ModelError, RecordingError, IdentificationError, OutputError) as exc:
        raise DemoError(f'identification failed: {exc}', EXIT_CRASH) from exc
    for warning in identified.result.warnings:
        log(f'identification: warning: {warning}')
    return identified, urdf_path, params
