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
"""
from dataclasses import dataclass
import math

import numpy as np

from ne_dynamics_ros.dynamics.base_parameters import numeric_base
from ne_dynamics_ros.errors import ModelError


@dataclass(frozen=True)
class FourierTrajectory:
    """A periodic excitation trajectory (module docstring).

    Attributes:
        joints: joint names, in the order of the rows below.
        duration: T, s (one period).
        q0: (n,) rest position at start and end (rad or m).
        a, b: (n, L) coefficients (rad/s or m/s).
    """

    joints: tuple
    duration: float
    q0: np.ndarray
    a: np.ndarray
    b: np.ndarray

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
        """Plain data for YAML: ``profile: excitation`` and the coefficients."""
        return {'profile': 'excitation', 'joints': list(self.joints),
                'duration': float(self.duration), 'harmonics': int(self.harmonics),
                'q0': self.q0.tolist(), 'a': self.a.tolist(), 'b': self.b.tolist()}

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
        return FourierTrajectory(joints, duration, q0, a, b)


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
    from scipy.optimize import minimize
    n = model.n
    if not (isinstance(duration, (int, float)) and duration > 0 and math.isfinite(duration)):
        raise ModelError(f'duration must be a positive number of seconds, got {duration!r}')
    if int(harmonics) != harmonics or harmonics < 2:
        raise ModelError(f'harmonics must be an integer >= 2, got {harmonics!r}')
    if not 0 <= margin < 0.5:
        raise ModelError(f'margin must be in [0, 0.5), got {margin!r}')
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


__all__ = ['design_excitation', 'FourierTrajectory', 'identifiable_columns',
           'regressor_condition']
