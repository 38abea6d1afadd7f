"""Joint-space control laws of the computed-torque node, and their parameter checks.

Pure module (no ROS import): every function takes (n,) arrays in the model's chain order
and a model with the :class:`ne_dynamics_ros.RobotModel` interface (``rnea``,
``gravity_torques``, ``friction_torques``). Units: q in rad (m for prismatic joints),
qd in rad/s, qdd in rad/s^2, tau in N*m (N). Gravity is a 3-vector in the base frame of
the chain, m/s^2, e.g. ``(0, 0, -9.81)`` for a base whose z axis points up.

The three joint-space modes of :class:`ControlMode` (``adaptive`` and
``cartesian_impedance`` keep a state between states: their laws are objects of
:mod:`~ne_dynamics_ros.control.law`, which wraps these three too):

``computed_torque``
    The Newton-Euler computed-torque law of Lee, Chung, Mudge & Turney (1982), eqs 4.1
    and 4.4::

        qdd_cmd = qdd_d + Kd (qd_d - qd) + Kp (q_d - q)                 (4.4)
        tau     = RNEA(q, qd, qdd_cmd) = D(q) qdd_cmd + H(q, qd) + G(q)  (4.1)

    The PD terms act as accelerations, so ``kp`` is in 1/s^2 and ``kd`` in 1/s; with the
    exact model the error obeys ``e'' + Kd e' + Kp e = 0`` (eq 4.3). Lee et al. use
    Kp = 100, Kd = 2 sqrt(Kp) = 20 on each joint of the PUMA (§5).
``feedforward``
    ``tau = RNEA(q_d, qd_d, qdd_d) + Kp (q_d - q) + Kd (qd_d - qd)``: the inverse dynamics
    of the reference as feedforward plus a joint PD; here ``kp`` is in N*m/rad and ``kd``
    in N*m*s/rad. With ``kp = kd = 0`` it is pure feedforward.
``gravity_compensation``
    ``tau = G(q) = RNEA(q, 0, 0)``: the arm floats; the reference is ignored.

With ``friction_compensation`` the URDF ``<dynamics damping friction>`` torques are added,
evaluated at the *desired* velocity ``qd_d`` in ``computed_torque`` and ``feedforward``
modes: ``Fv qd_d + Fc tanh(qd_d / v_s)`` (Sasaki 1990, eq. 2.39 for the viscous term),
with ``v_s = coulomb_velocity`` (default 0.003 rad/s). Dry friction is compensated from
the moment the reference starts to move, not once the arm has been pushed through
stiction by the feedback: at the measured ``qd`` the compensation waits for motion that
stiction prevents, and at rest its smoothed sign follows measurement noise. The
reference is noise-free, so its sign may be sharp: with the model's own 0.01 rad/s a 3 s
quintic of the UR5e reaches 95 % of Fc only 0.1 s after the start, when the reference is
already 5e-4 rad away; 0.003 rad/s halves the error at the start, and sharper scales
leave more at the stop (measured on the MuJoCo UR5e with dry friction, ``benchmarks/
bench_mujoco.py``). In ``gravity_compensation`` mode there is no reference motion: the
measured ``qd`` and the model's ``coulomb_velocity`` (an arm moved by hand feels lighter).

Hardware that compensates by itself (Universal Robots' direct torque control: the robot
adds g(q), and its own friction model by default):

``hardware_compensates_gravity``
    g(q) is left out of the command in every mode: the inverse dynamics are evaluated with
    zero gravity (``computed_torque``: ``tau = D qdd_cmd + H``; ``feedforward``:
    ``D(q_d) qdd_d + H(q_d, qd_d)`` plus the PD; ``gravity_compensation``: zero).
``hardware_compensates_friction``
    the friction model is left out even with ``friction_compensation``.

Finally every command is checked finite and clamped to ``[-effort_limit, effort_limit]``
(:func:`clamp_effort`): the limits apply to what is sent.
"""
import enum
from dataclasses import dataclass
import math

import numpy as np

from ne_dynamics_ros.dynamics.model import finite_efforts


class ControlParameterError(ValueError):
    """A control parameter (mode, gains, limits, gravity, ...) has an invalid value."""


class NonFiniteEffortError(ValueError):
    """The control law produced NaN or inf (e.g. overflow); nothing may be commanded."""


class ControlMode(str, enum.Enum):
    """The control law applied on every joint state (see the module docstring)."""

    COMPUTED_TORQUE = 'computed_torque'
    FEEDFORWARD = 'feedforward'
    GRAVITY_COMPENSATION = 'gravity_compensation'
    #: Slotine & Li's adaptive computed torque (:mod:`ne_dynamics_ros.control.adaptive`).
    ADAPTIVE = 'adaptive'
    #: Cartesian impedance of the tip with a null-space posture
    #: (:mod:`ne_dynamics_ros.control.cartesian_law`).
    CARTESIAN_IMPEDANCE = 'cartesian_impedance'


#: The modes whose law is a function of this module; the others keep a state of their
#: own between states and are objects (:data:`ne_dynamics_ros.control.law.LAWS`).
JOINT_MODES = frozenset({'computed_torque', 'feedforward', 'gravity_compensation'})


def parse_mode(value) -> ControlMode:
    """Return the :class:`ControlMode` named ``value``.

    Raises:
        ControlParameterError: ``value`` is not one of the mode names.
    """
    try:
        return ControlMode(value)
    except ValueError:
        names = ', '.join(m.value for m in ControlMode)
        raise ControlParameterError(f'mode {value!r} is not one of: {names}') from None


def expand_gain(value, n: int, name: str) -> np.ndarray:
    """Turn a gain given as one value or one value per joint into an (n,) array.

    Args:
        value: a number, or a sequence of ``n`` numbers (chain order).
        n: number of joints.
        name: parameter name used in error messages (``'kp'``, ``'kd'``).

    Raises:
        ControlParameterError: wrong length, NaN/inf, or a negative gain.
    """
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    if arr.ndim != 1 or arr.size not in (1, n):
        raise ControlParameterError(
            f'{name} must be one value or {n} values (one per joint), got {arr.size}')
    if not np.all(np.isfinite(arr)):
        raise ControlParameterError(f'{name} contains NaN or inf')
    if np.any(arr < 0.0):
        raise ControlParameterError(f'{name} must be >= 0, got {arr.tolist()}')
    return np.broadcast_to(arr, (n,)).copy()


def check_effort_limits(value, n: int) -> np.ndarray:
    """Validate effort limits (N*m or N), one positive value per joint, inf allowed.

    Raises:
        ControlParameterError: wrong length, NaN, or a value <= 0.
    """
    arr = np.asarray(value, dtype=float).reshape(-1)
    if arr.size != n:
        raise ControlParameterError(f'effort_limits needs {n} values, got {arr.size}')
    if np.any(np.isnan(arr)) or np.any(arr <= 0.0):
        raise ControlParameterError(f'effort_limits must all be > 0, got {arr.tolist()}')
    return arr


def check_gravity(value) -> np.ndarray:
    """Validate a gravity vector: three finite numbers in m/s^2 (base frame).

    Raises:
        ControlParameterError: not three finite numbers.
    """
    arr = np.asarray(value, dtype=float).reshape(-1)
    if arr.size != 3 or not np.all(np.isfinite(arr)):
        raise ControlParameterError(
            f'gravity must be 3 finite numbers (m/s^2), got {arr.tolist()}')
    arr = arr.copy()
    arr.flags.writeable = False         # shared by the settings and the law: constant
    return arr


_NO_GRAVITY = np.zeros(3)
_NO_GRAVITY.flags.writeable = False


@dataclass(frozen=True)
class ControlLawConfig:
    """Everything the control law needs besides the model and the state.

    Attributes:
        mode: which law (:class:`ControlMode`).
        kp: (n,) position gains, 1/s^2 (computed_torque) or N*m/rad (feedforward).
        kd: (n,) velocity gains, 1/s (computed_torque) or N*m*s/rad (feedforward).
        gravity: (3,) gravity acceleration in the chain's base frame, m/s^2.
        effort_limits: (n,) symmetric limits ``|tau_i| <= effort_limits[i]``, N*m or N.
        friction_compensation: add the URDF damping/Coulomb friction torques, at the
            desired velocity (the measured one in gravity compensation): see
            :mod:`ne_dynamics_ros.control.laws`.
        coulomb_velocity: v_s of ``Fc tanh(qd_d / v_s)`` at the desired velocity, rad/s
            (m/s), > 0.
        hardware_compensates_gravity: leave g(q) out (the hardware adds it).
        hardware_compensates_friction: leave the friction model out (the hardware adds it).
    """

    mode: ControlMode
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


def computed_torque(model, q, qd, q_d, qd_d, qdd_d, kp, kd, gravity):
    """Computed-torque law, Lee et al. (1982), eqs 4.1, 4.4.

    ``tau = RNEA(q, qd, qdd_d + kd*(qd_d - qd) + kp*(q_d - q))``, i.e.
    ``D(q)[qdd_d + Kd e' + Kp e] + H(q, qd) + G(q)`` with diagonal gains.
    All arguments (n,) except ``gravity`` (3,); returns (n,) tau (not clamped).
    """
    qdd_cmd = qdd_d + kd * (qd_d - qd) + kp * (q_d - q)
    return model.rnea(q, qd, qdd_cmd, gravity=gravity)


def feedforward_pd(model, q, qd, q_d, qd_d, qdd_d, kp, kd, gravity):
    """Inverse dynamics of the reference plus joint PD.

    ``tau = RNEA(q_d, qd_d, qdd_d) + kp*(q_d - q) + kd*(qd_d - qd)``; shapes as in
    :func:`computed_torque`; returns (n,) tau (not clamped).
    """
    return model.rnea(q_d, qd_d, qdd_d, gravity=gravity) + kp * (q_d - q) + kd * (qd_d - qd)


def reference_friction(model, qd_d, coulomb_velocity):
    """Friction torques at the desired velocity: ``Fv qd_d + Fc tanh(qd_d / v_s) + offset``.

    ``model.damping`` (Fv), ``model.friction`` (Fc) and ``model.friction_offset`` are the
    URDF's (or identified) drive values, (n,); ``qd_d``: (n,) rad/s (m/s);
    ``coulomb_velocity``: v_s > 0 in the same unit. The reference is noise-free, so its
    sign can be sharper than the identified ``model.friction_velocity``, which describes
    the friction against *measured* (filtered) velocities: on the MuJoCo UR5e with dry
    friction the identified v_s at the reference left 6.9e-4 rad of tracking error, 0.003
    rad/s 1.1e-4 rad (``benchmarks/bench_mujoco.py``). Returns (n,) N*m (N), to be added
    to the command (see the module docstring).
    """
    qd_d = model.checked_vector(qd_d, 'qd_d')
    return (model.damping * qd_d + model.friction * np.tanh(qd_d / coulomb_velocity)
            + model.friction_offset)


def gravity_compensation(model, q, gravity):
    """``tau = G(q) = RNEA(q, 0, 0)``; q (n,), gravity (3,); returns (n,) tau."""
    return model.gravity_torques(q, gravity=gravity)


def clamp_effort(tau, effort_limits):
    """Clamp ``tau`` (n,) into ``[-effort_limits, effort_limits]``.

    Raises:
        NonFiniteEffortError: ``tau`` contains NaN or inf (checked before clamping, so an
            overflow is never turned into a full-limit command).
    """
    tau = np.asarray(tau, dtype=float)
    if not np.isfinite(tau).all():
        raise NonFiniteEffortError(f'control law produced a non-finite effort {tau.tolist()}')
    return np.minimum(np.maximum(tau, -effort_limits), effort_limits)


def _computed_torque_values(model, config, gravity, q, qd, q_d, qd_d, qdd_d, extra=None):
    """Compute the clamped computed torque on plain floats (the usual control path).

    The same operations in the same order as :func:`computed_torque` then
    :func:`clamp_effort`, so the same numbers, without a NumPy call per operation on
    six-element vectors. Arguments are lists of n floats; ``model.rnea_values`` is a
    generated program's single call
    (:class:`~ne_dynamics_ros.codegen.CompiledDynamics`), run once. Returns a list, or
    None when the program cannot run on these arguments (another gravity, lengths or
    types it does not take): the caller then takes the checked path.

    Raises:
        ne_dynamics_ros.errors.StateError: a non-finite result: the arrays the law was
            given (or its commanded acceleration) hold NaN/inf, named as the checked path
            names them, or the program overflowed.
    """
    gains = config.gain_values
    qdd_cmd = [a + kd * (b - c) + kp * (d - e) for a, kd, b, c, kp, d, e in zip(
        qdd_d, gains[1], qd_d, qd, gains[0], q_d, q)]
    tau = model.rnea_values(q, qd, qdd_cmd, gravity)
    if tau is None:
        return None
    if extra is not None:
        tau = [t + x for t, x in zip(tau, extra)]
    if not math.isfinite(sum(tau)):
        model.checked_states(q=q, qd=qd, qdd=qdd_cmd)     # names a non-finite input
        finite_efforts(np.array(tau), 'rnea')               # or says it overflowed
    return [-limit if t < -limit else limit if t > limit else t
            for t, limit in zip(tau, gains[2])]


def _fast_path(model, config):
    """Tell whether :func:`_computed_torque_values` may answer for this law and model."""
    return (config.mode is ControlMode.COMPUTED_TORQUE and hasattr(model, 'rnea_values')
            and not (config.friction_compensation
                     and not config.hardware_compensates_friction))


def compute_effort_values(model, config: ControlLawConfig, q, qd, q_d, qd_d, qdd_d,
                          extra=None):
    """:func:`compute_effort` on lists of n floats, returning a list (the control path).

    Plain floats through the generated program, run once, when the law allows it
    (:func:`_computed_torque_values`); otherwise the arrays of :func:`compute_effort`'s
    checked path. ``extra``: n efforts (N*m or N) added to the law's before the limits
    (the controller's integral action), or None. Raises what :func:`compute_effort`
    raises.
    """
    gravity = _NO_GRAVITY if config.hardware_compensates_gravity else config.gravity
    if _fast_path(model, config):
        tau = _computed_torque_values(model, config, gravity, q, qd, q_d, qd_d, qdd_d,
                                      extra)
        if tau is not None:
            return tau
    return _checked_effort(model, config, gravity, *(np.array(v, dtype=float)
                                                     for v in (q, qd, q_d, qd_d, qdd_d)),
                           extra=extra).tolist()


def compute_effort(model, config: ControlLawConfig, q, qd, q_d, qd_d, qdd_d):
    """Apply the configured law and the limits: the effort command to publish.

    Args:
        model: a :class:`ne_dynamics_ros.RobotModel` (or anything with its interface).
        config: mode, gains, gravity, limits, friction flag.
        q, qd: (n,) measured joint positions and velocities.
        q_d, qd_d, qdd_d: (n,) reference positions, velocities, accelerations.

    Returns:
        (n,) finite effort, ``|tau_i| <= effort_limits[i]``, chain order.

    Raises:
        NonFiniteEffortError: the law produced NaN/inf.
        ne_dynamics_ros.errors.StateError: from the model, for malformed arrays.
    """
    arrays = [np.asarray(v, dtype=float) for v in (q, qd, q_d, qd_d, qdd_d)]
    n = len(config.effort_limits)
    if all(a.shape == (n,) for a in arrays):
        return np.array(compute_effort_values(model, config, *(a.tolist() for a in arrays)))
    gravity = _NO_GRAVITY if config.hardware_compensates_gravity else config.gravity
    return _checked_effort(model, config, gravity, *arrays)


def _checked_effort(model, config, gravity, q, qd, q_d, qd_d, qdd_d, extra=None):
    """Apply the law on arrays, each step checked (every mode; the fast path's fallback)."""
    if config.mode.value not in JOINT_MODES:
        raise ControlParameterError(f'the {config.mode.value} law has a state of its own: '
                                    'it is an object (ne_dynamics_ros.control.law.LAWS)')
    # Overflow (absurd gains) is caught below as a non-finite value or by the model.
    with np.errstate(over='ignore', invalid='ignore'):
        if config.mode is ControlMode.COMPUTED_TORQUE:
            tau = computed_torque(model, q, qd, q_d, qd_d, qdd_d, config.kp, config.kd,
                                  gravity)
            friction_velocity = qd_d
        elif config.mode is ControlMode.FEEDFORWARD:
            tau = feedforward_pd(model, q, qd, q_d, qd_d, qdd_d, config.kp, config.kd,
                                 gravity)
            friction_velocity = qd_d
        elif config.hardware_compensates_gravity:
            tau = np.zeros(len(q))
            friction_velocity = qd
        else:
            tau = gravity_compensation(model, q, gravity)
            friction_velocity = qd
        if config.friction_compensation and not config.hardware_compensates_friction:
            if friction_velocity is qd:
                tau = tau + model.friction_torques(qd)
            else:
                tau = tau + reference_friction(model, qd_d, config.coulomb_velocity)
        if extra is not None:
            tau = tau + np.asarray(extra, dtype=float)
    return clamp_effort(tau, config.effort_limits)


def clamp_values(tau, limits):
    """Return ``tau`` (n floats) clamped into ``[-limits, limits]``, as a list.

    Raises:
        NonFiniteEffortError: ``tau`` holds NaN or inf (checked before clamping).
    """
    if not math.isfinite(sum(tau)):
        raise NonFiniteEffortError(f'control law produced a non-finite effort {list(tau)}')
    return [-h if t < -h else h if t > h else t for t, h in zip(tau, limits)]


def integral_step(integral, integral_time, error, now, ki, bound):
    """Advance the integral of the error to ``now``; return it and its torque, bounded.

    ``integral += error * dt`` (rectangle rule over the time since ``integral_time``, 0
    when it is None: the first state after a reset); the torque ``ki * integral`` is
    bounded by ``bound`` (``integral_limit``), and so is the integral behind it (it
    cannot wind up past it).

    Args:
        integral: (n,) list, rad*s (m*s). integral_time: s, or None.
        error: (n,) list ``q_d - q``, rad (m). now: s.
        ki: (n,) list, N*m/(rad*s) (N/(m*s)). bound: (n,) list, N*m (N).

    Returns:
        ``(integral, torque)``: two (n,) lists, rad*s and N*m (N).
    """
    dt = 0.0 if integral_time is None else max(0.0, now - integral_time)
    advanced, torque = [], []
    for value, e, k, b in zip(integral, error, ki, bound):
        value += e * dt
        t = k * value
        if t > b or t < -b:
            t = b if t > 0 else -b
            value = t / k
        advanced.append(value)
        torque.append(t)
    return advanced, torque


def anti_windup(advanced, previous, tau, error, effort_limits):
    """Keep the advanced integral, but on joints whose command saturates; return it.

    A joint whose command ``tau`` sits at its limit in the direction its error pushes
    keeps its ``previous`` integral (frozen). All (n,) lists; ``advanced`` is changed in
    place.
    """
    for i, (t, limit, e) in enumerate(zip(tau, effort_limits, error)):
        if (t >= limit and e > 0.0) or (t <= -limit and e < 0.0):
            advanced[i] = previous[i]
    return advanced
