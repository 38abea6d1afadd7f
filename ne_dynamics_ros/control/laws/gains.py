"""Computed-torque gains sized for an arm: from its sample rate, inertia, limits and noise.

Pure module (no ROS). Computed torque (Lee, Chung, Mudge & Turney 1982, eqs 4.1, 4.4)
makes every joint's error obey
``ë + kd ė + kp e = 0`` when the model is right, so the gains pick a bandwidth ω (rad/s)
and a damping: critically damped, ``kp = ω²`` (1/s²) and ``kd = 2 ω`` (1/s). The rule
(:func:`recommended_gains`) takes per joint the smallest of four bandwidths:

1. **Sampling**: ``ω = rate / SAMPLES_PER_RADIAN`` (ω T = 0.1: ten samples per time
   constant). The command is computed from the state at ``t_k`` and held over a sample
   (a zero-order hold), and a real loop adds up to one more sample of delay
   (ros2_control's read, update, write); with ω T = 0.1 the sampled error dynamics keep
   their poles well inside the unit circle either way (:func:`sampled_error_poles`).
   At Lee et al.'s 100 Hz this is ω = 10 rad/s: their kp = 100, kd = 20 exactly.
2. **Effort limit**: an error of ``ERROR_AT_HALF_LIMIT`` (0.01 rad or m) may take at most
   half of the joint's effort limit through the largest inertia the joint sees in the
   workspace: ``M_jj,max kp e <= limit / 2``, with ``M_jj,max`` the largest diagonal of
   the (identified) mass matrix, armature included, over random configurations within
   the joint limits.
3. **Delay** (when the loop's delay is known: measured by the node beside ros2_control,
   or declared): with a dead time ``T_d`` (the delay plus half a sample for the hold),
   the critically damped loop ``(kd s + kp) e^(-s T_d) / s²`` crosses over at
   ``ω_c = sqrt(2 + sqrt(5)) ω`` with a phase margin of ``atan(2 ω_c / ω) = 76.3°`` less
   ``ω_c T_d``; keeping ``PHASE_MARGIN`` (45°) gives ``ω <= 0.266 / T_d`` (Åström &
   Murray 2008, §10.4 and §11.4: the phase margin and the dead time it tolerates).
   :func:`tolerated_delay` answers the converse for gains in force.
4. **Noise** (when the position noise σ_q is known, e.g. measured by ``ne-dynamics
   identify``): velocities differenced at the sample rate carry a noise of about
   ``sqrt(2) σ_q rate``; the derivative term may put at most ``NOISE_SHARE`` (5 %) of the
   effort limit of noise on the joint: ``M_jj,max kd sqrt(2) σ_q rate <= 0.05 limit``.

**Cartesian stiffness** (mode ``cartesian_impedance``, :func:`recommended_stiffness`): per
axis of the base frame (x, y, z, then about them) the same two bounds on the task-space
loop ``Λ_i ë + D ė + K e = 0``, with ``Λ_i = 1 / (e_iᵀ J M⁻¹ Jᵀ e_i)`` the inertia the
tip shows along that axis (Khatib 1987, the apparent mass): **sampling**, ``K <= Λ_i,min
(rate / 10)²`` with the lightest the axis gets over the workspace; **effort limit**, an
error of 0.01 m (0.01 rad) may take at most half of any joint's limit through the
Jacobian, ``K 0.01 |J_ji|max <= limit_j / 2``.

The integral term, for what the model still misses (a slow, small effort), gets a pole
``INTEGRAL_SLOWER`` (10) times slower than ω: ``ki = M_jj,mean kp ω / 10``
(N·m/(rad·s)), and may supply at most ``INTEGRAL_SHARE`` (10 %) of the effort limit
(``integral_limit``, N·m).
"""
from dataclasses import dataclass
import functools
import math
from typing import List, Optional

import numpy as np

from ne_dynamics_ros.errors import ModelError

#: Samples per radian of the closed loop's bandwidth: ω = rate / 10 (ω T = 0.1).
SAMPLES_PER_RADIAN = 10.0
#: An error this large (rad or m) may take at most half of a joint's effort limit.
ERROR_AT_HALF_LIMIT = 0.01
#: Share of the effort limit the velocity noise may put on a joint through kd.
NOISE_SHARE = 0.05
#: The integral's pole is this many times slower than the bandwidth.
INTEGRAL_SLOWER = 10.0
#: Share of the effort limit the integral term may supply (``integral_limit``).
INTEGRAL_SHARE = 0.1
#: Random configurations the largest inertia of each joint is taken over.
CONFIGURATIONS = 512
#: Phase margin (rad) the delay bound keeps: 45°.
PHASE_MARGIN = math.radians(45.0)


def _crossover_and_margin(kp, kd):
    """Return (ω_c rad/s, phase margin rad) of ``(kd s + kp) / s²``, without delay."""
    kp = np.asarray(kp, dtype=float)
    kd = np.asarray(kd, dtype=float)
    crossover = np.sqrt(0.5 * (kd ** 2 + np.sqrt(kd ** 4 + 4.0 * kp ** 2)))
    with np.errstate(divide='ignore', invalid='ignore'):
        margin = np.arctan2(kd * crossover, kp)
    return crossover, margin


def delay_bandwidth(delay: float, rate: float) -> float:
    """Return the largest critically damped ω (rad/s) that keeps 45° with ``delay`` s.

    The dead time is ``delay + 1 / (2 rate)`` (the hold's half sample); module docstring.
    """
    crossover, margin = _crossover_and_margin(1.0, 2.0)       # ω = 1
    dead_time = float(delay) + 0.5 / float(rate)
    return float((margin - PHASE_MARGIN) / (crossover * dead_time))


def tolerated_delay(kp, kd, rate: float, margin: float = PHASE_MARGIN) -> np.ndarray:
    """Return the loop delay (s) gains in force tolerate, per joint.

    The dead time at which the phase margin of ``(kd s + kp) e^(-s T) / s²`` falls to
    ``margin`` (rad, default 45°), less the hold's half sample at ``rate`` (Hz); ``kp``
    1/s², ``kd`` 1/s, one value or (n,). ``margin = 0`` gives the delay at which the loop
    oscillates (ω_c: the frequency it oscillates at). Negative: not even without delay.
    """
    crossover, phase = _crossover_and_margin(kp, kd)
    with np.errstate(divide='ignore', invalid='ignore'):
        dead_time = np.where(crossover > 0, (phase - margin) / crossover, np.inf)
    return dead_time - 0.5 / float(rate)


@dataclass(frozen=True)
class GainRecommendation:
    """Gains sized by :func:`recommended_gains`; every array (n,) in chain order.

    Attributes:
        joint_names: the chain's joints.
        kp: 1/s² (the computed-torque position gain).
        kd: 1/s.
        ki: N·m/(rad·s) (N/(m·s)).
        integral_limit: N·m (N).
        bandwidth: ω, rad/s.
        limited_by: per joint, what set ω: ``'sampling'``, ``'delay'``, ``'effort
            limit'`` or ``'noise'``.
        rate: the sample rate the gains are for, Hz.
        inertia_max, inertia_mean: the diagonal of the mass matrix over the workspace,
            kg·m² (kg).
    """

    joint_names: List[str]
    kp: np.ndarray
    kd: np.ndarray
    ki: np.ndarray
    integral_limit: np.ndarray
    bandwidth: np.ndarray
    limited_by: List[str]
    rate: float
    inertia_max: np.ndarray
    inertia_mean: np.ndarray
    delay: float = 0.0

    def values(self) -> dict:
        """Return ``kp``, ``kd``, ``ki``, ``integral_limit`` as node parameters (lists)."""
        return {name: [float(f'{v:.4g}') for v in getattr(self, name)]
                for name in ('kp', 'kd', 'ki', 'integral_limit')}

    def describe(self) -> List[str]:
        """Return lines saying how the gains were sized (for a YAML comment or a table)."""
        lines = [f'gains for {self.rate:g} Hz'
                 + (f' and a {self.delay * 1e3:g} ms loop delay' if self.delay else '')
                 + ' by ne_dynamics_ros.control.laws.gains: critically damped, omega = '
                 f'min(rate / {SAMPLES_PER_RADIAN:g}, delay, effort limit, noise)']
        for j, name in enumerate(self.joint_names):
            lines.append(f'  {name}: omega {self.bandwidth[j]:.4g} rad/s ({self.limited_by[j]}'
                         f'), M_max {self.inertia_max[j]:.4g}')
        return lines


def workspace_configurations(model, count: int = 200, seed: int = 0) -> np.ndarray:
    """Return (count, n) random joint positions within the limits (±π where unlimited)."""
    low = np.where(np.isfinite(model.lower_limits), model.lower_limits, -math.pi)
    high = np.where(np.isfinite(model.upper_limits), model.upper_limits, math.pi)
    return np.random.default_rng(seed).uniform(low, high, size=(count, model.n))


def _inertia_diagonals(model, configurations) -> np.ndarray:
    """Return the diagonal of ``M(q)`` (armature included) at each configuration, (C, n).

    ``configurations`` (C, n). Element j of row c is ``rnea(q_c, 0, e_j)[j]`` with gravity
    off, as :meth:`~ne_dynamics_ros.dynamics.model.RobotModel.mass_matrix` forms it, for
    every configuration and joint in one batched recursion (not one call per
    configuration).
    """
    count, n = configurations.shape
    q = np.repeat(configurations, n, axis=0)            # each configuration n times
    efforts = model.rnea(q, np.zeros_like(q), np.tile(np.eye(n), (count, 1)),
                         (0.0, 0.0, 0.0))
    return efforts.reshape(count, n, n).diagonal(axis1=1, axis2=2).copy()


def lightest_inertia(model, configurations: int = CONFIGURATIONS, seed: int = 0) -> np.ndarray:
    """Return (n,) each joint's smallest ``M_ii(q)`` over the workspace, kg·m² (kg).

    ``M`` is the model's inertia matrix, armature included, at ``configurations`` random
    positions within the joint limits (:func:`workspace_configurations`), all in one
    batched recursion: what a joint-space stiffness is sized on so that the natural
    frequency ``sqrt(K / M_ii(q))`` stays within its bound wherever the arm is.
    """
    return _inertia_diagonals(model, workspace_configurations(model, configurations,
                                                              seed)).min(axis=0)


def _checked_rule_inputs(model, rate, delay, effort_limits, position_noise):
    """Return ``(limits, noise)``, (n,) each, of :func:`recommended_gains`'s arguments.

    Raises:
        ModelError: as :func:`recommended_gains` says.
    """
    if not (isinstance(rate, (int, float)) and 0 < rate < math.inf):
        raise ModelError(f'rate must be a frequency > 0 Hz, got {rate!r}')
    if not (isinstance(delay, (int, float)) and 0 <= delay < math.inf):
        raise ModelError(f'delay must be >= 0 s, got {delay!r}')
    limits = np.asarray(model.effort_limits if effort_limits is None else effort_limits,
                        dtype=float).reshape(-1)
    if limits.shape != (model.n,):
        raise ModelError(f'effort_limits needs {model.n} values, got {limits.size}')
    bad = [name for name, v in zip(model.joint_names, limits) if not 0 < v < math.inf]
    if bad:
        raise ModelError(f'joints {bad} have no finite effort limit > 0 to size gains by')
    noise = np.zeros(model.n) if position_noise is None else np.broadcast_to(
        np.asarray(position_noise, dtype=float), (model.n,)).copy()
    if not np.all(noise >= 0) or not np.all(np.isfinite(noise)):
        raise ModelError(f'position_noise must be >= 0 rad, got {noise.tolist()}')
    return limits, noise


def recommended_gains(model, rate: float, effort_limits=None,
                      position_noise: Optional[float] = None,
                      configurations: int = CONFIGURATIONS, seed: int = 0,
                      delay: float = 0.0) -> GainRecommendation:
    """Size ``kp``, ``kd``, ``ki``, ``integral_limit`` per joint by the module's rule.

    Args:
        model: the (identified) :class:`~ne_dynamics_ros.dynamics.model.RobotModel`, its
            armature included.
        rate: the control (sample) rate, Hz, > 0.
        effort_limits: (n,) N·m (N), or None for the model's (URDF) limits.
        position_noise: σ_q, rad (m): one value or (n,); None or 0: no noise bound.
        configurations: random configurations for the inertia over the workspace.
        seed: their random seed (the result is deterministic).
        delay: the loop's delay, s (>= 0): from a state's sampling to its command acting,
            beyond the hold (e.g. the node's ``loop delay`` on ``/diagnostics`` beside
            ros2_control); 0: none.

    Returns:
        :class:`GainRecommendation`.

    Raises:
        ModelError: a rate that is not > 0, a joint without a finite effort limit > 0
            (named), a negative or NaN noise or delay.
    """
    limits, noise = _checked_rule_inputs(model, rate, delay, effort_limits, position_noise)
    diagonal = _inertia_diagonals(model, workspace_configurations(model, configurations, seed))
    inertia_max = diagonal.max(axis=0)
    inertia_mean = diagonal.mean(axis=0)
    candidates = {'sampling': np.full(model.n, rate / SAMPLES_PER_RADIAN),
                  'delay': np.full(model.n, delay_bandwidth(delay, rate)
                                   if delay > 0 else np.inf)}
    with np.errstate(divide='ignore'):
        candidates['effort limit'] = np.sqrt(
            0.5 * limits / (inertia_max * ERROR_AT_HALF_LIMIT))
        candidates['noise'] = np.where(
            noise > 0, NOISE_SHARE * limits / (2.0 * inertia_max * math.sqrt(2.0) * noise
                                               * rate), np.inf)
    names = list(candidates)
    stacked = np.array([candidates[name] for name in names])
    bandwidth = stacked.min(axis=0)
    limited_by = [names[k] for k in stacked.argmin(axis=0)]
    kp = bandwidth ** 2
    kd = 2.0 * bandwidth
    ki = inertia_mean * kp * bandwidth / INTEGRAL_SLOWER
    return GainRecommendation(list(model.joint_names), kp, kd, ki, INTEGRAL_SHARE * limits,
                              bandwidth, limited_by, float(rate), inertia_max, inertia_mean,
                              float(delay))


#: The six axes of a Cartesian stiffness, in the order of ``cartesian.stiffness``.
CARTESIAN_AXES = ('x', 'y', 'z', 'rx', 'ry', 'rz')


@dataclass(frozen=True)
class StiffnessRecommendation:
    """A Cartesian stiffness sized by :func:`recommended_stiffness`.

    Arrays (6,): axes x, y, z (N/m), then about x, y, z (N·m/rad), base link frame.

    Attributes:
        stiffness: the largest stiffness per axis both bounds allow.
        limited_by: per axis, ``'sampling'`` or ``'effort limit'``.
        rate: Hz. inertia_min: the smallest apparent inertia per axis over the workspace,
            kg (kg·m²).
    """

    stiffness: np.ndarray
    limited_by: List[str]
    rate: float
    inertia_min: np.ndarray


def apparent_inertia(J, M) -> np.ndarray:
    """Return the inertia the tip shows along each axis: ``1 / diag(J M⁻¹ Jᵀ)``, (6,).

    ``J`` (6, n) the geometric Jacobian (base frame), ``M`` (n, n); kg for x, y, z, kg·m²
    about them (Khatib 1987); ``inf`` along an axis the arm cannot move.
    """
    with np.errstate(divide='ignore'):
        return 1.0 / np.maximum(np.einsum('ij,ij->i', J @ np.linalg.inv(M), J), 0.0)


def stiffness_bound(inertia, rate: float) -> np.ndarray:
    """Return the sampling bound ``inertia (rate / 10)²`` of each axis (N/m, N·m/rad)."""
    return np.asarray(inertia, dtype=float) * (rate / SAMPLES_PER_RADIAN) ** 2


def stiffness_bounds(model, effort_limits=None, configurations: int = CONFIGURATIONS,
                     seed: int = 0):
    """Return ``(inertia_min, effort_bound)``, (6,) each, of the Cartesian stiffness rule.

    Per axis x, y, z (then about them) of the base link frame, over ``configurations``
    random positions within the joint limits (:func:`workspace_configurations`):
    ``inertia_min`` the lightest inertia the tip shows (:func:`apparent_inertia`, kg,
    kg·m²); ``effort_bound`` the stiffness (N/m, N·m/rad) whose force at an error of
    :data:`ERROR_AT_HALF_LIMIT` (m, rad) stays within half of every joint's effort limit
    through ``|J|`` wherever the arm is (``inf`` along an axis no joint moves).

    Raises:
        ModelError: effort limits that are not n finite values > 0.
    """
    from ne_dynamics_ros.dynamics.kinematics import jacobian
    limits = np.asarray(model.effort_limits if effort_limits is None else effort_limits,
                        dtype=float).reshape(-1)
    if limits.shape != (model.n,) or not np.all((limits > 0) & np.isfinite(limits)):
        raise ModelError(f'the stiffness rule needs {model.n} finite effort limits > 0, got '
                         f'{limits.tolist()}')
    inertia = np.full(6, np.inf)
    reach = np.zeros((6, model.n))
    for q in workspace_configurations(model, configurations, seed):
        J = jacobian(model, q)
        inertia = np.minimum(inertia, apparent_inertia(J, model.mass_matrix(q)))
        reach = np.maximum(reach, np.abs(J))
    with np.errstate(divide='ignore'):
        effort_bound = np.min(0.5 * limits[None, :] / (ERROR_AT_HALF_LIMIT * reach), axis=1)
    return inertia, effort_bound


def sized_cartesian_stiffness(model, kp, effort_limits) -> np.ndarray:
    """Return K (6,) sized for the arm: N/m along x, y, z, then N·m/rad about them.

    Base link frame axes, as the joint gains are sized (``joint_impedance``'s
    ``kp_i M_ii,min`` on the tip's axes): ``K_i = min(kp) Lambda_i,min``, with
    ``Lambda_i,min`` the lightest inertia the tip shows along axis i over the workspace
    (:func:`stiffness_bounds`, Khatib 1987's task-space inertia), so that each
    axis's natural frequency ``sqrt(K_i / Lambda_i(q))`` stays within ``sqrt(min kp)``
    (which the gain rule keeps within ``rate / 10``) wherever the arm is and
    ``cartesian_impedance`` never finds it above the sampling rule; at most the effort bound
    there (a 0.01 m or rad error within half of every joint's limit). ``kp`` (n,) 1/s²,
    ``effort_limits`` (n,) N·m (N). The rotational values follow the wrist's inertia:
    with the drives' rotor inertia (``armature``, identified) they are the arm's; a URDF
    without it (the UR5e's) gives a wrist almost without inertia, and a soft one.

    Raises:
        ModelError: effort limits that are not n finite values > 0.
    """
    rate = max(float(np.min(kp)), 0.0)
    return _sized_cartesian(model, rate,
                            tuple(np.asarray(effort_limits, dtype=float).tolist())).copy()


@functools.lru_cache(maxsize=1)
def _sized_cartesian(model, rate, limits):
    """Return K of :func:`sized_cartesian_stiffness` for the last (model, min kp, limits) asked.

    The workspace is sampled once per model and gains, not once per run (a node runs one
    arm); the cache holds the model itself, so a freed model's id cannot be mistaken for it.
    """
    inertia, effort_bound = stiffness_bounds(model, limits)
    return np.minimum(rate * inertia, effort_bound)


def recommended_stiffness(model, rate: float, effort_limits=None,
                          configurations: int = CONFIGURATIONS, seed: int = 0
                          ) -> StiffnessRecommendation:
    """Size ``cartesian.stiffness`` per axis by the module's rule (Cartesian stiffness).

    Args: as :func:`recommended_gains` (``model``'s tip is the tip held).

    Raises:
        ModelError: as :func:`recommended_gains`.
    """
    if not (isinstance(rate, (int, float)) and 0 < rate < math.inf):
        raise ModelError(f'rate must be a frequency > 0 Hz, got {rate!r}')
    inertia, effort_bound = stiffness_bounds(model, effort_limits, configurations, seed)
    candidates = {'sampling': stiffness_bound(inertia, rate), 'effort limit': effort_bound}
    names = list(candidates)
    stacked = np.array([candidates[name] for name in names])
    return StiffnessRecommendation(stacked.min(axis=0),
                                   [names[k] for k in stacked.argmin(axis=0)], float(rate),
                                   inertia)


def sampled_error_poles(kp, kd, rate: float, delay: int = 1) -> np.ndarray:
    """Return the poles of one joint's sampled error dynamics under computed torque.

    ``ë = -kp e(t_k) - kd ė(t_k)`` held over a sample (zero-order hold), applied
    ``delay`` samples late (0 or 1): the eigenvalues of the discrete loop, stable when all
    lie inside the unit circle. ``kp`` 1/s², ``kd`` 1/s, ``rate`` Hz.
    """
    T = 1.0 / rate
    A = np.array([[1.0, T], [0.0, 1.0]])
    B = np.array([[0.5 * T * T], [T]])
    K = np.array([[-float(kp), -float(kd)]])
    if delay == 0:
        return np.linalg.eigvals(A + B @ K)
    # state (e, ė, u_prev): the command computed now is applied over the next sample
    big = np.zeros((3, 3))
    big[:2, :2] = A
    big[:2, 2:] = B
    big[2:, :2] = K
    return np.linalg.eigvals(big)


__all__ = ['apparent_inertia', 'CARTESIAN_AXES', 'CONFIGURATIONS', 'delay_bandwidth',
           'ERROR_AT_HALF_LIMIT', 'PHASE_MARGIN', 'tolerated_delay',
           'GainRecommendation', 'INTEGRAL_SHARE', 'INTEGRAL_SLOWER', 'NOISE_SHARE',
           'recommended_gains', 'recommended_stiffness', 'sampled_error_poles',
           'SAMPLES_PER_RADIAN', 'sized_cartesian_stiffness', 'stiffness_bound',
           'stiffness_bounds', 'StiffnessRecommendation',
           'lightest_inertia', 'workspace_configurations']
