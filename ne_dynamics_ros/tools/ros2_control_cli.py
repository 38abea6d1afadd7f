"""``ne-dynamics ros2-control``: a URDF with a ``<ros2_control>`` block, and the controllers.

``ne-dynamics ros2-control URDF --output OUT.urdf [--controllers OUT.yaml] [--rate HZ]
[--delay S] [--joints J ...] [--plugin P] [--param NAME=VALUE ...]`` writes the URDF with
the block :func:`~ne_dynamics_ros.tools.ros2_control.ros2_control_block` makes (effort
limits from the URDF) and controller_manager's parameters
(:func:`~ne_dynamics_ros.tools.ros2_control.controllers_yaml`): both or nothing, never
over the input. Exit 0 done, 2 refused (the reason on stderr).
"""
import sys

from ne_dynamics_ros.dynamics.model import load_model
from ne_dynamics_ros.errors import ModelError, shorten
from ne_dynamics_ros.tools.files import check_outputs, write_outputs

#: Error messages longer than this are cut.
MAX_MESSAGE = 600


#: --trajectory-controller -> its command interfaces (and the block's).
TRAJECTORY_INTERFACES = {'effort': ('effort',), 'position+effort': ('position', 'effort')}


def ros2_control_command(args):
    """Run ``ne-dynamics ros2-control``: URDF + <ros2_control> and controllers YAML."""
    from ne_dynamics_ros.tools import ros2_control as r2c
    outputs = [('--output', args.output)] + ([('--controllers', args.controllers)]
                                             if args.controllers else [])
    try:
        check_outputs(outputs, [args.urdf])
        model = load_model(args.urdf, base_link=args.base, tip_link=args.tip)
        with open(args.urdf, encoding='utf-8') as stream:
            text = stream.read()
        hardware = args.joints or model.joint_names
        unknown = [j for j in hardware if j not in model.joint_names]
        if unknown or sorted(hardware) != sorted(model.joint_names):
            raise r2c.Ros2ControlError(f'--joints must list the chain\'s joints '
                                       f'{model.joint_names} once each (unknown: {unknown})')
        order = [model.joint_names.index(j) for j in hardware]
        limits = model.effort_limits[order]
        plugin_parameters = dict(p.split('=', 1) for p in args.param) if args.param else None
        interfaces = TRAJECTORY_INTERFACES.get(args.trajectory_controller, ('effort',))
        block = r2c.ros2_control_block(hardware, limits, plugin=args.plugin,
                                       hardware_parameters=plugin_parameters,
                                       command_interfaces=interfaces)
        files = [('--output', args.output, r2c.urdf_with_ros2_control(text, block))]
        if args.controllers:
            gains = r2c.hold_gains(model, args.rate, delay=args.delay)
            trajectory = r2c.hold_gains(model, args.rate, delay=1.0 / args.rate) \
                if args.trajectory_controller else None
            files.append(('--controllers', args.controllers, r2c.controllers_yaml(
                model.joint_names, args.rate, gains, hardware, trajectory_gains=trajectory,
                trajectory_interfaces=interfaces)))
        write_outputs(files, [args.urdf])
    except (ModelError, OSError, ValueError) as exc:
        print(f'ne-dynamics ros2-control: error: {shorten(str(exc), MAX_MESSAGE)}',
              file=sys.stderr)
        return 2
    print(f'{args.output}: <ros2_control> with {args.plugin}, joints {hardware}, effort '
          f'limits {[float(f"{v:.4g}") for v in limits]} N m')
    if args.controllers:
        print(f'{args.controllers}: controller_manager at {args.rate:g} Hz: '
              'joint_state_broadcaster, effort_controller, hold_controller'
              + (f', {r2c.TRAJECTORY_CONTROLLER} on {list(interfaces)} (for jtc_feedforward)'
                 if args.trajectory_controller else ''))
    return 0


def add_ros2_control(sub):
    """Add the ``ros2-control`` subcommand."""
    r2c = sub.add_parser('ros2-control', help='write a URDF with a <ros2_control> block and '
                         'the controllers YAML for computed_torque_node')
    r2c.add_argument('urdf', help='URDF file of the arm (read, never written)')
    r2c.add_argument('--output', required=True, help='the URDF with the block (new file)')
    r2c.add_argument('--controllers', default=None, metavar='YAML',
                     help='also write controller_manager\'s parameters')
    r2c.add_argument('--rate', type=int, default=500, metavar='HZ',
                     help='update_rate and the hold gains\' rate, Hz (default 500)')
    r2c.add_argument('--delay', type=float, default=0.0, metavar='S',
                     help='loop delay for the hold gains, s (default 0)')
    r2c.add_argument('--joints', nargs='+', default=None,
                     help='the block\'s (and effort controller\'s) joint order (default: chain)')
    r2c.add_argument('--plugin', default='topic_based_ros2_control/TopicBasedSystem',
                     help='hardware plugin (default: the topic-based simulation plugin)')
    r2c.add_argument('--param', action='append', metavar='NAME=VALUE',
                     help='a <hardware> parameter (repeatable; default: the topic-based '
                     'plugin\'s topics)')
    r2c.add_argument('--trajectory-controller', choices=sorted(TRAJECTORY_INTERFACES),
                     default=None, help='also a joint_trajectory_controller for '
                     'jtc_feedforward: on the effort interfaces (its PID from the gain rule '
                     'at --rate, one cycle of delay) or on position + effort (the drive\'s '
                     'position loop, the effort passed through; the block gets position '
                     'command interfaces too)')
    r2c.add_argument('--base', default=None, help='base link (default: URDF root)')
    r2c.add_argument('--tip', default=None, help='tip link (default: end of the chain)')
    r2c.set_defaults(func=ros2_control_command)


__all__ = ['add_ros2_control', 'ros2_control_command']
