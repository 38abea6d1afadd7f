"""The controller's run state, and its answers to a joint state.

Pure module (no ROS). Pinocchio keeps what is fixed after building (``Model``) apart from
what one computation changes (``Data``); the controller does the same: its model, law and
settings are fixed between reconfigurations, and everything one run of it changes is one
:class:`RunState`, which :meth:`~ne_dynamics_ros.control.controller.
ComputedTorqueController.configure`, ``activate``, ``deactivate``, a state timeout, a
resume, a cancel and leaving gravity compensation replace whole (nothing is reset field by
field). Installing a trajectory changes the run in force (its reference, its goal, its
integral); a trajectory prepared against another run is refused. What the run knows of
the arm itself (the velocity estimator's history, the momentum observer, the contact
detector: a :class:`~ne_dynamics_ros.control.sensing.activation.Sensing`) is handed from run to run
within an activation, and is new at configure, activate and deactivate.

The answers: :class:`Command` (publish it), :class:`NoCommand` with a
:class:`SkipReason`, :class:`Timeout`, :class:`PreparedTrajectory`.

Units: q in rad (m for prismatic joints), qd in rad/s, qdd in rad/s^2, efforts in N*m (N).
"""
from dataclasses import dataclass, field
import enum
import threading
from typing import NamedTuple, Optional

import numpy as np

from ne_dynamics_ros.control.reference.goals import GoalMonitor
from ne_dynamics_ros.control.sensing.activation import Sensing
from ne_dynamics_ros.control.reference.trajectory import DesiredState, Trajectory

#: A state stamped within this many nanoseconds of ``now`` is taken to be on our clock.
STAMP_TOLERANCE_NS = 500_000_000

#: Why the next valid state is held, as the refusal of a trajectory sent meanwhile says.
NO_STATE_YET = 'no valid joint_states yet'


@dataclass(eq=False)
class RunState:
    """What one run of the controller changes (chain order); replaced whole on a restart.

    Attributes:
        n: the number of joints.
        active: commanding; False: states are answered ``NoCommand(INACTIVE)``.
        trajectory: the reference; None: the next valid state is held (then it is
            ``Trajectory.hold`` of that state's positions).
        waiting: why the next valid state is held, for the refusal of a trajectory sent
            meanwhile (the reference starts from a measured position).
        timed_out: no valid state for ``state_timeout``: zero effort until one returns.
        last_valid_steady_ns: steady clock of the last valid state, ns; None: none yet in
            this run (no state timeout can start).
        goal: the :class:`~ne_dynamics_ros.control.reference.goals.GoalMonitor` judging the
            reference (an action goal), or None.
        integral: (n,) list, the integral of ``q_d - q``, rad*s (m*s).
        integral_time: when ``integral`` was last advanced, s; None: not yet.
        law: the run's control law (:class:`~ne_dynamics_ros.control.laws.base.Law`: what it
            keeps between states is this run's), or None: the law of the settings in
            force, made on the next state.
        idle_sample: ``(steady ns, JointStateSample)`` of the last state seen while
            inactive (what an activation holds while it is fresh), or None.
        pending: a trajectory (and its goal) that arrived while the next valid state was
            awaited, ``((waypoints, start, receipt), goal_id, tolerances)``: installed on
            that state, starting from it; or None.
        last_q: (n,) list, the last valid state's positions, or None.
        last_effort: (n,) list, the last command (chain order), or None.
        loss_effort: (n,) list (chain order): what a state timeout commands while
            ``state_loss_hold`` lasts (``state_loss_policy``); None: zeros.
        sensing: the activation's :class:`~ne_dynamics_ros.control.sensing.activation.Sensing`
            (velocity estimator, observer, detector), handed on by a restart.
    """

    n: int
    active: bool = True
    trajectory: Optional[Trajectory] = None
    waiting: str = NO_STATE_YET
    timed_out: bool = False
    last_valid_steady_ns: Optional[int] = None
    goal: Optional[GoalMonitor] = None
    integral: list = field(init=False)
    integral_time: Optional[float] = field(default=None, init=False)
    law: Optional[object] = None
    idle_sample: Optional[tuple] = None
    pending: Optional[tuple] = None
    last_q: Optional[list] = None
    last_effort: Optional[list] = None
    loss_effort: Optional[list] = None
    sensing: Optional[Sensing] = None

    def __post_init__(self):
        self.integral = [0.0] * self.n

    @classmethod
    def holding(cls, q, now: float, last_valid_steady_ns: Optional[int] = None,
                sensing: Optional[Sensing] = None) -> 'RunState':
        """Return an active run holding ``q`` ((n,) list, rad or m) from ``now`` (s)."""
        return cls(len(q), trajectory=Trajectory.hold(q, now),
                   last_valid_steady_ns=last_valid_steady_ns, sensing=sensing)

    def reset_integral(self):
        """Start the integral afresh (a new reference)."""
        self.integral = [0.0] * self.n
        self.integral_time = None


class Runs:
    """The run in force, the lock every change of it takes, and the clock's origin.

    One per controller, shared by the parts that change the run (the update, the
    references and goals, the state timeout). ``current`` is replaced whole, never reset
    field by field.

    Args:
        n: the number of joints.
        sensing: the first run's :class:`~ne_dynamics_ros.control.sensing.activation.Sensing`.
    """

    def __init__(self, n: int, sensing: Optional[Sensing] = None):
        self.n = n
        #: guards :attr:`current` (re-entrant: a public call may make another)
        self.lock = threading.RLock()
        #: the :class:`RunState` in force
        self.current = RunState(n, sensing=sensing)
        #: the controller's clock at its first reading, ns; None before
        self.epoch_ns = None

    def seconds(self, now_ns: int) -> float:
        """``now_ns`` as float seconds from the first ``now_ns`` seen."""
        if self.epoch_ns is None:
            self.epoch_ns = now_ns
        return (now_ns - self.epoch_ns) * 1e-9

    def sample_time(self, stamp_ns: int, now_ns: int, now: float) -> float:
        """Return the stamp (s) when on our clock (within :data:`STAMP_TOLERANCE_NS`), else now.

        Sampling at the stamp compares q_d and q of the same instant, also under
        simulated time, where /clock and /joint_states arrive separately.
        """
        if stamp_ns == 0 or abs(stamp_ns - now_ns) > STAMP_TOLERANCE_NS:
            return now
        return (stamp_ns - self.epoch_ns) * 1e-9

    def restart(self, waiting: str) -> RunState:
        """Start a new run, still active: the next valid state is held (``waiting``: why)."""
        run = self.current
        self.current = RunState(self.n, waiting=waiting,
                                last_valid_steady_ns=run.last_valid_steady_ns,
                                sensing=run.sensing)
        return self.current

    def hold(self, q, now: float) -> RunState:
        """Start a run holding the measured ``q`` (a list) from ``now`` (s); return it."""
        run = self.current
        self.current = RunState.holding(q, now, run.last_valid_steady_ns, run.sensing)
        return self.current


class Command:
    """The controller's answer to a valid state (``update``): everything said about it.

    Every vector is (n,) in the command order :attr:`ComputedTorqueController.joints`,
    held as a list of floats (the ``*_values`` attributes: what a message is filled
    from); the array properties build a new (n,) array on each access. The node
    publishes from it alone: it never asks the controller again about this state.

    Attributes:
        effort_values: the command, N*m (N); finite and within the effort limits.
        desired_values: the reference ``(q, qd, qdd)`` sampled for this state, three
            lists: rad, rad/s, rad/s^2 (m, m/s, m/s^2).
        position_error_values: ``q_d - q``, rad (m).
        velocity_error_values: ``qd_d - qd``, rad/s (m/s).
        resumed: True when this state ended a state timeout (the reference now holds the
            position it measured; the previous trajectory was discarded).
        external_effort_values: the momentum observer's estimate of the external effort
            on each joint at this state, N*m (N) (:mod:`~ne_dynamics_ros.control.sensing.
            observer`), or None.
        contact: the :class:`~ne_dynamics_ros.control.sensing.observer.Contact` this state
            started (the command already reacts to it), else None.
        at_limit: n bools: the command sits at the joint's effort limit.
        contact_in_force: a contact is in force (detected, not yet over).
        contact_reaction: with ``contact``, what ``contact.reaction`` does (text).
        report: what the law reports for its output topics, ``{key: value}``
            (:meth:`~.laws.base.Law.report`), or None.
        external_wrench: the :class:`~ne_dynamics_ros.control.sensing.wrench.TipWrench` the
            observer's external effort is the joint image of, while it is wanted, or None.
    """

    __slots__ = ('effort_values', 'desired_values', 'position_error_values',
                 'velocity_error_values', 'resumed', 'external_effort_values',
                 'contact', 'at_limit', 'contact_in_force', 'contact_reaction', 'report',
                 'external_wrench')

    def __init__(self, effort_values, desired_values, position_error_values,
                 velocity_error_values, resumed=False, external_effort_values=None,
                 contact=None, at_limit=None,
                 contact_in_force=False, contact_reaction=None, report=None,
                 external_wrench=None):
        self.effort_values = effort_values
        self.desired_values = desired_values
        self.position_error_values = position_error_values
        self.velocity_error_values = velocity_error_values
        self.resumed = resumed
        self.external_effort_values = external_effort_values
        self.contact = contact
        self.at_limit = at_limit
        self.contact_in_force = contact_in_force
        self.contact_reaction = contact_reaction
        self.report = report
        self.external_wrench = external_wrench

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
    #: The controller is inactive (deactivated): it watches the states but commands
    #: nothing until it is activated.
    INACTIVE = 'inactive'


class NoCommand(NamedTuple):
    """The controller's answer to a state it does not command (``update``).

    ``reason`` classifies it; ``message`` says what was wrong, for a (throttled) warning.
    Only ``NOT_CONTROLLED`` is normal; the other reasons count as dropped states.
    """

    reason: SkipReason
    message: str


class Timeout(NamedTuple):
    """The controller's answer to ``check_timeout`` while the state timeout lasts.

    Attributes:
        effort: (n,) the command to publish (again) now, command order, N*m (N): what
            ``state_loss_policy`` holds while ``state_loss_hold`` lasts, then zeros.
        silence: seconds (steady clock) since the last valid state.
        started: True on the first report of this timeout (log it once).
        holding: True while the policy's effort is held (False: zeros).
        hold_ended: True on the first report after the hold ended (log it once).
    """

    effort: np.ndarray
    silence: float
    started: bool
    holding: bool = False
    hold_ended: bool = False


class PreparedTrajectory(NamedTuple):
    """A checked, interpolated trajectory from the controller's ``prepare_trajectory``.

    ``run`` is the :class:`RunState` whose reference it starts from: it is installed only
    while that run is the one in force. ``deferred``: for a trajectory that arrived while
    the run awaited its first state, ``(PreparedWaypoints, start s or None, receipt s)``
    to build it from that state (``trajectory`` is then provisional, for its times).
    ``stretch``: how many times slower than sent it is played to stay within the effort
    limits (:func:`~ne_dynamics_ros.control.reference.effort_check.fit_to_limits`; 1.0: as sent).
    ``receipt``: for a trajectory that starts when it arrives (``header.stamp`` 0), its
    receipt on the controller's clock, s (it starts when it is installed instead, as
    joint_trajectory_controller starts it at its first sample); None for a stamped one.
    """

    trajectory: Trajectory
    run: 'RunState'
    deferred: Optional[tuple] = None
    stretch: float = 1.0
    receipt: Optional[float] = None


__all__ = ['Command', 'NO_STATE_YET', 'NoCommand', 'PreparedTrajectory', 'Runs', 'RunState',
           'SkipReason', 'STAMP_TOLERANCE_NS', 'Timeout']
