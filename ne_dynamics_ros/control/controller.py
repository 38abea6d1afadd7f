"""The controller: every decision of ``computed_torque_node``, without ROS.

Pure module (no rclpy, no message types). Like a ros2_control controller
(``controller_interface``) it is configured once with a model and settings, can be
reconfigured at run time, and its hot path is one call, :meth:`~ComputedTorqueController.
update`: read the state, compute, answer, in one straight pass (as
joint_trajectory_controller's ``update()``). The node publishes what the
:class:`~ne_dynamics_ros.control.run_state.Command` carries and never calls back about
that state. What the controller owns is a module each: the law of the mode in force
(:mod:`ne_dynamics_ros.control.laws`), the integral action (:mod:`~.integral`), the
references and goals (:mod:`~.references`), the run (:mod:`~.run_state`), the states read
(:mod:`~.measured_state`, :mod:`~.prediction`), the observer and contacts
(:mod:`~.contact`), the laws' other inputs (:mod:`~.law_inputs`) and the state timeout
(:mod:`~.state_loss`). ``docs/architecture.md`` draws them.

Times are integer nanoseconds, as ``builtin_interfaces/Time`` carries them: ``now_ns`` on
the controller's (ROS) clock, which may be simulated time; ``stamp_ns`` the state's
``header.stamp`` (0: none); ``steady_ns`` a monotonic clock for the timeout. Internally
times are float seconds from the first ``now_ns`` seen. A state is sampled at its stamp
when the stamp is on the controller's clock (within :data:`STAMP_TOLERANCE_NS` of now).

Units: q in rad (m for prismatic joints), qd in rad/s, qdd in rad/s^2, efforts in N*m (N).
"""
from typing import Mapping, Optional, Sequence, Union

import numpy as np

from ne_dynamics_ros.codegen import CompiledDynamics
from ne_dynamics_ros.control import state_loss
from ne_dynamics_ros.control import parameters
from ne_dynamics_ros.control.data import ControllerData
from ne_dynamics_ros.control.reference.goals import GoalStatus
from ne_dynamics_ros.control.laws.integral import anti_windup, integral_step
from ne_dynamics_ros.control.laws.base import JointGains, LawContext, LawStep
from ne_dynamics_ros.control.law_inputs import LawInputs
from ne_dynamics_ros.control.laws.registry import LAWS
from ne_dynamics_ros.control.sensing.measured_state import (  # noqa: F401 - the controller's names
    JointStateError, JointStateSample, MAX_POSITION, MAX_STATE_JOINTS, SPEED_FACTOR,
    StateReader)
from ne_dynamics_ros.control.references import FollowsReferences
from ne_dynamics_ros.control.run_state import (  # noqa: F401 - the controller's names
    Command, NoCommand, Runs, RunState, SkipReason, STAMP_TOLERANCE_NS, Timeout)
from ne_dynamics_ros.control.sensing.activation import Sensing
from ne_dynamics_ros.control.config.parameter_checks import checked_joints
from ne_dynamics_ros.control.settings import (  # noqa: F401 - the controller's names
    ControllerSettings, DEFAULT_SETTINGS, for_joints)
from ne_dynamics_ros.control.reference.trajectory import Trajectory
from ne_dynamics_ros.dynamics.model import load_model
from ne_dynamics_ros.errors import (ControlParameterError, NonFiniteEffortError,
                                    StateError)

#: How the law's inverse dynamics are computed: the generated straight-line program of
#: Renaud (1987) (checked against the recursion when the controller is built) or the
#: recursion.
DYNAMICS_BACKENDS = parameters.DYNAMICS_BACKENDS


class ComputedTorqueController(LawInputs, FollowsReferences):
    """The controller of one serial chain, whatever the law (module docstring).

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
        hardware_compensates_gravity, hardware_compensates_friction: the hardware adds
            g(q), its own friction model: the command leaves them out (fixed at start-up:
            a change would jump the command by g(q)).
        adaptation_link: the link a load is learned at (None: the tip link).

    Raises:
        ControlParameterError: invalid settings, joints, limits or backend (the message
            names which).
        ne_dynamics_ros.errors.ModelError: the generated program disagrees with the
            recursion (then nothing may be commanded with it).

    Lifecycle (as ros2_control's ``on_configure``, ``on_activate``, ``on_deactivate``,
    ``update``): a new controller is active and holds the first position it measures;
    :meth:`deactivate` stops commanding; :meth:`configure` applies settings while
    inactive; :meth:`activate` commands again, holding the position measured then. Every
    public method may be called from any thread: each takes the run's lock for its own
    short work (:meth:`prepare_trajectory`, the expensive one, only to read the reference).
    """

    def __init__(self, model, settings: Union[ControllerSettings, Mapping, None] = None,
                 joints: Optional[Sequence[str]] = None, effort_limits=None,
                 dynamics_backend: str = 'generated', hardware_compensates_gravity=False,
                 hardware_compensates_friction=False, adaptation_link=None):
        self.model = model
        self.hardware_compensates_gravity = parameters.check(
            'hardware_compensates_gravity', hardware_compensates_gravity)
        self.hardware_compensates_friction = parameters.check(
            'hardware_compensates_friction', hardware_compensates_friction)
        n = model.n
        self.dynamics_backend = parameters.check('dynamics_backend', dynamics_backend)
        #: the command order; ``_command_order``: its indices into the chain, or None
        self.joints, self._command_order = checked_joints(joints, model.joint_names)
        self.effort_limits = (np.array(model.effort_limits, dtype=float)
                              if effort_limits is None else
                              parameters.check('effort_limits', effort_limits, n))
        settings = for_joints(settings, n)
        #: What the law calls for M, C, g: the model, or its generated program.
        self.dynamics = CompiledDynamics(model) if dynamics_backend == 'generated' else model
        self._reader = StateReader(model, settings)
        self.adaptation_link = parameters.check('adaptation_link', adaptation_link or '') \
            or model.tip_link
        #: what the states change (the run, references, estimates, counters), beside the
        #: model: :class:`~.data.ControllerData`
        self.data = ControllerData.new(model, self.dynamics, self.effort_limits,
                                       self.adaptation_link,
                                       with_gravity=not self.hardware_compensates_gravity,
                                       with_friction=not self.hardware_compensates_friction)
        self._apply(settings)
        self.data.runs.current = RunState(n, sensing=self._new_sensing())

    @classmethod
    def from_urdf(cls, urdf, base_link=None, tip_link=None, convention='mdh', armature=None,
                  settings=None, joints=None, effort_limits=None,
                  dynamics_backend='generated', damping=None, friction=None,
                  hardware_compensates_gravity=False, hardware_compensates_friction=False,
                  adaptation_link=None, friction_velocity=None, friction_offset=None):
        """Load the model with :func:`~ne_dynamics_ros.dynamics.model.load_model`, then build.

        ``urdf``: XML text or a file path; ``base_link`` … ``friction_offset`` as for
        ``load_model`` (damping and friction replace the URDF's); the others as for the
        constructor.

        Raises:
            ne_dynamics_ros.errors.ModelError: the URDF or the armature is unusable.
            ControlParameterError: invalid settings, joints or limits.
        """
        if convention not in ('dh', 'mdh'):
            raise ControlParameterError(f'convention {convention!r} is not dh or mdh')
        drive = {name: parameters.check(name, value) for name, value in (
            ('damping', damping), ('friction', friction),
            ('friction_velocity', friction_velocity), ('friction_offset', friction_offset))}
        if armature is not None:
            drive['armature'] = parameters.check('armature', armature)
        model = load_model(urdf, base_link=base_link, tip_link=tip_link,
                           convention=convention, **drive)
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
        return self.data.runs.current.active

    @property
    def trajectory(self) -> Optional[Trajectory]:
        """The reference in force (chain order); None: the next valid state is held."""
        return self.data.runs.current.trajectory

    @property
    def timed_out(self) -> bool:
        """No valid state for ``state_timeout``: zero effort until one returns."""
        return self.data.runs.current.timed_out

    @property
    def rejected_trajectories(self) -> int:
        """Trajectories refused since the controller was built."""
        return self.data.references.rejected

    def _new_sensing(self) -> Sensing:
        """Return a fresh :class:`~.sensing.activation.Sensing` (a new activation)."""
        return Sensing.new(self.model.joint_names, self.settings, self.model.friction)

    def _apply(self, settings: ControllerSettings):
        self.settings = settings
        self._reader.set_bounds(settings)
        self._integral_gains = (settings.ki.tolist(), settings.integral_limit.tolist())
        self._integrating = bool(np.any(settings.ki))
        gains = JointGains(
            mode=settings.mode, kp=settings.kp, kd=settings.kd, gravity=settings.gravity,
            effort_limits=self.effort_limits,
            friction_compensation=settings.friction_compensation,
            coulomb_velocity=settings.coulomb_velocity,
            hardware_compensates_gravity=self.hardware_compensates_gravity,
            hardware_compensates_friction=self.hardware_compensates_friction)
        #: what the run's law is built from (:mod:`~ne_dynamics_ros.control.laws`)
        self.context = LawContext(self.model, self.dynamics, gains, settings, self.data.load,
                                  LAWS[settings.mode], self.data.friction_estimate)
        self.context.law_class.apply_settings(self.context)
        self.data.contact_supervisor.apply(settings, gains)
        self.data.references.apply(self.context.law_class, settings)

    def validate(self, **values) -> ControllerSettings:
        """Check changed settings against the current ones without applying them.

        Raises:
            ControlParameterError: as :meth:`ControllerSettings.from_values`, or the
                mode's law refuses them (:meth:`~.laws.base.Law.check`).
        """
        settings = ControllerSettings.from_values(dict(self.settings.as_values(), **values),
                                                  self.n)
        LAWS[settings.mode].check(settings)
        return settings

    def reconfigure(self, **values) -> ControllerSettings:
        """Change run-time settings (all or nothing) and return the new settings.

        Another mode ends the active goal; leaving a mode whose law holds on exit
        (gravity compensation: the arm may have been moved by hand) makes the next state
        hold the position measured then; a new ``velocity_filter_cutoff`` restarts the
        velocity estimator.

        Raises:
            ControlParameterError: nothing is changed.
        """
        with self.data.runs.lock:
            settings = self.validate(**values)
            if values.get('adaptation_reset'):
                self.data.load.reset()
            old = self.context.law_class
            self._apply(settings)
            new, run = self.context.law_class, self.data.runs.current
            if run.law is not None:       # the run's law under the new settings
                keep = new is old or run.law.name is None     # (a contact's comply stays)
                run.law = run.law.reconfigured(self.context) if keep else None
            if new is not old:
                self.data.references.end_goal(run, GoalStatus.ABORTED,
                                              f'Aborted: mode changed to {settings.mode.value}')
                if old.holds_on_exit and run.active:
                    self.data.runs.restart(f'no joint_states since leaving {old.name}')
            self.data.runs.current.sensing.configure(settings)
            return settings

    # ---- joint states -> law -> effort --------------------------------------------------

    def update(self, now_ns: int, sample, *fields, commands_applied: bool = True,
               reading=None, **named) -> Union[Command, NoCommand]:
        """Answer one measured joint state: the hot path, once per ``/joint_states``.

        ``now_ns``: the controller's clock now, ns (ROS time; simulated time under
        ``use_sim_time``); ``sample``: a :class:`JointStateSample` (or the loose form
        ``update(now_ns, joint_names, positions, velocities=(), efforts=(), stamp_ns=0,
        steady_ns=None)``); ``commands_applied``: an input as the state is, False while
        the hardware does not apply them (:meth:`~.law_inputs.LawInputs.held_unapplied`);
        ``reading``: None, or which of the observer's outputs are read, an input too
        (:meth:`~.law_inputs.LawInputs.read_externals`'s two flags).

        Returns:
            :class:`Command` (publish it: all the node says of this state) or :class:`NoCommand`
            (publish nothing; warn unless ``NOT_CONTROLLED``); ``NoCommand(INACTIVE)`` inactive.
        """
        if not isinstance(sample, JointStateSample):
            sample = JointStateSample(sample, *fields, **named)
        if reading is not None:
            self.read_externals(*reading)
        with self.data.runs.lock:
            run = self.data.runs.current
            if not run.active:
                run.idle_sample = (now_ns if sample.steady_ns is None else sample.steady_ns,
                                   sample)
                return NoCommand(SkipReason.INACTIVE, 'the controller is inactive')
            out = self._update(now_ns, *sample)
        return out if commands_applied else self.held_unapplied(out, now_ns)

    def _measure(self, joint_names, positions, velocities, efforts, stamp_ns, now):
        """Return ``(q, qd)`` lists of the controlled joints, or the NoCommand why not."""
        reader = self._reader
        state = reader.usual(joint_names, positions, velocities, efforts)
        if state is not None:
            return state
        # anything unusual (new names, a fault, velocities to estimate): checked
        try:
            state = reader.measured(joint_names, positions, velocities, efforts, stamp_ns,
                                    now, self.data.runs.current.sensing.estimator)
        except JointStateError as err:
            self.data.dropped_joint_states += 1
            return NoCommand(SkipReason.INVALID_STATE, str(err))
        if state is None:
            return NoCommand(SkipReason.NOT_CONTROLLED,
                             f'none of the controlled joints {self.model.joint_names}')
        return state[0].tolist(), state[1].tolist()

    def _observe(self, t, q, qd, now, repeated):
        """Feed the observer (not a repeated measurement: no dt); react to a contact."""
        if repeated:
            return None, None
        data, law_class = self.data, self.context.law_class
        supervisor, run = data.contact_supervisor, data.runs.current
        external, contact = supervisor.observe(run.sensing, t, q, qd, self.context.load_law,
                                               run.law, law_class.needs_external_effort)
        if contact is not None and law_class.reacts_to_contact:
            law = supervisor.react(run.law or law_class(self.context))
            if law is not None:
                data.references.end_goal(run, GoalStatus.ABORTED, f'Aborted: {contact.text()}')
                data.runs.hold(q, now).law = law
        return external, contact

    def _current_run(self, q, now):
        """Return the run to command, holding ``q`` first if it awaits its first state."""
        run = self.data.runs.current
        if run.trajectory is None:
            pending, resumed = run.pending, run.timed_out
            run = self.data.runs.hold(q, now)
            if resumed:
                run.sensing.estimator.reset()   # differences across a silence: no velocity
            if pending is not None:
                self.data.references.install_pending(run, pending, now)
        return run

    def _update(self, now_ns, joint_names, positions, velocities, efforts, stamp_ns,
                steady_ns):
        data = self.data
        runs = data.runs
        now = runs.seconds(now_ns)
        stamp_ns, repeated = data.repeats.stamp(positions, velocities, stamp_ns)
        state = self._measure(joint_names, positions, velocities, efforts, stamp_ns, now)
        if state.__class__ is NoCommand:
            return state
        q, qd = state
        # the state's instant (its stamp when on our clock): the observer's step is between
        t = runs.sample_time(stamp_ns, now_ns, now)    # measurements, however delivered
        external, contact = self._observe(t, q, qd, now, repeated)
        resumed = runs.current.timed_out
        run = self._current_run(q, now)
        # plain lists of floats from here to the Command: six-element NumPy arithmetic
        # costs more in call overhead than it computes
        reference = run.trajectory.sample_values(t)
        position_error = [a - b for a, b in zip(reference[0], q)]
        law = run.law
        if law is None:
            law = run.law = self.context.law_class(self.context)
        integral = extra = None
        if self._integrating and law.integrates:
            integral, extra = integral_step(run.integral, run.integral_time, position_error,
                                            now, *self._integral_gains)
        q_law, qd_law, law_reference = data.sent.predicted(
            self.settings, self.context, run.trajectory.sample_values, t, q, qd, reference)
        try:
            tau = law.effort(LawStep(
                now, t, q_law, qd_law, law_reference,
                self._reader.efforts(joint_names, efforts) if law.needs_efforts else None,
                extra, run.sensing.detector.contact is not None, external))
        except (NonFiniteEffortError, StateError) as err:
            data.dropped_joint_states += 1
            return NoCommand(SkipReason.NO_VALID_EFFORT, str(err))
        if integral is not None:
            run.integral = anti_windup(integral, run.integral, tau, position_error,
                                       self.context.gains.limit_values)
            run.integral_time = now
        run.last_valid_steady_ns = now_ns if steady_ns is None else steady_ns
        run.last_q, run.last_effort = q, tau
        data.sent.add(t, tau, repeated)
        run.sensing.applied = tau
        velocity_error = [a - b for a, b in zip(reference[1], qd)]
        if run.goal is not None and data.references.judge(run, t, position_error,
                                                          velocity_error):
            runs.hold(q, now)                   # as JTC: hold the position measured now
        return self._command(run, law, q, tau, reference, position_error, velocity_error,
                             resumed, external, contact)

    def _command(self, run, law, q, tau, reference, position_error, velocity_error, resumed,
                 external, contact) -> Command:
        """Return the :class:`Command` of one state, its vectors in the command order."""
        supervisor, limits = self.data.contact_supervisor, self.context.gains.limit_values
        wrench = None if external is None or not supervisor.wrench_wanted else \
            supervisor.wrench(q, external, self.settings.external_wrench_frame)
        at_limit = [e >= h or e <= -h for e, h in zip(tau, limits)]
        vectors = (tau, *reference, position_error, velocity_error, at_limit)
        order = self._command_order
        if order is not None:
            vectors = [[v[i] for i in order] for v in vectors]
            if external is not None:
                external = [external[i] for i in order]
        tau, q_d, qd_d, qdd_d, position_error, velocity_error, at_limit = vectors
        return Command(tau, (q_d, qd_d, qdd_d), position_error, velocity_error, resumed,
                       external, contact, at_limit,
                       run.sensing.detector.contact is not None,
                       None if contact is None else supervisor.reaction_text,
                       law.report() if law.reports else None, wrench)

    # ---- lifecycle ------------------------------------------------------------------------

    def configure(self, settings: Union[Mapping, None] = None) -> ControllerSettings:
        """Apply ``settings`` (a mapping of parameter names to values) while inactive.

        Deactivates first if needed; forgets the trajectory, the integral and the
        estimator's history; the counters stay. Returns the settings in force.

        Raises:
            ControlParameterError: a bad value (nothing is changed but the deactivation).
        """
        self.deactivate()
        with self.data.runs.lock:
            settings = self.validate(**dict(settings or {}))
            self._apply(settings)
            self.data.runs.current = RunState(self.n, active=False, sensing=self._new_sensing())
            return settings

    def activate(self, q: Optional[Sequence[float]] = None, now_ns: Optional[int] = None,
                 steady_ns: Optional[int] = None):
        """Start commanding: hold ``q`` (chain order, rad or m), or the position measured.

        Without ``q``, the last state seen while inactive is held if at most
        ``state_timeout`` old at ``steady_ns`` (as ros2_control holds the state
        interfaces' values on activation); otherwise the next valid state is held.
        ``now_ns``: the controller's clock, ns; ``steady_ns``: the states' steady clock
        (default ``now_ns``). A trajectory sent before activation is not kept.

        Raises:
            ne_dynamics_ros.errors.StateError: ``q`` is not n finite values.
        """
        if q is not None:
            q = self.model.checked_vector(q, 'q', allow_batch=False).tolist()
        with self.data.runs.lock:
            if q is None and now_ns is not None:
                q = self._fresh_position(now_ns if steady_ns is None else steady_ns)
            sensing = self._new_sensing()
            if q is None or now_ns is None:
                self.data.runs.current = RunState(self.n, sensing=sensing)
            else:
                self.data.runs.current = RunState.holding(q, self.data.runs.seconds(now_ns),
                                                          sensing=sensing)

    def _fresh_position(self, steady_ns):
        """Return q (chain order, a list) of the last idle state if fresh, else None."""
        idle = self.data.runs.current.idle_sample
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
        with self.data.runs.lock:
            self.data.references.end_goal(self.data.runs.current, GoalStatus.ABORTED,
                                          'Aborted: the controller was deactivated')
            # no timeout while inactive
            self.data.runs.current = RunState(self.n, active=False, sensing=self._new_sensing())
        return self.zero_effort()

    def reject_state(self, reason: str) -> 'NoCommand':
        """Count a joint state its caller could not even read (e.g. malformed bytes).

        Returns ``NoCommand(INVALID_STATE, reason)``, counted in
        :attr:`dropped_joint_states` like the states :meth:`update` drops.
        """
        with self.data.runs.lock:
            self.data.dropped_joint_states += 1
        return NoCommand(SkipReason.INVALID_STATE, reason)

    # ---- timeout and stop -----------------------------------------------------------------

    def check_timeout(self, steady_ns: int) -> Optional[Timeout]:
        """Call periodically: a :class:`Timeout` (publish its effort) or None (all well).

        :func:`~ne_dynamics_ros.control.state_loss.check_timeout` on the run in force.
        """
        with self.data.runs.lock:
            return state_loss.check_timeout(
                self.data.runs, self.data.references, self.settings, steady_ns,
                self.context.gravity_values, self.effort_limits, self._command_order)

    def timeout_text(self, timeout: Timeout) -> str:
        """Say what a state timeout that just started commands (the node logs it)."""
        return state_loss.timeout_text(self.settings, timeout.silence, timeout.holding)

    def zero_effort(self) -> np.ndarray:
        """(n,) zeros: the command for a state timeout and for shutting down."""
        return np.zeros(self.n)


__all__ = ['ComputedTorqueController', 'DYNAMICS_BACKENDS', 'STAMP_TOLERANCE_NS']
