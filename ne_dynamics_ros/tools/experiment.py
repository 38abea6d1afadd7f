"""The experiment behind ``ne-dynamics-demo``: the node driving a simulated arm over DDS.

With no options it reproduces Lee, Chung, Mudge & Turney's PUMA experiment
(``001_ccc6fd40c72dea18.txt`` section 5): PUMA 560, theta_initial = (90, 0, 90, 0, 0, 0)
deg, theta_final = (45, 30, 0, 45, 60, 90) deg, a 3 s quintic motion, joint states and
commands every 0.01 s, K_p = 100 and K_v = 20 on every joint, motor (armature) inertia in
both the plant and the controller's model. The paper reports every joint's position
error below 4.26e-4 rad, one count of a 12-bit A/D converter.

What runs (the nodes in this process on one single-threaded executor, real rclpy over
DDS; the node's trajectory receiver in a child process of its own):

* ``sim_arm_node`` (:mod:`ne_dynamics_ros.nodes.sim_arm_node`): the plant, Pinocchio ABA
  (or MuJoCo with ``--plant mujoco``) from
  the same URDF (+ armature, + an optional payload and friction the controller does not
  know about), in *lockstep*: it publishes the state at ``t_k``, applies the controller's
  answer to it over ``[t_k, t_k + 1/rate)`` and publishes ``t_(k+1)``. Simulated time is
  published on ``/clock`` and every other node runs with ``use_sim_time``. So the run is
  a sampled-data experiment with exactly one command per sample, like Lee et al.'s digital
  controller, and its result does not depend on the machine's speed or load.
* ``computed_torque_node`` (:mod:`ne_dynamics_ros.nodes.computed_torque_node`), configured from
  ``config/<robot>.yaml`` (armature) with ``kp``/``kd`` from the command line.
* ``trajectory_source`` (:mod:`ne_dynamics_ros.nodes.trajectory_source_node`): the motion,
  stamped to start at ``--start-time`` of simulated time.
* a recorder node subscribed to ``/joint_states`` (q), ``/effort_controller/commands``
  and ``/computed_torque_node/tracking_error`` (the controller's q_d - q and tau).

The arm is held at t = 0 until the controller answers and the trajectory is delivered,
then released for ``start-time + duration + settle`` seconds of simulated time.

The reported error is ``q_d(t_k) - q(t_k)`` at every sample, with ``q_d`` evaluated from
the profile's closed form at the state's time stamp (independent of the controller's own
interpolation); the controller's reported error is kept beside it as a cross-check.

Its steps are functions a test (or a script) can call: :class:`Setup` (from the demo's
options), :class:`Run` (bring-up, the lockstep run over DDS), :func:`analyse`, the
outputs (:func:`write_csv`, :func:`write_summary`, :func:`plot`, :func:`write_run_bag`)
and :func:`identify_and_rerun`. ``ne_dynamics_ros.tools.demo`` parses the options and
prints.

Outputs in ``--output``: ``tracking_error.png``, ``log.csv``, ``summary.json``.
Exit status: 0 when the run completed; 1 bad arguments or files (e.g. a missing URDF);
2 a node could not be started, or another process publishes on the demo's topics in
the same ROS domain; 3 no joint states from the arm (or they stopped);
4 no commands from the controller; 5 a node raised an exception while running.
"""
import csv
import io
import json
import math
import os
import pathlib
import random
import sys
import time

import numpy as np

from ne_dynamics_ros.control.profiles import evaluate

LEE_BOUND_RAD = 4.26e-4
LEE_START_DEG = (90.0, 0.0, 90.0, 0.0, 0.0, 0.0)
LEE_GOAL_DEG = (45.0, 30.0, 0.0, 45.0, 60.0, 90.0)
UR5E_START_DEG = (0.0, -90.0, 90.0, -90.0, -90.0, 0.0)
UR5E_GOAL_DEG = (45.0, -60.0, 60.0, -120.0, -60.0, 90.0)

EXIT_OK, EXIT_USAGE, EXIT_START, EXIT_NO_STATES, EXIT_NO_COMMANDS, EXIT_CRASH = range(6)
#: Seconds to wait for the controller to accept the trajectory before publishing it again.
RESEND_PERIOD = 2.0


class DemoError(Exception):
    """The demo cannot go on; ``exit_code`` says why (see the module docstring)."""

    def __init__(self, message, exit_code):
        super().__init__(message)
        self.exit_code = exit_code


def log(message):
    """Progress line on stdout, flushed (the demo may run under a pipe)."""
    print(f'[ne-dynamics-demo] {message}', flush=True)


def _find_config(relative):
    """Path of a file shipped in the package's share directory, or None."""
    from ne_dynamics_ros.resources import find_resource
    try:
        return find_resource(relative)
    except FileNotFoundError:
        return None
    except OSError:
        # ament_index_python raises a plain OSError when AMENT_PREFIX_PATH is unset (a
        # plain virtual environment); look where pip and a checkout put the files.
        for base in (pathlib.Path(sys.prefix) / 'share' / 'ne_dynamics_ros',
                     pathlib.Path(__file__).resolve().parent.parent):
            if (base / relative).is_file():
                return base / relative
        return None


def _read_node_parameters(params_file):
    """``computed_torque_node``'s ``ros__parameters`` from a YAML file ({} if none)."""
    if params_file is None:
        return {}
    import yaml
    with open(params_file, encoding='utf-8') as stream:
        content = yaml.safe_load(stream) or {}
    for key, value in content.items():
        if key.strip('/').split('/')[-1] in ('computed_torque_node', '**'):
            return dict((value or {}).get('ros__parameters', {}))
    return {}


class Setup:
    """Everything the run needs, resolved from the command line and the package's config."""

    def __init__(self, args):
        self.args = args
        known = args.robot in ('puma560', 'ur5e')
        if known:
            self.robot = args.robot
            self.urdf_path = _find_config(f'config/{args.robot}.urdf')
            if self.urdf_path is None:
                raise DemoError(f'the {args.robot} URDF (config/{args.robot}.urdf) is not '
                                'installed with the package', EXIT_USAGE)
            # a simulated UR5e needs the full computed torque (config/ur5e_sim.yaml); the
            # real arm's config/ur5e.yaml leaves gravity to the UR controller
            config = ('ur5e_sim' if args.robot == 'ur5e' and args.arm == 'sim'
                      else args.robot)
            self.params_file = _find_config(f'config/{config}.yaml')
        else:
            self.robot = pathlib.Path(args.robot).stem
            self.urdf_path = pathlib.Path(args.robot)
            if not self.urdf_path.is_file():
                raise DemoError(f'URDF not found: {args.robot} (give --robot puma560, ur5e '
                                'or the path of a URDF file)', EXIT_USAGE)
            self.params_file = None
        self.urdf_path = pathlib.Path(self.urdf_path).resolve()
        self.node_parameters = _read_node_parameters(self.params_file)

        from ne_dynamics_ros.errors import ModelError
        from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm
        try:
            probe = SimulatedArm(str(self.urdf_path))
        except ModelError as exc:
            raise DemoError(f'cannot use {self.urdf_path}: {exc}', EXIT_USAGE) from exc
        self.joint_names = probe.joint_names
        n = len(self.joint_names)
        armature = self.node_parameters.get('armature') or [0.0] * n
        if args.no_armature:
            armature = [0.0] * n
        if len(armature) != n:
            raise DemoError(f'{self.params_file}: armature has {len(armature)} values for '
                            f'{n} joints', EXIT_USAGE)
        self.armature = [float(a) for a in armature]
        # the plant's own armature, damping and dry friction (the controller is not told)
        self.plant_armature = self._per_joint(args.plant_armature, self.armature,
                                              '--plant-armature')
        self.plant_damping = self._per_joint(args.plant_damping, [0.0] * n, '--plant-damping')
        self.plant_friction = self._per_joint(args.plant_friction, [0.0] * n,
                                              '--plant-friction')

        start_deg, goal_deg = self._default_motion(probe)
        start_deg = args.start if args.start is not None else start_deg
        goal_deg = args.goal if args.goal is not None else goal_deg
        for label, values in (('--start', start_deg), ('--goal', goal_deg)):
            if len(values) != n:
                raise DemoError(f'{label} needs {n} values (degrees) for {self.joint_names}, '
                                f'got {len(values)}', EXIT_USAGE)
        self.start = np.radians(start_deg)
        self.goal = np.radians(goal_deg)
        self.is_lee_experiment = self.robot == 'puma560'
        # Lee et al.'s bound (001 section 5) is the goal on the shipped arms
        self.bound = LEE_BOUND_RAD if args.robot in ('puma560', 'ur5e') else None
        self.t_start = args.start_time
        self.t_end = args.start_time + args.duration + args.settle
        # the controller's model: the URDF and armature above unless identified ones
        self.controller_urdf = self.urdf_path
        self.controller_armature = list(self.armature)
        self.identified_params = None   # the YAML of ne-dynamics identify, when loaded
        self.excitation = None          # (file, periods, move duration, period) when set

    def _per_joint(self, values, default, option):
        """One value for every joint or one per joint (None: ``default``)."""
        if values is None:
            return list(default)
        n = len(self.joint_names)
        if len(values) == 1:
            return values * n
        if len(values) != n:
            raise DemoError(f'{option} needs 1 or {n} values for {self.joint_names}, got '
                            f'{len(values)}', EXIT_USAGE)
        return list(values)

    def use_excitation(self, path, periods, move, period):
        """Make this run an excitation run: a move to the rest pose, then the periods."""
        self.excitation = (str(path), int(periods), float(move), float(period))
        self.t_end = self.t_start + move + periods * period + 0.5

    def use_identified(self, urdf, params):
        """Make the controller load the identified URDF and parameter YAML, as a user does.

        The YAML (armature, damping, friction, friction_compensation) is a second
        ``--params-file`` after the robot's config, as in ``ros2 launch ... params_file:=``.
        """
        self.controller_urdf = pathlib.Path(urdf).resolve()
        self.identified_params = pathlib.Path(params).resolve()

    def _default_motion(self, probe):
        if self.robot == 'puma560' and self.args.robot == 'puma560':
            return LEE_START_DEG, LEE_GOAL_DEG
        if self.robot == 'ur5e' and self.args.robot == 'ur5e':
            return UR5E_START_DEG, UR5E_GOAL_DEG
        # Any other arm: from zero (or the nearest limit) 30 degrees towards the upper limit.
        model = probe.model
        lower = np.degrees(model.lowerPositionLimit[[j.idx_q for j in model.joints[1:]]])
        upper = np.degrees(model.upperPositionLimit[[j.idx_q for j in model.joints[1:]]])
        start = np.clip(0.0, lower, upper)
        goal = np.minimum(start + 30.0, upper)
        return start.tolist(), goal.tolist()


# -- ROS side ---------------------------------------------------------------------------

def _domain_id():
    """ROS_DOMAIN_ID from the environment, else one derived from the process id."""
    value = os.environ.get('ROS_DOMAIN_ID', '').strip()
    if value:
        try:
            return int(value)
        except ValueError:
            raise DemoError(f'ROS_DOMAIN_ID={value!r} is not an integer', EXIT_USAGE) from None
    # Fast DDS accepts domain ids up to 232; stay clear of the low ones people use.
    return random.SystemRandom().randint(101, 230)


def _stamp(msg):
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


class Run:
    """Brings the nodes up on one executor, drives the experiment, keeps the records."""

    def __init__(self, setup):
        self.setup = setup
        self.args = setup.args
        self.states = {}          # stamp -> (q, qd, effort); republished states collapse
        self.tracking = {}        # stamp -> (e, ed, tau) as the controller reports them
        self.commands = 0
        self.last_state_wall = None
        self.sim = None
        self.recorder = None
        self.domain_id = None
        self.start_stamp = 0.0

    # Recorder callbacks (a plain node: stamps carry the time, no clock needed).
    def _on_state(self, msg):
        index = {name: i for i, name in enumerate(msg.name)}
        try:
            order = [index[name] for name in self.setup.joint_names]
        except KeyError:
            return
        pick = (lambda values: np.asarray(values, dtype=float)[order]
                if len(values) == len(msg.name) else np.full(len(order), np.nan))
        self.states[_stamp(msg)] = (pick(msg.position), pick(msg.velocity), pick(msg.effort))
        self.last_state_wall = time.monotonic()

    def _on_tracking(self, msg):
        self.tracking[_stamp(msg)] = (np.asarray(msg.position), np.asarray(msg.velocity),
                                      np.asarray(msg.effort))

    def _on_command(self, msg):
        self.commands += 1

    def execute(self):
        """Run the experiment; returns the wall time taken. Raises DemoError."""
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
        domain_id = _domain_id()
        self.domain_id = domain_id
        log(f'ROS_DOMAIN_ID={domain_id}, discovery range '
            f'{os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"]}')
        context = rclpy.context.Context()
        rclpy.init(context=context, domain_id=domain_id)
        executor = SingleThreadedExecutor(context=context)
        nodes = []
        wall_start = time.monotonic()
        try:
            self._bring_up(context, executor, nodes)
            self._drive(executor)
        finally:
            for node in nodes:
                executor.remove_node(node)
                node.destroy_node()
            executor.shutdown()
            rclpy.try_shutdown(context=context)
        return time.monotonic() - wall_start

    def _spin_until(self, executor, condition, timeout, what, exit_code):
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise DemoError(what, exit_code)
            self._spin_once(executor)

    @staticmethod
    def _spin_once(executor):
        try:
            executor.spin_once(timeout_sec=0.05)
        except (KeyboardInterrupt, DemoError):
            raise
        except Exception as exc:  # a node's callback raised: report it, do not hang
            raise DemoError(f'a node died while running: {type(exc).__name__}: {exc}',
                            EXIT_CRASH) from exc

    def _bring_up(self, context, executor, nodes):
        from rclpy.node import Node
        from rclpy.parameter import Parameter
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        setup, args = self.setup, self.args
        lockstep = args.arm == 'sim'
        recorder = Node('ne_dynamics_demo_recorder', context=context)
        nodes.append(recorder)
        recorder.create_subscription(JointState, '/joint_states', self._on_state, 100)
        recorder.create_subscription(Float64MultiArray, '/effort_controller/commands',
                                     self._on_command, 100)
        recorder.create_subscription(JointState, '/computed_torque_node/tracking_error',
                                     self._on_tracking, 100)
        executor.add_node(recorder)

        controller_overrides = [
            Parameter('urdf_path', value=str(setup.controller_urdf)),
            Parameter('robot_description', value=''),
            Parameter('joints', value=list(setup.joint_names)),
            Parameter('kp', value=[float(args.kp)] * len(setup.joint_names)),
            Parameter('kd', value=[float(args.kd)] * len(setup.joint_names)),
            Parameter('use_sim_time', value=lockstep),
        ]
        if setup.identified_params is None:
            controller_overrides.append(
                Parameter('armature', value=list(setup.controller_armature)))
        if setup.is_lee_experiment:
            # Lee et al.'s start (joint 3 at 90 deg) lies outside RTB's joint 3 range
            # [-225, 45] deg that config/puma560.urdf carries (their joint zeros differ);
            # the simulated arm has no stops, so the range is not a plausibility bound here.
            controller_overrides.append(Parameter('position_limit_margin', value=math.inf))
        if lockstep:
            # The arm is held at t = 0 (no new states) while the trajectory is delivered;
            # a steady-clock state timeout would fire then. Lockstep cannot go stale.
            controller_overrides.append(Parameter('state_timeout', value=float(args.timeout)))
        files = [f for f in (setup.params_file, setup.identified_params) if f is not None]
        cli_args = (['--ros-args'] + [a for f in files for a in ('--params-file', str(f))]
                    if files else None)
        try:
            from ne_dynamics_ros.nodes.computed_torque_node import ComputedTorqueNode
            controller = ComputedTorqueNode(context=context, cli_args=cli_args,
                                            parameter_overrides=controller_overrides)
        except (Exception, SystemExit) as exc:  # its own configuration errors, or ImportError
            raise DemoError(f'computed_torque_node could not start: {type(exc).__name__}: '
                            f'{exc}', EXIT_START) from exc
        nodes.append(controller)
        executor.add_node(controller)

        if lockstep:
            from ne_dynamics_ros.nodes.sim_arm_node import SimArmConfigError, SimArmNode
            sim_overrides = [
                Parameter('urdf_path', value=str(setup.urdf_path)),
                Parameter('joints', value=list(setup.joint_names)),
                Parameter('armature', value=list(setup.plant_armature)),
                Parameter('payload_mass', value=float(args.payload)),
                Parameter('joint_friction', value=[float(args.friction)]),
                Parameter('damping', value=list(setup.plant_damping)),
                Parameter('friction', value=list(setup.plant_friction)),
                Parameter('plant', value=args.plant),
                Parameter('initial_positions', value=setup.start.tolist()),
                Parameter('publish_rate', value=float(args.rate)),
                Parameter('integration_rate', value=float(args.integration_rate)),
                Parameter('lockstep', value=True),
            ]
            try:
                self.sim = SimArmNode(context=context, parameter_overrides=sim_overrides)
            except SimArmConfigError as exc:
                raise DemoError(f'sim_arm_node could not start: {exc}', EXIT_START) from exc
            self.sim.run_until(0.0)   # hold at t = 0 until the trajectory is in place
            nodes.append(self.sim)
            executor.add_node(self.sim)
            engine = (f'Pinocchio, RK4 at {args.integration_rate:g} Hz'
                      if args.plant == 'pinocchio' else
                      f'MuJoCo, {self.sim.arm.integrator} at {self.sim.arm.timestep * 1e3:g} ms')
            log(f'simulated arm: {setup.robot} ({setup.urdf_path.name}) on {engine}, payload '
                f'{args.payload:g} kg at {self.sim.arm.payload_link}, friction '
                f'{args.friction:g} N m s/rad, plant damping {setup.plant_damping} N m s/rad, '
                f'dry friction {setup.plant_friction} N m, armature {setup.plant_armature}, '
                f'lockstep at {args.rate:g} Hz')

        self._spin_until(
            executor, lambda: bool(self.states), args.timeout,
            f'no /joint_states from the arm within {args.timeout:g} s'
            + ('' if lockstep else ' (is the external arm running, on this ROS_DOMAIN_ID?)'),
            EXIT_NO_STATES)
        log('arm is publishing /joint_states')
        self._spin_until(
            executor, lambda: self.commands > 0, args.timeout,
            f'computed_torque_node published no effort command within {args.timeout:g} s '
            'of receiving joint states', EXIT_NO_COMMANDS)
        log('computed_torque_node is publishing /effort_controller/commands')
        self.recorder = recorder
        self._check_no_cross_talk()

        from ne_dynamics_ros.nodes.trajectory_source_node import TrajectorySourceNode
        if setup.excitation is not None:
            path, periods, move, _ = setup.excitation
            motion = [Parameter('profile', value='excitation'), Parameter('file', value=path),
                      Parameter('periods', value=periods),
                      Parameter('duration', value=move)]
        else:
            motion = [Parameter('goal', value=setup.goal.tolist()),
                      Parameter('duration', value=float(args.duration)),
                      Parameter('profile', value=args.profile)]
        source = TrajectorySourceNode(context=context, parameter_overrides=[
            Parameter('joint_names', value=list(setup.joint_names)),
            Parameter('start', value=setup.start.tolist()),
            Parameter('sample_period', value=1.0 / args.rate),
            Parameter('start_time', value=setup.t_start if lockstep else 0.0),
        ] + motion)
        nodes.append(source)
        executor.add_node(source)
        self._spin_until(executor, lambda: source.trajectory is not None, args.timeout,
                         'nobody subscribed to /computed_torque_node/joint_trajectory within '
                         f'{args.timeout:g} s', EXIT_START)
        # the controller prepares trajectories on a thread of its own: wait until it is in,
        # publishing again every RESEND_PERIOD should a message have been lost to discovery
        deadline = time.monotonic() + args.timeout
        resend = time.monotonic() + RESEND_PERIOD
        while controller.accepted_trajectories < 1:
            now = time.monotonic()
            if now > deadline:
                raise DemoError('the controller did not accept the trajectory within '
                                f'{args.timeout:g} s (see its warnings)', EXIT_START)
            if now > resend:
                log('the trajectory has not arrived yet: publishing it again')
                source.publisher.publish(source.trajectory)
                resend = now + RESEND_PERIOD
            self._spin_once(executor)
        if setup.excitation is not None:
            log(f'trajectory sent: excitation, {len(source.trajectory.points)} points '
                f'({setup.t_end - setup.t_start:g} s)')
        else:
            log(f'trajectory sent: {args.duration:g} s {args.profile}, '
                f'{len(source.trajectory.points)} points, from '
                f'{np.round(np.degrees(setup.start), 3).tolist()} deg to '
                f'{np.round(np.degrees(setup.goal), 3).tolist()} deg')

    def _check_no_cross_talk(self):
        """Refuse to run when another process publishes on our topics (same domain).

        A stranger's joint states or effort commands would be answered or applied in
        lockstep and silently corrupt the experiment.
        """
        for topic in ('/joint_states', '/effort_controller/commands'):
            if topic == '/joint_states' and self.sim is None:
                continue
            count = self.recorder.count_publishers(topic)
            if count > 1:
                raise DemoError(
                    f'{count} publishers on {topic} on ROS_DOMAIN_ID={self.domain_id}: another '
                    'ROS 2 process uses this domain; set ROS_DOMAIN_ID to a free one',
                    EXIT_START)

    def _drive(self, executor):
        setup, args = self.setup, self.args
        if self.sim is not None:
            self.sim.run_until(setup.t_end)
            start_stamp = 0.0
        else:
            start_stamp = max(self.states)
        end_stamp = start_stamp + setup.t_end
        log(f'running {setup.t_end:g} s of simulated time '
            f'(motion {setup.t_start:g}..{setup.t_start + args.duration:g} s)')
        next_report = start_stamp
        while True:
            latest = max(self.states)
            if latest >= end_stamp - 0.5 / args.rate:
                break
            if latest >= next_report:
                log(f't = {latest - start_stamp:6.2f} s of {setup.t_end:g} s, '
                    f'{len(self.states)} samples, {self.commands} commands')
                next_report += 0.5
                self._check_no_cross_talk()
            if time.monotonic() - self.last_state_wall > args.timeout:
                raise DemoError(f'the arm stopped publishing /joint_states at t = '
                                f'{latest - start_stamp:.3f} s (nothing for {args.timeout:g} s;'
                                ' did the controller stop answering?)', EXIT_NO_STATES)
            self._spin_once(executor)
        self.start_stamp = start_stamp


# -- analysis and outputs ---------------------------------------------------------------

def analyse(setup, run):
    """Time series and per-joint figures from the recorded messages."""
    args = setup.args
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
        q_d = evaluate(args.profile, t - setup.t_start, setup.start, setup.goal,
                       args.duration)[0]
        error = q_d - q
        error_source = 'closed-form profile at each state stamp minus measured q'
    else:
        error = reported
        q_d = q + reported
        error_source = "computed_torque_node's ~/tracking_error"
    mismatch = np.abs(error - reported)
    return {
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
        'experiment': ('Lee, Chung, Mudge & Turney, 001 section 5' if setup.is_lee_experiment
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
        'kp': args.kp,
        'kd': args.kd,
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
    if identified is not None:
        summary['identified'] = identified
    _write(path, json.dumps(summary, indent=2) + '\n', setup)
    return summary


def is_lee_default(args):
    """Tell whether the options are those of Lee et al.'s experiment."""
    return (args.duration == 3.0 and args.rate == 100.0 and args.kp == 100.0
            and args.kd == 20.0 and args.profile == 'quintic' and args.start is None
            and args.goal is None and not args.no_armature)


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
    from ne_dynamics_ros.identification.recording import write_bag
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
    from ne_dynamics_ros.identification.pipeline import drive_errors

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


def identify_and_rerun(args, output):
    """Excite the arm, record it, identify, and run the experiment with the identified model.

    Returns (setup, run, result, identification facts for summary.json).
    """
    import yaml
    from ne_dynamics_ros import load_model
    from ne_dynamics_ros.dynamics.urdf_import import read_urdf_text
    from ne_dynamics_ros.errors import IdentificationError, ModelError, RecordingError
    from ne_dynamics_ros.identification.excitation import design_excitation, excitation_gains
    from ne_dynamics_ros.identification.pipeline import identify_model
    from ne_dynamics_ros.identification.recording import read_bag
    from ne_dynamics_ros.tools.files import OutputError, write_outputs
    nominal = Setup(args)
    urdf_text = read_urdf_text(str(nominal.urdf_path))
    model = load_model(urdf_text, armature=nominal.armature)
    log(f'identification: optimising a {args.excitation_duration:g} s excitation trajectory')
    try:
        kp, kd = excitation_gains(model)
    except ModelError as exc:
        raise DemoError(f'identification: {exc}', EXIT_USAGE) from exc
    excitation, condition = design_excitation(model, args.excitation_duration, harmonics=4,
                                              starts=1, iterations=150)
    excitation = excitation.with_gains(kp, kd)
    excitation_file = output / 'excitation.yaml'
    urdf_path, params = output / 'identified.urdf', output / 'identified.yaml'
    inputs = [nominal.urdf_path, nominal.params_file]
    try:
        write_outputs([(excitation_file, yaml.safe_dump(excitation.to_dict(), sort_keys=False))],
                      inputs)
    except OutputError as exc:
        raise DemoError(str(exc), EXIT_USAGE) from exc
    log(f'identification: condition number {condition:.2f}; playing it on the arm '
        f'(payload {args.payload:g} kg) under the nominal feedforward + joint PD, kp '
        f'{np.round(kp, 3).tolist()} N m/rad, kd {np.round(kd, 3).tolist()} N m s/rad')
    excite = Setup(args)
    excite.use_excitation(excitation_file, args.excitation_periods, 2.0, excitation.duration)
    excite_run = Run(excite)
    excite_run.execute()
    bag = write_run_bag(output / 'excitation_bag', excite, excite_run)
    log(f'identification: recorded {len(excite_run.states)} joint states to {bag}')
    try:
        recording = read_bag(bag, model.joint_names, progress=False)
        # each state carries the effort held over the sample before it (ros2_control's
        # read-update-write): half a sample behind the state's central differences;
        # the same pipeline as ne-dynamics identify
        identified = identify_model(urdf_text, model, recording, effort_delay=0.5 / args.rate,
                                    header=f'identified from {bag}')
        write_outputs([(urdf_path, identified.urdf), (params, identified.params_yaml)],
                      inputs)
    except (ModelError, RecordingError, IdentificationError, OutputError) as exc:
        raise DemoError(f'identification failed: {exc}', EXIT_CRASH) from exc
    found, values = identified.result, identified.values
    consistent = identified.consistent
    for warning in found.warnings:
        log(f'identification: warning: {warning}')
    print_drive_table(nominal, model, found, values)
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
        'consistent_exact': consistent.exact, 'wall_time_s': round(wall, 3),
        'identified_armature': values['armature'], 'identified_damping': values['damping'],
        'identified_friction': values['friction'],
        'armature_identifiable': [f'Ia{j + 1}' in found.names for j in range(model.n)],
        'identification_warnings': list(found.warnings),
        'max_abs_error_rad': [float(v) for v in result['max_abs_error_rad']],
        'rms_error_rad': [float(v) for v in result['rms_error_rad']],
        'below_bound': (None if rerun.bound is None else
                        [bool(v < rerun.bound) for v in result['max_abs_error_rad']]),
    }
    return rerun, run, result, facts
