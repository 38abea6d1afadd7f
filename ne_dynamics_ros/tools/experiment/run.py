"""The experiment's run: the nodes brought up on one executor, driven in lockstep over DDS.

:class:`Run` brings up, as named steps, the recorder, the controller
(``computed_torque_node``), the plant (``sim_arm_node``, lockstep) and the trajectory
delivery (``trajectory_source``), then drives the run to its end and keeps the records.
"""
import math
import os
import random
import time

import numpy as np

from ne_dynamics_ros.control.laws import LAW_TOPICS
from ne_dynamics_ros.tools.experiment.setup import (
    DemoError, EXIT_CRASH, EXIT_NO_COMMANDS, EXIT_NO_STATES, EXIT_START, EXIT_USAGE, log,
    RESEND_PERIOD)


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
        self.payload = []         # (stamp of the latest state, estimated load mass kg)
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

    def _on_payload(self, msg):
        # the load's messages have no stamp: the latest state's
        if self.states:
            self.payload.append((max(self.states), float(msg.m)))

    def _on_command(self, msg):
        self.commands += 1

    def execute(self):
        """Run the experiment; returns the wall time taken. Raises DemoError."""
        import rclpy
        from ne_dynamics_ros.nodes.computed_torque.program import make_executor

        os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
        domain_id = _domain_id()
        self.domain_id = domain_id
        log(f'ROS_DOMAIN_ID={domain_id}, discovery range '
            f'{os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"]}')
        context = rclpy.context.Context()
        rclpy.init(context=context, domain_id=domain_id)
        # rclpy's C++ EventsExecutor, as the node's own main: lockstep runs spend most of
        # their CPU in the executor (the demo's default run 3.3 s of CPU on it against 4.6 s
        # on the SingleThreadedExecutor, test/system/test_demo.py 76 s against 107 s,
        # 2026-12-07, the same figures either way)
        executor = make_executor('events', context)
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
        """Bring the nodes up in order; each step adds its nodes to ``nodes``."""
        self.recorder = self._start_recorder(context, executor, nodes)
        controller = self._start_controller(context, executor, nodes)
        if self.args.arm == 'sim':
            self._start_plant(context, executor, nodes)
        self._wait_for_the_loop(executor)
        self._deliver_trajectory(context, executor, nodes, controller)

    def _start_recorder(self, context, executor, nodes):
        """Start the recorder: states, effort commands and the controller's tracking error."""
        from rclpy.node import Node
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        recorder = Node('ne_dynamics_demo_recorder', context=context)
        nodes.append(recorder)
        recorder.create_subscription(JointState, '/joint_states', self._on_state, 100)
        recorder.create_subscription(Float64MultiArray, '/effort_controller/commands',
                                     self._on_command, 100)
        recorder.create_subscription(JointState, '/computed_torque_node/tracking_error',
                                     self._on_tracking, 100)
        try:
            from geometry_msgs.msg import Inertia
        except ImportError:         # the node runs without the load's output then, as here
            pass
        else:
            # the load a law learns: the law's own output of that kind (its declaration)
            learned = next(topic.name for _, topic in LAW_TOPICS
                           if topic.output and topic.kind == 'inertia')
            recorder.create_subscription(Inertia, learned.replace('~', '/computed_torque_node'),
                                         self._on_payload, 100)
        executor.add_node(recorder)
        return recorder

    def _controller_parameters(self):
        """``computed_torque_node``'s overrides and ``--params-file`` arguments."""
        from rclpy.parameter import Parameter
        setup, args = self.setup, self.args
        lockstep = args.arm == 'sim'
        overrides = [
            Parameter('urdf_path', value=str(setup.controller_urdf)),
            Parameter('robot_description', value=''),
            Parameter('joints', value=list(setup.joint_names)),
            Parameter('use_sim_time', value=lockstep),
        ]
        if setup.identified_params is None:
            overrides += [Parameter('armature', value=list(setup.controller_armature)),
                          Parameter('kp', value=list(setup.kp)),
                          Parameter('kd', value=list(setup.kd))]
        if args.mode is not None:
            overrides.append(Parameter('mode', value=args.mode))
        # else as a user loads an identified model: its YAML's armature and the gains
        # ne-dynamics identify recommends for it (ne_dynamics_ros.control.laws.gains)
        if setup.is_lee_experiment:
            # Lee et al.'s start (joint 3 at 90 deg) lies outside RTB's joint 3 range
            # [-225, 45] deg that config/puma560.urdf carries (their joint zeros differ);
            # the simulated arm has no stops, so the range is not a plausibility bound here.
            overrides.append(Parameter('position_limit_margin', value=math.inf))
        if lockstep:
            # The arm is held at t = 0 (no new states) while the trajectory is delivered;
            # a steady-clock state timeout would fire then. Lockstep cannot go stale.
            overrides.append(Parameter('state_timeout', value=float(args.timeout)))
            # Nor can a late discovery's pause of the exchange (~0.3 s) cost anything: the
            # plant waits for each command, so the node need not wait 3.5 s for it.
            overrides.append(Parameter('discovery_settle', value=0.5))
        files = [f for f in (setup.params_file, setup.identified_params) if f is not None]
        cli_args = (['--ros-args'] + [a for f in files for a in ('--params-file', str(f))]
                    if files else None)
        return overrides, cli_args

    def _start_controller(self, context, executor, nodes):
        """``computed_torque_node`` with the setup's model, gains and parameter files."""
        overrides, cli_args = self._controller_parameters()
        try:
            from ne_dynamics_ros.nodes.computed_torque_node import ComputedTorqueNode
            controller = ComputedTorqueNode(context=context, cli_args=cli_args,
                                            parameter_overrides=overrides)
        except (Exception, SystemExit) as exc:  # its own configuration errors, or ImportError
            raise DemoError(f'computed_torque_node could not start: {type(exc).__name__}: '
                            f'{exc}', EXIT_START) from exc
        nodes.append(controller)
        executor.add_node(controller)
        return controller

    def _start_plant(self, context, executor, nodes):
        """``sim_arm_node`` in lockstep, held at t = 0 until the trajectory is in place."""
        from rclpy.parameter import Parameter
        from ne_dynamics_ros.nodes.sim_arm_node import SimArmConfigError, SimArmNode
        setup, args = self.setup, self.args
        overrides = [
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
        if setup.pick_and_place is not None:
            overrides.append(Parameter('payload_schedule', value=setup.payload_schedule()))
        try:
            self.sim = SimArmNode(context=context, parameter_overrides=overrides)
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

    def _wait_for_the_loop(self, executor):
        """Wait for the arm's states, then the controller's commands; no cross-talk."""
        args = self.args
        self._spin_until(
            executor, lambda: bool(self.states), args.timeout,
            f'no /joint_states from the arm within {args.timeout:g} s'
            + ('' if self.sim is not None
               else ' (is the external arm running, on this ROS_DOMAIN_ID?)'),
            EXIT_NO_STATES)
        log('arm is publishing /joint_states')
        self._spin_until(
            executor, lambda: self.commands > 0, args.timeout,
            f'computed_torque_node published no effort command within {args.timeout:g} s '
            'of receiving joint states', EXIT_NO_COMMANDS)
        log('computed_torque_node is publishing /effort_controller/commands')
        self._check_no_cross_talk()

    def _start_trajectory_source(self, context, executor, nodes):
        """``trajectory_source`` with the setup's motion (or excitation)."""
        from rclpy.parameter import Parameter
        from ne_dynamics_ros.nodes.trajectory_source_node import TrajectorySourceNode
        setup, args = self.setup, self.args
        if setup.excitation is not None:
            path, periods, move, _ = setup.excitation
            motion = [Parameter('profile', value='excitation'), Parameter('file', value=path),
                      Parameter('periods', value=periods),
                      Parameter('duration', value=move)]
        else:
            motion = [Parameter('goal', value=setup.goal.tolist()),
                      Parameter('duration', value=float(args.duration)),
                      Parameter('profile', value=args.profile)]
            if setup.pick_and_place is not None:
                motion += [Parameter('cycles', value=setup.pick_and_place[1]),
                           Parameter('dwell', value=setup.pick_and_place[2])]
        source = TrajectorySourceNode(context=context, parameter_overrides=[
            Parameter('joint_names', value=list(setup.joint_names)),
            Parameter('start', value=setup.start.tolist()),
            Parameter('sample_period', value=1.0 / args.rate),
            Parameter('start_time', value=setup.t_start if self.sim is not None else 0.0),
        ] + motion)
        nodes.append(source)
        executor.add_node(source)
        return source

    def _deliver_trajectory(self, context, executor, nodes, controller):
        """Publish the motion and wait until the controller accepted it (resending)."""
        setup, args = self.setup, self.args
        source = self._start_trajectory_source(context, executor, nodes)
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
        if setup.pick_and_place is None:
            log(f'running {setup.t_end:g} s of simulated time '
                f'(motion {setup.t_start:g}..{setup.t_start + args.duration:g} s)')
        else:
            load, cycles, dwell = setup.pick_and_place
            log(f'running {setup.t_end:g} s of simulated time: {cycles} cycles of pick and '
                f'place ({load:g} kg picked at rest, {dwell:g} s, carried {args.duration:g} s, '
                'released, moved back)')
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
