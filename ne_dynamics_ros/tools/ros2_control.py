"""The wiring beside ros2_control: the ``<ros2_control>`` block, the controllers, the stack.

Pure module (no ROS import). It writes what ``controller_manager`` needs to drive an arm
with the node's efforts, from the arm's URDF, and finds the ros2_control programs:

* :func:`ros2_control_block`: the ``<ros2_control>`` XML of a URDF chain: one
  ``effort`` command interface per joint with ``min``/``max`` from the URDF's
  ``<limit effort>`` (what ``controller_manager`` enforces when it enforces limits), and
  ``position``, ``velocity``, ``effort`` state interfaces; the hardware is PickNik's
  ``topic_based_ros2_control/TopicBasedSystem`` (a simulated arm behind topics) unless a
  real driver's plugin and parameters are given. :func:`urdf_with_ros2_control` adds it
  to the URDF text (a URDF that already has one is refused: it is the driver's).
* :func:`controllers_yaml`: ``controller_manager``'s parameter file:
  ``joint_state_broadcaster``, the ``effort_controllers/JointGroupEffortController`` the
  node commands (``effort_controller``) and a ``joint_trajectory_controller`` on the same
  effort interfaces (``hold_controller``) whose PID holds the arm where it is whenever the
  node does not command it (the stop mitigation of ``effort_guard``), its gains sized by
  :func:`hold_gains`.
* :func:`find_ros2_control`: a ROS 2 install's ros2_control (``AMENT_PREFIX_PATH``), else
  the prefix the project's bootstrap unpacks (``<venv>/ros2_control/install``), and the
  environment its programs need.

The hold gains are the node's rule (:mod:`ne_dynamics_ros.control.laws.gains`) in joint
units on the *lightest* inertia a joint shows over the workspace: ``p = M_jj,min ω²``,
``d = 2 M_jj,min ω`` (N·m/rad, N·m·s/rad), ``i = p ω / 10``, its share of the effort
capped at 10 % of the limit (``i_clamp``), the output at the effort limit
(``u_clamp_*``); ω is the rule's bandwidth at the controller's rate and the hold loop's
delay. A fixed PD meets the inertia the pose gives: sized on the largest one it was
critically damped there but ``sqrt(M_max / M)`` times faster where the arm is lighter,
past what the delay allows (measured: the UR5e's hold flung the arm after a 0.3 rad
move); sized on the lightest it is at most the rule's ω anywhere, underdamped (ζ =
``sqrt(M_min / M)``) where the arm is heavier.
"""
import os
import pathlib
import shutil
import sys
import xml.sax.saxutils

import numpy as np

from ne_dynamics_ros.errors import ModelError

#: The hardware plugin of a simulated arm behind topics (PickNik's, as in the tarball).
TOPIC_BASED_SYSTEM = 'topic_based_ros2_control/TopicBasedSystem'
#: The package's own hardware plugin (hardware/): sim_arm_node over a datagram link.
SIM_ARM_SYSTEM = 'ne_dynamics_ros_hardware/SimArmSystem'
#: The ament package that holds it, and the pluginlib index entry that shows it is there.
SIM_ARM_PACKAGE = 'ne_dynamics_ros_hardware'
PLUGIN_INDEX = pathlib.Path('share') / 'ament_index' / 'resource_index' / \
    'hardware_interface__pluginlib__plugin'
#: Its topics: the arm's states in, the commands out (sensor_msgs/JointState both).
HARDWARE_STATE_TOPIC = '/r2c/joint_states'
HARDWARE_COMMAND_TOPIC = '/r2c/joint_commands'
#: The controllers' names in the generated YAML and the launch file.
EFFORT_CONTROLLER = 'effort_controller'
HOLD_CONTROLLER = 'hold_controller'
TRAJECTORY_CONTROLLER = 'joint_trajectory_controller'
STATE_BROADCASTER = 'joint_state_broadcaster'
#: Where scripts/bootstrap.sh unpacks the ros2_control build, under the venv.
BUNDLED_PREFIX = pathlib.Path('ros2_control') / 'install'
#: The program that shows a prefix holds ros2_control.
CONTROL_NODE = pathlib.Path('lib') / 'controller_manager' / 'ros2_control_node'


class Ros2ControlError(ModelError):
    """The ros2_control wiring cannot be made: the message names the joint, file or part."""


def topic_based_parameters(state_topic=HARDWARE_STATE_TOPIC,
                           command_topic=HARDWARE_COMMAND_TOPIC):
    """Return TopicBasedSystem's ``<hardware>`` parameters for effort-only commands.

    ``trigger_joint_command_threshold: -1``: the plugin otherwise publishes a command only
    when the position command differs from the position state, which never happens with
    effort command interfaces alone.
    """
    return {'joint_commands_topic': command_topic, 'joint_states_topic': state_topic,
            'trigger_joint_command_threshold': '-1'}


def sim_arm_system_parameters(channel):
    """Return SimArmSystem's ``<hardware>`` parameters: the arm's link ``channel``.

    The plugin and ``sim_arm_node`` (``hardware_channel``) meet at the abstract Unix
    sockets ``@<channel>/hardware`` and ``@<channel>/arm``
    (:mod:`ne_dynamics_ros.simulation.hardware_link`).

    Raises:
        Ros2ControlError: an empty channel, or one longer than a socket name allows.
    """
    channel = str(channel)
    if not channel or len(channel.encode()) > 96:
        raise Ros2ControlError(f'the SimArmSystem channel must be 1-96 bytes, got {channel!r}')
    return {'channel': channel}


def find_sim_arm_system(environ=None):
    """Return the ament prefix that holds SimArmSystem's plugin entry, or None.

    Searched in ``AMENT_PREFIX_PATH`` (a workspace that built ``hardware/`` with colcon,
    or ``.venv/ament`` where scripts/bootstrap.sh builds it).
    """
    environ = os.environ if environ is None else environ
    for prefix in filter(None, environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)):
        if (pathlib.Path(prefix) / PLUGIN_INDEX / SIM_ARM_PACKAGE).is_file():
            return pathlib.Path(prefix)
    return None


def ros2_control_block(joint_names, effort_limits, plugin=TOPIC_BASED_SYSTEM,
                       hardware_parameters=None, name='NeDynamicsArm', initial_positions=None,
                       command_interfaces=('effort',)):
    """Return the ``<ros2_control>`` XML element (text) of an arm.

    Args:
        joint_names: (n,) the joints, in the order the hardware lists its interfaces
            (joint_state_broadcaster publishes in this order).
        effort_limits: (n,) N·m or N, each > 0 (inf: no ``min``/``max`` written).
        plugin: the hardware plugin (default TopicBasedSystem).
        hardware_parameters: {name: value} of ``<hardware><param>``; None: the topic-based
            plugin's (:func:`topic_based_parameters`) when it is the plugin, else none
            (SimArmSystem needs :func:`sim_arm_system_parameters`).
        name: the ``<ros2_control name>``.
        initial_positions: (n,) rad or m, each joint's position state before the hardware
            reads one (None: 0).
        command_interfaces: ``('effort',)`` or ``('position', 'effort')`` (a drive with a
            position loop and a torque feed-forward input; the position interface gets no
            limits here: the driver's own apply).

    Raises:
        Ros2ControlError: no joints, a repeated joint, a bad limit or position count, other
            command interfaces.
    """
    joints = [str(j) for j in joint_names]
    if not joints:
        raise Ros2ControlError('no movable joints to put in <ros2_control>')
    if len(set(joints)) != len(joints):
        raise Ros2ControlError(f'joints repeated in {joints}')
    limits = np.asarray(effort_limits, dtype=float).reshape(-1)
    if limits.shape != (len(joints),) or not np.all(limits > 0):
        raise Ros2ControlError(f'effort_limits needs {len(joints)} values > 0, got '
                               f'{limits.tolist()}')
    initial = np.zeros(len(joints)) if initial_positions is None else \
        np.asarray(initial_positions, dtype=float).reshape(-1)
    if initial.shape != (len(joints),) or not np.all(np.isfinite(initial)):
        raise Ros2ControlError(f'initial_positions needs {len(joints)} finite values')
    if hardware_parameters is None:
        hardware_parameters = topic_based_parameters() if plugin == TOPIC_BASED_SYSTEM else {}
    q = xml.sax.saxutils.quoteattr
    e = xml.sax.saxutils.escape
    lines = [f'  <ros2_control name={q(name)} type="system">', '    <hardware>',
             f'      <plugin>{e(plugin)}</plugin>']
    lines += [f'      <param name={q(k)}>{e(str(v))}</param>'
              for k, v in hardware_parameters.items()]
    lines.append('    </hardware>')
    if tuple(command_interfaces) not in (('effort',), ('position', 'effort')):
        raise Ros2ControlError(f'command_interfaces must be (effort,) or (position, effort), '
                               f'got {command_interfaces}')
    for joint, limit, q0 in zip(joints, limits, initial):
        lines.append(f'    <joint name={q(joint)}>')
        if 'position' in command_interfaces:
            lines.append('      <command_interface name="position"/>')
        if np.isfinite(limit):
            lines += ['      <command_interface name="effort">',
                      f'        <param name="min">{-limit:.17g}</param>',
                      f'        <param name="max">{limit:.17g}</param>',
                      '      </command_interface>']
        else:
            lines.append('      <command_interface name="effort"/>')
        lines += ['      <state_interface name="position">',
                  f'        <param name="initial_value">{q0:.17g}</param>',
                  '      </state_interface>',
                  '      <state_interface name="velocity"/>',
                  '      <state_interface name="effort"/>',
                  '    </joint>']
    lines.append('  </ros2_control>')
    return '\n'.join(lines) + '\n'


def urdf_with_ros2_control(urdf_text, block):
    """Return ``urdf_text`` with ``block`` inserted before ``</robot>``.

    Raises:
        Ros2ControlError: the URDF already has a ``<ros2_control>`` element (its driver's:
            edit that one), or has no ``</robot>``.
    """
    if '<ros2_control' in urdf_text:
        raise Ros2ControlError('the URDF already has a <ros2_control> element (a driver\'s '
                               'description?): use it as it is, or remove it first')
    end = urdf_text.rstrip().rfind('</robot>')
    if end < 0:
        raise Ros2ControlError('the URDF has no </robot> closing tag')
    return urdf_text[:end] + block + urdf_text[end:]


def hold_gains(model, rate, delay=0.0):
    """Return the hold controller's PID per joint: {joint: {p, d, i, i_clamp}}.

    Joint units (N·m/rad, N·m·s/rad, N·m/(rad·s), N·m) from the node's gain rule at
    ``rate`` (Hz) and ``delay`` (s), see the module docstring. ``model`` is the
    :class:`~ne_dynamics_ros.dynamics.model.RobotModel` (URDF limits; its armature).

    Raises:
        ModelError: as :func:`~ne_dynamics_ros.control.laws.gains.recommended_gains`.
    """
    from ne_dynamics_ros.control.laws.gains import (INTEGRAL_SHARE, lightest_inertia,
                                                    recommended_gains)
    rule = recommended_gains(model, rate, delay=delay)
    inertia_min = lightest_inertia(model)
    p = inertia_min * rule.kp
    d = inertia_min * rule.kd
    i = p * rule.bandwidth / 10.0
    limits = np.asarray(model.effort_limits, dtype=float)
    clamp = INTEGRAL_SHARE * limits
    return {name: {'p': float(f'{p[j]:.4g}'), 'd': float(f'{d[j]:.4g}'),
                   'i': float(f'{i[j]:.4g}'), 'i_clamp': float(f'{clamp[j]:.4g}'),
                   'u_clamp_max': float(f'{limits[j]:.6g}'),
                   'u_clamp_min': -float(f'{limits[j]:.6g}')}
            for j, name in enumerate(model.joint_names)}


def _trajectory_controller(joints, interfaces, gains):
    """Return the parameters of a joint_trajectory_controller on ``interfaces``."""
    parameters = {
        'joints': list(joints), 'command_interfaces': list(interfaces),
        'state_interfaces': ['position', 'velocity'],
        'allow_nonzero_velocity_at_trajectory_end': False,
        # hold the position *measured* on activation: with the default (true) and
        # effort commands only, a second activation held the first one's position
        # (measured: the arm flung back 0.3 rad at the PID's full gain)
        'set_last_command_interface_value_as_state_on_activation': False}
    if 'position' not in interfaces:
        parameters['gains'] = {name: gains[name] for name in joints}
    return parameters


def controllers_yaml(joint_names, rate, gains=None, command_joints=None,
                     trajectory_gains=None, trajectory_interfaces=('effort',)):
    """Return controller_manager's parameter file (YAML text) for the node's wiring.

    Args:
        joint_names: (n,) the arm's joints (hardware order).
        rate: ``update_rate``, Hz (an integer > 0).
        gains: :func:`hold_gains`' result for ``hold_controller``; None: no hold
            controller in the file.
        command_joints: the effort controller's ``joints`` (the order of the node's
            command, its ``joints`` parameter); None: ``joint_names``.
        trajectory_gains: :func:`hold_gains`' result for ``joint_trajectory_controller``,
            the JTC that ``jtc_feedforward`` feeds (its joints in ``command_joints``
            order); None: none in the file.
        trajectory_interfaces: its command interfaces: ``('effort',)`` (its PID plus the
            points' effort) or ``('position', 'effort')`` (a drive's position loop with a
            torque feed-forward input: the effort passed through, no PID, no gains).

    Raises:
        Ros2ControlError: a rate that is not a whole number of Hz > 0, or command joints
            that are not the arm's joints each once.
    """
    import yaml
    if not (float(rate) == int(rate) and int(rate) > 0):
        raise Ros2ControlError(f'update_rate must be a whole number of Hz > 0, got {rate}')
    joints = list(joint_names)
    command = list(command_joints) if command_joints else joints
    if sorted(command) != sorted(joints) or len(set(command)) != len(command):
        raise Ros2ControlError(f'the effort controller\'s joints {command} must be the arm\'s '
                               f'joints {joints}, each once')
    if tuple(trajectory_interfaces) not in (('effort',), ('position', 'effort')):
        raise Ros2ControlError('the trajectory controller\'s command interfaces must be '
                               f'[effort] or [position, effort], got {trajectory_interfaces}')
    manager = {'update_rate': int(rate),
               STATE_BROADCASTER: {'type': 'joint_state_broadcaster/JointStateBroadcaster'},
               EFFORT_CONTROLLER: {'type': 'effort_controllers/JointGroupEffortController'}}
    document = {'controller_manager': {'ros__parameters': manager},
                EFFORT_CONTROLLER: {'ros__parameters': {'joints': command}}}
    if gains is not None:
        manager[HOLD_CONTROLLER] = {
            'type': 'joint_trajectory_controller/JointTrajectoryController'}
        document[HOLD_CONTROLLER] = {'ros__parameters': _trajectory_controller(
            joints, ['effort'], gains)}
    if trajectory_gains is not None:
        manager[TRAJECTORY_CONTROLLER] = {
            'type': 'joint_trajectory_controller/JointTrajectoryController'}
        document[TRAJECTORY_CONTROLLER] = {'ros__parameters': _trajectory_controller(
            command, trajectory_interfaces, trajectory_gains)}
    header = ('# controller_manager parameters written by ne-dynamics ros2-control: '
              f'{int(rate)} Hz; {EFFORT_CONTROLLER} takes computed_torque_node\'s efforts'
              + (f', {HOLD_CONTROLLER} (PID, effort) holds the arm whenever the node does '
                 'not command it' if gains is not None else '') + '\n')
    return header + yaml.safe_dump(document, sort_keys=False, default_flow_style=None)


def _has_control_node(prefix):
    return (pathlib.Path(prefix) / CONTROL_NODE).is_file()


def find_ros2_control(environ=None):
    """Find ros2_control: ``(prefix, extra environment)``, or ``(None, reason)``.

    Search order: ``NE_DYNAMICS_ROS2_CONTROL`` (a prefix), a prefix of
    ``AMENT_PREFIX_PATH`` that holds ``lib/controller_manager/ros2_control_node`` (a ROS 2
    install: nothing to add to the environment), then the bundled build under the
    running Python's venv (``<sys.prefix>/ros2_control/install``), whose programs need
    ``LD_LIBRARY_PATH``, ``AMENT_PREFIX_PATH`` and ``PYTHONPATH`` set (returned as a
    dict of the variables' new values).
    """
    environ = os.environ if environ is None else environ
    explicit = environ.get('NE_DYNAMICS_ROS2_CONTROL')
    if explicit:
        if not _has_control_node(explicit):
            return None, f'NE_DYNAMICS_ROS2_CONTROL={explicit} holds no {CONTROL_NODE}'
        return pathlib.Path(explicit), bundled_environment(explicit, environ)
    for prefix in filter(None, environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)):
        if _has_control_node(prefix):
            return pathlib.Path(prefix), {}
    bundled = pathlib.Path(sys.prefix) / BUNDLED_PREFIX
    if _has_control_node(bundled):
        return bundled, bundled_environment(bundled, environ)
    return None, (f'no ros2_control found: no {CONTROL_NODE} under AMENT_PREFIX_PATH nor in '
                  f'{bundled} (scripts/bootstrap.sh unpacks it there when ../shared/'
                  'ros2_control is beside the repository; or install ROS 2 Jazzy\'s '
                  'ros2_control)')


def bundled_environment(prefix, environ=None):
    """Return the environment a from-source ros2_control prefix beside the wheels needs.

    As the build's ``env.sh``: the prefix's and the venv's libraries (the wheels bundle
    theirs in ``site-packages/ros_*.libs``) on ``LD_LIBRARY_PATH`` (nothing has an
    RPATH), both trees on ``AMENT_PREFIX_PATH`` (pluginlib's index), the prefix's Python
    packages (spawner, controller_manager_msgs) on ``PYTHONPATH``.
    """
    environ = os.environ if environ is None else environ
    prefix = pathlib.Path(prefix)
    venv = pathlib.Path(sys.prefix)
    version = f'python{sys.version_info.major}.{sys.version_info.minor}'
    site = venv / 'lib' / version / 'site-packages'
    libs = sorted(str(p) for p in site.glob('ros_*.libs'))

    def joined(first, name):
        rest = environ.get(name, '')
        parts = [str(p) for p in first] + ([rest] if rest else [])
        return os.pathsep.join(dict.fromkeys(os.pathsep.join(parts).split(os.pathsep)))

    return {
        'LD_LIBRARY_PATH': joined([prefix / 'lib', venv / 'lib', *libs], 'LD_LIBRARY_PATH'),
        'AMENT_PREFIX_PATH': joined([prefix, venv], 'AMENT_PREFIX_PATH'),
        'PYTHONPATH': joined([prefix / 'lib' / version / 'site-packages'], 'PYTHONPATH'),
        '_ROS_WHEELS_BOOTSTRAP_COMPLETE': '1',
    }


def realtime_command(priority, which=shutil.which):
    """Return the command prefix that starts a program at SCHED_FIFO ``priority`` ([] if not).

    controller_manager raises only its control loop (``thread_priority``, 50); its other
    threads stay at the default policy: the executor that takes the node's commands into
    the effort controller's buffer, the realtime publishers' threads that publish
    ``/joint_states``, and the DDS threads. Beside CPU-bound neighbours on two cores they
    waited behind them while the loop ran on time. Started under ``chrt -f priority``
    every thread the program creates inherits SCHED_FIFO ``priority`` and the control
    loop still sets its own 50. Permitted as root or up to ``RLIMIT_RTPRIO`` (the
    ``realtime`` group); otherwise, or with ``priority`` <= 0 or no ``chrt``, [] (the
    default scheduling).
    """
    import resource
    priority = int(priority)
    if priority <= 0 or not hasattr(os, 'geteuid'):
        return []
    allowed = os.geteuid() == 0 or resource.getrlimit(resource.RLIMIT_RTPRIO)[0] >= priority
    chrt = which('chrt')
    return [chrt, '-f', str(priority)] if allowed and chrt else []


def python_program():
    """Return the Python that runs the spawner (the running one, or ``python3``)."""
    return sys.executable or shutil.which('python3') or 'python3'


__all__ = ['BUNDLED_PREFIX', 'bundled_environment', 'controllers_yaml', 'EFFORT_CONTROLLER',
           'find_ros2_control', 'find_sim_arm_system', 'HARDWARE_COMMAND_TOPIC',
           'HARDWARE_STATE_TOPIC', 'HOLD_CONTROLLER', 'hold_gains', 'python_program',
           'realtime_command',
           'ros2_control_block', 'Ros2ControlError', 'SIM_ARM_PACKAGE', 'SIM_ARM_SYSTEM',
           'sim_arm_system_parameters', 'STATE_BROADCASTER', 'TOPIC_BASED_SYSTEM',
           'TRAJECTORY_CONTROLLER',
           'topic_based_parameters', 'urdf_with_ros2_control']
