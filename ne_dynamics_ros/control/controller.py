"""The computed-torque controller: every decision of ``computed_torque_node``, without ROS.

Pure module (no rclpy, no message types). It follows ros2_control's controllers
(``controller_interface``): the object is configured once with a model and settings,
can be reconfigured at run time, and its hot path is one call, :meth:`update`, which
takes one measured joint state and answers with the effort command (or with the reason
why it does not command). The ROS node around it (:mod:`ne_dynamics_ros.nodes.
computed_torque_node`) only declares parameters, converts messages to arrays and back,
publishes and logs.

What it decides
---------------
* **The law** (:mod:`ne_dynamics_ros.control.laws`): computed torque (Lee, Chung, Mudge &
  Turney 1982, eqs 4.1, 4.4), feedforward + PD, or gravity
  compensation; optional friction compensation; every effort checked finite and clamped
  to its limit, in the command order :attr:`joints`.
* **The reference**: a :class:`~ne_dynamics_ros.control.trajectory.Trajectory`, replaced
  as a whole by :meth:`set_trajectory` (a rejected one leaves the previous one in place),
  sampled at the state's stamp when that stamp is on the controller's clock (within
  :data:`STAMP_TOLERANCE_NS` of ``now``), else at ``now``.
* **Holding**: after activation, a cancel, a state timeout and leaving gravity
  compensation, the reference becomes "hold the position measured" (a new
  :class:`~ne_dynamics_ros.control.run_state.RunState`: what one run changes is one
  object, replaced whole).
* **What is measured** (:mod:`ne_dynamics_ros.control.measured_state`): the controlled
  joints of a state, whether they are believable (a glitch is dropped with the reason),
  and velocities estimated where a state has none.
* **State timeout**: :meth:`check_timeout` reports when no valid state has arrived for
  ``state_timeout`` seconds of the *steady* clock; the goal is aborted and the command is
  what ``state_loss_policy`` holds for ``state_loss_hold`` seconds (by default the model's
  gravity at the last measured position, so that a pause does not drop the arm), then all
  zeros, for the reason given in the node's documentation (an effort controller keeps
  applying its last command forever; zero effort adds no energy). Trajectories are refused
  meanwhile, and the next valid state resumes by holding the position measured then.

Times are integer nanoseconds, as ``builtin_interfaces/Time`` carries them: ``now_ns`` on
the controller's (ROS) clock, which may be simulated time; ``stamp_ns`` the state's
``header.stamp`` (0: none); ``steady_ns`` a monotonic clock for the timeout, which keeps
running while simulated time stands still. Internally times are float seconds from the
first ``now_ns`` seen, so they keep sub-microsecond resolution whatever the epoch.

Units: q in rad (m for prismatic joints), qd in rad/s, qdd in rad/s^2, efforts in N*m (N).

Over 600 lines because it is one class whose every public method works under one lock on
one run state, each documented for the node and for scripts; what stands on its own is a
module of its own (:mod:`~ne_dynamics_ros.control.settings`,
:mod:`~ne_dynamics_ros.control.measured_state`, :mod:`~ne_dynamics_ros.control.run_state`,
the laws and the integral action in :mod:`~ne_dynamics_ros.control.laws`).
"""
import threading
from typing import Mapping, Optional, Sequence, Union

import numpy as np

from ne_dynamics_ros.control import parameters, state_loss
from ne_dynamics_ros.control.adaptive_mode import AdaptiveMode
from ne_dynamics_ros.control.contact_mode import ContactMode
from ne_dynamics_ros.control.effort_check import fit_to_limits, stretched_waypoints
from ne_dynamics_ros.control.goals import (GoalEnd, GoalMonitor, GoalStatus, ResultCode,
                                           SegmentTolerances)
from ne_dynamics_ros.control.measured_state import (  # noqa: F401 - the controller's names
    JointStateError, JointStateSample, MAX_POSITION, MAX_STATE_JOINTS, SPEED_FACTOR,
    StateReader)
from ne_dynamics_ros.control.cartesian_law import target_pose, TargetError
from ne_dynamics_ros.control.sensing import Sensing
from ne_dynamics_ros.control.prediction import predict_across_delay, RepeatedStates
from ne_dynamics_ros.control.run_state import (
    Command, NoCommand, PreparedTrajectory, RunState, SkipReason, Timeout)
from ne_dynamics_ros.control.settings import ControllerSettings, DEFAULT_SETTINGS  # noqa: F401
from ne_dynamics_ros.control.law import (
    ComplyLaw, CONTACT_REACTIONS, ContactReaction, LawContext, LawStep, LOAD_CARRYING_MODES,
    make_law)
from ne_dynamics_ros.control.laws import (
    anti_windup, ControlLawConfig, ControlMode, ControlParameterError, integral_step,
    NonFiniteEffortError)
from ne_dynamics_ros.control.trajectory import (
    DesiredState, prepared_waypoints, Trajectory, trajectory_from_points, TrajectoryError,
    TrajectoryPoint, WaypointArrays)
from ne_dynamics_ros.codegen import CompiledDynamics
from ne_dynamics_ros.dynamics.model import load_model
from ne_dynamics_ros.errors import ModelError, StateError

#: A state stamped within this many nanoseconds of ``now`` is taken to be on our clock.
STAMP_TOLERANCE_NS = 500_000_000

#: How the law's inverse dynamics are computed: the generated straight-line program of
#: Renaud (1987) (checked against the recursion when the controller is built) or the
#: recursion.
DYNAMICS_BACKENDS = parameters.DYNAMICS_BACKENDS


class ComputedTorqueController:
    """Computed-torque / feedforward / gravity-compensation controller for one serial chain.

    Args:
        model: a :class:`~ne_dynamics_ros.dynamics.model.RobotModel` (its armature is part
            of the law's model).
        settings: run-time settings: a :class:`ControllerSettings`, or a mapping of plain
            values (see :data:`DEFAULT_SETTINGS`; absent names take the defaults).
        joints: the command order, e.g. the effort controller's ``joints``; must list each
            chain joint exactly once. ``None``: chain order.
        effort_limits: (n,) symmetric limits in chain order, N*m (N), ``inf`` allowed;
            ``None``: the URDF ``<limit effort>`` values.
        dynamics_backend: ``'generated'`` (default): the law's RNEA runs the model's
            generated program (:class:`~ne_dynamics_ros.codegen.CompiledDynamics`,
            checked against the recursion on random states first); ``'recursive'``: the
            recursion itself.

    Raises:
        ControlParameterError: invalid settings, joints, limits or backend (the message
            names which).
        ne_dynamics_ros.errors.ModelError: the generated program disagrees with the
            recursion (then nothing may be commanded with it).

    Lifecycle (as a ros2_control controller's ``on_configure``, ``on_activate``,
    ``on_deactivate``, ``update``): a new controller is *active* and holds the first
    position it measures; :meth:`deactivate` stops commanding (its answer is the zero
    effort to send once, then :meth:`update` answers ``NoCommand(INACTIVE)``);
    :meth:`configure` applies settings while inactive; :meth:`activate` commands again,
    holding the position measured then (or the one given). The hold is one rule
    (a :class:`~ne_dynamics_ros.control.run_state.RunState` without a trajectory): the first
    state after activation, a cancel, a state timeout or leaving gravity
    compensation is held, until a trajectory is installed.

    Threads: :meth:`update`, :meth:`check_timeout`, :meth:`reconfigure`,
    :meth:`install_trajectory` and :meth:`set_trajectory` may be called from different
    threads (the node runs its watchdog and its trajectory preparation on threads of their
    own); each holds an internal lock only for its own short work.
    :meth:`prepare_trajectory`, the expensive part of accepting a trajectory, holds it only
    to read the reference it starts from.
    """

    def __init__(self, model, settings: Union[ControllerSettings, Mapping, None] = None,
                 joints: Optional[Sequence[str]] = None, effort_limits=None,
                 dynamics_backend: str = 'generated', hardware_compensates_gravity=False,
                 hardware_compensates_friction=False, adaptation_link=None):
        self.model = model
        #: Fixed at start-up (a change would jump the command by g(q)): see laws.py.
        self.hardware_compensates_gravity = parameters.check(
            'hardware_compensates_gravity', hardware_compensates_gravity)
        self.hardware_compensates_friction = parameters.check(
            'hardware_compensates_friction', hardware_compensates_friction)
        n = model.n
        self.dynamics_backend = parameters.check('dynamics_backend', dynamics_backend)
        if joints is None:
            joints = list(model.joint_names)
        else:
            joints = list(joints)
            if (not all(isinstance(j, str) for j in joints)
                    or sorted(joints) != sorted(model.joint_names)):
                raise ControlParameterError(
                    f'joints {joints} must list each chain joint {model.joint_names} '
                    'exactly once')
        if effort_limits is None:
            limits = np.array(model.effort_limits, dtype=float)
        else:
            limits = parameters.check('effort_limits', effort_limits, n)
        self.joints = joints
        self.effort_limits = limits
        # None: the command order is the chain order (the usual case), nothing to reorder
        self._command_order = (None if list(joints) == list(model.joint_names) else
                               [model.joint_names.index(j) for j in joints])
        if not isinstance(settings, ControllerSettings):
            settings = ControllerSettings.from_values(settings or {}, n)
        elif (settings.kp.size != n or settings.kd.size != n or settings.ki is None
              or settings.ki.size != n or settings.integral_limit.size != n):
            settings = ControllerSettings.from_values(settings.as_values(), n)
        #: What the law calls for M, C, g: the model, or its generated program.
        self.dynamics = CompiledDynamics(model) if dynamics_backend == 'generated' else model
        #: Reads the measured states: joints, plausibility, velocities (fixed model).
        self._reader = StateReader(model, settings)
        #: The link a load is learned at in adaptive mode (checked now, whatever the mode).
        self.adaptation_link = parameters.check('adaptation_link', adaptation_link or '') \
            or model.tip_link
        try:
            #: Adaptive mode: Slotine & Li's law and what it learned (kept across modes).
            self._adaptive = AdaptiveMode(model, self.adaptation_link)
        except ModelError as err:
            raise ControlParameterError(str(err)) from None
        #: The momentum observer and contact detection (every mode).
        self._contact = ContactMode(model, self.dynamics)
        self._apply(settings)
        self.dropped_joint_states = 0
        self.rejected_trajectories = 0
        #: states that repeated the previous measurement under a newer stamp (sampled
        #: at the measurement's own stamp, :class:`~ne_dynamics_ros.control.prediction.
        #: RepeatedStates`)
        self.repeats = RepeatedStates()
        self._epoch_ns = None
        #: Everything one run changes (:class:`~ne_dynamics_ros.control.run_state.
        #: RunState`): replaced whole on every restart, never reset field by field.
        self._run = RunState(n, sensing=self._new_sensing())
        #: goals ended off the control path (replaced, canceled, deactivated, timed out),
        #: for the node to report: GoalEnd items, oldest first
        self._goal_ends = []
        self._lock = threading.RLock()

    @classmethod
    def from_urdf(cls, urdf, base_link=None, tip_link=None, convention='mdh', armature=None,
                  settings=None, joints=None, effort_limits=None,
                  dynamics_backend='generated', damping=None, friction=None,
                  hardware_compensates_gravity=False, hardware_compensates_friction=False,
                  adaptation_link=None, friction_velocity=None, friction_offset=None):
        """Load the model with :func:`~ne_dynamics_ros.dynamics.model.load_model`, then build.

        Args:
            urdf: URDF XML text or a file path.
            base_link, tip_link, convention, armature, damping, friction: as for
                ``load_model`` (damping and friction replace the URDF's).
            friction_velocity, friction_offset: the identified v_s and offsets of the
                friction, as for ``load_model``.
            settings, joints, effort_limits, dynamics_backend: as for the constructor.
            hardware_compensates_gravity, hardware_compensates_friction: as for the
                constructor.

        Raises:
            ne_dynamics_ros.errors.ModelError: the URDF or the armature is unusable.
            ControlParameterError: invalid settings, joints or limits.
        """
        if convention not in ('dh', 'mdh'):
            raise ControlParameterError(f'convention {convention!r} is not dh or mdh')
        if armature is not None:
            armature = parameters.check('armature', armature)
        damping = parameters.check('damping', damping)
        friction = parameters.check('friction', friction)
        friction_velocity = parameters.check('friction_velocity', friction_velocity)
        friction_offset = parameters.check('friction_offset', friction_offset)
        model = load_model(urdf, base_link=base_link, tip_link=tip_link,
                           convention=convention, armature=armature, damping=damping,
                           friction=friction, friction_velocity=friction_velocity,
                           friction_offset=friction_offset)
        return cls(model, settings, joints=joints, effort_limits=effort_limits,
                   dynamics_backend=dynamics_backend, adaptation_link=adaptation_link,
                   hardware_compensates_gravity=hardware_compensates_gravity,
                   hardware_compensates_friction=hardware_compensates_friction)

    # ---- configuration ------------------------------------------------------------------

    @property
    def n(self) -> int:
        """Number of controlled joints."""
        return self.model.n

    @property
    def active(self) -> bool:
        """Commanding (False after :meth:`deactivate`, until :meth:`activate`)."""
        return self._run.active

    @property
    def trajectory(self) -> Optional[Trajectory]:
        """The reference in force (chain order); None: the next valid state is held."""
        return self._run.trajectory

    @property
    def timed_out(self) -> bool:
        """No valid state for ``state_timeout``: zero effort until one returns."""
        return self._run.timed_out

    def _restart(self, waiting: str):
        """Start a new run, still active: the next valid state is held (``waiting`` says why)."""
        self._run = RunState(self.n, waiting=waiting,
                             last_valid_steady_ns=self._run.last_valid_steady_ns,
                             sensing=self._run.sensing)

    def _new_sensing(self) -> Sensing:
        """Return a fresh :class:`~ne_dynamics_ros.control.sensing.Sensing` (a new activation)."""
        return Sensing.new(self.model.joint_names, self.settings)

    def _apply(self, settings: ControllerSettings):
        self.settings = settings
        self._reader.set_bounds(settings)
        self._integral_gains = (settings.ki.tolist(), settings.integral_limit.tolist())
        self._integrating = bool(np.any(settings.ki))
        self.law = ControlLawConfig(
            mode=settings.mode, kp=settings.kp, kd=settings.kd, gravity=settings.gravity,
            effort_limits=self.effort_limits,
            friction_compensation=settings.friction_compensation,
            coulomb_velocity=settings.coulomb_velocity,
            hardware_compensates_gravity=self.hardware_compensates_gravity,
            hardware_compensates_friction=self.hardware_compensates_friction)
        if settings.mode is ControlMode.ADAPTIVE:
            self._adaptive.apply(settings, np.zeros(3) if self.hardware_compensates_gravity
                                 else settings.gravity)
        self._contact.apply(settings, self.law)
        #: what the run's law is built from (:mod:`~ne_dynamics_ros.control.law`)
        self._context = LawContext(self.model, self.dynamics, self.law, settings,
                                   self._adaptive, self._contact)
        #: the law of the settings (a prototype: each run makes its own)
        self._mode_law = make_law(self._context)

    @property
    def payload_estimate(self):
        """The learned load (adaptive mode) in ``adaptation_link``'s frame, or None.

        ``(mass kg, centre of mass (3,) m, inertia (6,) kg·m² about the centre of mass:
        ixx, ixy, ixz, iyy, iyz, izz)``; None before adaptive mode was first set, or
        with ``adaptation: base``.
        """
        with self._lock:
            return self._adaptive.payload_estimate

    def declare_payload(self, mass: float, com=(0.0, 0.0, 0.0),
                        inertia=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)):
        """Take a load declared by the caller (a gripper closed on it, or let it go).

        In adaptive mode with ``adaptation: payload`` the estimate becomes it at once
        (adaptation goes on from it), so the motion that follows, and the momentum
        observer, carry it without the law's learning transient; in mode
        ``cartesian_impedance`` the law's M, C and g carry it (the stiffness stays true).

        Args:
            mass: kg (0: none). com: (3,) m, in ``adaptation_link``'s frame.
            inertia: (6,) ixx, ixy, ixz, iyy, iyz, izz about the centre of mass, kg·m².

        Raises:
            ControlParameterError: not in mode adaptive or cartesian_impedance with
                ``adaptation: payload``, or the values are not a load (the message says
                which).
        """
        with self._lock:
            settings = self.settings
            carries = settings.mode in LOAD_CARRYING_MODES
            if carries and self._adaptive.law is None and settings.adaptation == 'payload':
                self._adaptive.apply(settings, self._context.config.gravity if not
                                     self.hardware_compensates_gravity else np.zeros(3))
            try:
                taken = carries and self._adaptive.declare_payload(mass, com, inertia)
            except ModelError as err:
                raise ControlParameterError(str(err)) from None
            if not taken:
                raise ControlParameterError(
                    'a declared payload is taken in modes adaptive and cartesian_impedance '
                    f'with adaptation: payload (mode is {settings.mode.value}, adaptation '
                    f'{settings.adaptation})')
            self._contact.declared(self._run.sensing, self._adaptive.law)

    @property
    def contact(self):
        """The contact in force, or None.

        A :class:`~ne_dynamics_ros.control.observer.Contact`: detected, its external
        effort not yet back under 80 % of the threshold.
        """
        return self._run.sensing.detector.contact

    @property
    def contact_reaction_text(self) -> str:
        """Say what ``contact.reaction`` does (the node logs it with a contact)."""
        return CONTACT_REACTIONS[ContactReaction(self._contact.reaction)][1]

    @property
    def external_effort_wanted(self) -> bool:
        """Compute the observer's r on every state while contact detection is off too.

        True (the default): each :class:`~ne_dynamics_ros.control.run_state.Command`
        carries ``external_effort_values``. False: while ``contact.threshold`` is unset
        the observer is skipped (None there), and restarts from the state it is wanted
        again on (r starts at 0 and settles within a few ``1/contact.observer_gain``).
        The node sets it from ``~/external_effort``'s subscribers: in adaptive mode the
        observer costs more than the law (bench_node --modes).
        """
        return self._contact.reading

    @external_effort_wanted.setter
    def external_effort_wanted(self, wanted: bool):
        self._contact.reading = bool(wanted)

    @property
    def contacts(self) -> int:
        """How many contacts were detected since the controller was built."""
        return self._contact.contacts

    @property
    def adaptive_caveats(self):
        """Warnings (strings) about the adaptive settings on this arm; [] in other modes.

        See :meth:`~ne_dynamics_ros.control.adaptive_mode.AdaptiveMode.caveats`.
        """
        with self._lock:
            settings = self.settings
            if settings.mode is not ControlMode.ADAPTIVE:
                return []
            return self._adaptive.caveats(settings)

    def validate(self, **values) -> ControllerSettings:
        """Check changed settings against the current ones without applying them.

        Raises:
            ControlParameterError: as :meth:`ControllerSettings.from_values`.
        """
        settings = ControllerSettings.from_values(dict(self.settings.as_values(), **values),
                                                  self.n)
        if settings.mode is ControlMode.ADAPTIVE:
            AdaptiveMode.check(settings)
        return settings

    def reconfigure(self, **values) -> ControllerSettings:
        """Change run-time settings (all or nothing) and return the new settings.

        Leaving gravity compensation makes the next state hold the position measured then
        (the arm may have been moved by hand); a new ``velocity_filter_cutoff`` restarts
        the velocity estimator.

        Raises:
            ControlParameterError: nothing is changed.
        """
        with self._lock:
            settings = self.validate(**values)
            if values.get('adaptation_reset'):
                self._adaptive.reset()
            old_mode = self.settings.mode
            self._apply(settings)
            run = self._run
            if run.law is not None:       # the run's law under the new settings
                run.law = (run.law.reconfigured(self._context)
                           if settings.mode is old_mode or isinstance(run.law, ComplyLaw)
                           else None)
            if settings.mode is not old_mode:
                self._end_goal(GoalStatus.ABORTED, f'Aborted: mode changed to '
                               f'{settings.mode.value}')
            if (old_mode is ControlMode.GRAVITY_COMPENSATION and settings.mode is not old_mode
                    and self._run.active):
                self._restart('no joint_states since leaving gravity compensation')
            self._run.sensing.configure(settings)
            return settings

    # ---- Cartesian impedance ----------------------------------------------------------------

    def set_target_pose(self, position, orientation, frame_id: str = '') -> None:
        """Take a new target of the tip (mode ``cartesian_impedance``): approached, not jumped.

        Args:
            position: (3,) m; orientation: quaternion ``(x, y, z, w)``; ``frame_id``:
                empty or the base link's name (:func:`~ne_dynamics_ros.control.
                cartesian_law.target_pose`).

        Raises:
            ne_dynamics_ros.control.cartesian_law.TargetError: a bad target, or the
                controller is not in mode ``cartesian_impedance`` (the last good target
                stays).
        """
        pose = target_pose(position, orientation, frame_id, self.model.base_link)
        with self._lock:
            run = self._run
            if self._mode_law.follows_trajectory or not run.active or run.timed_out:
                raise TargetError(f'a target pose is followed in mode cartesian_impedance '
                                  f'while active (mode {self.settings.mode.value}'
                                  f'{", inactive" if not run.active else ""})')
            if run.law is None or run.law.mode is not self.settings.mode:
                run.law = self._mode_law.restarted()
            run.law.set_goal(pose)

    @property
    def cartesian_state(self):
        """The run's Cartesian law, or None outside mode ``cartesian_impedance``.

        Its ``pose``, ``target``, ``goal``, ``manipulability``, ``near_singularity``
        (:class:`~ne_dynamics_ros.control.cartesian_law.CartesianImpedanceLaw`).
        """
        law = self._run.law
        return law if getattr(law, 'mode', None) is ControlMode.CARTESIAN_IMPEDANCE else None

    # ---- time -----------------------------------------------------------------------------

    def _seconds(self, now_ns: int) -> float:
        """``now_ns`` as float seconds from the first ``now_ns`` seen."""
        if self._epoch_ns is None:
            self._epoch_ns = now_ns
        return (now_ns - self._epoch_ns) * 1e-9

    def _sample_time(self, stamp_ns: int, now_ns: int, now: float) -> float:
        """Return the stamp when it is on our clock (within STAMP_TOLERANCE_NS of now), else now.

        Sampling at the stamp compares q_d and q of the same instant, also under
        simulated time, where /clock and /joint_states arrive separately.
        """
        if stamp_ns == 0 or abs(stamp_ns - now_ns) > STAMP_TOLERANCE_NS:
            return now
        return (stamp_ns - self._epoch_ns) * 1e-9

    # ---- joint states -> law -> effort --------------------------------------------------

    def update(self, now_ns: int, sample, *fields, **named) -> Union[Command, NoCommand]:
        """Answer one measured joint state: the hot path, once per ``/joint_states``.

        Args:
            now_ns: the controller's clock now, ns (ROS time; simulated time under
                ``use_sim_time``).
            sample: the state, a :class:`JointStateSample`. (The earlier loose form
                ``update(now_ns, joint_names, positions, velocities=(), efforts=(),
                stamp_ns=0, steady_ns=None)`` is still taken: scripts written for it keep
                working.)

        Returns:
            :class:`Command` (publish it) or :class:`NoCommand` (publish nothing; warn
            unless the reason is ``NOT_CONTROLLED``); ``NoCommand(INACTIVE)`` while the
            controller is inactive (:meth:`deactivate`).
        """
        if not isinstance(sample, JointStateSample):
            sample = JointStateSample(sample, *fields, **named)
        with self._lock:
            run = self._run
            if not run.active:
                run.idle_sample = (now_ns if sample.steady_ns is None else sample.steady_ns,
                                   sample)
                return NoCommand(SkipReason.INACTIVE, 'the controller is inactive')
            return self._update(now_ns, *sample)

    # ---- lifecycle ------------------------------------------------------------------------

    def configure(self, settings: Union[Mapping, None] = None) -> ControllerSettings:
        """Apply ``settings`` (a mapping of parameter names to values) while inactive.

        Deactivates first if needed; forgets the trajectory, the integral and the
        estimator's history; the counters stay. Returns the settings in force.

        Raises:
            ControlParameterError: a bad value (nothing is changed but the deactivation).
        """
        self.deactivate()
        with self._lock:
            settings = self.validate(**dict(settings or {}))
            self._apply(settings)
            self._run = RunState(self.n, active=False, sensing=self._new_sensing())
            return settings

    def activate(self, q: Optional[Sequence[float]] = None, now_ns: Optional[int] = None,
                 steady_ns: Optional[int] = None):
        """Start commanding: hold ``q`` (chain order, rad or m), or the position measured.

        Without ``q``, the last valid state seen while inactive is held if it is at most
        ``state_timeout`` old at ``steady_ns`` (as a ros2_control controller holds the
        state interfaces' values on activation), so a trajectory sent right after
        activation starts from it; otherwise the next valid state is held, and a
        trajectory before it is refused. ``now_ns``: the controller's clock (ns);
        ``steady_ns``: the steady clock of the states' ``steady_ns`` (defaults to
        ``now_ns``). A trajectory sent before activation is not kept: the reference
        starts from where the arm is.

        Raises:
            ne_dynamics_ros.errors.StateError: ``q`` is not n finite values.
        """
        if q is not None:
            q = self.model.checked_vector(q, 'q', allow_batch=False).tolist()
        with self._lock:
            if q is None and now_ns is not None:
                q = self._fresh_position(now_ns if steady_ns is None else steady_ns)
            sensing = self._new_sensing()
            if q is None or now_ns is None:
                self._run = RunState(self.n, sensing=sensing)
            else:
                self._run = RunState.holding(q, self._seconds(now_ns), sensing=sensing)

    def _fresh_position(self, steady_ns):
        """Return q (chain order, a list) of the last idle state if fresh, else None."""
        idle = self._run.idle_sample
        if idle is None:
            return None
        seen_ns, sample = idle
        if not 0 <= steady_ns - seen_ns <= self.settings.state_timeout * 1e9:
            return None
        return self._reader.position(sample.names, sample.positions)

    def deactivate(self) -> np.ndarray:
        """Stop commanding; return the zero effort (n,) to send once (command order).

        States are still watched (and counted) but answered ``NoCommand(INACTIVE)``; the
        trajectory and the integral are forgotten.
        """
        with self._lock:
            self._end_goal(GoalStatus.ABORTED, 'Aborted: the controller was deactivated')
            self._run = RunState(self.n, active=False,     # no timeout while inactive
                                 sensing=self._new_sensing())
        return self.zero_effort()

    def reject_state(self, reason: str) -> 'NoCommand':
        """Count a joint state its caller could not even read (e.g. malformed bytes).

        Returns ``NoCommand(INVALID_STATE, reason)``, counted in
        :attr:`dropped_joint_states` like the states :meth:`update` drops.
        """
        with self._lock:
            self.dropped_joint_states += 1
        return NoCommand(SkipReason.INVALID_STATE, reason)

    def _update(self, now_ns, joint_names, positions, velocities, efforts, stamp_ns,
                steady_ns):
        now = self._seconds(now_ns)
        reader, sensing = self._reader, self._run.sensing
        stamp_ns, repeated = self.repeats.stamp(positions, velocities, stamp_ns)
        state = reader.usual(joint_names, positions, velocities, efforts)
        if state is None:
            # anything unusual (new names, a fault, velocities to estimate): checked
            try:
                state = reader.measured(joint_names, positions, velocities, efforts,
                                        stamp_ns, now, sensing.estimator)
            except JointStateError as err:
                self.dropped_joint_states += 1
                return NoCommand(SkipReason.INVALID_STATE, str(err))
            if state is None:
                return NoCommand(SkipReason.NOT_CONTROLLED,
                                 f'none of the controlled joints {self.model.joint_names}')
            state = (state[0].tolist(), state[1].tolist())
        q, qd = state
        # the state's instant (its stamp when on our clock): the observer's time step is
        # the time between measurements, whenever they were delivered
        t = self._sample_time(stamp_ns, now_ns, now)
        # a repeated measurement is no new information for the observer (its step would
        # be dt = 0)
        external, contact = (None, None) if repeated else self._contact.observe(
            sensing, t, q, qd, self._context.adaptive_law)
        if contact is not None:
            react = CONTACT_REACTIONS[ContactReaction(self._contact.reaction)][0]
            if react is not None:
                self._end_goal(GoalStatus.ABORTED, f'Aborted: {contact.text()}')
                law = self._run.law or self._mode_law
                self._hold(q, now).law = react(law)
        run = self._run
        resumed = run.timed_out
        if run.trajectory is None:
            pending = run.pending
            run = self._hold(q, now)
            if resumed:
                # differences across the silence are no velocity: start afresh
                sensing.estimator.reset()
            if pending is not None:
                self._install_pending(run, pending, now)
        # plain lists of floats from here to the Command: six-element NumPy arithmetic
        # costs more in call overhead than it computes
        q_d, qd_d, qdd_d = run.trajectory.sample_values(t)
        position_error = [a - b for a, b in zip(q_d, q)]
        law = run.law
        if law is None:
            law = run.law = self._mode_law.restarted()
        integral = extra = None
        if self._integrating and law.integrates:
            integral, extra = integral_step(run.integral, run.integral_time, position_error,
                                            now, *self._integral_gains)
        delay = self.settings.delay_compensation
        if delay:
            q_law, qd_law, reference = predict_across_delay(
                run.trajectory.sample_values, t, delay, q, qd, (q_d, qd_d))
        else:
            q_law, qd_law, reference = q, qd, (q_d, qd_d, qdd_d)
        try:
            tau = law.effort(LawStep(
                now, t, q_law, qd_law, reference,
                reader.efforts(joint_names, efforts) if law.needs_efforts else None, extra))
        except (NonFiniteEffortError, StateError) as err:
            self.dropped_joint_states += 1
            return NoCommand(SkipReason.NO_VALID_EFFORT, str(err))
        if integral is not None:
            run.integral = anti_windup(integral, run.integral, tau, position_error,
                                       self.law.gain_values[2])
            run.integral_time = now
        run.last_valid_steady_ns = now_ns if steady_ns is None else steady_ns
        run.last_q, run.last_effort = q, tau
        sensing.applied = tau
        velocity_error = [a - b for a, b in zip(qd_d, qd)]
        goal_end = None
        if run.goal is not None:
            goal_end = self._judge_goal(t, position_error, velocity_error, q, now)
        order = self._command_order
        if order is not None:
            tau, q_d, qd_d, qdd_d, position_error, velocity_error = (
                [v[i] for i in order]
                for v in (tau, q_d, qd_d, qdd_d, position_error, velocity_error))
            if external is not None:
                external = [external[i] for i in order]
        return Command(tau, (q_d, qd_d, qdd_d), position_error, velocity_error, resumed,
                       goal_end, external, contact)

    # ---- action goals -----------------------------------------------------------------------

    def _judge_goal(self, t, position_error, velocity_error, q, now):
        """Judge the active goal for this cycle; its :class:`GoalEnd` when it ended."""
        run = self._run
        verdict = run.goal.check(t, position_error, velocity_error)
        if verdict is None:
            return None
        code, text = verdict
        goal_id = run.goal.goal_id
        run.goal = None
        if code == ResultCode.SUCCESSFUL:
            return GoalEnd(goal_id, GoalStatus.SUCCEEDED, int(code), text)
        self._hold(q, now)              # as JTC: hold the position measured now
        return GoalEnd(goal_id, GoalStatus.ABORTED, int(code), text)

    def _end_goal(self, status: GoalStatus, text: str):
        """End the active goal off the control path (queued for :meth:`take_goal_ends`)."""
        run = self._run
        if run.goal is not None:
            code = ResultCode.SUCCESSFUL if status is GoalStatus.CANCELED else \
                ResultCode.INVALID_GOAL
            self._goal_ends.append(GoalEnd(run.goal.goal_id, status, int(code), text))
            run.goal = None

    @property
    def goal_id(self) -> Optional[str]:
        """The id of the action goal the reference follows, or None."""
        goal = self._run.goal
        return None if goal is None else goal.goal_id

    def take_goal_ends(self) -> list:
        """Return and forget the goals ended off the control path (:class:`GoalEnd` list).

        Replaced by a newer goal or a topic trajectory, canceled, deactivated, a state
        timeout, a mode change: ``update`` reports the ends it judges in its
        :class:`Command` instead.
        """
        with self._lock:
            ends, self._goal_ends = self._goal_ends, []
            return ends

    def cancel_goal(self, goal_id: str) -> bool:
        """Cancel the action goal ``goal_id`` if it is the active one: hold, as JTC.

        The next state measured is held (the reference restarts from it). Returns True if
        it was active (its end, CANCELED, is queued for :meth:`take_goal_ends`).
        """
        with self._lock:
            goal = self._run.goal
            if goal is None or goal.goal_id != goal_id:
                return False
            self._end_goal(GoalStatus.CANCELED, 'Goal canceled by the client: holding the '
                           'position measured')
            self._restart('no joint_states since the goal was canceled')
            return True

    def reference_at(self, now_ns: int) -> Optional[DesiredState]:
        """Return the reference ``(q_d, qd_d, qdd_d)`` at ROS time ``now_ns`` (chain order).

        None while inactive, timed out, or before the first state (nothing is followed).
        """
        with self._lock:
            trajectory = self._run.trajectory
            if trajectory is None or self._epoch_ns is None:
                return None
            return trajectory.sample((now_ns - self._epoch_ns) * 1e-9)

    def _install_pending(self, run, pending, now):
        """Build and install a trajectory kept for the first state, from the hold now."""
        (waypoints, start, _), goal_id, tolerances, stretch = pending
        chain = self.model.joint_names
        try:
            trajectory = trajectory_from_points(chain, waypoints, chain, start, now,
                                                run.trajectory.sample(now))
        except TrajectoryError as err:
            self.rejected_trajectories += 1
            if goal_id is not None:
                self._goal_ends.append(GoalEnd(goal_id, GoalStatus.ABORTED,
                                               int(ResultCode.INVALID_GOAL),
                                               f'Aborted: {err}'))
            return
        run.trajectory = trajectory
        if goal_id is not None:
            run.goal = GoalMonitor(goal_id, tolerances, trajectory.end_time, chain,
                                   _stretch_note(stretch))

    def _hold(self, q, now) -> RunState:
        """Start a run holding the measured ``q`` (a list) from ``now`` (s); return it."""
        self._run = RunState.holding(q, now, self._run.last_valid_steady_ns,
                                     self._run.sensing)
        return self._run

    # ---- trajectories ---------------------------------------------------------------------

    def prepare_trajectory(self, joint_names: Sequence[str],
                           points: Union[Sequence[TrajectoryPoint], WaypointArrays],
                           stamp_ns: int,
                           now_ns: int) -> 'PreparedTrajectory':
        """Check and interpolate a new trajectory without replacing the reference yet.

        The expensive part of accepting a trajectory (linear in its size): it may run on
        another thread than :meth:`update`, which it blocks only while reading the
        reference in force now (the new trajectory starts from it). Pass the result to
        :meth:`install_trajectory`.

        Args: as :meth:`set_trajectory`.

        Raises:
            TrajectoryError: as :meth:`set_trajectory` (counted in
                :attr:`rejected_trajectories`).
        """
        try:
            with self._lock:
                now = self._seconds(now_ns)
                run = self._run
                if not run.active:
                    raise TrajectoryError('the controller is inactive: a trajectory is taken '
                                          'once it is activated')
                if run.timed_out:
                    raise TrajectoryError(
                        f'{run.waiting}: the reference starts from the measured position')
                if not self._mode_law.follows_trajectory:
                    raise TrajectoryError(self._mode_law.refusal)
                start = None if stamp_ns == 0 else (stamp_ns - self._epoch_ns) * 1e-9
                state_before = None if run.trajectory is None else run.trajectory.sample(now)
            if state_before is None:
                return self._deferred(run, joint_names, points, start, now)
            trajectory, stretch = self._fit(trajectory_from_points(
                joint_names, points, self.model.joint_names, start, now, state_before))
        except TrajectoryError:
            with self._lock:
                self.rejected_trajectories += 1
            raise
        return PreparedTrajectory(trajectory, run, stretch=stretch)

    def _fit(self, trajectory):
        """Check a trajectory against the effort limits: ``(trajectory, stretch)``.

        :func:`~ne_dynamics_ros.control.effort_check.fit_to_limits` with the settings in
        force; raises its :class:`~ne_dynamics_ros.control.effort_check.
        InfeasibleTrajectory`.
        """
        return fit_to_limits(self.model, trajectory, self.model.joint_names,
                             self.effort_limits, self.settings,
                             with_gravity=not self.hardware_compensates_gravity,
                             with_friction=not self.hardware_compensates_friction)

    def _deferred(self, run, joint_names, points, start, now):
        """Prepare a trajectory that arrived before the run's first state (kept for it).

        Checked now (every fault but one of the start, which the first state decides;
        the effort limits from its first waypoint at rest); built from the first valid
        state when it comes (:meth:`_install_pending`).
        """
        chain = self.model.joint_names
        waypoints = prepared_waypoints(joint_names, points, chain)
        first = waypoints.waypoints.positions[0]
        provisional, stretch = self._fit(trajectory_from_points(
            chain, waypoints, chain, start, now,
            DesiredState(first, np.zeros(self.n), np.zeros(self.n))))
        if stretch != 1.0:
            waypoints = stretched_waypoints(waypoints, chain, stretch)
        return PreparedTrajectory(provisional, run, (waypoints, start, now), stretch)

    def install_trajectory(self, prepared: 'PreparedTrajectory',
                           goal_id: Optional[str] = None,
                           tolerances: Optional[SegmentTolerances] = None) -> Trajectory:
        """Make a trajectory from :meth:`prepare_trajectory` the reference.

        ``goal_id`` and ``tolerances`` (chain order): the trajectory of an action goal,
        judged on every state from now on (see :class:`~ne_dynamics_ros.control.goals.
        GoalMonitor`). Any goal active before ends ABORTED: replaced by a newer goal, or
        by a trajectory on the topic (JTC's preemption).

        Raises:
            TrajectoryError: the reference restarted from a measured position since it was
                prepared (a state timeout, a resume, leaving gravity compensation): its
                start would no longer be where the arm is. The reference in force stays.
        """
        with self._lock:
            run = self._run
            if prepared.deferred is not None and prepared.run is run \
                    and run.trajectory is None:
                self._end_goal(GoalStatus.ABORTED, 'Aborted: replaced by a newer goal'
                               if goal_id is not None else 'Aborted: a trajectory on '
                               '~/joint_trajectory replaced the goal\'s')
                run.pending = (prepared.deferred, goal_id, tolerances, prepared.stretch)
                return prepared.trajectory           # provisional: built on the first state
            if prepared.deferred is not None and prepared.run.trajectory is None \
                    and run.active and not run.timed_out and run.trajectory is not None \
                    and prepared.run.pending is None:
                # the first state came meanwhile: start from the position it holds
                waypoints, start, receipt = prepared.deferred
                try:
                    prepared = PreparedTrajectory(trajectory_from_points(
                        self.model.joint_names, waypoints, self.model.joint_names, start,
                        receipt, run.trajectory.sample(receipt)), run, stretch=prepared.stretch)
                except TrajectoryError:
                    self.rejected_trajectories += 1
                    raise
            if prepared.run is not run or run.trajectory is None:
                self.rejected_trajectories += 1
                raise TrajectoryError(
                    'the reference restarted from the measured position while the '
                    'trajectory was prepared (state timeout or resume): send it again')
            self._end_goal(GoalStatus.ABORTED,
                           'Aborted: replaced by a newer goal' if goal_id is not None else
                           'Aborted: a trajectory on ~/joint_trajectory replaced the goal\'s')
            run.trajectory = prepared.trajectory
            if isinstance(run.law, ComplyLaw):
                run.law = None                # a new reference ends a contact's compliance
            if goal_id is not None:
                run.goal = GoalMonitor(goal_id, tolerances, prepared.trajectory.end_time,
                                       self.model.joint_names, _stretch_note(prepared.stretch))
            run.reset_integral()
            return prepared.trajectory

    def reject_trajectory(self, reason: str) -> TrajectoryError:
        """Count a trajectory refused before :meth:`prepare_trajectory` could see it.

        For a reader that found the message's points inconsistent (a point with more
        positions than another, say): counted in :attr:`rejected_trajectories` like the
        refusals of :meth:`prepare_trajectory`. Returns the :class:`TrajectoryError` of
        ``reason`` for the caller to report.
        """
        with self._lock:
            self.rejected_trajectories += 1
        return TrajectoryError(reason)

    def set_trajectory(self, joint_names: Sequence[str],
                       points: Union[Sequence[TrajectoryPoint], WaypointArrays],
                       stamp_ns: int, now_ns: int) -> Trajectory:
        """Replace the reference with a new trajectory, or keep the old one and raise.

        :meth:`prepare_trajectory` then :meth:`install_trajectory`.

        Args:
            joint_names: the trajectory's joints, any order; every controlled joint once.
            points: waypoints (``time_from_start`` in s, values in ``joint_names`` order):
                :class:`TrajectoryPoint` items or one
                :class:`~ne_dynamics_ros.control.trajectory.WaypointArrays`.
            stamp_ns: ``header.stamp`` in ns on the controller's clock; 0 = start now.
            now_ns: the controller's clock now, ns.

        Returns:
            The new :class:`~ne_dynamics_ros.control.trajectory.Trajectory` (chain order);
            from now on it is sampled. It starts from the reference in force now.

        Before the first valid state of a run (after activation, a cancel, leaving
        gravity compensation) the trajectory is checked at once and kept: it becomes the
        reference on that state, starting from it.

        Raises:
            TrajectoryError: a state timeout (the reference must start from a measured
                position), or any reason of
                :func:`~ne_dynamics_ros.control.trajectory.trajectory_from_points`. The
                previous trajectory stays in force.
        """
        return self.install_trajectory(
            self.prepare_trajectory(joint_names, points, stamp_ns, now_ns))

    # ---- timeout and stop -----------------------------------------------------------------

    def check_timeout(self, steady_ns: int) -> Optional[Timeout]:
        """Call periodically: a :class:`Timeout` (publish its effort) or None (all well).

        Nothing is reported before the first valid state. From ``state_timeout`` of
        silence on, the goal is aborted and the reference dropped; the effort is what
        ``state_loss_policy`` holds (:func:`~ne_dynamics_ros.control.state_loss.
        loss_effort`) until ``state_timeout + state_loss_hold``, then zeros.
        """
        with self._lock:
            run = self._run
            if run.last_valid_steady_ns is None:
                return None
            settings = self.settings
            silence = (steady_ns - run.last_valid_steady_ns) * 1e-9
            if silence <= settings.state_timeout:
                return None
            started = not run.timed_out
            if started:
                hold = state_loss.loss_effort(settings, run.last_q, run.last_effort,
                                              self._gravity_at, self.law.effort_limits)
                self._end_goal(GoalStatus.ABORTED, f'Aborted: no valid joint_states for '
                               f'{silence:.3f} s (state_timeout {settings.state_timeout} s): '
                               f'{state_loss.loss_text(settings, hold is not None)}')
                self._run = run = RunState(
                    self.n, waiting='no valid joint_states (state timeout)', timed_out=True,
                    last_valid_steady_ns=run.last_valid_steady_ns, loss_effort=hold,
                    sensing=run.sensing)
            holding = (run.loss_effort is not None
                       and silence <= settings.state_timeout + settings.state_loss_hold)
            if not holding:
                ended, run.loss_effort = run.loss_effort is not None, None
                return Timeout(self.zero_effort(), silence, started, False, ended)
            order = self._command_order
            effort = run.loss_effort if order is None else [run.loss_effort[i] for i in order]
            return Timeout(np.array(effort), silence, started, True)

    def _gravity_at(self, q) -> Sequence[float]:
        """Return g(q) of the law's model (the learned load's too; zero where compensated)."""
        rest = [0.0] * self.n
        adaptive = self._context.adaptive_law
        if adaptive is not None:
            return adaptive.values(q, rest, q, rest, rest)[0]
        gravity = np.zeros(3) if self.hardware_compensates_gravity else self.settings.gravity
        return self.model.gravity_torques(np.array(q), gravity)

    def timeout_text(self, timeout: Timeout) -> str:
        """Say what a state timeout that just started commands (the node logs it)."""
        return state_loss.timeout_text(self.settings, timeout.silence, timeout.holding)

    def zero_effort(self) -> np.ndarray:
        """(n,) zeros: the command for a state timeout and for shutting down."""
        return np.zeros(self.n)


def _stretch_note(c: float) -> str:
    """Return what a goal's success says of a trajectory played ``c`` times slower."""
    return '' if c == 1.0 else (f' (played {c:.4g}x slower than sent, to stay within the '
                                'effort limits)')


__all__ = ['ComputedTorqueController', 'DYNAMICS_BACKENDS', 'STAMP_TOLERANCE_NS']
