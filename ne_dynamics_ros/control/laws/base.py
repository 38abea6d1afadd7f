"""The protocol of a control law, what it is built from, and the one clamp (no ROS).

A law is one class in one module of this package (:mod:`.registry` lists them):

:class:`Law`
    the protocol: what the law needs and gives (class attributes), its checks, its
    effort for one state, what it reports with each command and on ``/diagnostics``;
:class:`JointLaw`
    the base of the laws that are a function of the state and the reference (computed
    torque, feedforward, gravity compensation, joint impedance): the effort with the
    hardware's compensation, the friction, the integral action and the clamp around the
    law's own torque;
:class:`JointGains`
    the gains, gravity, limits and friction flags of the settings in force;
:class:`LawContext`
    what a law object is built from; :class:`LawStep` one state as a law sees it.

Units: q in rad (m for prismatic joints), qd in rad/s, qdd in rad/s², efforts in N·m (N);
gravity in m/s², in the chain's base frame.
"""
from dataclasses import dataclass
import math
from typing import Dict, List, NamedTuple

import numpy as np

from ne_dynamics_ros.dynamics.friction import drive_friction
from ne_dynamics_ros.errors import NonFiniteEffortError

#: Zero gravity, for hardware that compensates gravity itself (constant).
NO_GRAVITY = np.zeros(3)
NO_GRAVITY.flags.writeable = False


#: The message kinds of the laws' own topics and the values a law sees of them. The node
#: converts each message to that value (an input) or that value to a message (an output);
#: the law never sees a message.
TOPIC_KINDS = {
    'pose': 'geometry_msgs/PoseStamped: in, a PoseInput; out, a (4, 4) pose (m), the base '
            'link frame',
    'wrench': 'geometry_msgs/WrenchStamped: in, a WrenchInput',
    'inertia': 'geometry_msgs/Inertia: in, an InertiaInput; out, (mass kg, centre of mass '
               '(3,) m, inertia (6,) kg m^2 ixx ixy ixz iyy iyz izz about it)',
}


class LawTopic(NamedTuple):
    """A topic of a law's own, beside the joint-space ones, declared in its module.

    The node makes the subscription (or publisher) from it and converts messages of
    ``kind`` to and from the values of :data:`TOPIC_KINDS`; the law sees values only.

    Attributes:
        key: the law's name for it: what :meth:`Law.take` (or :meth:`Law.take_shared`)
            is given with the value, or the key of the law's :meth:`Law.report`.
        name: the topic's name, ``~/`` relative (remappable as any ROS name).
        kind: a key of :data:`TOPIC_KINDS`.
        output: True: the node publishes it from each command's report (while somebody
            subscribes); False: the node subscribes to it.
        sensor_data: best-effort QoS of depth 5, as ros2_controllers' broadcasters publish
            a sensor; False: reliable, depth 10.
        every_mode: an input taken whatever the mode (by :meth:`Law.take_shared`); False:
            only while the law's mode is in force and the controller active.
        rate: an output's largest rate, messages per second of the states' stamps (0: at
            every command).
        summary: what it carries, for the node's documentation.
    """

    key: str
    name: str
    kind: str
    output: bool = False
    sensor_data: bool = False
    every_mode: bool = False
    rate: float = 0.0
    summary: str = ''


class PoseInput(NamedTuple):
    """A pose taken from a topic (the value of a ``pose`` input).

    ``position`` (3,) m, ``orientation`` (4,) quaternion ``(x, y, z, w)`` (ROS order),
    ``frame_id`` the frame it is given in; not checked (the law does).
    """

    position: tuple
    orientation: tuple
    frame_id: str = ''


class WrenchInput(NamedTuple):
    """A wrench taken from a topic (the value of a ``wrench`` input).

    ``force`` (3,) N, ``torque`` (3,) N·m about the frame's origin, both in ``frame_id``'s
    axes; ``stamp`` s (0: not stamped); not checked (the law does).
    """

    force: tuple
    torque: tuple
    frame_id: str = ''
    stamp: float = 0.0


class InertiaInput(NamedTuple):
    """A rigid body's inertia taken from a topic (the value of an ``inertia`` input).

    ``mass`` kg, ``com`` (3,) m, ``inertia`` (6,) ixx, ixy, ixz, iyy, iyz, izz kg·m² about
    the centre of mass; not checked (the law does).
    """

    mass: float
    com: tuple = (0.0, 0.0, 0.0)
    inertia: tuple = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


class LawInputError(ValueError):
    """An input a law cannot take now (the message says why); nothing was changed."""


def clamp(tau, limits):
    """Return ``tau`` checked finite and clamped into ``[-limits, limits]``.

    The one clamp of every command. ``tau``: n floats (a list, as the control path holds
    them) or an (n,) array; ``limits``: n values > 0, N·m (N), ``inf`` allowed. Returns a
    list for a list, an (n,) array otherwise.

    Raises:
        NonFiniteEffortError: ``tau`` holds NaN or inf (checked before clamping, so an
            overflow is never turned into a full-limit command).
    """
    values = tau if isinstance(tau, list) else np.asarray(tau, dtype=float).tolist()
    if not math.isfinite(sum(values)):
        raise NonFiniteEffortError(f'control law produced a non-finite effort {values}')
    clamped = [-h if t < -h else h if t > h else t for t, h in zip(values, limits)]
    return clamped if isinstance(tau, list) else np.array(clamped)


def reference_friction(model, qd_d, coulomb_velocity):
    """Friction efforts at the desired velocity: ``Fv qd_d + Fc tanh(qd_d / v_s) + offset``.

    :func:`~ne_dynamics_ros.dynamics.friction.drive_friction` with the model's drive
    values (URDF or identified) and the law's ``coulomb_velocity`` as v_s. The reference
    is noise-free, so its sign can be sharper than the identified
    ``model.friction_velocity``, which describes the friction against *measured*
    (filtered) velocities: on the MuJoCo UR5e with dry friction the identified v_s at the
    reference left 6.9e-4 rad of tracking error, 0.003 rad/s 1.1e-4 rad
    (``benchmarks/bench_mujoco.py``).

    Args:
        model: a :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        qd_d: (n,) rad/s (m/s): an array, or a list of n floats (then a list is returned).
        coulomb_velocity: v_s > 0, rad/s (m/s).

    Returns:
        (n,) N·m (N), to be added to the command.
    """
    if isinstance(qd_d, list):
        return drive_friction(qd_d, model.damping.tolist(), model.friction.tolist(),
                              float(coulomb_velocity), model.friction_offset.tolist())
    qd_d = model.checked_vector(qd_d, 'qd_d')
    return drive_friction(qd_d, model.damping, model.friction, coulomb_velocity,
                          model.friction_offset)


@dataclass(frozen=True)
class JointGains:
    """The gains, gravity, limits and friction flags of the settings in force.

    Attributes:
        mode: the mode these are for (a :class:`~.registry.ControlMode`).
        kp: (n,) position gains: 1/s² where the law's gains are accelerations (computed
            torque), N·m/rad where they are efforts (feedforward).
        kd: (n,) velocity gains, 1/s or N·m·s/rad likewise.
        gravity: (3,) gravity acceleration in the chain's base frame, m/s².
        effort_limits: (n,) symmetric limits ``|tau_i| <= effort_limits[i]``, N·m or N.
        friction_compensation: add the model's drive friction: at the desired velocity
            in laws that follow a reference, at the measured one otherwise.
        coulomb_velocity: v_s of ``Fc tanh(qd_d / v_s)`` at the desired velocity, rad/s
            (m/s), > 0.
        hardware_compensates_gravity: leave g(q) out (the hardware adds it).
        hardware_compensates_friction: leave the friction model out (the hardware adds it).
    """

    mode: object
    kp: np.ndarray
    kd: np.ndarray
    gravity: np.ndarray
    effort_limits: np.ndarray
    friction_compensation: bool = False
    coulomb_velocity: float = 0.003
    hardware_compensates_gravity: bool = False
    hardware_compensates_friction: bool = False

    @property
    def gain_values(self):
        """(kp, kd, effort_limits) as lists of floats, made once (for the control path)."""
        cached = self.__dict__.get('_gain_values')
        if cached is None:
            cached = (np.asarray(self.kp, dtype=float).tolist(),
                      np.asarray(self.kd, dtype=float).tolist(),
                      np.asarray(self.effort_limits, dtype=float).tolist())
            object.__setattr__(self, '_gain_values', cached)
        return cached

    @property
    def limit_values(self) -> List[float]:
        """The effort limits, n floats, N·m (N)."""
        return self.gain_values[2]

    @property
    def law_gravity(self) -> np.ndarray:
        """The gravity the law's model uses: zero where the hardware compensates it."""
        return NO_GRAVITY if self.hardware_compensates_gravity else self.gravity

    @property
    def compensates_friction(self) -> bool:
        """The command carries the friction model (asked for, not done by the hardware)."""
        return self.friction_compensation and not self.hardware_compensates_friction


@dataclass(frozen=True)
class LawContext:
    """What a law object is built from: the controller's fixed parts and the settings.

    Attributes:
        model: the :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        dynamics: what the law calls for M, C, g: the model or its generated program
            (:class:`~ne_dynamics_ros.codegen.CompiledDynamics`).
        gains: the :class:`JointGains` in force.
        settings: the :class:`~ne_dynamics_ros.control.settings.ControllerSettings` in
            force (immutable: new settings are a new context).
        load: the controller's :class:`~.adaptive.LoadEstimate` (what the adaptive law
            learned or was declared: kept across modes and runs).
        law_class: the class of the settings' mode (what it carries, :class:`Law`).
        friction: the controller's
            :class:`~ne_dynamics_ros.control.sensing.friction_estimate.CoulombEstimate` (the
            drives' Coulomb friction learned while joints slide: kept across modes and
            runs), or None.
    """

    model: object
    dynamics: object
    gains: JointGains
    settings: object
    load: object
    law_class: type
    friction: object = None

    @property
    def load_law(self):
        """The adaptive law whose load the model carries now, else None.

        In a law that adapts, its law; in a law that carries a load, the load held
        (learned before, or declared), once it holds a mass.
        """
        law_class, law = self.law_class, self.load.law
        if law_class.adapts or (law_class.carries_load and getattr(law, 'mass', 0.0) > 0.0):
            return law
        return None

    def gravity_values(self, q) -> List[float]:
        """Return g(q) of the law's model (the load's too; zero where compensated), n floats."""
        rest = [0.0] * len(q)
        load = self.load_law
        if load is not None:
            return load.values(list(q), rest, list(q), rest, rest)[0]
        return self.model.gravity_torques(np.array(q, dtype=float),
                                          self.gains.law_gravity).tolist()


def mass_matrix_at(dynamics, q) -> np.ndarray:
    """Return M(q), (n, n) kg·m² (kg), of ``dynamics`` at ``q`` (n floats, rad or m).

    With a generated program (:class:`~ne_dynamics_ros.codegen.CompiledDynamics`) column by
    column from n + 1 runs of it, ``M e_j = rnea(q, 0, e_j) - rnea(q, 0, 0)`` (gravity
    cancels; Walker & Orin 1982, method 1); otherwise, or where the program cannot run on
    ``q``, the model's ``mass_matrix``.
    """
    run = getattr(dynamics, 'rnea_values', None)
    n = len(q)
    zero = [0.0] * n
    base = None if run is None else run(q, zero, zero)
    if base is None or not math.isfinite(sum(base)):
        return dynamics.mass_matrix(np.asarray(q, dtype=float))
    units = [[1.0 if i == j else 0.0 for i in range(n)] for j in range(n)]
    return np.array([run(q, zero, unit) for unit in units]).T - np.asarray(base)[:, None]


class LoadedDynamics:
    """What a law calls for M, C, g: the context's, or a model with the load it carries.

    A law that carries a load (:attr:`Law.carries_load`) keeps one of these: the model
    with the load's parameters is built once per estimate (the estimate's bytes are the
    key), not once per state.
    """

    __slots__ = ('_key', '_model')

    def __init__(self):
        self._key, self._model = None, None

    def of(self, context: 'LawContext'):
        """Return ``context.dynamics``, or the model with the load ``context`` holds."""
        law = context.load_law
        if law is None:
            return context.dynamics
        key = law.estimate.tobytes()
        if self._key != key:
            self._key = key
            self._model = context.model.with_parameters(law.model_parameters())
        return self._model


class LawStep:
    """One state as a law sees it (lists of n floats, chain order).

    ``now``: the controller's clock, s; ``t``: the state's instant (its stamp), s; ``q``,
    ``qd``: the measured positions and velocities; ``reference``: ``(q_d, qd_d, qdd_d)``
    of the run's reference at ``t``; ``efforts``: the measured efforts, or None;
    ``extra``: efforts added before the limits (the integral action), or None;
    ``in_contact``: the run's contact detector holds a contact (the observer's external
    effort over ``contact.threshold``): a law that integrates an error stops while it does.
    """

    __slots__ = ('now', 't', 'q', 'qd', 'reference', 'efforts', 'extra', 'in_contact',
                 'external')

    def __init__(self, now, t, q, qd, reference, efforts, extra, in_contact=False,
                 external=None):
        self.now, self.t, self.q, self.qd = now, t, q, qd
        self.reference, self.efforts, self.extra = reference, efforts, extra
        self.in_contact, self.external = in_contact, external


class Law:
    """The protocol of a control law; one object per run (the controller's ``RunState``).

    What a law declares (class attributes):

    ``name``, ``summary``
        its mode's name, the value of the ``mode`` parameter (None: not a mode, e.g. the
        contact reaction ``comply``), and what it commands in a line (the parameter's
        description lists them);
    ``follows_trajectory``
        True: the run's reference (a trajectory, a goal, or the hold) is what it tracks;
        False: trajectories and goals are refused with :attr:`refusal`;
    ``takes_target``
        it follows a target pose (``set_goal``) given on ``~/target_pose``;
    ``carries_load``, ``adapts``
        its model carries the load the adaptive part holds; it learns that load;
    ``integrates``
        the integral action (``ki``) adds to its effort;
    ``needs_efforts``
        the measured efforts are read for it (:attr:`LawStep.efforts`);
    ``needs_external_effort``
        the momentum observer runs on every state for it (:attr:`LawStep.external`),
        whoever reads ``~/external_effort`` and whether contact detection is on;
    ``reacts_to_contact``
        a contact detected (``contact.threshold``) starts the ``contact.reaction``; False
        for a law whose input a push is (the contact is still reported);
    ``acceleration_gains``
        its ``kp``, ``kd`` are the error dynamics' own (1/s², 1/s): the delay rule of
        ``ne-dynamics gains`` applies to them;
    ``holds_on_exit``
        leaving it (another mode) holds the position measured then (the arm may have
        been moved by hand);
    ``topics``
        its own topics beside the joint-space ones (:class:`LawTopic`: inputs it takes,
        outputs its :meth:`report` fills); the node makes them for every law of the
        registry, whatever the mode;
    ``parameters``
        its rows of the node's parameter table
        (:class:`~ne_dynamics_ros.control.config.spec.ParameterSpec`: name, type, default,
        unit, check), declared in its module; the table lists them after the gains.

    What it does: :meth:`check` (its settings), :meth:`apply_settings` (on entry and on
    new settings), :meth:`caveats`, :meth:`effort` (one state, clamped), :meth:`take`
    and :meth:`take_shared` (its inputs), :meth:`report` (what the command carries for
    its output topics), :meth:`facts` (its lines on
    ``/diagnostics``), :meth:`breaking_away` (pulling joints from rest),
    :meth:`reconfigured` and :meth:`restarted` (new settings, a new run).

    Args:
        context: the :class:`LawContext` in force.
    """

    name = None
    summary = ''
    follows_trajectory = True
    takes_target = False
    carries_load = False
    adapts = False
    integrates = True
    needs_efforts = False
    needs_external_effort = False
    reacts_to_contact = True
    acceleration_gains = False
    holds_on_exit = False
    topics = ()
    parameters = ()
    #: why a trajectory is refused when ``follows_trajectory`` is False
    refusal = ''
    #: some of :attr:`topics` are outputs: each command carries :meth:`report` (set for
    #: each subclass from its ``topics``)
    reports = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.reports = any(topic.output for topic in cls.topics)

    def __init__(self, context: LawContext):
        self.context = context

    @classmethod
    def check(cls, settings) -> None:
        """Raise ControlParameterError if ``settings`` cannot make this law (default: can)."""

    @classmethod
    def apply_settings(cls, context: LawContext) -> None:
        """Prepare the controller's shared parts for this law's settings (default: none)."""

    @classmethod
    def caveats(cls, context: LawContext) -> List[str]:
        """Return warnings (text) about the settings on this arm (default: none)."""
        return []

    def effort(self, step: LawStep) -> List[float]:
        """Return the n efforts of one state, clamped and finite.

        Raises:
            NonFiniteEffortError: the law produced NaN or inf.
            ne_dynamics_ros.errors.StateError: the model refused the state.
        """
        raise NotImplementedError

    def take(self, key: str, value) -> None:
        """Take the value of the input topic ``key`` (:attr:`topics`) for this run.

        Called with the controller's lock held, while the law's mode is in force and the
        controller active. Default: no inputs.

        Raises:
            LawInputError: a value the law cannot take (nothing changed).
        """
        raise LawInputError(f'the {self.name} law takes no input {key!r}')

    @classmethod
    def take_shared(cls, controller, key: str, value) -> None:
        """Take the value of an ``every_mode`` input topic ``key``, whatever the mode.

        ``controller``: the :class:`~ne_dynamics_ros.control.controller.
        ComputedTorqueController`, its lock held (its ``context``, ``load``, ``runs``,
        ``contact_supervisor``). Default: no such inputs.

        Raises:
            LawInputError: a value that cannot be taken (nothing changed).
        """
        raise LawInputError(f'the {cls.name} law takes no input {key!r} in every mode')

    def report(self) -> Dict[str, object]:
        """Return what the command carries for the law's output topics, by key.

        Each value has ``topic_value()``: the value of its topic's kind
        (:data:`TOPIC_KINDS`), made only when the node publishes it. Default: none.
        """
        return {}

    def breaking_away(self, now: float) -> bool:
        """Say whether the law pulls the arm from rest toward a reference it set moving.

        True at ``now`` (s, the controller's clock) while the law pulls joints that may
        still be held by their drives' stiction (a target approached, the return after
        a contact): the contact supervisor then allows those at rest the stiction range
        (:meth:`~ne_dynamics_ros.control.sensing.contact.ContactSupervisor.observe`). Default:
        never.
        """
        return False

    def facts(self) -> Dict[str, str]:
        """Return the law's lines for ``/diagnostics``, ``{key: value}`` (default: none)."""
        return {}

    def reconfigured(self, context: LawContext) -> 'Law':
        """Return this law under new settings of the same mode (default: a new object)."""
        return type(self)(context)

    def restarted(self) -> 'Law':
        """Return the law for a new run (a hold, a resume): a new object, nothing kept."""
        return type(self)(self.context)


class JointLaw(Law):
    """A law that is a function of the state and the reference (no state of its own).

    A subclass gives :meth:`torque`, the law's own effort on arrays; this class adds the
    drive friction (at the desired velocity if :attr:`friction_at_reference`, else at the
    measured one) where ``friction_compensation`` asks for it, the integral action, and
    the clamp. :meth:`fast_values` may answer on plain floats first (the usual control
    path).
    """

    #: the friction is compensated at the reference's velocity (else at the measured)
    friction_at_reference = True

    @classmethod
    def torque(cls, model, gains: JointGains, gravity, q, qd, q_d, qd_d, qdd_d):
        """Return the law's effort (n,) before friction and limits; arrays in, array out."""
        raise NotImplementedError

    @classmethod
    def fast_values(cls, model, gains, gravity, q, qd, q_d, qd_d, qdd_d, extra):
        """Return the clamped effort on lists, or None to take the checked path."""
        return None

    @classmethod
    def joint_effort(cls, model, gains: JointGains, q, qd, q_d, qd_d, qdd_d, extra=None):
        """Return the clamped effort (a list) of the law on lists of n floats.

        ``extra``: n efforts added before the limits (the integral action), or None.

        Raises:
            NonFiniteEffortError, ne_dynamics_ros.errors.StateError: as :meth:`Law.effort`.
        """
        gravity = gains.law_gravity
        tau = cls.fast_values(model, gains, gravity, q, qd, q_d, qd_d, qdd_d, extra)
        if tau is not None:
            return tau
        arrays = [np.array(v, dtype=float) for v in (q, qd, q_d, qd_d, qdd_d)]
        return cls.checked_effort(model, gains, gravity, *arrays, extra=extra).tolist()

    @classmethod
    def checked_effort(cls, model, gains, gravity, q, qd, q_d, qd_d, qdd_d, extra=None):
        """Apply the law on (n,) arrays, each step checked; return the clamped (n,) array."""
        # Overflow (absurd gains) is caught below as a non-finite value or by the model.
        with np.errstate(over='ignore', invalid='ignore'):
            tau = cls.torque(model, gains, gravity, q, qd, q_d, qd_d, qdd_d)
            if gains.compensates_friction:
                if cls.friction_at_reference:
                    tau = tau + reference_friction(model, qd_d, gains.coulomb_velocity)
                else:
                    tau = tau + model.friction_torques(qd)
            if extra is not None:
                tau = tau + np.asarray(extra, dtype=float)
        return clamp(tau, gains.limit_values)

    def effort(self, step):
        """Return the n clamped efforts of one state (:class:`Law`)."""
        context = self.context
        return self.joint_effort(context.dynamics, context.gains, step.q, step.qd,
                                 *step.reference, step.extra)


__all__ = ['clamp', 'InertiaInput', 'JointGains', 'JointLaw', 'Law', 'LawContext',
           'LawInputError', 'LawStep', 'LawTopic', 'LoadedDynamics', 'mass_matrix_at',
           'NO_GRAVITY', 'PoseInput', 'reference_friction', 'TOPIC_KINDS', 'WrenchInput']
