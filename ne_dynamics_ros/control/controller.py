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
  Turney, ``001_ccc6fd40c72dea18.txt`` eqs 4.1, 4.4), feedforward + PD, or gravity
  compensation; optional friction compensation; every effort checked finite and clamped
  to its limit, in the command order :attr:`joints`.
* **The reference**: a :class:`~ne_dynamics_ros.control.trajectory.Trajectory`, replaced
  as a whole by :meth:`set_trajectory` (a rejected one leaves the previous one in place),
  sampled at the state's stamp when that stamp is on the controller's clock (within
  :data:`STAMP_TOLERANCE_NS` of ``now``), else at ``now``.
* **Holding**: before the first trajectory, after a state timeout, and when leaving
  gravity compensation, the reference becomes "hold the position measured now".
* **Plausibility**: a position beyond 1e6 (:data:`MAX_POSITION`), beyond a URDF joint
  limit by more than ``position_limit_margin``, or a measured or estimated speed beyond
  :data:`SPEED_FACTOR` x the URDF velocity limit is not a state of the arm: the state is
  dropped with the reason (and the velocity estimator restarts).
* **Velocity estimation**: a state without velocities (or with all-NaN velocities, as
  ``joint_state_broadcaster`` sends for a missing interface) gets filtered finite
  differences of its positions (:class:`~ne_dynamics_ros.control.velocity_estimator.
  VelocityEstimator`), timed by the state's stamps.
* **State timeout**: :meth:`check_timeout` reports when no valid state has arrived for
  ``state_timeout`` seconds of the *steady* clock; the command is then all zeros, for the
  reason given in the node's documentation (an effort controller keeps applying its last
  command forever; zero effort adds no energy). Trajectories are refused meanwhile, and
  the next valid state resumes by holding the position measured then.

Times are integer nanoseconds, as ``builtin_interfaces/Time`` carries them: ``now_ns`` on
the controller's (ROS) clock, which may be simulated time; ``stamp_ns`` the state's
``header.stamp`` (0: none); ``steady_ns`` a monotonic clock for the timeout, which keeps
running while simulated time stands still. Internally times are float seconds from the
first ``now_ns`` seen, so they keep sub-microsecond resolution whatever the epoch.

Units: q in rad (m for prismatic joints), qd in rad/s, qdd in rad/s^2, efforts in N*m (N).
"""
from collections import Counter
import enum
from operator import itemgetter, le
import threading
from dataclasses import dataclass
from typing import Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

from ne_dynamics_ros.control import parameters
from ne_dynamics_ros.control.goals import (GoalEnd, GoalMonitor, GoalStatus, ResultCode,
                                           SegmentTolerances)
from ne_dynamics_ros.control.laws import (
    compute_effort_values, ControlLawConfig, ControlMode, ControlParameterError,
    NonFiniteEffortError)
from ne_dynamics_ros.control.trajectory import (
    DesiredState, Trajectory, trajectory_from_points, TrajectoryError, TrajectoryPoint,
    WaypointArrays)
from ne_dynamics_ros.control.velocity_estimator import VelocityEstimator
from ne_dynamics_ros.codegen import CompiledDynamics
from ne_dynamics_ros.dynamics.model import load_model
from ne_dynamics_ros.errors import StateError

#: A state stamped within this many nanoseconds of ``now`` is taken to be on our clock.
STAMP_TOLERANCE_NS = 500_000_000

#: How the law's inverse dynamics are computed: Renaud's generated straight-line program
#: (004; checked against the recursion when the controller is built) or the recursion.
DYNAMICS_BACKENDS = parameters.DYNAMICS_BACKENDS

#: No joint of an arm measures beyond this, rad or m (a continuous joint would need
#: 160 000 turns): a larger position is a glitch, not a state.
MAX_POSITION = 1e6
#: A measured or estimated speed more than this many times the URDF velocity limit is not
#: believed either (no arm moves that fast; a glitch or a unit error does).
SPEED_FACTOR = 10.0
#: A joint state naming more joints than this is dropped unread: no robot has that many,
#: and checking the names of a larger message would hold up the control path.
MAX_STATE_JOINTS = 10_000

#: The settings that can change while running, with their defaults: the run-time
#: parameters of the table (:mod:`ne_dynamics_ros.control.parameters`).
DEFAULT_SETTINGS = parameters.defaults(runtime_only=True)


class JointStateError(ValueError):
    """A measured joint state cannot be used (the message says why)."""


@dataclass(frozen=True)
class ControllerSettings:
    """The run-time settings of :class:`ComputedTorqueController`, validated.

    Attributes:
        mode: the control law (:class:`~ne_dynamics_ros.control.laws.ControlMode`).
        kp: (n,) position gains, 1/s^2 in computed_torque mode, N*m/rad in feedforward.
        kd: (n,) velocity gains, 1/s in computed_torque mode, N*m*s/rad in feedforward.
        gravity: (3,) gravity acceleration in the chain's base frame, m/s^2.
        friction_compensation: add the URDF damping/Coulomb friction torques, at the
            desired velocity (the measured one in gravity compensation): see
            :mod:`ne_dynamics_ros.control.laws`.
        state_timeout: s of the steady clock without a valid state before zero effort.
        velocity_filter_cutoff: Hz, low-pass of finite-difference velocities (inf: none).
        position_limit_margin: rad (m for prismatic joints): a measured position beyond a
            URDF joint limit by more than this is not believed (inf: never checked).
        ki: (n,) integral gains, N*m/(rad*s) (N/(m*s)) in every mode but gravity
            compensation: ``ki * integral of (q_d - q) dt`` is added to the command
            (0, the default, leaves Lee et al.'s law exactly as published).
        integral_limit: (n,) bound of that integral torque, N*m (N); inf: only the
            freeze while the command saturates bounds it.
        coulomb_velocity: velocity scale v_s, rad/s (m/s), of the Coulomb friction
            compensated at the desired velocity: ``Fc tanh(qd_d / v_s)`` (see
            :mod:`ne_dynamics_ros.control.laws`).
    """

    mode: ControlMode
    kp: np.ndarray
    kd: np.ndarray
    gravity: np.ndarray
    friction_compensation: bool
    state_timeout: float
    velocity_filter_cutoff: float
    position_limit_margin: float = DEFAULT_SETTINGS['position_limit_margin']
    ki: Optional[np.ndarray] = None
    integral_limit: Optional[np.ndarray] = None
    coulomb_velocity: float = DEFAULT_SETTINGS['coulomb_velocity']

    @classmethod
    def from_values(cls, values: Mapping, n: Optional[int] = None) -> 'ControllerSettings':
        """Validate plain values (names as in :data:`DEFAULT_SETTINGS`; absent = default).

        ``n`` is the number of joints; ``None`` (no model yet) checks everything except
        the number of gains.

        Raises:
            ControlParameterError: an unknown name, a wrong type, or a value out of range;
                the message names the setting.
        """
        unknown = sorted(set(values) - set(DEFAULT_SETTINGS))
        if unknown:
            raise ControlParameterError(f'unknown controller settings {unknown}')
        v = dict(DEFAULT_SETTINGS, **values)
        # each value checked as the parameter table says (the node checks with it too)
        c = {name: parameters.check(name, v[name], n) for name in DEFAULT_SETTINGS}
        return cls(mode=c['mode'], kp=c['kp'], kd=c['kd'], gravity=c['gravity'],
                   friction_compensation=c['friction_compensation'],
                   state_timeout=c['state_timeout'],
                   velocity_filter_cutoff=c['velocity_filter_cutoff'],
                   position_limit_margin=c['position_limit_margin'], ki=c['ki'],
                   integral_limit=c['integral_limit'], coulomb_velocity=c['coulomb_velocity'])

    def as_values(self) -> dict:
        """Return the settings as plain values, the inverse of :meth:`from_values`."""
        return {'mode': self.mode.value, 'kp': self.kp.tolist(), 'kd': self.kd.tolist(),
                'friction_compensation': self.friction_compensation,
                'gravity': self.gravity.tolist(), 'state_timeout': self.state_timeout,
                'velocity_filter_cutoff': self.velocity_filter_cutoff,
                'position_limit_margin': self.position_limit_margin,
                'ki': self.ki.tolist(), 'integral_limit': self.integral_limit.tolist(),
                'coulomb_velocity': self.coulomb_velocity}


def _picker(index):
    """Return a function giving the items of a sequence at ``index`` (a list), a tuple."""
    if index is None:
        return None
    if len(index) == 1:
        i = index[0]
        return lambda values: (values[i],)
    return itemgetter(*index)


class Command:
    """What :meth:`ComputedTorqueController.update` answers a valid state with.

    Every vector is (n,) in the command order :attr:`ComputedTorqueController.joints`,
    held as a list of floats (the ``*_values`` attributes: what a message is filled
    from); the array properties build a new (n,) array on each access.

    Attributes:
        effort_values: the command, N*m (N); finite and within the effort limits.
        desired_values: the reference ``(q, qd, qdd)`` sampled for this state, three
            lists: rad, rad/s, rad/s^2 (m, m/s, m/s^2).
        position_error_values: ``q_d - q``, rad (m).
        velocity_error_values: ``qd_d - qd``, rad/s (m/s).
        resumed: True when this state ended a state timeout (the reference now holds the
            position it measured; the previous trajectory was discarded).
        goal_end: the :class:`~ne_dynamics_ros.control.goals.GoalEnd` of the action goal
            this state judged finished (reached, or a tolerance broken: then the
            reference now holds the position measured), else None.
    """

    __slots__ = ('effort_values', 'desired_values', 'position_error_values',
                 'velocity_error_values', 'resumed', 'goal_end')

    def __init__(self, effort_values, desired_values, position_error_values,
                 velocity_error_values, resumed=False, goal_end=None):
        self.effort_values = effort_values
        self.desired_values = desired_values
        self.position_error_values = position_error_values
        self.velocity_error_values = velocity_error_values
        self.resumed = resumed
        self.goal_end = goal_end

    @property
    def effort(self) -> np.ndarray:
        """(n,) the command, N*m (N)."""
        return np.array(self.effort_values, dtype=float)

    @property
    def desired(self) -> DesiredState:
        """The reference ``(q, qd, qdd)`` as (n,) arrays."""
        return DesiredState(*(np.array(v, dtype=float) for v in self.desired_values))

    @property
    def position_error(self) -> np.ndarray:
        """(n,) ``q_d - q``, rad (m)."""
        return np.array(self.position_error_values, dtype=float)

    @property
    def measured_values(self) -> tuple:
        """The state this command answered, ``(q, qd)``: two lists, rad and rad/s (m, m/s).

        ``desired - error``, in the command order (what ``feedback`` / ``actual`` of
        control_msgs' messages report).
        """
        q_d, qd_d, _ = self.desired_values
        return ([a - b for a, b in zip(q_d, self.position_error_values)],
                [a - b for a, b in zip(qd_d, self.velocity_error_values)])

    @property
    def velocity_error(self) -> np.ndarray:
        """(n,) ``qd_d - qd``, rad/s (m/s)."""
        return np.array(self.velocity_error_values, dtype=float)

    def __repr__(self):
        return (f'Command(effort={self.effort_values}, desired={self.desired_values}, '
                f'position_error={self.position_error_values}, '
                f'velocity_error={self.velocity_error_values}, resumed={self.resumed})')


class SkipReason(str, enum.Enum):
    """Why a joint state got no command."""

    #: The state names none of the controlled joints (e.g. a gripper): ignore it.
    NOT_CONTROLLED = 'not_controlled'
    #: The state is malformed (lengths, NaN/inf, missing or duplicated joints): dropped.
    INVALID_STATE = 'invalid_state'
    #: The law produced NaN/inf, or the model refused the state: dropped.
    NO_VALID_EFFORT = 'no_valid_effort'
    #: The controller is inactive (:meth:`ComputedTorqueController.deactivate`): it
    #: watches the states but commands nothing until :meth:`~ComputedTorqueController.
    #: activate`.
    INACTIVE = 'inactive'


class JointStateSample(NamedTuple):
    """One measured joint state, as ``sensor_msgs/JointState`` carries it.

    Attributes:
        names: (k,) joint names, any order; joints that are not controlled are ignored.
        positions: (k,) rad (m).
        velocities: (k,) rad/s (m/s), or empty / all NaN to have them estimated.
        efforts: (k,) N*m (N) or empty; only checked for length.
        stamp_ns: ``header.stamp``, ns on the controller's clock; 0 = unstamped.
        steady_ns: a monotonic clock at receipt, ns, for the state timeout; None = the
            ``now_ns`` given to :meth:`ComputedTorqueController.update`.
    """

    names: Sequence[str]
    positions: Sequence[float]
    velocities: Sequence[float] = ()
    efforts: Sequence[float] = ()
    stamp_ns: int = 0
    steady_ns: Optional[int] = None


class NoCommand(NamedTuple):
    """:meth:`ComputedTorqueController.update`'s answer when it does not command.

    ``reason`` classifies it; ``message`` says what was wrong, for a (throttled) warning.
    Only ``NOT_CONTROLLED`` is normal; the other reasons count as dropped states.
    """

    reason: SkipReason
    message: str


class Timeout(NamedTuple):
    """:meth:`ComputedTorqueController.check_timeout`'s answer while the state timeout lasts.

    Attributes:
        effort: (n,) zeros, the command to publish (again) now.
        silence: seconds (steady clock) since the last valid state.
        started: True on the first report of this timeout (log it once).
    """

    effort: np.ndarray
    silence: float
    started: bool


class PreparedTrajectory(NamedTuple):
    """A checked, interpolated trajectory from :meth:`ComputedTorqueController.prepare_trajectory`.

    ``generation`` identifies the reference it starts from.
    """

    trajectory: Trajectory
    generation: int


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
    (``_hold_next``): the first state after activation, a state timeout or leaving gravity
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
                 hardware_compensates_friction=False):
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
        self._apply(settings)
        self._velocity_estimator = VelocityEstimator(n, settings.velocity_filter_cutoff)
        self.trajectory: Optional[Trajectory] = None
        self.timed_out = False
        self.active = True
        self.dropped_joint_states = 0
        self.rejected_trajectories = 0
        #: the next valid state is held: start, activation, timeout, leaving gravity comp.
        self._hold_next = True
        #: (steady ns, sample) of the last state seen while inactive: what activation holds
        self._idle_sample = None
        self._epoch_ns = None
        self._stamp_origin_ns = None
        self._last_valid_steady_ns = None
        #: (names of the last state, as a tuple; the chain's indices into them, a list)
        self._name_cache = (None, None, None)      # names, chain indices, their picker
        #: Incremented whenever the reference restarts from a measured position (first
        #: state, resume after a timeout, leaving gravity compensation): a trajectory
        #: prepared from an older reference is refused.
        self._reference_generation = 0
        #: integral of q_d - q (rad*s, chain order) and the time it was last advanced, s
        self._integral = [0.0] * n
        self._integral_time = None
        #: the action goal the reference follows (None: none, or a topic trajectory)
        self._goal: Optional[GoalMonitor] = None
        #: goals ended off the control path (replaced, canceled, deactivated, timed out),
        #: for the node to report: GoalEnd items, oldest first
        self._goal_ends = []
        self._lock = threading.RLock()

    @classmethod
    def from_urdf(cls, urdf, base_link=None, tip_link=None, convention='mdh', armature=None,
                  settings=None, joints=None, effort_limits=None,
                  dynamics_backend='generated', damping=None, friction=None,
                  hardware_compensates_gravity=False, hardware_compensates_friction=False):
        """Load the model with :func:`~ne_dynamics_ros.dynamics.model.load_model`, then build.

        Args:
            urdf: URDF XML text or a file path.
            base_link, tip_link, convention, armature, damping, friction: as for
                ``load_model`` (damping and friction replace the URDF's).
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
        model = load_model(urdf, base_link=base_link, tip_link=tip_link,
                           convention=convention, armature=armature, damping=damping,
                           friction=friction)
        return cls(model, settings, joints=joints, effort_limits=effort_limits,
                   dynamics_backend=dynamics_backend,
                   hardware_compensates_gravity=hardware_compensates_gravity,
                   hardware_compensates_friction=hardware_compensates_friction)

    # ---- configuration ------------------------------------------------------------------

    @property
    def n(self) -> int:
        """Number of controlled joints."""
        return self.model.n

    def _apply(self, settings: ControllerSettings):
        self.settings = settings
        margin = settings.position_limit_margin
        with np.errstate(invalid='ignore'):              # inf - inf: no limit, no margin
            low = np.maximum(self.model.lower_limits - margin, -MAX_POSITION)
            high = np.minimum(self.model.upper_limits + margin, MAX_POSITION)
        #: Plain-float bounds of the plausibility checks on the hot path.
        self._position_bounds = (np.where(np.isnan(low), -MAX_POSITION, low).tolist(),
                                 np.where(np.isnan(high), MAX_POSITION, high).tolist())
        self._speed_bounds = (SPEED_FACTOR * self.model.velocity_limits).tolist()
        self._negative_speed_bounds = [-m for m in self._speed_bounds]
        self._integral_gains = (settings.ki.tolist(), settings.integral_limit.tolist())
        self._integrating = bool(np.any(settings.ki)) and \
            settings.mode is not ControlMode.GRAVITY_COMPENSATION
        self.law = ControlLawConfig(
            mode=settings.mode, kp=settings.kp, kd=settings.kd, gravity=settings.gravity,
            effort_limits=self.effort_limits,
            friction_compensation=settings.friction_compensation,
            coulomb_velocity=settings.coulomb_velocity,
            hardware_compensates_gravity=self.hardware_compensates_gravity,
            hardware_compensates_friction=self.hardware_compensates_friction)

    def validate(self, **values) -> ControllerSettings:
        """Check changed settings against the current ones without applying them.

        Raises:
            ControlParameterError: as :meth:`ControllerSettings.from_values`.
        """
        return ControllerSettings.from_values(dict(self.settings.as_values(), **values),
                                              self.n)

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
            old_mode = self.settings.mode
            self._apply(settings)
            if settings.mode is not old_mode:
                self._end_goal(GoalStatus.ABORTED, f'Aborted: mode changed to '
                               f'{settings.mode.value}')
            if old_mode is ControlMode.GRAVITY_COMPENSATION and settings.mode is not old_mode:
                self._hold_next = True
            if 'velocity_filter_cutoff' in values:
                self._velocity_estimator = VelocityEstimator(self.n,
                                                             settings.velocity_filter_cutoff)
            return settings

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

    def _measurement_time(self, stamp_ns: int, now: float) -> float:
        """Time (s) a state was measured, for velocity estimation: its stamp, else ``now``.

        Stamps count from the first stamp seen, so float seconds keep sub-microsecond
        resolution whatever clock the publisher stamps with.
        """
        if stamp_ns == 0:
            return now
        if self._stamp_origin_ns is None:
            self._stamp_origin_ns = stamp_ns
        return (stamp_ns - self._stamp_origin_ns) * 1e-9

    # ---- joint states -> law -> effort --------------------------------------------------

    def _chain_index(self, names):
        """Return the chain joints' indices into ``names``, a list; None if it names none.

        Linear and at C speed (a set and ``tuple.index``): a state of thousands of names
        must not hold up the control path. Raises JointStateError for a name given twice
        or a chain joint missing.
        """
        key = tuple(names)
        if self._name_cache[0] == key:
            return self._name_cache[1]
        present = set(key)
        if len(present) != len(key):
            name = Counter(key).most_common(1)[0][0]
            raise JointStateError(f'joint {name[:80]!r} appears twice')
        chain = self.model.joint_names
        if not any(name in present for name in chain):
            index = None
        else:
            missing = [name for name in chain if name not in present]
            if missing:
                raise JointStateError(f'joints {missing} missing')
            index = [key.index(name) for name in chain]
        self._name_cache = (key, index, _picker(index))
        return index

    def _measured_state(self, names, positions, velocities, efforts, stamp_ns, now):
        """(q, qd) in chain order; None if the state names none of our joints.

        Raises:
            JointStateError: mismatched lengths, missing or duplicated joints, NaN/inf.
        """
        k = len(names)
        if k > MAX_STATE_JOINTS:
            raise JointStateError(f'{k} joint names, more than MAX_STATE_JOINTS '
                                  f'({MAX_STATE_JOINTS}): dropped unread')
        for field, values in (('position', positions), ('velocity', velocities),
                              ('effort', efforts)):
            size = len(values)
            if field == 'position' and size != k or size not in (0, k):
                raise JointStateError(f'{field} has {size} values for {k} names')
        index = self._chain_index(names)
        if index is None:
            return None
        q = np.asarray(positions, dtype=float)[index]
        # One pass of plain comparisons (NaN fails them all); the reason is worked out
        # only for a state that fails.
        low, high = self._position_bounds
        if not all(lo <= v <= hi for v, lo, hi in zip(q.tolist(), low, high)):
            self._position_error(q)
        if len(velocities):
            qd = np.asarray(velocities, dtype=float)[index]
            # All NaN: joint_state_broadcaster's filler for a missing velocity interface.
            values = qd.tolist()
            if not all(v != v for v in values):
                if not all(-m <= v <= m for v, m in zip(values, self._speed_bounds)):
                    if not np.all(np.isfinite(qd)):
                        raise JointStateError(f'velocity contains NaN or inf: {values}')
                    self._check_speed(qd, 'velocity')
                return q, qd
        with np.errstate(over='ignore', invalid='ignore'):
            qd = self._velocity_estimator.update(q, self._measurement_time(stamp_ns, now))
        try:
            self._check_speed(qd, 'estimated velocity')
        except JointStateError:
            # a glitch must not poison the finite differences of the states after it
            self._velocity_estimator.reset()
            raise
        return q, qd

    def _position_error(self, q):
        """Raise the JointStateError that explains why positions ``q`` are not believed."""
        if not np.all(np.isfinite(q)):
            raise JointStateError(f'position contains NaN or inf: {q.tolist()}')
        if np.abs(q).max() > MAX_POSITION:
            j = int(np.argmax(np.abs(q)))
            raise JointStateError(f'position of {self.model.joint_names[j]} is {q[j]:.6g}, '
                                  f'beyond {MAX_POSITION:g}: not a measurement')
        margin = self.settings.position_limit_margin
        outside = (q < self.model.lower_limits - margin) | (q > self.model.upper_limits + margin)
        j = int(np.flatnonzero(outside)[0])
        raise JointStateError(
            f'position of {self.model.joint_names[j]} is {q[j]:.6g}, outside its limits '
            f'[{self.model.lower_limits[j]:.6g}, {self.model.upper_limits[j]:.6g}] by more '
            f'than position_limit_margin {margin:g}')

    def _check_speed(self, qd, what):
        """Raise JointStateError for speeds beyond SPEED_FACTOR x the URDF limits."""
        limit = SPEED_FACTOR * self.model.velocity_limits
        fast = ~(np.abs(qd) <= limit)                 # NaN and inf count as too fast
        if np.any(fast):
            j = int(np.flatnonzero(fast)[0])
            raise JointStateError(
                f'{what} of {self.model.joint_names[j]} is {qd[j]:.6g}, beyond '
                f'{SPEED_FACTOR:g} x its limit {self.model.velocity_limits[j]:.6g}')

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
            if not self.active:
                self._idle_sample = (now_ns if sample.steady_ns is None else sample.steady_ns,
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
            self._velocity_estimator = VelocityEstimator(self.n,
                                                         settings.velocity_filter_cutoff)
            self.trajectory = None
            self._reset_integral()
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
        with self._lock:
            self.active = True
            self.timed_out = False
            self._velocity_estimator.reset()
            idle, self._idle_sample = self._idle_sample, None
            if q is None and now_ns is not None and idle is not None:
                q = self._fresh_position(idle, now_ns if steady_ns is None else steady_ns)
                if q is not None:
                    self._hold(q, self._seconds(now_ns))
                    return
            if q is None or now_ns is None:
                self.trajectory = None
                self._hold_next = True
            else:
                q = self.model.checked_vector(q, 'q', allow_batch=False)
                self._hold(q.tolist(), self._seconds(now_ns))

    def _fresh_position(self, idle, steady_ns):
        """Return q (chain order, a list) of an idle ``(steady ns, sample)`` if fresh or None."""
        seen_ns, sample = idle
        if not 0 <= steady_ns - seen_ns <= self.settings.state_timeout * 1e9:
            return None
        names, positions = sample[:2]
        try:
            # positions only: the velocities of a state this old are not used
            state = self._measured_state(names, positions, [0.0] * len(names), (), 0, 0.0)
        except JointStateError:
            return None
        return None if state is None else state[0].tolist()

    def deactivate(self) -> np.ndarray:
        """Stop commanding; return the zero effort (n,) to send once (command order).

        States are still watched (and counted) but answered ``NoCommand(INACTIVE)``; the
        trajectory and the integral are forgotten.
        """
        with self._lock:
            self._end_goal(GoalStatus.ABORTED, 'Aborted: the controller was deactivated')
            self.active = False
            self.trajectory = None
            self._hold_next = True
            self._reset_integral()
            self._last_valid_steady_ns = None       # no timeout while inactive
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
        state = self._usual_state(joint_names, positions, velocities, efforts)
        if state is None:
            # anything unusual (new names, a fault, velocities to estimate): checked
            try:
                state = self._measured_state(joint_names, positions, velocities, efforts,
                                             stamp_ns, now)
            except JointStateError as err:
                self.dropped_joint_states += 1
                return NoCommand(SkipReason.INVALID_STATE, str(err))
            if state is None:
                return NoCommand(SkipReason.NOT_CONTROLLED,
                                 f'none of the controlled joints {self.model.joint_names}')
            state = (state[0].tolist(), state[1].tolist())
        q, qd = state
        resumed = self.timed_out
        if self._hold_next or self.timed_out:
            self._hold(q, now)
            if resumed:
                # differences across the silence are no velocity: start afresh
                self._velocity_estimator.reset()
        # plain lists of floats from here to the Command: six-element NumPy arithmetic
        # costs more in call overhead than it computes
        t = self._sample_time(stamp_ns, now_ns, now)
        q_d, qd_d, qdd_d = self.trajectory.sample_values(t)
        position_error = [a - b for a, b in zip(q_d, q)]
        integral = extra = None
        if self._integrating:
            integral, extra = self._integral_step(position_error, now)
        try:
            tau = compute_effort_values(self.dynamics, self.law, q, qd, q_d, qd_d, qdd_d,
                                        extra)
        except (NonFiniteEffortError, StateError) as err:
            self.dropped_joint_states += 1
            return NoCommand(SkipReason.NO_VALID_EFFORT, str(err))
        if integral is not None:
            self._commit_integral(integral, tau, position_error, now)
        self._last_valid_steady_ns = now_ns if steady_ns is None else steady_ns
        velocity_error = [a - b for a, b in zip(qd_d, qd)]
        goal_end = None
        if self._goal is not None:
            goal_end = self._judge_goal(t, position_error, velocity_error, q, now)
        order = self._command_order
        if order is not None:
            tau, q_d, qd_d, qdd_d, position_error, velocity_error = (
                [v[i] for i in order]
                for v in (tau, q_d, qd_d, qdd_d, position_error, velocity_error))
        return Command(tau, (q_d, qd_d, qdd_d), position_error, velocity_error, resumed,
                       goal_end)

    # ---- action goals -----------------------------------------------------------------------

    def _judge_goal(self, t, position_error, velocity_error, q, now):
        """Judge the active goal for this cycle; its :class:`GoalEnd` when it ended."""
        verdict = self._goal.check(t, position_error, velocity_error)
        if verdict is None:
            return None
        code, text = verdict
        goal_id = self._goal.goal_id
        self._goal = None
        if code == ResultCode.SUCCESSFUL:
            return GoalEnd(goal_id, GoalStatus.SUCCEEDED, int(code), text)
        self._hold(q, now)              # as JTC: hold the position measured now
        return GoalEnd(goal_id, GoalStatus.ABORTED, int(code), text)

    def _end_goal(self, status: GoalStatus, text: str):
        """End the active goal off the control path (queued for :meth:`take_goal_ends`)."""
        if self._goal is not None:
            code = ResultCode.SUCCESSFUL if status is GoalStatus.CANCELED else \
                ResultCode.INVALID_GOAL
            self._goal_ends.append(GoalEnd(self._goal.goal_id, status, int(code), text))
            self._goal = None

    @property
    def goal_id(self) -> Optional[str]:
        """The id of the action goal the reference follows, or None."""
        goal = self._goal
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
            if self._goal is None or self._goal.goal_id != goal_id:
                return False
            self._end_goal(GoalStatus.CANCELED, 'Goal canceled by the client: holding the '
                           'position measured')
            self._hold_next = True
            return True

    def reference_at(self, now_ns: int) -> Optional[DesiredState]:
        """Return the reference ``(q_d, qd_d, qdd_d)`` at ROS time ``now_ns`` (chain order).

        None while inactive, timed out, or before the first state (nothing is followed).
        """
        with self._lock:
            if not self.active or self.trajectory is None or self.timed_out \
                    or self._hold_next or self._epoch_ns is None:
                return None
            return self.trajectory.sample((now_ns - self._epoch_ns) * 1e-9)

    def _usual_state(self, names, positions, velocities, efforts):
        """(q, qd) as lists in chain order for the usual state; None for any other.

        The usual state: the joint names of the previous state, a position and a velocity
        per name, efforts empty or one per name, every position within its bounds and
        every velocity within its speed bound, all plain comparisons (NaN fails them).
        Any other state goes to :meth:`_measured_state`, which names what is wrong,
        estimates missing velocities or finds the joints of new names.
        """
        key, index, pick = self._name_cache
        k = len(names)
        if (index is None or k != len(key) or len(positions) != k or len(velocities) != k
                or len(efforts) not in (0, k) or names is not key and tuple(names) != key):
            return None
        q = list(map(float, pick(positions)))
        qd = list(map(float, pick(velocities)))
        low, high = self._position_bounds
        # element-wise comparisons at C speed (map over operator.le); NaN fails them
        if not (all(map(le, low, q)) and all(map(le, q, high))
                and all(map(le, self._negative_speed_bounds, qd))
                and all(map(le, qd, self._speed_bounds))):
            return None
        return q, qd

    def _hold(self, q, now):
        """Start (or restart after a timeout / mode change) by holding the measured q."""
        self.timed_out = False
        self._hold_next = False
        self.trajectory = Trajectory.hold(q, now)
        self._reference_generation += 1
        self._reset_integral()

    # ---- integral action --------------------------------------------------------------------

    def _reset_integral(self):
        """Forget the integral (the reference restarted: hold, timeout, new trajectory)."""
        self._integral = [0.0] * self.n
        self._integral_time = None

    def _integral_step(self, error, now):
        """Advance the integral to ``now``; return it and its torque, bounded.

        ``integral += error * dt`` (rectangle rule over the time since the last state, 0
        for the first state after a reset); the torque ``ki * integral`` is bounded by
        ``integral_limit``, and so is the integral behind it (it cannot wind up past it).
        """
        ki, bound = self._integral_gains
        dt = 0.0 if self._integral_time is None else max(0.0, now - self._integral_time)
        integral, torque = [], []
        for i, (value, e, k, b) in enumerate(zip(self._integral, error, ki, bound)):
            value += e * dt
            t = k * value
            if t > b or t < -b:
                t = b if t > 0 else -b
                value = t / k
            integral.append(value)
            torque.append(t)
        return integral, torque

    def _commit_integral(self, integral, tau, error, now):
        """Keep the advanced integral, but on joints whose command saturates.

        Anti-windup: a joint whose command sits at its limit in the direction its error
        pushes keeps its integral frozen.
        """
        limits = self.law.gain_values[2]
        for i, (t, limit, e) in enumerate(zip(tau, limits, error)):
            if (t >= limit and e > 0.0) or (t <= -limit and e < 0.0):
                integral[i] = self._integral[i]
        self._integral = integral
        self._integral_time = now

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
                if not self.active:
                    raise TrajectoryError('the controller is inactive: a trajectory is taken '
                                          'once it is activated')
                if self.trajectory is None or self.timed_out:
                    raise TrajectoryError(
                        'no valid joint_states '
                        + ('(state timeout)' if self.timed_out else 'yet')
                        + ': the reference starts from the measured position')
                start = None if stamp_ns == 0 else (stamp_ns - self._epoch_ns) * 1e-9
                state_before = self.trajectory.sample(now)
                generation = self._reference_generation
            trajectory = trajectory_from_points(joint_names, points, self.model.joint_names,
                                                start, now, state_before)
        except TrajectoryError:
            with self._lock:
                self.rejected_trajectories += 1
            raise
        return PreparedTrajectory(trajectory, generation)

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
            if self.timed_out or prepared.generation != self._reference_generation:
                self.rejected_trajectories += 1
                raise TrajectoryError(
                    'the reference restarted from the measured position while the '
                    'trajectory was prepared (state timeout or resume): send it again')
            self._end_goal(GoalStatus.ABORTED,
                           'Aborted: replaced by a newer goal' if goal_id is not None else
                           'Aborted: a trajectory on ~/joint_trajectory replaced the goal\'s')
            self.trajectory = prepared.trajectory
            if goal_id is not None:
                self._goal = GoalMonitor(goal_id, tolerances, prepared.trajectory.end_time,
                                         self.model.joint_names)
            self._reset_integral()
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

        Raises:
            TrajectoryError: no valid joint state yet or a state timeout (the reference
                must start from a measured position), or any reason of
                :func:`~ne_dynamics_ros.control.trajectory.trajectory_from_points`. The
                previous trajectory stays in force.
        """
        return self.install_trajectory(
            self.prepare_trajectory(joint_names, points, stamp_ns, now_ns))

    # ---- timeout and stop -----------------------------------------------------------------

    def check_timeout(self, steady_ns: int) -> Optional[Timeout]:
        """Call periodically: a :class:`Timeout` (publish its zeros) or None (all well).

        Nothing is reported before the first valid state.
        """
        with self._lock:
            if self._last_valid_steady_ns is None:
                return None
            silence = (steady_ns - self._last_valid_steady_ns) * 1e-9
            if silence <= self.settings.state_timeout:
                return None
            started = not self.timed_out
            self.timed_out = True
            self._end_goal(GoalStatus.ABORTED, f'Aborted: no valid joint_states for '
                           f'{silence:.3f} s (state_timeout {self.settings.state_timeout} s): '
                           'zero effort until states return')
            return Timeout(self.zero_effort(), silence, started)

    def zero_effort(self) -> np.ndarray:
        """(n,) zeros: the command for a state timeout and for shutting down."""
        return np.zeros(self.n)


__all__ = ['Command', 'ComputedTorqueController', 'ControllerSettings', 'DEFAULT_SETTINGS',
           'DYNAMICS_BACKENDS', 'JointStateError', 'JointStateSample', 'NoCommand',
           'PreparedTrajectory',
           'SkipReason', 'STAMP_TOLERANCE_NS', 'Timeout']
