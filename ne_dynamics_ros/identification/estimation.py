"""Least-squares identification of the base and drive parameters from a recording.

The inverse dynamic identification model (Gautier & Khalil; Swevers et al. 1997):
``tau = W(q, q̇, q̈) pi = W_b(q, q̇, q̈) beta`` with W the regressor of
:mod:`ne_dynamics_ros.dynamics.regressor` (rigid body, Ia, Fv, Fc columns) and
``beta = G pi`` the identifiable (base) parameters, from Gautier's QR of W over random
states on all 13 n columns (:func:`~ne_dynamics_ros.dynamics.base_parameters.numeric_base`),
so that e.g. Ia1 of a joint about the vertical folds into ZZ1R.

Steps (:func:`identify`):

1. positions (and recorded velocities) low-pass filtered without phase shift
   (Butterworth, ``filtfilt``); velocities, where not recorded, and accelerations by
   central differences of the filtered signals, with the recorded stamps;
2. W_b computed at the full rate, then W_b and the measured efforts decimated through the
   *same* zero-phase low-pass filter (Gautier's parallel decimation): the efforts are
   never filtered by a filter the regressor does not see, which would bias Coulomb
   friction's sign changes;
3. ordinary least squares, then weighted least squares with each joint's rows divided by
   its residual standard deviation; the covariance ``σ² (AᵀA)⁻¹`` gives each parameter's
   standard deviation.
"""
from dataclasses import dataclass, field
import math
from typing import List

import numpy as np

from ne_dynamics_ros.dynamics.base_parameters import numeric_base
from ne_dynamics_ros.dynamics.parameters import parameter_names, PER_JOINT
from ne_dynamics_ros.errors import IdentificationError

#: Default low-pass cutoff, Hz (never above a fifth of the sample rate).
DEFAULT_CUTOFF = 10.0
#: A joint whose velocity RMS is below this fraction of its limit is reported as unexcited.
EXCITATION_FRACTION = 0.02


@dataclass(frozen=True)
class Identification:
    """Result of :func:`identify`.

    Attributes:
        joints: (n,) names.
        names: (p,) identified parameter names (``R`` appended where others fold in).
        grouping: (p, 13 n) G with beta = G pi (pi: standard parameters).
        beta: (p,) identified values (SI units of each parameter).
        std: (p,) standard deviations.
        nominal: (p,) G pi of the nominal model.
        condition: condition number of the identification matrix (unit-norm columns).
        residual_rms: (n,) RMS of measured minus identified efforts (N·m or N).
        nominal_rms: (n,) the same for the nominal model.
        effort_rms: (n,) RMS of the measured efforts.
        samples: rows per joint used after decimation.
        rate: sample rate after decimation, Hz.
        cutoff: low-pass cutoff used, Hz.
        unexcited: names of joints the data barely moves.
        warnings: human-readable notes.
    """

    joints: tuple
    names: List[str]
    grouping: np.ndarray
    beta: np.ndarray
    std: np.ndarray
    nominal: np.ndarray
    condition: float
    residual_rms: np.ndarray
    nominal_rms: np.ndarray
    effort_rms: np.ndarray
    samples: int
    rate: float
    cutoff: float
    unexcited: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)

    @property
    def relative_std(self):
        """(p,) standard deviation relative to abs(value), percent (inf for a zero value)."""
        with np.errstate(divide='ignore', invalid='ignore'):
            return np.where(self.beta != 0, 100.0 * self.std / np.abs(self.beta), np.inf)


def identifiable_grouping(model):
    """(kept column indices, names, G (p, 13 n)) of the identifiable parameters."""
    kept, K, dependent, _ = numeric_base(model, inertial_only=False)
    G = np.zeros((kept.size, PER_JOINT * model.n))
    G[np.arange(kept.size), kept] = 1.0
    if dependent.size:
        K = np.where(np.abs(K) < 1e-10, 0.0, K)
        G[:, dependent] = K
    all_names = parameter_names(model.n)
    names = [all_names[k] + ('R' if np.count_nonzero(G[i]) > 1 else '')
             for i, k in enumerate(kept)]
    return kept, names, G


def _lowpass(x, cutoff, rate, axis=0):
    from scipy.signal import butter, sosfiltfilt
    sos = butter(4, cutoff, fs=rate, output='sos')
    return sosfiltfilt(sos, x, axis=axis)


def filtered_states(recording, cutoff):
    """Zero-phase filtered q, q̇ and differentiated q̈: three (N, n) arrays."""
    rate = recording.rate
    q = _lowpass(recording.q, cutoff, rate)
    if recording.qd is not None:
        qd = _lowpass(recording.qd, cutoff, rate)
    else:
        qd = np.gradient(q, recording.t, axis=0)
    qdd = np.gradient(qd, recording.t, axis=0)
    return q, qd, qdd


def identify(model, recording, cutoff=None, decimation=None, weighted=True, chunk=4096,
             effort_delay=0.0):
    """Identify the base and drive parameters of ``model``'s chain from ``recording``.

    Args:
        model: the nominal :class:`~ne_dynamics_ros.dynamics.model.RobotModel` (its
            kinematics define the regressor; its parameters are the nominal values).
        recording: :class:`~ne_dynamics_ros.identification.recording.JointRecording` with
            the model's joints.
        cutoff: low-pass cutoff, Hz (default min(10 Hz, rate / 5)).
        decimation: keep every r-th sample after the parallel low-pass (default: the
            largest r with rate / r >= 4 cutoff).
        weighted: weighted least squares (each joint by its residual deviation).
        chunk: states per regressor block (bounds memory).
        effort_delay: s by which the recorded effort lags the recorded state (e.g. half a
            sample when each message carries the effort held over the sample before it, as
            ros2_control's read-update-write cycle reports it); the effort is taken at
            ``t + effort_delay`` by linear interpolation.

    Returns:
        :class:`Identification`.

    Raises:
        IdentificationError: joints differ from the model's, too few samples after
            decimation, or the data leave the parameters undetermined.
    """
    from scipy.signal import sosfiltfilt, butter
    if list(recording.joints) != list(model.joint_names):
        raise IdentificationError(f'the recording has joints {list(recording.joints)}, the '
                                  f'model {model.joint_names}')
    n = model.n
    rate = recording.rate
    cutoff = float(cutoff) if cutoff is not None else min(DEFAULT_CUTOFF, rate / 5.0)
    if not 0 < cutoff < rate / 2:
        raise IdentificationError(f'cutoff {cutoff} Hz must be in (0, {rate / 2:g}) Hz '
                                  f'for a {rate:g} Hz recording')
    r = int(decimation) if decimation else max(1, int(rate // (4.0 * cutoff)))
    kept, names, G = identifiable_grouping(model)
    p = kept.size
    q, qd, qdd = filtered_states(recording, cutoff)
    N = q.shape[0]
    W = np.empty((N, n, p))
    for start in range(0, N, chunk):
        stop = min(N, start + chunk)
        W[start:stop] = model.regressor(q[start:stop], qd[start:stop], qdd[start:stop])[:, :, kept]
    tau = recording.effort
    if effort_delay:
        shifted = recording.t + float(effort_delay)
        tau = np.column_stack([np.interp(shifted, recording.t, tau[:, j]) for j in range(n)])
    # parallel decimation: the same zero-phase low-pass on W and on tau, then every r-th
    if r > 1:
        sos = butter(4, min(cutoff, 0.8 * rate / (2 * r)), fs=rate, output='sos')
        W = sosfiltfilt(sos, W, axis=0)
        tau = sosfiltfilt(sos, tau, axis=0)
    edge = max(1, int(0.02 * N))                 # filter start-up at both ends
    index = np.arange(edge, N - edge, r)
    if index.size * n < 2 * p:
        raise IdentificationError(f'{index.size} samples after decimation by {r}: too few '
                                  f'for {p} parameters')
    A_all = W[index].reshape(-1, p)
    y = tau[index].reshape(-1)
    pi0 = model.standard_parameters()
    nominal = G @ pi0
    vlimit = np.where(np.isfinite(model.velocity_limits), model.velocity_limits, 1.0)
    speed = np.sqrt((qd ** 2).mean(axis=0))
    still = speed < EXCITATION_FRACTION * vlimit
    unexcited = [name for name, s in zip(model.joint_names, still) if s]
    # Parameters the recording does not excite (zero columns, and the drive parameters Ia,
    # Fv, Fc of a joint that hardly moves, whose columns hold only its noise) keep their
    # nominal values and are reported.
    norms = np.linalg.norm(A_all, axis=0)
    dead = norms <= 1e-9 * max(float(norms.max()), 1e-300)
    for i, k in enumerate(kept):
        if k % PER_JOINT >= 10 and still[k // PER_JOINT]:
            dead[i] = True
    live = np.flatnonzero(~dead)
    if live.size == 0:
        raise IdentificationError('the recording excites no parameter: did the arm move?')
    A = A_all[:, live]
    y = y - A_all[:, dead] @ nominal[dead]
    sv = np.linalg.svd(A / norms[live], compute_uv=False)
    condition = float(sv[0] / sv[-1]) if sv[-1] > 0 else math.inf
    if not math.isfinite(condition) or condition > 1e12:
        raise IdentificationError(f'the identification matrix is singular (condition '
                                  f'{condition:.3g}): the motion does not excite the '
                                  'parameters; record an excitation trajectory')
    beta = np.linalg.lstsq(A, y, rcond=None)[0]
    rows = index.size
    dof = max(1, rows - int(math.ceil(live.size / n)))
    if weighted:
        residual = (y - A @ beta).reshape(rows, n)
        sigma = np.sqrt((residual ** 2).sum(axis=0) / dof)
        sigma = np.where(sigma > 0, sigma, max(float(sigma.max()), 1e-12))
        weights = np.tile(1.0 / sigma, rows)
        Aw, yw = A * weights[:, None], y * weights
        beta = np.linalg.lstsq(Aw, yw, rcond=None)[0]
    else:
        Aw, yw = A, y
    rw = yw - Aw @ beta
    variance = float(rw @ rw) / max(1, Aw.shape[0] - live.size)
    covariance = variance * np.linalg.pinv(Aw.T @ Aw)
    std = np.full(p, np.nan)                  # nan: not identified (kept nominal)
    std[live] = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    full = nominal.copy()
    full[live] = beta
    beta = full
    measured = tau[index]
    residual_rms = np.sqrt(((measured - (A_all @ beta).reshape(rows, n)) ** 2).mean(axis=0))
    nominal_rms = np.sqrt(((measured - (A_all @ nominal).reshape(rows, n)) ** 2).mean(axis=0))
    effort_rms = np.sqrt((measured ** 2).mean(axis=0))
    warnings = []
    if np.any(dead):
        fixed = [names[k] for k in np.flatnonzero(dead)]
        joints = sorted({model.joint_names[int(G[k].nonzero()[0].max()) // PER_JOINT]
                         for k in np.flatnonzero(dead)}, key=model.joint_names.index)
        warnings.append(f'the recording does not excite {fixed} (joints {joints}): they keep '
                        'their nominal values')
    if unexcited:
        warnings.append(f'the recording hardly moves {unexcited} (velocity RMS under '
                        f'{100 * EXCITATION_FRACTION:g}% of the limit): their parameters are '
                        'poorly determined')
    return Identification(tuple(model.joint_names), names, G, beta, std, nominal, condition,
                          residual_rms, nominal_rms, effort_rms, int(rows), rate / r, cutoff,
                          unexcited, warnings)


__all__ = ['identifiable_grouping', 'identify', 'Identification', 'filtered_states']
