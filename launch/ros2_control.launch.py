r"""computed_torque_node beside the real ros2_control, as a user wires it on an arm.

Starts, for any serial arm (``urdf``; the PUMA 560 and the UR5e by ``robot:=``):

* the robot description on ``/robot_description`` (transient local, as
  robot_state_publisher), from ``urdf`` plus a ``<ros2_control>`` block generated from
  it (``ne-dynamics ros2-control``: joint names, effort limits; PickNik's
  ``topic_based_ros2_control`` hardware for the simulated arm). A URDF that already has
  a ``<ros2_control>`` block (a real driver's) is used as it is, with
  ``controllers_file`` given;
* ``controller_manager`` (``ros2_control_node``) at ``rate`` Hz, and the ``spawner``:
  ``joint_state_broadcaster`` and ``hold_controller`` active (a
  joint_trajectory_controller on the effort interfaces whose PID holds the arm where it
  is), ``effort_controller`` (``effort_controllers/JointGroupEffortController``) loaded
  inactive: the node switches to it when it activates and back to ``hold_controller``
  when it deactivates;
* ``computed_torque_node`` on ``/joint_states`` (joint_state_broadcaster's, in the
  hardware's order; the node maps by name) commanding ``/effort_controller/commands``
  in the effort controller's joint order;
* ``effort_guard``: switches to ``hold_controller`` when the node's commands stop while
  the effort controller is active (the node killed, crashed or frozen) or when nothing
  drives the arm's effort interfaces;
* with ``sim:=true`` (default) ``sim_arm_node`` (Pinocchio or MuJoCo) as the robot, on
  the hardware's clock: behind the package's own hardware plugin
  ``ne_dynamics_ros_hardware/SimArmSystem`` (``hardware:=sim_arm_system``, default; built
  by scripts/bootstrap.sh, or with colcon from ``hardware/``), each write reaches the arm
  over a Unix datagram socket, advances it by the time since the previous one, and is
  answered at once with the state the next ``read()`` finds, the newest, as a real
  driver's is. ``hardware:=topic_based``: behind PickNik's ``topic_based_ros2_control``
  over DDS topics instead, on the hardware's clock (``sim_clock:=hardware``) or on a
  timer of its own at ``sim_rate`` (``sim_clock:=timer``, default 0.8 ``rate``, which
  keeps the hardware's queue empty: docs/ros2-control.md).

::

    ros2 launch ne_dynamics_ros ros2_control.launch.py robot:=ur5e
    ros2 launch ne_dynamics_ros ros2_control.launch.py robot:=puma560 rate:=500
    ros2 launch ne_dynamics_ros ros2_control.launch.py urdf:=/path/arm.urdf \\
        params_file:=/path/arm.yaml

ros2_control is found on a ROS 2 install (``AMENT_PREFIX_PATH``) or in the prefix the
project's bootstrap unpacks (``.venv/ros2_control/install``); without it the launch stops
with the reason.
"""
import os
import shutil
import tempfile

import yaml

from launch import LaunchDescription
from launch.actions import (DeclareLaunchArgument, ExecuteProcess, OpaqueFunction,
                            RegisterEventHandler)
from launch.event_handlers import OnShutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

#: robot:= -> (URDF in config/, node parameters in config/, initial positions).
ROBOTS = {
    'ur5e': ('ur5e.urdf', 'ur5e_sim.yaml', [0.0, -1.5708, 1.5708, -1.5708, -1.5708, 0.0]),
    'puma560': ('puma560.urdf', 'puma560.yaml', [0.0] * 6),
}


def _config(name):
    from ne_dynamics_ros.resources import find_resource
    return str(find_resource(f'config/{name}'))


def _node_parameters(params_file):
    """Return the computed_torque_node section of a parameter file ({} when none)."""
    if not params_file:
        return {}
    with open(params_file, encoding='utf-8') as stream:
        document = yaml.safe_load(stream) or {}
    merged = {}
    for key in ('/**', 'computed_torque_node'):
        merged.update(((document.get(key) or {}).get('ros__parameters') or {}))
    return merged


def _hardware(arg, folder):
    """Return (plugin, its <hardware> parameters, the arm's channel or '') of ``hardware:=``."""
    from ne_dynamics_ros.tools import ros2_control as r2c
    kind = arg('hardware')
    if kind == 'topic_based':
        return r2c.TOPIC_BASED_SYSTEM, r2c.topic_based_parameters(), ''
    if kind != 'sim_arm_system':
        raise RuntimeError(f'hardware:={kind} is not sim_arm_system or topic_based')
    if r2c.find_sim_arm_system() is None:
        raise RuntimeError(f'{r2c.SIM_ARM_SYSTEM} is not on AMENT_PREFIX_PATH: build hardware/ '
                           '(scripts/build_hardware.sh .venv/ament, or colcon on a ROS 2 '
                           'install), or use hardware:=topic_based')
    channel = f'ne_dynamics_ros/{os.path.basename(folder)}'
    return r2c.SIM_ARM_SYSTEM, r2c.sim_arm_system_parameters(channel), channel


def _files(arg, urdf, model, rate, initial, command_joints, folder, hardware):
    """Return (URDF with a <ros2_control> block, controllers YAML): given or generated."""
    from ne_dynamics_ros.tools import ros2_control as r2c
    with open(urdf, encoding='utf-8') as stream:
        text = stream.read()
    controllers = arg('controllers_file')
    if '<ros2_control' in text:
        if not controllers:
            raise RuntimeError(f'{urdf} has its own <ros2_control> block: give '
                               'controllers_file:= the controllers of its driver')
        described = urdf
    else:
        hardware_order = yaml.safe_load(arg('hardware_joints')) or model.joint_names
        order = [model.joint_names.index(j) for j in hardware_order]
        block = r2c.ros2_control_block(hardware_order, model.effort_limits[order],
                                       plugin=hardware[0], hardware_parameters=hardware[1],
                                       initial_positions=[initial[k] for k in order]
                                       if len(initial) == model.n else None)
        described = os.path.join(folder, 'robot_description.urdf')
        with open(described, 'w', encoding='utf-8') as stream:
            stream.write(r2c.urdf_with_ros2_control(text, block))
    if not controllers:
        controllers = os.path.join(folder, 'controllers.yaml')
        # the hold loop's delay: the hardware's state, up to two cycles old (sized for
        # 10 ms the hold sagged past 0.05 rad after a SIGKILL: docs/ros2-control.md)
        hold_delay = float(arg('hold_delay')) if arg('hold_delay') else 2.0 / rate
        gains = r2c.hold_gains(model, rate, delay=hold_delay)
        # loop:=jtc: its PID acts on the state of its own cycle, held one cycle
        trajectory = r2c.hold_gains(model, rate, delay=1.0 / rate) \
            if arg('loop') == 'jtc' else None
        with open(controllers, 'w', encoding='utf-8') as stream:
            stream.write(r2c.controllers_yaml(model.joint_names, rate, gains,
                                              command_joints, trajectory_gains=trajectory))
    return described, controllers


def _sim_priority(arg, channel):
    """Return the simulated arm's SCHED_FIFO priority (``sim_realtime_priority``).

    Default: behind SimArmSystem 49, just below controller_manager's loop (50), whose
    ``write()`` wakes the arm: at 60 the arm's answer preempted that write on its core
    (writes of 2-3.5 ms, 6 overruns in six UR5e moves against 1 at 49, worst errors
    4.4e-5 to 4.1e-3 rad against 3.2e-5 to 2.7e-4). Behind topic_based_ros2_control 60,
    above it: the arm's executor at the default scheduling left the joints 0.02-0.38 rad
    off a move (docs/ros2-control.md).
    """
    given = arg('sim_realtime_priority')
    return int(given) if given else (49 if channel else 60)


def _sim(arg, urdf, node_values, initial, rate, environment, channel):
    """Return sim_arm_node as the robot behind the hardware (its link, or its topics)."""
    from ne_dynamics_ros.tools import ros2_control as r2c
    armature = node_values.get('armature')
    parameters = {'urdf_path': urdf, 'plant': arg('plant'),
                  'clock': 'hardware' if channel else arg('sim_clock'),
                  'publish_rate': float(arg('sim_rate') or 0.8 * rate),
                  'initial_positions': [float(v) for v in initial],
                  'brakes': arg('brakes').lower() == 'true',
                  'command_interface': 'sim_arm_system' if channel else 'joint_state',
                  'hardware_channel': channel,
                  'realtime_priority': _sim_priority(arg, channel)}
    if armature:
        parameters['armature'] = [float(v) for v in armature]
    # the arm's true states on /r2c/joint_states; what the hardware wrote on
    # /r2c/joint_commands (the link's writes, or the topic-based hardware's own topic)
    remappings = [('/joint_states', r2c.HARDWARE_STATE_TOPIC),
                  ('~/hardware_writes', r2c.HARDWARE_COMMAND_TOPIC),
                  ('/effort_controller/commands', r2c.HARDWARE_COMMAND_TOPIC),
                  # what each cycle read: the broadcaster's states
                  ('/joint_states_read', '/joint_states')]
    return Node(
        package='ne_dynamics_ros', executable='sim_arm_node', name='sim_arm_node',
        output='screen', parameters=[parameters], additional_env=environment,
        remappings=remappings)


def _gains_for_delay(loop_delay, model, node_values, rate):
    """Return kp, kd overrides so that the gains tolerate ``loop_delay`` s ({} if they do).

    Per joint, gains of the parameter file that keep less than 45° of phase margin with
    that delay (:func:`~ne_dynamics_ros.control.laws.gains.tolerated_delay`) are replaced by
    the critically damped pair of the rule's delay bound
    (:func:`~ne_dynamics_ros.control.laws.gains.delay_bandwidth`); the others are kept.
    """
    import numpy as np
    from ne_dynamics_ros.control.laws.gains import delay_bandwidth, tolerated_delay
    if loop_delay in ('', 'none'):
        return {}
    delay = float(loop_delay)
    kp = np.broadcast_to(np.asarray(node_values.get('kp', 100.0), dtype=float),
                         (model.n,)).copy()
    kd = np.broadcast_to(np.asarray(node_values.get('kd', 20.0), dtype=float),
                         (model.n,)).copy()
    short = tolerated_delay(kp, kd, rate) < delay
    if not np.any(short):
        return {}
    omega = delay_bandwidth(delay, rate)
    kp[short], kd[short] = omega ** 2, 2.0 * omega
    print(f'ros2_control.launch.py: kp, kd of {np.asarray(model.joint_names)[short].tolist()} '
          f'lowered to {omega ** 2:.4g}, {2 * omega:.4g} (omega {omega:.3g} rad/s) for a '
          f'{delay * 1e3:g} ms loop delay (loop_delay:=none keeps the file\'s)', flush=True)
    return {'kp': kp.tolist(), 'kd': kd.tolist()}


def _compensation(value, prediction, rate):
    """Return the node's ``delay_compensation`` and ``delay_prediction`` overrides.

    ``auto``: 1.5 cycles, the middle of the hold of a command written one cycle after
    the state it answers (the wiring's delay, docs/ros2-control.md); ``none`` or '': the
    parameter file's.
    """
    out = {} if value in ('', 'none') else {
        'delay_compensation': 1.5 / rate if value == 'auto' else float(value)}
    if prediction:
        out['delay_prediction'] = prediction
    return out


def _node_loop(arg, environment, urdf, params_file, model, node_values, command_joints,
               rate):
    """Return effort_guard and computed_torque_node: the node's own effort loop."""
    from ne_dynamics_ros.tools import ros2_control as r2c
    actions = []
    if arg('guard').lower() == 'true':
        actions.append(Node(
            package='ne_dynamics_ros', executable='effort_guard', name='effort_guard',
            output='screen', additional_env=environment,
            parameters=[{'command_timeout': float(arg('guard_timeout')),
                         'realtime_priority': int(arg('guard_realtime_priority'))}]))
    loop_delay = arg('loop_delay')
    gains = _gains_for_delay(str(2.0 / rate) if loop_delay == 'auto' else loop_delay, model,
                             node_values, rate)
    if arg('node').lower() == 'true':
        actions.append(Node(
            package='ne_dynamics_ros', executable='computed_torque_node',
            name='computed_torque_node', output='screen', emulate_tty=True,
            additional_env=environment,
            parameters=[params_file, {
                **({'realtime_priority': int(arg('realtime_priority'))}
                   if arg('realtime_priority') else {}),
                **gains, **_compensation(arg('delay_compensation'), arg('delay_prediction'),
                                         rate),
                'urdf_path': urdf,
                'joints': list(command_joints),
                'effort_check_rate': rate,
                'ros2_control.controller_manager': '/controller_manager',
                'ros2_control.hold_controller': r2c.HOLD_CONTROLLER,
                'ros2_control.effort_controller': r2c.EFFORT_CONTROLLER}],
            arguments=['--ros-args', '--log-level', arg('log_level')]))
    return actions


#: computed_torque_node parameters jtc_feedforward takes over (the same arm model).
FEEDFORWARD_PARAMETERS = ('base_link', 'tip_link', 'armature', 'damping', 'friction',
                          'gravity', 'effort_limits', 'effort_margin',
                          'hardware_compensates_gravity', 'hardware_compensates_friction',
                          'friction_compensation')


def _jtc_loop(arg, environment, urdf, node_values, command_joints, rate):
    """Return jtc_feedforward in front of joint_trajectory_controller (``loop:=jtc``)."""
    from ne_dynamics_ros.tools import ros2_control as r2c
    parameters = {name: node_values[name] for name in FEEDFORWARD_PARAMETERS
                  if node_values.get(name) not in (None, '', [])}
    parameters.update({'urdf_path': urdf, 'controller': r2c.TRAJECTORY_CONTROLLER,
                       'joints': list(command_joints), 'rate': float(rate)})
    if arg('effort_tolerance'):
        parameters['effort_tolerance'] = float(arg('effort_tolerance'))
    if arg('effort_offset'):
        parameters['effort_offset'] = float(arg('effort_offset'))
    if arg('realtime_priority'):
        parameters['realtime_priority'] = int(arg('realtime_priority'))
    return [Node(package='ne_dynamics_ros', executable='jtc_feedforward',
                 name='jtc_feedforward', output='screen', additional_env=environment,
                 parameters=[parameters],
                 arguments=['--ros-args', '--log-level', arg('log_level')])]


def _stack(context):
    from ne_dynamics_ros.dynamics.model import load_model
    from ne_dynamics_ros.nodes import fast_dds
    from ne_dynamics_ros.tools import ros2_control as r2c

    def arg(name):
        return LaunchConfiguration(name).perform(context)
    robot = arg('robot')
    if robot not in ROBOTS:
        raise RuntimeError(f'robot:={robot} is not one of {sorted(ROBOTS)}')
    urdf = arg('urdf') or _config(ROBOTS[robot][0])
    params_file = arg('params_file') or _config(ROBOTS[robot][1])
    for label, path in (('urdf', urdf), ('params_file', params_file)):
        if not os.path.isfile(path):
            raise RuntimeError(f'{label} not found: {path} (no such file)')
    prefix, environment = r2c.find_ros2_control()
    if prefix is None:
        raise RuntimeError(environment)
    rate = float(arg('rate'))
    sim = arg('sim').lower() == 'true'
    initial = yaml.safe_load(arg('initial_positions')) or ROBOTS[robot][2]
    node_values = _node_parameters(params_file)
    model = load_model(urdf, base_link=node_values.get('base_link') or None,
                       tip_link=node_values.get('tip_link') or None,
                       armature=node_values.get('armature') or None)
    command_joints = yaml.safe_load(arg('controller_joints')) or \
        node_values.get('joints') or model.joint_names
    folder = tempfile.mkdtemp(prefix='ne_dynamics_ros2_control_')
    hardware = _hardware(arg, folder)
    described, controllers = _files(arg, urdf, model, rate, initial, command_joints, folder,
                                    hardware)
    if arg('shared_memory').lower() != 'true':
        environment = {**environment, **fast_dds.udp_only_environment(folder)}
    lib = os.path.join(str(prefix), 'lib', 'controller_manager')
    python = r2c.python_program()

    def spawner(names, *extra):
        return ExecuteProcess(
            cmd=[python, os.path.join(lib, 'spawner'), *names, '-c', '/controller_manager',
                 '--controller-manager-timeout', '60', *extra],
            additional_env=environment, output='screen')

    actions = [
        Node(package='ne_dynamics_ros', executable='robot_description_publisher',
             name='robot_description_publisher', output='screen', additional_env=environment,
             parameters=[{'urdf_path': described}]),
        ExecuteProcess(cmd=[*r2c.realtime_command(arg('controller_manager_priority')),
                            os.path.join(lib, 'ros2_control_node'), '--ros-args',
                            '--params-file', controllers],
                       additional_env=environment, output='screen', name='controller_manager'),
    ]
    if arg('loop') == 'jtc':
        actions.append(spawner([r2c.STATE_BROADCASTER, r2c.TRAJECTORY_CONTROLLER]))
        actions += _jtc_loop(arg, environment, urdf, node_values, command_joints, rate)
    else:
        actions += [spawner([r2c.STATE_BROADCASTER, r2c.HOLD_CONTROLLER]),
                    spawner([r2c.EFFORT_CONTROLLER], '--inactive')]
        actions += _node_loop(arg, environment, urdf, params_file, model, node_values,
                              command_joints, rate)
    if sim:
        actions.insert(0, _sim(arg, urdf, node_values, initial, rate, environment,
                               hardware[2]))
    # the generated files are read once, when each process starts: gone with the launch
    actions.append(RegisterEventHandler(OnShutdown(
        on_shutdown=lambda event, context: shutil.rmtree(folder, ignore_errors=True))))
    return actions


#: (name, default, description) of every launch argument.
ARGUMENTS = [
    ('robot', 'ur5e', f'the arm of config/: {", ".join(sorted(ROBOTS))} (its URDF, '
                      'node parameters and start when urdf/params_file are not given)'),
    ('urdf', '', 'URDF file of the arm (default: the robot\'s in config/)'),
    ('params_file', '', 'computed_torque_node parameter YAML (default: the robot\'s)'),
    ('controllers_file', '', 'controller_manager parameter YAML (default: generated: '
                             'joint_state_broadcaster, effort_controller, hold_controller)'),
    ('rate', '500', 'controller_manager update_rate, Hz'),
    ('controller_joints', '', 'the effort controller\'s joints order (YAML list; '
                              'default: the node parameters\' joints, else chain order)'),
    ('hardware_joints', '', 'the <ros2_control> block\'s joint order (YAML list; '
                            'default: chain order)'),
    ('hold_delay', '', 'the loop delay the hold controller\'s gains are sized for, s '
                       '(default: two cycles)'),
    ('loop', 'node', 'who closes the loop: node (computed_torque_node\'s own effort '
                     'loop through effort_controller, hold_controller and effort_guard) '
                     'or jtc (joint_trajectory_controller in controller_manager\'s '
                     'cycle, its trajectories\' efforts filled by jtc_feedforward: '
                     'send them to /jtc_feedforward/follow_joint_trajectory or '
                     '/jtc_feedforward/joint_trajectory)'),
    ('effort_tolerance', '', 'loop:=jtc: jtc_feedforward\'s effort_tolerance, N m '
                             '(default its own, 0.001)'),
    ('effort_offset', '', 'loop:=jtc: jtc_feedforward\'s effort_offset, controller '
                          'periods (default its own, -0.5)'),
    ('node', 'true', 'start computed_torque_node'),
    ('guard', 'true', 'start effort_guard (switches to hold_controller when the node\'s '
                      'commands stop)'),
    ('guard_realtime_priority', '55', 'effort_guard: SCHED_FIFO priority, above the '
                                      'node\'s and controller_manager\'s (0: the '
                                      'default scheduling)'),
    ('controller_manager_priority', '45', 'SCHED_FIFO priority of controller_manager\'s '
                                          'threads other than its control loop (its '
                                          'executor, publishers and DDS threads; the '
                                          'loop keeps its thread_priority 50); 0: the '
                                          'default scheduling'),
    ('guard_timeout', '0.1', 'effort_guard: silence on the command topic after which '
                             'it switches to hold_controller, s (the node\'s own '
                             'state_timeout)'),
    ('sim', 'true', 'start sim_arm_node behind the hardware\'s topics'),
    ('plant', 'pinocchio', 'sim: pinocchio or mujoco'),
    ('brakes', 'true', 'sim: held by its brakes until the first non-zero command'),
    ('initial_positions', '', 'sim: start positions (YAML list, rad; default: the '
                              'robot\'s)'),
    ('hardware', 'sim_arm_system', 'the hardware plugin of the generated <ros2_control> '
                                   'block: sim_arm_system (the package\'s SimArmSystem: '
                                   'the simulated arm over a datagram link, on the '
                                   'hardware\'s clock, its newest state at every read) '
                                   'or topic_based (PickNik\'s TopicBasedSystem: the arm '
                                   'behind DDS topics, sim_clock applies)'),
    ('sim_clock', 'hardware', 'sim with hardware:=topic_based: hardware (one step and '
                              'one state per hardware write, as a robot paces its '
                              'driver) or timer (the arm on a timer of its own at '
                              'sim_rate)'),
    ('sim_rate', '', 'sim_clock:=timer: joint state rate, Hz (default 0.8 rate)'),
    ('sim_realtime_priority', '', 'sim: SCHED_FIFO priority of the simulated arm (0: '
                                  'the default scheduling; default 49 behind '
                                  'sim_arm_system, below controller_manager\'s loop, '
                                  'and 60 behind topic_based)'),
    ('shared_memory', 'false', 'let the stack\'s processes use Fast DDS\'s shared '
                               'memory; false: UDP only (a SIGKILLed process\'s '
                               'shared memory stalled its peers 1 s: '
                               'docs/ros2-control.md)'),
    ('log_level', 'info', 'computed_torque_node\'s logging level'),
    ('loop_delay', 'auto', 'the loop delay the node\'s gains must tolerate, s; auto: two '
                           'cycles (a state read at cycle k is answered in the write of '
                           'k + 1 and held for a cycle); gains of params_file that do '
                           'not are lowered by the rule; none: keep them'),
    ('delay_compensation', 'auto', 'computed_torque_node\'s delay_compensation, s: the '
                                   'delay its law predicts across; auto: 1.5 cycles '
                                   '(the middle of the hold of a command written one '
                                   'cycle on); none: its parameter file\'s'),
    ('delay_prediction', '', 'computed_torque_node\'s delay_prediction: model or '
                             'error_rate (default: its parameter file\'s, else model)'),
    ('realtime_priority', '', 'computed_torque_node\'s realtime_priority (default: its '
                              'parameter file\'s, else 50; 0: the default scheduling), '
                              'or jtc_feedforward\'s with loop:=jtc (default 50)'),
]


def generate_launch_description():
    """Declare the arguments and the stack."""
    from ne_dynamics_ros.tools.launch_signals import quiet_keyboard_interrupt
    quiet_keyboard_interrupt()     # Ctrl-C must not break launch's run loop (its docstring)
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=description)
         for name, default, description in ARGUMENTS] + [OpaqueFunction(function=_stack)])
