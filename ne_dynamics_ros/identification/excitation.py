"""Excitation trajectories: finite Fourier series optimised for the base regressor.

Per joint j (Swevers, Ganseman, Tükel, De Schutter, Van Brussel, "Optimal robot excitation
and identification", IEEE T-RA 13(5), 1997, eq 9), with ω_f = 2π / T and T the duration:

    q_j(t) = q0_j + c_j + Σ_{l=1..L} [ a_jl / (ω_f l) sin(ω_f l t) - b_jl / (ω_f l) cos(ω_f l t) ]

so q̇_j = Σ a_jl cos(ω_f l t) + b_jl sin(ω_f l t) (rad/s or m/s). The trajectory starts and
ends at rest at q0: ``Σ_l a_jl = 0`` (q̇ = 0), ``Σ_l l b_jl = 0`` (q̈ = 0) and
``c_j = Σ_l b_jl / (ω_f l)`` (q = q0) at t = 0 and, by periodicity, at t = T.

:func:`design_excitation` chooses the coefficients that minimise the condition number of
the regressor of the identifiable parameters (base inertial parameters and Ia, Fv, Fc,
:func:`~ne_dynamics_ros.dynamics.base_parameters.numeric_base` on all columns) stacked over
the trajectory (SciPy's Nelder–Mead then Powell, from several random starts). Limits are met
by construction: each joint's series is scaled down until its positions stay inside the
joint limits less a margin and its speeds and accelerations inside the given limits.

*The law it is played under.* The arm to identify does not match its nominal model (rotor
inertia, dry friction, payload), so computed torque with gains in 1/s² — a stiffness of
``M_jj kp`` N·m/rad, 0.01 N·m/rad on a UR5e's wrist 3 — leaves a joint held by its dry
friction unexcited. The excitation is played instead under feedforward of the nominal model
plus a joint PD in N·m/rad (``computed_torque_node`` mode ``feedforward``), with gains
sized from each joint's effort limit (:func:`excitation_gains`): ``kp = effort_limit /
saturation_error`` (the PD alone reaches the limit at ``saturation_error``, 0.5 rad by
default) and ``kd = kp * derivative_time`` (0.1 s). The gains go into the excitation file
(``play``) and ``trajectory_source`` sets them on the controller while it plays the
excitation. On the MuJoCo UR5e with 0.1 kg·m² of rotor inertia, up to 2.5 N·m of dry
friction and a 1.2 kg payload the nominal model lacks, the tracking error stayed within
2.4–3.8 % of each joint's excitation RMS (``benchmarks/bench_mujoco.py``). These gains
assume the joint's inertia, rotor included, is large enough for the sample rate: a joint
with inertia J (kg·m²) sampled every dt s needs about ``kd dt / J < 1``; real drives'
rotor inertia is (0.1 kg·m² and up on a UR5e), a plant without any is not (lower the gains
of ``ne-dynamics excite``).
"""
import dataclasses
from dataclasses import dataclass
import math
from typing import Optional

import numpy as np

from ne_dynamics_ros.control.laws.feedforward import FeedforwardLaw
from ne_dynamics_ros.dynamics.base_parameters import numeric_base
from ne_dynamics_ros.errors import ModelError, require


@dataclass(frozen=True)
class FourierTrajectory:
    """A periodic excitation trajectory (module docstring).

    Attributes:
        joints: joint names, in the order of the rows below.
        duration: T, s (one period).
        q0: (n,) rest position at start and end (rad or m).
        a, b: (n, L) coefficients (rad/s or m/s).
        kp, kd: (n,) joint PD gains to play it under, N·m/rad and N·m·s/rad (N/m, N·s/m),
            with the nominal model's feedforward (:func:`excitation_gains`); None: not
            given (the controller's law is left as it is).
    """

    joints: tuple
    duration: float
    q0: np.ndarray
    a: np.ndarray
    b: np.ndarray
    kp: Optional[np.ndarray] = None
    kd: Optional[np.ndarray] = None

    @property
    def harmonics(self):
        """L, the number of harmonics."""
        return self.a.shape[1]

    def evaluate(self, t):
        """Positions, velocities, accelerations at times t (s): three (N, n) arrays."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        w = 2.0 * math.pi / self.duration
        wl = w * np.arange(1, self.harmonics + 1)             # ω_f l, rad/s
        phase = np.outer(t, wl)                               # (N, L)
        s, c = np.sin(phase), np.cos(phase)
        offset = self.q0 + (self.b / wl).sum(axis=1)
        q = offset + s @ (self.a / wl).T - c @ (self.b / wl).T
        qd = c @ self.a.T + s @ self.b.T
        qdd = -s @ (self.a * wl).T + c @ (self.b * wl).T
        return q, qd, qdd

    def to_dict(self):
        """Plain data for YAML: ``profile: excitation``, the coefficients, the law (``play``)."""
        data = {'profile': 'excitation', 'joints': list(self.joints),
                'duration': float(self.duration), 'harmonics': int(self.harmonics),
                'q0': self.q0.tolist(), 'a': self.a.tolist(), 'b': self.b.tolist()}
        if self.kp is not None:
            data['play'] = {'mode': FeedforwardLaw.name, 'kp': np.asarray(self.kp).tolist(),
                            'kd': np.asarray(self.kd).tolist()}
        return data

    @staticmethod
    def from_dict(data, where='excitation file'):
        """Build from :meth:`to_dict`'s data; raise ValueError naming the bad field."""
        if not isinstance(data, dict) or data.get('profile') != 'excitation':
            raise ValueError(f'{where}: expected a mapping with profile: excitation')
        try:
            joints = tuple(str(j) for j in data['joints'])
            duration = float(data['duration'])
            q0 = np.asarray(data['q0'], dtype=float)
            a = np.asarray(data['a'], dtype=float)
            b = np.asarray(data['b'], dtype=float)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f'{where}: missing or malformed field ({exc})') from None
        n = len(joints)
        if not (duration > 0 and math.isfinite(duration)):
            raise ValueError(f'{where}: duration must be > 0 s, got {duration}')
        if q0.shape != (n,) or a.ndim != 2 or a.shape[0] != n or b.shape != a.shape:
            raise ValueError(f'{where}: q0 must have {n} values and a, b {n} rows of equal '
                             f'length, got {q0.shape}, {a.shape}, {b.shape}')
        if not (np.all(np.isfinite(q0)) and np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            raise ValueError(f'{where}: q0, a and b must be finite')
        play = data.get('play')
        if play is None:
            return FourierTrajectory(joints, duration, q0, a, b)
        try:
            if play.get('mode') != FeedforwardLaw.name:         # its kp, kd are N*m/rad
                raise ValueError(f'mode must be feedforward, got {play.get("mode")!r}')
            kp, kd = (np.asarray(play[k], dtype=float) for k in ('kp', 'kd'))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f'{where}: malformed play section ({exc})') from None
        if kp.shape != (n,) or kd.shape != (n,) or not (
                np.all(np.isfinite(kp) & (kp >= 0)) and np.all(np.isfinite(kd) & (kd >= 0))):
            raise ValueError(f'{where}: play kp and kd must be {n} finite values >= 0 each')
        return FourierTrajectory(joints, duration, q0, a, b, kp, kd)

    def with_gains(self, kp, kd):
        """Return the same trajectory to be played under the joint PD ``kp``, ``kd`` (n,)."""
        return dataclasses.replace(self, kp=np.asarray(kp, dtype=float),
                                   kd=np.asarray(kd, dtype=float))


def sample_excitation(excitation, start, move_duration, periods=1, sample_period=0.01):
    """Sample what is played: a quintic move from ``start`` to ``q0``, then the periods.

    Args:
        excitation: :class:`FourierTrajectory`.
        start: (n,) positions now (rad or m), in the excitation's joint order.
        move_duration: s for the move to ``excitation.q0`` (0: start at q0 directly).
        periods: how many periods of the excitation (integer >= 1).
        sample_period: s between samples.

    Returns:
        (times (N,) s from the start, q, qd, qdd (N, n)).

    Raises:
        ValueError: ``start`` of the wrong length, ``periods`` not an integer >= 1.
    """
    from ne_dynamics_ros.control.reference.profiles import sample_profile, sample_times
    start = np.asarray(start, dtype=float)
    if start.size != len(excitation.joints):
        raise ValueError(f'{start.size} start values for the excitation\'s '
                         f'{len(excitation.joints)} joints')
    if not (isinstance(periods, int) and periods >= 1):
        raise ValueError(f'periods must be an integer >= 1, got {periods!r}')
    parts = []
    offset = 0.0
    if move_duration > 0:
        times, q, qd, qdd = sample_profile('quintic', start, excitation.q0, move_duration,
                                           sample_period)
        parts.append((times[:-1], q[:-1], qd[:-1], qdd[:-1]))
        offset = move_duration
    t = sample_times(periods * excitation.duration, sample_period)
    q, qd, qdd = excitation.evaluate(t)
    parts.append((t + offset, q, qd, qdd))
    return tuple(np.concatenate(arrays) for arrays in zip(*parts))


#: Default position error (rad, m) at which the excitation's PD alone reaches the limit.
SATURATION_ERROR = 0.5
#: Default derivative time kd / kp of the excitation's PD, s.
DERIVATIVE_TIME = 0.1


def excitation_gains(model, saturation_error=SATURATION_ERROR,
                     derivative_time=DERIVATIVE_TIME, effort_limits=None):
    """Joint PD gains for playing an excitation, sized from the effort limits.

    ``kp_j = effort_limit_j / saturation_error`` N·m/rad (N/m) and ``kd_j = kp_j *
    derivative_time`` N·m·s/rad (N·s/m): see the module docstring.

    Args:
        model: :class:`~ne_dynamics_ros.dynamics.model.RobotModel` (its URDF effort limits).
        saturation_error: rad (m), > 0.
        derivative_time: s, >= 0.
        effort_limits: (n,) N·m (N) instead of the URDF's.

    Returns:
        (kp, kd), two (n,) arrays.

    Raises:
        ModelError: a joint has no (finite, > 0) effort limit, named; bad arguments.
    """
    if not (isinstance(saturation_error, (int, float)) and 0 < saturation_error < math.inf):
        raise ModelError(f'saturation_error must be > 0, got {saturation_error!r}')
    if not (isinstance(derivative_time, (int, float)) and 0 <= derivative_time < math.inf):
        raise ModelError(f'derivative_time must be >= 0 s, got {derivative_time!r}')
    limits = np.asarray(model.effort_limits if effort_limits is None else effort_limits,
                        dtype=float)
    if limits.shape != (model.n,):
        raise ModelError(f'effort_limits needs {model.n} values, got {limits.size}')
    missing = [name for name, v in zip(model.joint_names, limits)
               if not (math.isfinite(v) and v > 0)]
    if missing:
        raise ModelError(f'joints {missing} have no effort limit to size the excitation '
                         'gains from: give <limit effort> in the URDF or the gains')
    kp = limits / saturation_error
    # printed and written to YAML: 5.6, not 5.6000000000000005
    return kp, np.array([float(f'{v:.12g}') for v in kp * derivative_time])


def _complete(free, n, harmonics):
    """Coefficients from the free ones: the last harmonic makes q̇(0) = q̈(0) = 0."""
    x = free.reshape(2, n, harmonics - 1)
    a_free, b_free = x[0], x[1]
    order = np.arange(1, harmonics)
    a_last = -a_free.sum(axis=1, keepdims=True)
    b_last = -(b_free * order).sum(axis=1, keepdims=True) / harmonics
    return np.hstack([a_free, a_last]), np.hstack([b_free, b_last])


def _limits(model, margin):
    """Position bounds inside the limits by ``margin`` of the range (±pi if unlimited)."""
    lower = np.where(np.isfinite(model.lower_limits), model.lower_limits,
                     np.where(model.prismatic, -0.5, -math.pi))
    upper = np.where(np.isfinite(model.upper_limits), model.upper_limits,
                     np.where(model.prismatic, 0.5, math.pi))
    span = upper - lower
    return lower + margin * span, upper - margin * span


def _feasible(trajectory, t, low, high, vmax, amax):
    """Scale each joint's coefficients so that the trajectory keeps inside the bounds."""
    q, qd, qdd = trajectory.evaluate(t)
    dq = q - trajectory.q0
    with np.errstate(divide='ignore', invalid='ignore'):
        up = np.where(dq > 0, (high - trajectory.q0) / dq, np.inf).min(axis=0)
        down = np.where(dq < 0, (low - trajectory.q0) / dq, np.inf).min(axis=0)
        speed = vmax / np.abs(qd).max(axis=0)
        accel = amax / np.abs(qdd).max(axis=0)
    scale = np.minimum.reduce([np.ones_like(up), up, down, speed, accel])
    scale = np.where(np.isfinite(scale), np.maximum(scale, 0.0), 1.0)
    return FourierTrajectory(trajectory.joints, trajectory.duration, trajectory.q0,
                             trajectory.a * scale[:, None], trajectory.b * scale[:, None])


def identifiable_columns(model):
    """Return the indices (into the 13 n standard parameters) of the identifiable columns."""
    kept, _, _, _ = numeric_base(model, inertial_only=False)
    return kept


def regressor_condition(model, trajectory, t, columns=None):
    """Condition number of the identifiable columns of W stacked over ``trajectory(t)``.

    Columns are scaled to unit norm first (the number does not depend on the units).
    """
    columns = identifiable_columns(model) if columns is None else columns
    q, qd, qdd = trajectory.evaluate(t)
    W = model.regressor(q, qd, qdd).reshape(-1, 13 * model.n)[:, columns]
    norms = np.linalg.norm(W, axis=0)
    if np.any(norms == 0):
        return math.inf
    sv = np.linalg.svd(W / norms, compute_uv=False)
    return float(sv[0] / sv[-1]) if sv[-1] > 0 else math.inf


#: Documented ranges of the excitation design's arguments (inclusive, margin: < 0.5).
DESIGN_RANGES = {'duration': (1.0, 600.0), 'harmonics': (2, 20), 'margin': (0.0, 0.45),
                 'starts': (1, 50), 'iterations': (1, 20000), 'samples': (20, 5000)}


def check_design_arguments(duration, harmonics, margin, starts, iterations, samples=200):
    """Refuse excitation design arguments outside :data:`DESIGN_RANGES`, before any work.

    duration in s (1 to 600: shorter leaves too few harmonics under the limits, longer
    makes the regressor ill-conditioned and the file huge); harmonics, starts, iterations,
    samples integers; margin a fraction of each joint's range.

    Raises:
        ModelError: naming the argument, its value and its range.
    """
    values = {'duration': duration, 'harmonics': harmonics, 'margin': margin,
              'starts': starts, 'iterations': iterations, 'samples': samples}
    for name, value in values.items():
        low, high = DESIGN_RANGES[name]
        integer = isinstance(low, int)
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value) and low <= value <= high
              and (not integer or int(value) == value))
        if not ok:
            kind = 'an integer' if integer else 'a number'
            unit = ' s' if name == 'duration' else ''
            raise ModelError(f'{name} must be {kind} in [{low:g}, {high:g}]{unit}, got '
                             f'{value!r}')


def design_excitation(model, duration, harmonics=5, q0=None, margin=0.1,
                      velocity_limits=None, acceleration_limits=None, samples=200,
                      starts=4, iterations=400, seed=0, progress=None):
    """Optimise a Fourier excitation trajectory for ``model`` (module docstring).

    Args:
        model: :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        duration: T, s (> 0).
        harmonics: L >= 2 per joint.
        q0: (n,) rest pose; default mid-range (0 where unlimited).
        margin: fraction of each joint's range kept free at both ends (0 <= margin < 0.5).
        velocity_limits: (n,) rad/s or m/s; default the URDF's (1 where absent).
        acceleration_limits: (n,) rad/s² or m/s²; default 4x the velocity limits, per s.
        samples: points over one period where the regressor and the limits are taken.
        starts: random starting points of the optimisation.
        iterations: optimiser iterations per start.
        seed: random seed.
        progress: optional callable(fraction) for a progress display.

    Returns:
        (FourierTrajectory, condition number).

    Raises:
        ModelError: bad duration, harmonics, q0 or margin, or q0 outside the bounds.
    """
    minimize = require('scipy.optimize', 'ne-dynamics excite').minimize
    n = model.n
    check_design_arguments(duration, harmonics, margin, starts, iterations, samples)
    fixed = [name for name, lo, hi in zip(model.joint_names, model.lower_limits,
                                          model.upper_limits) if not hi > lo]
    if fixed:
        raise ModelError(f'joints {fixed} have a lower limit equal to (or above) their upper '
                         'limit: they cannot move, so their parameters cannot be excited; '
                         'fix the URDF <limit> or leave them out of the chain (--tip)')
    low, high = _limits(model, margin)
    if q0 is None:
        q0 = np.where(np.isfinite(model.lower_limits) & np.isfinite(model.upper_limits),
                      0.5 * (model.lower_limits + model.upper_limits), 0.0)
    q0 = np.asarray(q0, dtype=float)
    if q0.shape != (n,) or not np.all(np.isfinite(q0)):
        raise ModelError(f'q0 must be {n} finite values, got {q0.tolist()}')
    outside = [name for name, v, lo, hi in zip(model.joint_names, q0, low, high)
               if not lo <= v <= hi]
    if outside:
        raise ModelError(f'q0 is outside the joint limits less the margin for {outside}')
    vmax = np.asarray(velocity_limits if velocity_limits is not None else
                      np.where(np.isfinite(model.velocity_limits), model.velocity_limits, 1.0),
                      dtype=float)
    amax = np.asarray(acceleration_limits if acceleration_limits is not None else 4.0 * vmax,
                      dtype=float)
    t = np.linspace(0.0, duration, samples, endpoint=False)
    columns = identifiable_columns(model)
    rng = np.random.default_rng(seed)
    size = 2 * n * (harmonics - 1)

    def build(free, grid=t):
        a, b = _complete(free, n, harmonics)
        return _feasible(FourierTrajectory(tuple(model.joint_names), float(duration), q0, a, b),
                         grid, low, high, vmax, amax)

    def cost(free):
        return math.log(regressor_condition(model, build(free), t, columns))

    best = None
    for start in range(starts):
        x0 = rng.normal(0.0, 1.0, size) * np.tile(np.repeat(vmax, harmonics - 1), 2)
        result = minimize(cost, x0, method='Powell',
                          options={'maxfev': iterations * 2, 'xtol': 1e-3, 'ftol': 1e-4})
        if best is None or result.fun < best.fun:
            best = result
        if progress is not None:
            progress((start + 1) / starts)
    # the limits once more on a dense grid (between the optimisation's samples a joint
    # could overshoot by a little)
    trajectory = build(best.x, np.linspace(0.0, duration, 400 * harmonics + 1))
    return trajectory, regressor_condition(model, trajectory, t, columns)


__all__ = ['DERIVATIVE_TIME', 'design_excitation', 'excitation_gains', 'FourierTrajectory',
           'identifiable_columns', 'regressor_condition', 'sample_excitation',
           'check_design_arguments', 'DESIGN_RANGES',
           'SATURATION_ERROR']
