"""The experiment's setup: options and the package's config resolved into a :class:`Setup`.

The robot's URDF and ``computed_torque_node`` parameters come from the package's share
directory (:func:`ne_dynamics_ros.resources.find_resource`); the motion is that of Lee et
al. (1982), §5, on the PUMA 560, a comparable one on the UR5e,
30 degrees towards the upper limits on any other arm. The exit codes and
:class:`DemoError` are the demo's (see :mod:`ne_dynamics_ros.tools.experiment`).
"""
import pathlib
import sys

import numpy as np

from ne_dynamics_ros.tools.files import read_node_parameters

LEE_BOUND_RAD = 4.26e-4
LEE_START_DEG = (90.0, 0.0, 90.0, 0.0, 0.0, 0.0)
LEE_GOAL_DEG = (45.0, 30.0, 0.0, 45.0, 60.0, 90.0)
UR5E_START_DEG = (0.0, -90.0, 90.0, -90.0, -90.0, 0.0)
UR5E_GOAL_DEG = (45.0, -60.0, 60.0, -120.0, -60.0, 90.0)
#: Where a picked load sits in the payload link's frame, m.
PICK_COM = (0.0, 0.0, 0.05)

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
        self.node_parameters = read_node_parameters(self.params_file)

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
        self.armature = [float(a) for a in self._per_joint(args.armature, armature,
                                                           '--armature')]
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
        # the bound of Lee et al. (1982), §5, is the goal on the shipped arms
        self.bound = LEE_BOUND_RAD if args.robot in ('puma560', 'ur5e') else None
        self.t_start = args.start_time
        self.t_end = args.start_time + args.duration + args.settle
        #: pick and place: (load kg, cycles, dwell s), or None (one move)
        self.pick_and_place = None
        if args.pick_and_place > 0:
            self.pick_and_place = (float(args.pick_and_place), int(args.cycles),
                                   float(args.dwell))
            # cycles of rest (the load picked), move, rest (released), move back
            self.t_end = args.cycles * self.period + args.settle
        self.kp, self.kd = [float(args.kp)] * n, [float(args.kd)] * n
        if args.rule_gains:
            self.kp, self.kd = self._rule_gains()
        # the controller's model: the URDF and armature above unless identified ones
        self.controller_urdf = self.urdf_path
        self.controller_armature = list(self.armature)
        self.identified_params = None   # the YAML of ne-dynamics identify, when loaded
        self.excitation = None          # (file, periods, move duration, period) when set

    @property
    def period(self):
        """A pick-and-place cycle, s: two moves and two rests."""
        return 2.0 * (self.args.duration + self.args.dwell)

    def desired(self, t):
        """Return the reference positions (N, n) at times ``t`` (N,) s of the run's clock.

        The profile from ``start`` to ``goal`` from ``t_start`` on, or the cycles of
        :func:`~ne_dynamics_ros.control.reference.profiles.evaluate_cycles` (pick and place).
        """
        from ne_dynamics_ros.control.reference.profiles import evaluate, evaluate_cycles
        args = self.args
        t = np.asarray(t, dtype=float) - self.t_start
        if self.pick_and_place is None:
            return evaluate(args.profile, t, self.start, self.goal, args.duration)[0]
        return evaluate_cycles(args.profile, t, self.start, self.goal, args.duration,
                               self.pick_and_place[1], self.pick_and_place[2])[0]

    def moving(self, t):
        """Mask (N,) of the times ``t`` within a move of the pick-and-place cycles."""
        t = np.asarray(t, dtype=float) - self.t_start
        phase = t % self.period
        duration, dwell = self.args.duration, self.args.dwell
        inside = (t >= 0) & (t < self.pick_and_place[1] * self.period)
        back = (phase >= duration + dwell) & (phase < 2 * duration + dwell)
        return inside & ((phase < duration) | back)

    def payload_schedule(self):
        """``sim_arm_node``'s flat ``payload_schedule`` of the pick-and-place cycles.

        :meth:`~ne_dynamics_ros.simulation.payload_schedule.PayloadSchedule.pick_and_place`
        with the load ``PICK_COM`` m from the link origin; the plant's own ``--payload``
        (at the link origin) stays.
        """
        from ne_dynamics_ros.simulation.payload_schedule import PayloadSchedule
        load, cycles, dwell = self.pick_and_place
        return PayloadSchedule.pick_and_place(cycles, self.args.duration, dwell, load,
                                              PICK_COM, float(self.args.payload)).flat()

    def _rule_gains(self):
        """kp, kd of the gain rule (:mod:`ne_dynamics_ros.control.laws.gains`) at the rate."""
        from ne_dynamics_ros import load_model
        from ne_dynamics_ros.control.laws.gains import recommended_gains
        from ne_dynamics_ros.errors import ModelError
        try:
            model = load_model(str(self.urdf_path), armature=self.armature)
            gains = recommended_gains(model, self.args.rate)
        except (ModelError, ValueError) as exc:
            raise DemoError(f'cannot size gains for {self.urdf_path}: {exc}',
                            EXIT_USAGE) from exc
        return gains.kp.tolist(), gains.kd.tolist()

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
        """Make this run an excitation run: a move to the rest pose, then the periods.

        Without pick and place: the arm is identified unloaded.
        """
        self.excitation = (str(path), int(periods), float(move), float(period))
        self.pick_and_place = None
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


def is_lee_default(args):
    """Tell whether the options are those of Lee et al.'s experiment."""
    return (not args.pick_and_place and args.duration == 3.0 and args.rate == 100.0
            and args.kp == 100.0
            and args.kd == 20.0 and args.profile == 'quintic' and args.start is None
            and args.goal is None and not args.no_armature and args.armature is None)
