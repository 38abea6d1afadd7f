"""``ne-dynamics-demo``: the computed-torque node driving a simulated arm, end to end.

With no options it reproduces the PUMA experiment of Lee, Chung, Mudge & Turney (1982),
§5. This module parses the options and prints; the
experiment itself (setup, the lockstep run over DDS, analysis, outputs, the identify
flow) is :mod:`ne_dynamics_ros.tools.experiment`, whose docstring says what runs.

Outputs in ``--output``: ``tracking_error.png``, ``log.csv``, ``summary.json`` and
``run_bag`` (the run as a rosbag2 recording).
Exit status: 0 when the run completed; 1 bad arguments or files (e.g. a missing URDF);
2 a node could not be started, or another process publishes on the demo's topics in
the same ROS domain; 3 no joint states from the arm (or they stopped);
4 no commands from the controller; 5 a node raised an exception while running.
"""
import argparse
import pathlib
import sys

from ne_dynamics_ros.control.laws.registry import LAW_CLASSES, law_class
from ne_dynamics_ros.control.reference.profiles import PROFILES
from ne_dynamics_ros.tools.experiment import (  # noqa: F401 - the exit codes are the CLI's
    analyse, DemoError, EXIT_CRASH, EXIT_NO_COMMANDS, EXIT_NO_STATES, EXIT_OK, EXIT_START,
    EXIT_USAGE, identify_and_rerun, is_lee_default, log, plot, plot_comparison,
    plot_pick_and_place, Run, Setup, write_csv, write_run_bag, write_summary)

DEFAULT_OUTPUT = 'ne_dynamics_demo_output'


def _values(text):
    """Parse ``V`` or ``V1,V2,...``: finite numbers >= 0, as a list."""
    try:
        values = [float(v) for v in text.split(',')]
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a number or a comma-separated '
                                         'list of numbers') from None
    if not all(v >= 0 and v < float('inf') for v in values):
        raise argparse.ArgumentTypeError(f'{text!r}: values must be finite and >= 0')
    return values


def _add_plant(parser):
    """Add the options of the simulated arm's own dynamics (the controller is not told)."""
    parser.add_argument('--payload', type=float, default=0.0,
                        help='payload at the tip, kg, unknown to the controller (default 0)')
    parser.add_argument('--friction', type=float, default=0.0,
                        help='extra viscous joint friction in the plant, N m s/rad (default 0)')
    parser.add_argument('--plant', choices=('pinocchio', 'mujoco'), default='pinocchio',
                        help='the simulated arm\'s engine (default pinocchio; mujoco: '
                        'MuJoCo\'s import of the URDF, implicitfast at 0.5 ms)')
    parser.add_argument('--plant-armature', type=_values, metavar='V[,V...]',
                        help='rotor inertia in the plant, kg m^2, one value or one per joint '
                        '(default: the controller\'s, from config/<robot>.yaml)')
    parser.add_argument('--plant-damping', type=_values, metavar='V[,V...]',
                        help='viscous damping in the plant the controller is not told, '
                        'N m s/rad, one value or one per joint (default 0)')
    parser.add_argument('--plant-friction', type=_values, metavar='V[,V...]',
                        help='dry friction in the plant the controller is not told, N m, one '
                        'value or one per joint (default 0; MuJoCo\'s friction loss, or '
                        'Fc tanh(qd / 0.01) on the pinocchio plant)')


def _add_pick_and_place(parser):
    """Add the options of the controller's law and of pick and place."""
    parser.add_argument('--mode', choices=[law.name for law in LAW_CLASSES
                                           if law.follows_trajectory or law.takes_target],
                        default=None, help="the controller's law (default: the robot's "
                        'config, computed_torque); every mode of the node\'s mode parameter '
                        'that follows a trajectory or a target (hand guiding follows the '
                        'operator: benchmarks/bench_hand_guiding.py); '
                        'adaptive: Slotine & Li, the load learned on line; '
                        'gravity_compensation: the arm floats, the reference is ignored; '
                        'cartesian_impedance: the tip pushed, a circle, the '
                        'null-space posture, controller and plant in process (--robot ur5e '
                        'or panda; ne_dynamics_ros.tools.experiment.cartesian)')
    parser.add_argument('--pick-and-place', type=float, default=0.0, metavar='KG',
                        help='cycles of pick and place: a load of KG kg picked at rest at the '
                        'start pose, carried to the goal, released there after --dwell s at '
                        'rest and the arm moved back; the controller is not told (default 0: '
                        'one move)')
    parser.add_argument('--cycles', type=int, default=5,
                        help='with --pick-and-place: how many cycles (default 5)')
    parser.add_argument('--dwell', type=float, default=0.5,
                        help='with --pick-and-place: rest at each end (pick, release), s '
                        '(default 0.5; the first move starts after it)')


def _resolve_defaults(args):
    """Fill the defaults that depend on --pick-and-place (2 s moves at 500 Hz, rule gains)."""
    picking = args.pick_and_place > 0
    #: the gains are the rule's (Setup sizes them for the controller's model and rate)
    args.rule_gains = picking and args.kp is None and args.kd is None
    for name, usual, cycle in (('duration', 3.0, 2.0), ('rate', 100.0, 500.0),
                               ('kp', 100.0, 100.0), ('kd', 20.0, 20.0)):
        if getattr(args, name) is None:
            setattr(args, name, cycle if picking else usual)
    if picking:
        args.start_time = args.dwell


def parse_args(argv):
    """Command-line options."""
    parser = argparse.ArgumentParser(
        prog='ne-dynamics-demo',
        description='Run the computed-torque node against a simulated arm over ROS 2 and '
                    'report the tracking error. Without options: the PUMA 560 experiment '
                    'of Lee et al. (1982), section 5.')
    parser.add_argument('--robot', default='puma560',
                        help='puma560, ur5e, or the path of a URDF file (default: puma560)')
    parser.add_argument('--duration', type=float, default=None,
                        help='motion time, s (default 3, as Lee et al.; 2 with '
                        '--pick-and-place)')
    parser.add_argument('--settle', type=float, default=1.0,
                        help='simulated time recorded after the motion, s (default 1)')
    parser.add_argument('--start-time', type=float, default=0.5,
                        help='simulated time at which the motion starts, s (default 0.5)')
    parser.add_argument('--rate', type=float, default=None,
                        help='joint-state and command rate, Hz (default 100: 0.01 s sampling; '
                        '500 with --pick-and-place)')
    parser.add_argument('--integration-rate', type=float, default=1000.0,
                        help="simulator's internal RK4 rate, Hz (default 1000)")
    _add_plant(parser)
    parser.add_argument('--kp', type=float, default=None,
                        help='K_p, 1/s^2 (default 100; with --pick-and-place the gain rule\'s '
                        'for the rate, ne-dynamics gains)')
    parser.add_argument('--kd', type=float, default=None,
                        help='K_v, 1/s (default 20; with --pick-and-place the gain rule\'s)')
    _add_pick_and_place(parser)
    parser.add_argument('--profile', choices=sorted(PROFILES), default='quintic',
                        help='joint profile (default quintic; trapezoidal = Sasaki 1990, '
                             'section 4)')
    parser.add_argument('--start', type=float, nargs='+', metavar='DEG',
                        help='start configuration, degrees (default: per robot)')
    parser.add_argument('--goal', type=float, nargs='+', metavar='DEG',
                        help='goal configuration, degrees (default: per robot)')
    parser.add_argument('--no-armature', action='store_true',
                        help='leave the motor inertia out of plant and controller')
    parser.add_argument('--armature', type=_values, metavar='V[,V...]',
                        help='rotor inertia known to the controller and, unless '
                        '--plant-armature, in the plant, kg m^2, one value or one per joint '
                        '(default: the robot\'s config)')
    parser.add_argument('--arm', choices=('sim', 'external'), default='sim',
                        help="'external': do not start the simulated arm; drive whatever "
                             'publishes /joint_states (wall-clock time)')
    parser.add_argument('--timeout', type=float, default=10.0,
                        help='wall-clock seconds to wait for the arm or the controller')
    parser.add_argument('--identify', action='store_true',
                        help='after the run, drive an excitation trajectory on the same arm '
                        '(payload included) under the nominal model, record it as a rosbag2, '
                        'identify the dynamics from it (ne-dynamics identify) and run the '
                        'experiment again with the identified model (simulated arm only)')
    parser.add_argument('--excitation-duration', type=float, default=8.0,
                        help='period of the excitation trajectory, s (default 8)')
    parser.add_argument('--excitation-periods', type=int, default=2,
                        help='periods of the excitation played (default 2)')
    parser.add_argument('--no-plot', action='store_true',
                        help='write no tracking_error.png (batch runs: matplotlib and the '
                        "figure's drawing take ~2 s of CPU); log.csv, summary.json and the "
                        'bags as usual')
    parser.add_argument('--output', default=DEFAULT_OUTPUT,
                        help=f'output directory (default ./{DEFAULT_OUTPUT})')
    args = parser.parse_args(argv)
    _resolve_defaults(args)
    for name in ('duration', 'rate', 'integration_rate', 'timeout'):
        if not getattr(args, name) > 0:
            parser.error(f'--{name.replace("_", "-")} must be > 0')
    for name in ('settle', 'start_time', 'payload', 'friction', 'pick_and_place', 'dwell'):
        if not 0 <= getattr(args, name) < float('inf'):
            parser.error(f'--{name.replace("_", "-")} must be >= 0 and finite')
    if not args.cycles >= 1:
        parser.error('--cycles must be >= 1')
    if args.no_armature and args.armature is not None:
        parser.error('--no-armature and --armature contradict each other')
    return args


def print_table(setup, result):
    """Print the per-joint figures as a short table."""
    bound = setup.bound
    width = max(len(name) for name in setup.joint_names + ['joint']) + 2
    header = f'{"joint":<{width}}{"max |e| [rad]":>15}{"rms e [rad]":>14}{"max |tau|":>12}'
    if bound is not None:
        header += f'{"< 4.26e-4":>11}'
    print(header)
    for j, name in enumerate(setup.joint_names):
        line = (f'{name:<{width}}{result["max_abs_error_rad"][j]:>15.3e}'
                f'{result["rms_error_rad"][j]:>14.3e}{result["max_abs_effort"][j]:>12.3f}')
        if bound is not None:
            line += f'{"yes" if result["max_abs_error_rad"][j] < bound else "NO":>11}'
        print(line)
    sys.stdout.flush()


def print_cycles(setup, result):
    """Print each pick-and-place cycle's worst error per joint during the moves."""
    names, worst = setup.joint_names, result['cycle_max_abs_error_rad']
    width = max(len(name) for name in names) + 2
    print('worst |q_d - q| during the moves, rad, per cycle'
          + (' (bound 4.26e-4)' if setup.bound is not None else ''))
    print(f'{"joint":<{width}}' + ''.join(f'{f"cycle {c + 1}":>11}' for c in range(len(worst))))
    for j, name in enumerate(names):
        print(f'{name:<{width}}' + ''.join(f'{v:>11.3e}' for v in worst[:, j]))
    masses = result['payload_estimate']
    if len(masses):
        print(f'mass estimate at the end: {masses[-1, 1]:.3f} kg '
              f'(load {setup.pick_and_place[0]:g} kg picked each cycle)')
    sys.stdout.flush()


def _cartesian(args):
    """Run ``--mode cartesian_impedance``; return the exit status.

    :mod:`~ne_dynamics_ros.tools.experiment.cartesian` runs it; this prints its figures.
    """
    from ne_dynamics_ros.tools.experiment.cartesian import run_cartesian
    output = pathlib.Path(args.output)
    try:
        output.mkdir(parents=True, exist_ok=True)
        summary = run_cartesian(args, output)
    except DemoError as exc:
        print(f'ne-dynamics-demo: error: {exc}', file=sys.stderr, flush=True)
        return exc.exit_code
    except OSError as exc:
        print(f'ne-dynamics-demo: error: cannot write --output {output}: {exc}',
              file=sys.stderr, flush=True)
        return EXIT_USAGE
    for row in summary['compliance']:
        log(f"push {row['force_n']:g} N along x: the tip moved {row['displacement_mm']:.2f} mm "
            f"(F/K {row['f_over_k_mm']:.1f} mm)")
    log(f"released: {summary['back_after_release_mm']:.2f} mm from the start after 2 s; circle: "
        f"largest distance to the target {summary['circle_max_error_mm']:.2f} mm")
    if 'nullspace' in summary:
        before, after = summary['nullspace']['posture_error_rad']
        log(f'null space: posture error {before:.3f} -> {after:.4f} rad, the tip moved '
            f"{summary['nullspace']['tip_motion_max_mm']:.3f} mm at most")
    log('wrote ' + ('' if args.no_plot else f'{output / "cartesian.png"}, ')
        + str(output / 'summary.json'))
    return EXIT_OK


def main(argv=None):
    """Entry point of ``ne-dynamics-demo``; returns the exit status."""
    args = parse_args(argv)
    if args.mode is not None and law_class(args.mode).takes_target:
        return _cartesian(args)             # a target-pose law: its own experiment
    try:
        if args.identify and args.arm != 'sim':
            raise DemoError('--identify needs the simulated arm (--arm sim)', EXIT_USAGE)
        setup = Setup(args)
        output = pathlib.Path(args.output)
        if output.exists() and not output.is_dir():
            raise DemoError(f'--output {output} is not a folder: the demo writes several '
                            'files and bags into one', EXIT_USAGE)
        try:
            output.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DemoError(f'cannot make the folder --output {output}: '
                            f'{exc.strerror or exc}', EXIT_USAGE) from None
        log(f'robot {setup.robot}: {setup.urdf_path}')
        if setup.is_lee_experiment and is_lee_default(args):
            log('PUMA experiment of Lee et al. (1982), section 5: 3 s quintic, 0.01 s '
                'sampling, Kp=100, Kv=20, armature in plant and controller'
                + (f'; plant payload {args.payload:g} kg' if args.payload else ''))
        run = Run(setup)
        wall_time = run.execute()
    except DemoError as exc:
        print(f'ne-dynamics-demo: error: {exc}', file=sys.stderr, flush=True)
        return exc.exit_code
    except KeyboardInterrupt:
        print('ne-dynamics-demo: interrupted', file=sys.stderr)
        return 130
    result = analyse(setup, run)
    write_csv(output / 'log.csv', setup, result)
    write_run_bag(output / 'run_bag', setup, run)
    identified = None
    if args.identify:
        try:
            identified = identify_and_rerun(args, output)
        except DemoError as exc:
            print(f'ne-dynamics-demo: error: {exc}', file=sys.stderr, flush=True)
            return exc.exit_code
    summary = write_summary(output / 'summary.json', setup, run, result, wall_time,
                            None if identified is None else identified[3])
    if setup.pick_and_place is not None:
        final = (setup, result, '') if identified is None else (
            identified[0], identified[2], ', identified model')
        if not args.no_plot:
            plot_pick_and_place(output / 'tracking_error.png', *final)
        if identified is not None:
            print('with the nominal URDF:')
            print_cycles(setup, result)
            print('with the identified model:')
        print_cycles(*final[:2])
    elif identified is None:
        if not args.no_plot:
            plot(output / 'tracking_error.png', setup, result)
        print_table(setup, result)
    else:
        if not args.no_plot:
            plot_comparison(output / 'tracking_error.png', setup,
                            [('nominal URDF', result), ('identified', identified[2])])
        print('with the nominal URDF:')
        print_table(setup, result)
        print('with the identified model:')
        print_table(identified[0], identified[2])
    diff = summary['controller_vs_reference_max_diff_rad']
    if diff is not None:
        log(f"controller's own q_d - q agrees with the closed-form reference to {diff:.1e} rad")
    written = [] if args.no_plot else [output / 'tracking_error.png']
    written += [output / 'log.csv', output / 'summary.json']
    log(f'{summary["samples"]} samples in {wall_time:.1f} s wall time; wrote '
        + ', '.join(map(str, written)))
    return EXIT_OK


if __name__ == '__main__':
    sys.exit(main())
