"""``ne-dynamics``: command-line tools of the dynamics core (no ROS needed).

``ne-dynamics dh URDF [--convention dh|mdh] [--base LINK] [--tip LINK] [--json]`` prints
the DH or MDH table as the papers tabulate link parameters (e.g. Sasaki 1990, Table 1:
joint, type, a, alpha, d, theta offset; m and rad), the constant base and tool transforms,
and the measured forward-kinematics residual between the DH chain and the URDF.

``ne-dynamics base-params URDF [--base LINK] [--tip LINK] [--json]`` prints the base
(minimal) inertial parameters: each one's name, its expression in Khalil's standard
parameters (MDH frames) and its value, the counts (standard, base, numeric rank of the
regressor) and which method gave them (closed-form rules or Gautier's QR).

``ne-dynamics codegen URDF [--base LINK] [--tip LINK] [--convention dh|mdh]
[--armature A ...] --lang python|c --output FILE`` writes the robot-specific inverse
dynamics as straight-line code (the method of Renaud 1987) and prints its operation count
beside the general recursion's (Lee et al. 1982, Table 2) and Renaud's. The file is
written whole or not at all.

``ne-dynamics excite URDF [--base] [--tip] --duration S [--harmonics L] [--margin F]
[--saturation-error RAD] [--derivative-time S] --output FILE.yaml`` optimises a Fourier
excitation trajectory for identification and prints the condition number it reaches; the
file also carries the joint PD to play it under, with the nominal model's feedforward,
sized from the effort limits (``trajectory_source`` plays the file with ``profile:
excitation`` and sets that law on the controller meanwhile).

``ne-dynamics identify --urdf NOMINAL.urdf --bag BAG_DIR --output-urdf OUT.urdf
--output-params OUT.yaml [--topic /joint_states] [--base-link] [--tip-link] [--csv FILE]
[--stiction-band V] [--tracking-topic TOPIC]`` identifies the base and drive parameters
from a recording, prints them beside the nominal ones with their standard deviations and
the effort residuals before and after, warns, naming the joint and what to change, when a
joint did not follow its excitation, and writes a physically consistent URDF and the node
parameter YAML (both, or nothing).
"""
import argparse
import json
import os
import pathlib
import sys

import numpy as np

from ne_dynamics_ros.errors import (IdentificationError, MissingDependencyError, ModelError,
                                    RecordingError, require, shorten)
from ne_dynamics_ros.dynamics.base_parameters import base_parameters
from ne_dynamics_ros.codegen import c_source, generate, python_source
from ne_dynamics_ros.dynamics.model import fk_residual, load_model
from ne_dynamics_ros.identification.estimation import STICTION_BAND
from ne_dynamics_ros.identification.excitation import DERIVATIVE_TIME, SATURATION_ERROR
from ne_dynamics_ros.identification.pipeline import regular
from ne_dynamics_ros.identification.recording import (check_current_constants, read_recording,
                                                      scaled_efforts, TRACKING_ERROR_TOPIC)
from ne_dynamics_ros.identification.validation import DEFAULT_FRACTION
from ne_dynamics_ros.tools.files import check_outputs, OutputError, write_outputs
from ne_dynamics_ros.tools.ros2_control_cli import add_ros2_control

#: Error messages longer than this are cut (a 1e308 position must not print 110 000 chars).
MAX_MESSAGE = 600


def _clean(value):
    """Print round-off (|x| < 5e-13) as 0 instead of -0.000000."""
    return 0.0 if abs(value) < 5e-13 else value


def _table_rows(model):
    return [{'joint': r.joint, 'type': r.type.value, 'a': r.a, 'alpha': r.alpha, 'd': r.d,
             'theta': r.theta} for r in model.dh_table()]


def _format_text(model, residual):
    mdh = model.convention.value == 'mdh'
    a_name, alpha_name = ('a[i-1]', 'alpha[i-1]') if mdh else ('a[i]', 'alpha[i]')
    title = 'modified DH (Craig)' if mdh else 'standard DH'
    lines = [f'{title} table of {model.base_link} -> {model.tip_link} '
             '(lengths in m, angles in rad; theta/d are offsets at q = 0)',
             f'{"i":>2}  {"joint":<24} {"type":<4} {a_name:>10} {alpha_name:>11} '
             f'{"d[i]":>10} {"theta[i]":>10}  variable']
    for i, r in enumerate(model.dh_table(), start=1):
        var = 'd' if r.type.value == 'P' else 'theta'
        a, alpha, d, theta = (_clean(v) for v in (r.a, r.alpha, r.d, r.theta))
        lines.append(f'{i:>2}  {r.joint:<24} {r.type.value:<4} {a:>10.6f} {alpha:>11.6f} '
                     f'{d:>10.6f} {theta:>10.6f}  {var} += q{i}')
    for name, T in (('base transform (base link -> DH frame 0)', model.base_transform),
                    (f'tool transform (DH frame {model.n} -> tip link)', model.tool_transform)):
        lines.append(name + ':')
        lines.extend('  ' + ' '.join(f'{_clean(v):>10.6f}' for v in row) for row in T)
    lines.append(f'FK residual vs URDF (tip pose and joint axes, 200 random q): {residual:.3e}')
    for w in model.warnings:
        lines.append(f'warning: {w}')
    return '\n'.join(lines)


def dh_command(args):
    """Run ``ne-dynamics dh``; return the process exit code."""
    try:
        model = load_model(args.urdf, base_link=args.base, tip_link=args.tip,
                           convention=args.convention)
    except ModelError as exc:
        print(f'ne-dynamics dh: error: {exc}', file=sys.stderr)
        return 2
    residual = fk_residual(model, samples=200)
    if args.json:
        print(json.dumps({
            'convention': model.convention.value, 'base_link': model.base_link,
            'tip_link': model.tip_link, 'rows': _table_rows(model),
            'base_transform': model.base_transform.tolist(),
            'tool_transform': model.tool_transform.tolist(),
            'fk_residual': residual, 'warnings': model.warnings}, indent=2))
    else:
        print(_format_text(model, residual))
    return 0


def base_params_command(args):
    """Run ``ne-dynamics base-params``; return the process exit code."""
    try:
        model = load_model(args.urdf, base_link=args.base, tip_link=args.tip,
                           convention='mdh')
    except ModelError as exc:
        print(f'ne-dynamics base-params: error: {exc}', file=sys.stderr)
        return 2
    result = base_parameters(model)
    if args.json:
        print(json.dumps({
            'joints': result.joints, 'convention': result.convention,
            'base_link': model.base_link, 'tip_link': model.tip_link,
            'standard_count': result.standard_count, 'base_count': result.base_count,
            'numeric_rank': result.numeric_rank, 'method': result.method,
            'closed_form_complete': result.closed_form_complete,
            'base_parameters': [{'name': p.name, 'expression': p.expression,
                                 'value': p.value} for p in result.parameters],
            'drive_parameters': result.drive_parameters, 'notes': result.notes}, indent=2))
        return 0
    print(f'base inertial parameters of {model.base_link} -> {model.tip_link} '
          f'({result.convention.upper()} frames, SI units: kg, kg*m, kg*m^2)')
    print(f'standard: {result.standard_count}, base: {result.base_count}, numeric rank: '
          f'{result.numeric_rank} (method: {result.method.replace("_", " ")})')
    width = max(len(p.name) for p in result.parameters) if result.parameters else 4
    for p in result.parameters:
        print(f'{p.name:<{width}} = {p.value:>14.6g}  = {p.expression}')
    print('drive parameters, apart: Ia, Fv, Fc for each joint '
          f'({len(result.drive_parameters)})')
    for note in result.notes + model.warnings:
        print(f'note: {note}')
    return 0


def _fail(command, error):
    """Print ``ne-dynamics COMMAND: error: ...`` (one readable line) and return exit code 2."""
    print(f'ne-dynamics {command}: error: {shorten(error, MAX_MESSAGE)}', file=sys.stderr)
    return 2


def codegen_command(args):
    """Run ``ne-dynamics codegen``; return the process exit code."""
    try:
        check_outputs([('--output', args.output)], [args.urdf])
        model = load_model(args.urdf, base_link=args.base, tip_link=args.tip,
                           convention=args.convention, armature=args.armature)
        program = generate(model)
    except (ModelError, OutputError) as exc:
        return _fail('codegen', exc)
    robot = f'{pathlib.Path(args.urdf).name} ({model.base_link} -> {model.tip_link})'
    text = (python_source(program, robot) if args.lang == 'python'
            else c_source(program, robot))
    try:
        write_outputs([('--output', args.output, text)], [args.urdf])
    except OutputError as exc:
        return _fail('codegen', exc)
    n = model.n
    ops = program.operations
    print(f'wrote {args.output} ({args.lang}, {model.convention.value}, joints '
          f'{model.joint_names})')
    print(f'{"computation":<44}{"mul":>6}{"add":>6}{"total":>7}')
    rows = [('generated (this file)', ops['mul'], ops['add']),
            (f'Lee et al. 1982 Table 2 general NE, n = {n}', 119 * n - 24, 107 * n - 21)]
    if n == 6:
        rows += [('Renaud 1987, 6R example (first form)', 181, 127),
                 ('Renaud 1987, 6R example (final)', 164, 115)]
    for label, mul, add in rows:
        print(f'{label:<44}{mul:>6}{add:>6}{mul + add:>7}')
    print(f'sin/cos: {ops["trig"]} (apart)')
    return 0


def excite_command(args):
    """Run ``ne-dynamics excite``; return the process exit code."""
    from ne_dynamics_ros.identification.excitation import (
        check_design_arguments, design_excitation, excitation_gains)
    if not (np.isfinite(args.max_condition) and args.max_condition >= 1):
        return _fail('excite', f'--max-condition must be a number >= 1, got '
                     f'{args.max_condition}')
    try:
        yaml = require('yaml', 'ne-dynamics excite')
        check_design_arguments(args.duration, args.harmonics, args.margin, args.starts,
                               args.iterations)
        check_outputs([('--output', args.output)], [args.urdf])
        model = load_model(args.urdf, base_link=args.base, tip_link=args.tip)
        kp, kd = excitation_gains(model, args.saturation_error, args.derivative_time)
        print(f'optimising a {args.duration:g} s excitation of {model.joint_names} '
              f'({args.harmonics} harmonics, {args.starts} starts)...', flush=True)
        with np.errstate(all='ignore'):
            trajectory, condition = design_excitation(
                model, args.duration, harmonics=args.harmonics, margin=args.margin,
                starts=args.starts, iterations=args.iterations, seed=args.seed,
                progress=lambda f: print(f'  {100 * f:.0f}%', flush=True))
        trajectory = trajectory.with_gains(kp, kd)
    except (ModelError, OutputError) as exc:
        return _fail('excite', exc)
    if not condition <= args.max_condition:
        return _fail('excite', f'the best excitation found has condition number '
                     f'{condition:.3g}, over --max-condition {args.max_condition:g}: the '
                     'parameters would be poorly determined; try more --starts or '
                     '--iterations, a longer --duration, more --harmonics or a smaller '
                     f'--margin (nothing written to {args.output})')
    data = trajectory.to_dict()
    data['condition_number'] = condition
    data['urdf'] = str(args.urdf)
    try:
        write_outputs([('--output', args.output, yaml.safe_dump(data, sort_keys=False))],
                      [args.urdf])
    except OutputError as exc:
        return _fail('excite', exc)
    print(f'wrote {args.output}: condition number of the base regressor {condition:.2f} '
          '(unit-norm columns); to be played under feedforward + joint PD, kp '
          f'{np.round(kp, 3).tolist()} N m/rad, kd {np.round(kd, 3).tolist()} N m s/rad '
          '(trajectory_source sets them on the controller while it plays the file)')
    return 0


def _bag_inputs(path):
    """Return the files a recording argument reads: the CSV, or the bag folder and files."""
    if path is None:
        return []
    path = pathlib.Path(path)
    if path.is_dir():
        return [path] + [p for p in path.iterdir() if p.is_file()]
    return [path]


def identify_command(args):
    """Run ``ne-dynamics identify``; return the process exit code."""
    from ne_dynamics_ros.dynamics.urdf_import import read_urdf_text
    from ne_dynamics_ros.identification.estimation import check_stiction_band
    from ne_dynamics_ros.identification.pipeline import check_effort_delay, identify_model
    if (args.bag is None) == (args.csv is None):
        return _fail('identify', 'give one of --bag or --csv')
    if args.cutoff is not None and not (np.isfinite(args.cutoff) and args.cutoff > 0):
        return _fail('identify', f'--cutoff must be a frequency > 0 Hz, got {args.cutoff}')
    try:              # the checks that need no recording, before any work
        check_stiction_band(args.stiction_band, '--stiction-band')
        check_effort_delay(args.effort_delay, name='--effort-delay')
    except IdentificationError as exc:
        return _fail('identify', exc)
    try:
        validation = _validation_argument(args.validate)
    except IdentificationError as exc:
        return _fail('identify', exc)
    outputs = [('--output-urdf', args.output_urdf), ('--output-params', args.output_params)]
    paths = args.bag or args.csv
    inputs = [args.urdf] + [p for path in paths for p in _bag_inputs(path)] + (
        _bag_inputs(validation) if isinstance(validation, str) else [])
    try:
        check_outputs(outputs, inputs)
        text = read_urdf_text(args.urdf)
        model = load_model(text, base_link=args.base_link, tip_link=args.tip_link,
                           armature=args.armature)
        if args.current_to_effort is not None:
            check_current_constants(args.current_to_effort, model.joint_names,
                                    '--current-to-effort')
        held = [_read_identify_recording(path, model, args) for path in paths]
        if isinstance(validation, str):
            validation = _read_identify_recording(validation, model, args)
        for note in (note for one in held for note in one.notes):
            print(f'warning: {note}', flush=True)
        if args.bag and any(one.tracking_error is None for one in held):
            print(f'note: no {args.tracking_topic} in the recording: whether each joint '
                  'followed its excitation is judged from its velocity alone (record it '
                  'with the joint states)', flush=True)
        header = (f'identified by ne-dynamics identify from {" ".join(paths)} '
                  f'({args.urdf})')
        # hand the recordings over without keeping a reference: if samples are dropped,
        # the pipeline's copy replaces one in memory instead of joining it
        found = identify_model(text, model, held.pop() if len(held) == 1 else held,
                               cutoff=args.cutoff,
                               effort_delay=args.effort_delay,
                               stiction_band=args.stiction_band, header=header,
                               efforts_exclude_gravity=args.efforts_exclude_gravity,
                               efforts_exclude_friction=args.efforts_exclude_friction,
                               validation=validation,
                               progress=lambda line: print(f'... {line}', flush=True))
    except (ModelError, RecordingError, IdentificationError, OutputError) as exc:
        return _fail('identify', exc)
    _print_identification(found, model)
    try:
        write_outputs([('--output-urdf', args.output_urdf, found.urdf),
                       ('--output-params', args.output_params, found.params_yaml)], inputs)
    except OutputError as exc:
        return _fail('identify', exc)
    print(f'\nwrote {args.output_urdf} and {args.output_params}')
    return 0


def _print_identification(found, model):
    """Print what ``ne-dynamics identify`` found: fit, physical model, validation, thresholds."""
    result = found.result
    width = max(len(name) for name in result.names)
    print(f'\n{"parameter":<{width}} {"nominal":>12} {"identified":>12} {"± std":>10} '
          f'{"rel. std":>9}')
    with np.errstate(all='ignore'):
        for name, nom, value, std, rel in zip(result.names, result.nominal, result.beta,
                                              result.std, result.relative_std):
            print(f'{name:<{width}} {nom:>12.5g} {value:>12.5g} {std:>10.2g} {rel:>8.2g}%')
    print(f'\ncondition number {result.condition:.3g}; {result.samples} samples per joint '
          f'at {result.rate:.1f} Hz after decimation (low-pass {result.cutoff:g} Hz)')
    print(f'\n{"joint":<16} {"effort RMS":>11} {"residual nominal":>17} '
          f'{"residual identified":>20}')
    for name, e, before, after in zip(model.joint_names, result.effort_rms,
                                      result.nominal_rms, result.residual_rms):
        print(f'{name:<16} {e:>11.4g} {before:>11.4g} ({100 * before / max(e, 1e-300):5.1f}%) '
              f'{after:>12.4g} ({100 * after / max(e, 1e-300):5.1f}%)')
    physical = found.physical
    toward = 'the data\'s consistent fit' if physical.own_prior else 'the nominal one\'s'
    print(f'\nphysical model (prior weight {physical.prior_weight:g}, every link\'s '
          f'pseudo-inertia at least {physical.min_margin:.3g} of {toward}):')
    for line in physical.link_notes:
        print(f'  {line}')
    print('drive terms per joint (chosen by cross-validation on the fitted part):')
    for name, j in zip(model.joint_names, range(model.n)):
        print(f'  {name}: {physical.drives.describe(j)}; {physical.drive_notes[j]}')
    if found.validation is not None:
        print()
        for line in found.validation.lines(model.joint_names):
            print(line)
        if found.validation.false_contacts is not None:
            print(f'contacts the thresholds would report on the held-out motion: '
                  f'{found.validation.false_contacts}')
    print('\ncontact thresholds (set from the fitted part):')
    for line in found.thresholds.lines():
        print(f'  {line}')
    for warning in result.warnings:
        print(f'warning: {warning}')


def _validation_argument(value):
    """Return ``--validate``: a share (float) to hold out, or a recording's path (str)."""
    try:
        fraction = float(value)
    except ValueError:
        return value
    if not 0 <= fraction < 0.9:
        raise IdentificationError(f'--validate {value}: a share held out must be in '
                                  '[0, 0.9) (0: none), or give a recording (bag or .csv)')
    return fraction


def _read_identify_recording(path, model, args):
    """Read a recording for ``identify`` and print what it is (rate, steps, velocities)."""
    recording = read_recording(path, model.joint_names, args.topic,
                               tracking_topic=args.tracking_topic)
    if args.current_to_effort is not None:
        recording = scaled_efforts(recording, args.current_to_effort)
    print(f'{recording.source}: {recording.t.size} samples over {recording.t[-1]:.2f} s, '
          f'{recording.describe(resample=regular(recording) is not recording)}, velocities '
          f'{"recorded" if recording.qd is not None else "differentiated"}', flush=True)
    return recording


def gains_command(args):
    """Run ``ne-dynamics gains``: the recommended gains of an arm; return the exit code."""
    import yaml
    from ne_dynamics_ros.control.laws.gains import recommended_gains
    from ne_dynamics_ros.tools.files import read_node_parameters
    try:
        params = read_node_parameters(args.params)
    except (OSError, yaml.YAMLError) as exc:
        print(f'ne-dynamics gains: error: cannot read --params {args.params}: {exc}',
              file=sys.stderr)
        return 2
    try:
        model = load_model(args.urdf, base_link=args.base or params.get('base_link') or None,
                           tip_link=args.tip or params.get('tip_link') or None,
                           armature=params.get('armature') or None)
        if args.cartesian:
            return _cartesian_gains(model, args, params)
        gains = recommended_gains(model, args.rate, params.get('effort_limits') or None,
                                  args.noise, delay=args.delay)
    except (ModelError, ValueError, TypeError) as exc:
        print(f'ne-dynamics gains: error: {exc}', file=sys.stderr)
        return 2
    values = gains.values()
    if args.json:
        print(json.dumps(dict(values, joint_names=gains.joint_names, rate_hz=gains.rate,
                              bandwidth_rad_s=gains.bandwidth.tolist(),
                              limited_by=gains.limited_by), indent=2))
        return 0
    print(f'{"joint":<22}{"omega rad/s":>12}{"set by":>14}{"kp 1/s^2":>11}{"kd 1/s":>9}'
          f'{"ki N m/(rad s)":>16}{"integral_limit":>16}')
    for j, name in enumerate(gains.joint_names):
        print(f'{name:<22}{gains.bandwidth[j]:>12.4g}{gains.limited_by[j]:>14}'
              f'{values["kp"][j]:>11.4g}{values["kd"][j]:>9.4g}{values["ki"][j]:>16.4g}'
              f'{values["integral_limit"][j]:>16.4g}')
    print('\n# computed_torque_node parameters (ros__parameters); ' + gains.describe()[0])
    print(yaml.safe_dump(values, sort_keys=False, default_flow_style=None).rstrip())
    return 0


def _cartesian_gains(model, args, params):
    """Print the Cartesian stiffness rule's ``cartesian.stiffness`` (``gains --cartesian``)."""
    import yaml
    from ne_dynamics_ros.control.laws.gains import CARTESIAN_AXES, recommended_stiffness
    rule = recommended_stiffness(model, args.rate, params.get('effort_limits') or None)
    values = {'cartesian.stiffness': [float(f'{k:.4g}') for k in rule.stiffness]}
    if args.json:
        print(json.dumps(dict(values, axes=list(CARTESIAN_AXES), rate_hz=rule.rate,
                              limited_by=rule.limited_by,
                              inertia_min=rule.inertia_min.tolist()), indent=2))
        return 0
    print(f'{"axis":<6}{"inertia min":>13}{"set by":>14}{"stiffness":>12}')
    for axis, inertia, by, k in zip(CARTESIAN_AXES, rule.inertia_min, rule.limited_by,
                                    rule.stiffness):
        unit = 'N/m' if len(axis) == 1 else 'N m/rad'
        print(f'{axis:<6}{inertia:>13.4g}{by:>14}{k:>12.4g} {unit}')
    print(f'\n# computed_torque_node parameters (ros__parameters): the largest stiffness '
          f'per axis at {rule.rate:g} Hz (mode cartesian_impedance)')
    print(yaml.safe_dump(values, sort_keys=False, default_flow_style=None).rstrip())
    return 0


def build_parser():
    """Argument parser of ``ne-dynamics``: one subcommand each (dh, base-params, ...)."""
    parser = argparse.ArgumentParser(prog='ne-dynamics', description=__doc__.split('\n')[0])
    sub = parser.add_subparsers(dest='command', required=True)
    _add_model_commands(sub)
    _add_gains(sub)
    _add_excite(sub)
    _add_identify(sub)
    add_ros2_control(sub)
    return parser


def _add_model_commands(sub):
    """Add the subcommands that read a model: ``dh``, ``base-params``, ``codegen``."""
    dh = sub.add_parser('dh', help='print the DH/MDH table of a URDF chain')
    dh.add_argument('urdf', help='URDF file path')
    dh.add_argument('--convention', choices=['dh', 'mdh'], default='mdh',
                    help='standard DH or Craig modified DH (default mdh)')
    dh.add_argument('--base', default=None, help='base link (default: URDF root)')
    dh.add_argument('--tip', default=None, help='tip link (default: end of the movable chain)')
    dh.add_argument('--json', action='store_true', help='print JSON instead of a table')
    dh.set_defaults(func=dh_command)
    base = sub.add_parser('base-params', help='print the base (minimal) inertial parameters')
    base.add_argument('urdf', help='URDF file path')
    base.add_argument('--base', default=None, help='base link (default: URDF root)')
    base.add_argument('--tip', default=None, help='tip link (default: end of the movable chain)')
    base.add_argument('--json', action='store_true', help='print JSON instead of a table')
    base.set_defaults(func=base_params_command)
    gen = sub.add_parser('codegen', help='write robot-specific inverse dynamics code')
    gen.add_argument('urdf', help='URDF file path')
    gen.add_argument('--base', default=None, help='base link (default: URDF root)')
    gen.add_argument('--tip', default=None, help='tip link (default: end of the movable chain)')
    gen.add_argument('--convention', choices=['dh', 'mdh'], default='mdh',
                     help='frames of the recursion (default mdh)')
    gen.add_argument('--armature', type=float, nargs='+', default=None, metavar='KG_M2',
                     help='reflected rotor inertia per joint (default: none)')
    gen.add_argument('--lang', choices=['python', 'c'], required=True)
    gen.add_argument('--output', required=True, help='file to write')
    gen.set_defaults(func=codegen_command)


def _add_gains(sub):
    """Add the ``gains`` subcommand."""
    gains = sub.add_parser('gains', help='print the computed-torque gains recommended for '
                           'an arm (ne_dynamics_ros.control.laws.gains)')
    gains.add_argument('urdf', help='URDF file path (the identified one, if any)')
    gains.add_argument('--params', default=None, metavar='YAML',
                       help='computed_torque_node parameter YAML (armature, effort_limits, '
                       'base_link, tip_link), e.g. the one ne-dynamics identify wrote')
    gains.add_argument('--rate', type=float, default=500.0, metavar='HZ', help='rate, Hz (500)')
    gains.add_argument('--noise', type=float, default=None, metavar='RAD',
                       help='position noise (standard deviation), rad (default: no bound)')
    gains.add_argument('--delay', type=float, default=0.0, metavar='S',
                       help='loop delay, s (the node\'s "loop delay" on /diagnostics; 0)')
    gains.add_argument('--base', default=None, help='base link (default: URDF root)')
    gains.add_argument('--tip', default=None, help='tip link (default: end of the chain)')
    gains.add_argument('--json', action='store_true', help='print JSON instead of a table')
    gains.add_argument('--cartesian', action='store_true',
                       help='the largest cartesian.stiffness per axis at --rate (mode '
                       'cartesian_impedance) instead of the joint gains')
    gains.set_defaults(func=gains_command)


def _add_excite(sub):
    """Add the ``excite`` subcommand."""
    exc = sub.add_parser('excite', help='optimise an excitation trajectory for identification')
    exc.add_argument('urdf', help='URDF file path')
    exc.add_argument('--base', default=None, help='base link (default: URDF root)')
    exc.add_argument('--tip', default=None, help='tip link (default: end of the movable chain)')
    exc.add_argument('--duration', type=float, required=True, help='period, s (1 to 600)')
    exc.add_argument('--harmonics', type=int, default=5,
                     help='Fourier harmonics (2 to 20, default 5)')
    exc.add_argument('--margin', type=float, default=0.1,
                     help='fraction of each joint range kept free at both ends (0 to 0.45, '
                     'default 0.1)')
    exc.add_argument('--starts', type=int, default=4,
                     help='optimiser starts (1 to 50, default 4)')
    exc.add_argument('--iterations', type=int, default=400,
                     help='optimiser iterations per start (1 to 20000, default 400)')
    exc.add_argument('--seed', type=int, default=0)
    exc.add_argument('--max-condition', type=float, default=1e3, metavar='C',
                     help='refuse (write nothing) when the best condition number found is '
                     'over C (default 1e3)')
    exc.add_argument('--saturation-error', type=float, default=SATURATION_ERROR,
                     metavar='RAD', help='position error at which the joint PD the '
                     'excitation is played under reaches the effort limit: kp = '
                     f'effort_limit / RAD (default {SATURATION_ERROR:g})')
    exc.add_argument('--derivative-time', type=float, default=DERIVATIVE_TIME, metavar='S',
                     help=f'kd = kp * S of that PD (default {DERIVATIVE_TIME:g})')
    exc.add_argument('--output', required=True, help='YAML file to write')
    exc.set_defaults(func=excite_command)


def _add_identify(sub):
    """Add the ``identify`` subcommand."""
    ide = sub.add_parser('identify', help='identify the dynamics from a recording')
    ide.add_argument('--urdf', required=True, help='nominal URDF')
    ide.add_argument('--bag', default=None, nargs='+', metavar='BAG',
                     help='rosbag2 directory (MCAP or sqlite3); several are joined (each '
                     'filtered on its own, fitted together)')
    ide.add_argument('--csv', default=None, nargs='+', metavar='CSV',
                     help='CSV recording(s) instead of bags')
    ide.add_argument('--topic', default='/joint_states', help='JointState topic')
    ide.add_argument('--base-link', default=None, help='base link (default: URDF root)')
    ide.add_argument('--tip-link', default=None,
                     help='tip link (default: end of the movable chain)')
    ide.add_argument('--armature', type=float, nargs='+', default=None, metavar='KG_M2',
                     help='nominal reflected rotor inertia per joint (default: none)')
    ide.add_argument('--cutoff', type=float, default=None,
                     help='low-pass cutoff, Hz (default min(10, rate / 5))')
    ide.add_argument('--effort-delay', type=float, default=0.0,
                     help='s by which the recorded effort lags the state (default 0)')
    ide.add_argument('--stiction-band', type=float, default=STICTION_BAND, metavar='V',
                     help='rad/s (m/s): a joint\'s samples slower than V are left out of the '
                     'fit, where dry friction is stiction rather than the model '
                     f'(default {STICTION_BAND:g}; 0 keeps all)')
    ide.add_argument('--efforts-exclude-gravity', action='store_true',
                     help='the recorded efforts have g(q) removed (a UR arm\'s driver reports '
                     'them so by default): identify with zero gravity; parameters only '
                     'gravity shows keep their nominal values; the YAML says '
                     'hardware_compensates_gravity: true')
    ide.add_argument('--efforts-exclude-friction', action='store_true',
                     help='the recorded efforts have the drive friction removed (the '
                     'hardware compensates it): damping and friction keep their nominal '
                     'values; the YAML says hardware_compensates_friction: true')
    ide.add_argument('--tracking-topic', default=TRACKING_ERROR_TOPIC,
                     help='JointState topic with the controller\'s q_d - q, used (when '
                     'recorded) to name joints that did not follow the excitation '
                     f'(default {TRACKING_ERROR_TOPIC})')
    ide.add_argument('--validate', default=str(DEFAULT_FRACTION), metavar='FRACTION|FILE',
                     help='judge the model on motion it was not fitted on: the share of the '
                     'recording held out at its end (default '
                     f'{DEFAULT_FRACTION:g}; 0: none), or a second recording (bag or .csv) '
                     'of the same joints; the error of the identified and the nominal '
                     'model there is printed per joint')
    ide.add_argument('--current-to-effort', type=float, nargs='+', default=None,
                     metavar='K',
                     help='the recording\'s efforts are motor currents (A), e.g. UR RTDE '
                     'actual_current: effort = K x current, K in N*m/A per joint (torque '
                     'constant x gear ratio), one per joint in chain order')
    ide.add_argument('--output-urdf', required=True, help='URDF to write')
    ide.add_argument('--output-params', required=True, help='parameter YAML to write')
    ide.set_defaults(func=identify_command)


def main(argv=None):
    """Console-script entry point; return the exit status.

    0 done; 2 bad arguments or input, an output refused or not written (nothing changed),
    or a missing optional package (one line naming the pip extra). A closed stdout (e.g.
    ``| head``) ends the command quietly. NumPy's and SciPy's own warnings are not shown:
    every failure they would announce is checked and reported in the command's words.
    """
    import warnings
    args = build_parser().parse_args(argv)
    np.set_printoptions(suppress=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', RuntimeWarning)
            return args.func(args)
    except MissingDependencyError as exc:
        return _fail(args.command, exc)
    except BrokenPipeError:
        # the reader went away: say nothing more (also not at exit, when Python flushes)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == '__main__':
    sys.exit(main())
