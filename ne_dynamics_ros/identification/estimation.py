"""Least-squares identification of the base and drive parameters from a recording.

The inverse dynamic identification model (Gautier & Khalil; Swevers et al. 1997):
``tau = W(q, q̇, q̈) pi = W_b(q, q̇, q̈) beta`` with W the regressor of
:mod:`ne_dynamics_ros.dynamics.regressor` (rigid body, Ia, Fv, Fc columns) and
``beta = G pi`` the identifiable (base) parameters, from Gautier's QR of W over random
states on all 13 n columns (:func:`~ne_dynamics_ros.dynamics.base_parameters.numeric_base`),
so that e.g. Ia1 of a joint about the vertical folds into ZZ1R.

Steps (:func:`identify`, one function each):

1. *filter* (:func:`~ne_dynamics_ros.identification.signals.filtered_states`):
   positions (and recorded velocities) low-pass filtered without phase shift
   (Butterworth, ``filtfilt``); velocities, where not recorded, and accelerations by
   central differences of the filtered signals, with the recorded stamps;
2. *regress and decimate* (:func:`decimated_blocks`, block by block: :func:`regress`,
   then the low-pass, then every r-th sample): W_b computed at the full rate, then W_b
   and the measured efforts
   (:func:`~ne_dynamics_ros.identification.signals.aligned_efforts`) decimated
   through the *same* zero-phase low-pass filter (Gautier's parallel decimation): the
   efforts are never filtered by a filter the regressor does not see, which would bias
   Coulomb friction's sign changes; parameters the data do not excite keep their nominal
   values (:func:`unexcited_parameters`);
3. *fit* (:func:`fit_normal`, on the normal equations accumulated block by block,
   :class:`NormalEquations`): ordinary least squares, then weighted least squares with each
   joint's rows divided by its residual standard deviation, over the rows outside the
   *stiction band* (:func:`stiction_mask`: a joint's equation at a sample where it moves
   slower than ``stiction_band``, 0.1 rad/s by default, is left out: around rest and
   velocity reversals real dry friction is not the model's ``Fc tanh(q̇ / v_s)`` but
   stiction, and those rows bias the gravity parameters; on the MuJoCo UR5e with dry
   friction the band brought the gravity torque error from 0.079 to 0.004 N·m on joint 2
   and the armature error from 15 % to 1 %); the covariance
   ``σ² (AᵀA)⁻¹`` gives each parameter's standard deviation;
4. *statistics* (:func:`residuals_from`): the effort residuals with the identified and
   the nominal parameters.
"""
from dataclasses import dataclass, field
import math
from typing import List

import numpy as np

from ne_dynamics_ros.dynamics.base_parameters import numeric_base
from ne_dynamics_ros.dynamics.standard_parameters import parameter_names, PER_JOINT
from ne_dynamics_ros.errors import IdentificationError
from ne_dynamics_ros.identification.normal_equations import (FoldEquations,
                                                             NormalEquations)
from ne_dynamics_ros.identification.physical_fit import (extend_regressor,
                                                         extended_columns, fold_of, FOLDS,
                                                         VELOCITY_SCALES)
from ne_dynamics_ros.identification.signals import (  # noqa: F401 - steps 1 and 2's names
    aligned_efforts, decimation_filter, decimation_index, filtered_states, gradient,
    mean_square, scipy_signal)

#: Default low-pass cutoff, Hz (never above a fifth of the sample rate).
DEFAULT_CUTOFF = 10.0
#: A joint whose velocity RMS is below this fraction of its limit is reported as unexcited.
EXCITATION_FRACTION = 0.02
#: A joint whose tracking-error RMS exceeds this fraction of its excitation's RMS did not
#: follow its excitation (:func:`following_warnings`).
FOLLOWING_FRACTION = 0.1
#: Samples of the regressor computed and filtered at once (memory: about 8 000 n p 24 B).
BLOCK_SAMPLES = 8000
#: Default stiction band, rad/s (m/s): a joint's rows with a slower filtered velocity are
#: left out of the fit (:func:`stiction_mask`).
STICTION_BAND = 0.1


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
        folds: :class:`~ne_dynamics_ros.identification.normal_equations.FoldEquations` of
            the fitted rows on the extended columns (the physical fit's data).
        sigma: (n,) each joint's residual deviation of the least-squares fit, N·m (N).
        still: (n,) bools, the joints that hardly moved.
        hardware_friction: the efforts were recorded without the drive friction.
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
    folds: object = None
    sigma: np.ndarray = None
    still: np.ndarray = None
    hardware_friction: bool = False

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


def regress(model, q, qd, qdd, columns, chunk=4096, gravity=None):
    """Step 2a: the regressor of the identifiable parameters at every sample, (N, n, p).

    ``q, qd, qdd``: (N, n) filtered states; ``columns``: the kept columns of the full
    (n, 13 n) regressor (:func:`identifiable_grouping`); computed ``chunk`` states at a
    time (bounds the memory of the full regressor).
    """
    N = q.shape[0]
    W = np.empty((N, model.n, len(columns)))
    for start in range(0, N, chunk):
        stop = min(N, start + chunk)
        if gravity is None:
            block = model.regressor(q[start:stop], qd[start:stop], qdd[start:stop])
        else:
            block = model.regressor(q[start:stop], qd[start:stop], qdd[start:stop], gravity)
        W[start:stop] = block[:, :, columns]
    return W


def decimated_blocks(model, q, qd, qdd, tau, cutoff, rate, r, block=BLOCK_SAMPLES,
                     gravity=None):
    """Yield the decimated regressor block by block: memory bounded by ``block``, not N.

    Gautier's parallel decimation, with the work where it is needed: the measured efforts
    and the Coulomb columns ``tanh(q̇ / v_s)`` (the only columns with sharp features: a
    filter the regressor does not see would bias the friction's sign changes) are
    low-passed at the full rate without phase shift (cutoff at most 0.8 of the new Nyquist
    frequency: the states' own cutoff when ``rate / r >= 4 cutoff``) and sampled at the
    kept indices; the other columns, smooth functions of the states that are already
    low-passed at that cutoff, are computed at the kept samples only (``r`` times less
    work than the full rate: the regressor is the costly part of a long recording). The
    full-rate filtering runs per block of about ``block`` kept samples with a margin of
    25 time constants of the filter on both sides, so each kept sample is the
    whole-recording filter's value to about 1e-10 of the signal.

    Args:
        model: the model (its regressor).
        q, qd, qdd: (N, n) filtered states; tau: (N, n) efforts at the states' times.
        cutoff, rate, r: low-pass cutoff (Hz), sample rate (Hz), decimation factor.
        block: samples per block (the memory: about ``block * n * p * 8`` bytes).
        gravity: (3,) m/s² for the regressor (None: the standard gravity; zeros when
            the efforts were recorded with gravity removed).

    Yields:
        (index (m,), W (m, n, p), tau (m, n), qd (m, n)) at the kept samples; W holds
        every column of :func:`~ne_dynamics_ros.identification.physical_fit.
        extend_regressor` (the 13 n standard ones, the Coulomb columns at every
        candidate v_s, the offsets): the least squares take the identifiable ones.
    """
    N, n = q.shape
    index = decimation_index(N, r)
    sos = decimation_filter(cutoff, rate, r)
    pad = 0 if sos is None else int(math.ceil(25 * rate / (2 * math.pi * min(
        cutoff, 0.8 * rate / (2 * r)) * 0.38)))
    sosfiltfilt = scipy_signal().sosfiltfilt
    # (column of W, v_s, joint) of every Coulomb column: the model's own, then the candidates'
    coulomb = [(PER_JOINT * j + 12, float(model.coulomb_velocity[j]), j) for j in range(n)]
    coulomb += [(PER_JOINT * n + s * n + j, scale, j)
                for s, scale in enumerate(VELOCITY_SCALES) for j in range(n)]
    for start in range(0, index.size, max(1, block)):
        kept = index[start:start + block]
        lo, hi = max(0, int(kept[0]) - pad), min(N, int(kept[-1]) + pad + 1)
        W = extend_regressor(regress(model, q[kept], qd[kept], qdd[kept],
                                     np.arange(PER_JOINT * n), gravity=gravity), qd[kept])
        T = tau[lo:hi]
        C = np.empty((hi - lo, len(coulomb)))
        for c, (_, scale, j) in enumerate(coulomb):
            C[:, c] = np.tanh(qd[lo:hi, j] / scale)
        if sos is not None:
            T = sosfiltfilt(sos, T, axis=0)
            C = sosfiltfilt(sos, C, axis=0)
        for c, (k, _, j) in enumerate(coulomb):
            W[:, j, k] = C[kept - lo, c]
        yield kept, W, T[kept - lo], qd[kept]


def _still_joints(model, qd, speed=None):
    """Return (still, speed, vlimit): the joints that hardly move, and why.

    ``still``: (n,) velocity RMS under ``EXCITATION_FRACTION`` of the limit; ``speed``:
    (n,) the velocity RMS of ``qd`` (N, n), or the one given; ``vlimit``: (n,) the limits
    used (1 where the URDF has none).
    """
    vlimit = np.where(np.isfinite(model.velocity_limits), model.velocity_limits, 1.0)
    if speed is None:
        speed = np.sqrt(mean_square(qd))
    return speed < EXCITATION_FRACTION * vlimit, speed, vlimit


def unexcited_parameters(model, qd, norms, kept, speed=None):
    """Which joints the recording hardly moves, and which parameters it leaves undetermined.

    A joint is unexcited when its velocity RMS (of ``qd`` (N, n), or ``speed`` (n,) when
    given) is under ``EXCITATION_FRACTION`` of its limit. A parameter is not identified
    (kept at its nominal value) when its column of the stacked identification matrix is
    zero (``norms``: (p,) column norms, :meth:`~ne_dynamics_ros.identification.
    normal_equations.NormalEquations.column_norms`), or when it is an Ia, Fv, Fc of an
    unexcited joint (its column holds only noise). Returns (the joints' (n,) still mask,
    the parameters' (p,) dead mask).
    """
    still = _still_joints(model, qd, speed)[0]
    norms = np.asarray(norms, dtype=float)
    dead = norms <= 1e-9 * max(float(norms.max()), 1e-300)
    for i, k in enumerate(kept):
        if k % PER_JOINT >= 10 and still[k // PER_JOINT]:
            dead[i] = True
    return still, dead


def check_stiction_band(value, name='stiction_band'):
    """Validate a stiction band: a finite velocity >= 0, rad/s (m/s).

    Raises:
        IdentificationError: naming ``name`` (the argument or the option) and the value.
    """
    if not (isinstance(value, (int, float)) and 0 <= value < math.inf):
        raise IdentificationError(f'{name} must be a finite velocity >= 0, got {value!r}')


def stiction_mask(qd, band):
    """Which rows the fit keeps: (m, n) booleans, ``|qd| >= band`` (all when band is 0).

    ``qd``: (m, n) filtered velocities at the decimated samples, rad/s (m/s); ``band``:
    rad/s (m/s), >= 0.
    """
    return np.abs(qd) >= band


def following_warnings(model, recording, qd=None):
    """Name the joints that did not follow their excitation, and say what to change.

    A joint did not follow when its velocity RMS is under ``EXCITATION_FRACTION`` of its
    velocity limit (it hardly moved), or, when the recording carries the controller's
    tracking error (``recording.tracking_error``), when the RMS of ``q_d - q`` is over
    ``FOLLOWING_FRACTION`` (10 %) of the RMS of the excitation ``q_d`` about its mean.
    Such a joint's friction and armature are poorly determined (a joint held by dry
    friction shows none), and its error biases the others.

    Args:
        model: the nominal model (joint names, velocity limits).
        recording: :class:`~ne_dynamics_ros.identification.recording.JointRecording`.
        qd: (N, n) velocities to judge the motion by (default: the recorded ones, or
            differentiated positions); :func:`identify` passes its filtered ones.

    Returns:
        (still, warnings): (n,) booleans, True where the joint hardly moved; and one
        message per joint that did not follow, naming it, with the figures and advice.
    """
    if qd is None:
        qd = recording.qd
        if qd is None:
            qd = gradient(recording.q, recording.t)
    still, speed, vlimit = _still_joints(model, qd)
    ratio = np.zeros(model.n)
    if recording.tracking_error is not None and len(recording.tracking_error[0]) > 1:
        t_e, error = recording.tracking_error
        q = np.column_stack([np.interp(t_e, recording.t, recording.q[:, j])
                             for j in range(model.n)])
        desired = q + error
        spread = desired.std(axis=0)
        with np.errstate(divide='ignore', invalid='ignore'):
            ratio = np.where(spread > 0, np.sqrt((error ** 2).mean(axis=0)) / spread,
                             np.inf)
    advice = ('play the excitation under feedforward + joint PD (computed_torque_node mode '
              'feedforward with the kp, kd of the excitation file, which trajectory_source '
              'sets by default), or raise that joint\'s kp and kd: dry friction and rotor '
              'inertia the nominal model lacks hold back a joint whose gain is sized from '
              'the nominal inertia')
    warnings = []
    for j, name in enumerate(model.joint_names):
        if ratio[j] > FOLLOWING_FRACTION:
            warnings.append(f'{name} did not follow its excitation: tracking error RMS '
                            f'{100 * ratio[j]:.0f}% of the excitation RMS (over '
                            f'{100 * FOLLOWING_FRACTION:g}%); {advice}')
        elif still[j]:
            warnings.append(f'{name} hardly moved: velocity RMS {speed[j]:.3g} under '
                            f'{100 * EXCITATION_FRACTION:g}% of its limit '
                            f'({EXCITATION_FRACTION * vlimit[j]:.3g}); its parameters are '
                            f'poorly determined; {advice}')
    return still, warnings


def dependent_columns(equations, tolerance=1e-10):
    """Return the (p,) mask of columns that add nothing to the ones before them.

    Pivoted QR of the column-normalised ``AᵀA`` (a rank-revealing order, as a pivoted
    Cholesky factorisation): a column whose pivot is under ``tolerance`` of the first is a
    combination of the kept ones (``tolerance`` on ``AᵀA``: 1e-10 is a condition number
    of 1e5 on A). Used when the efforts were recorded without gravity: parameters that
    only gravity separates then move together.
    """
    from scipy.linalg import qr
    M = equations.AtA.sum(axis=0)
    norms = np.sqrt(np.maximum(np.diag(M), 0.0))
    norms = np.where(norms > 0, norms, 1.0)
    _, R, order = qr(M / np.outer(norms, norms), pivoting=True)
    pivots = np.abs(np.diag(R))
    dependent = np.zeros(M.shape[0], dtype=bool)
    dependent[order[pivots <= tolerance * max(float(pivots[0]), 1e-300)]] = True
    return dependent


def fit_normal(equations, weighted=True):
    """Step 3 on accumulated sums: ordinary, then weighted least squares, and deviations.

    ``equations``: :class:`NormalEquations` of the rows to fit (p' columns). Weighted: each
    joint's rows divided by its residual standard deviation of the first fit. Returns
    (beta (p',), std (p',) from ``σ² (AᵀA)⁻¹``, the condition number of A with unit-norm
    columns, from the eigenvalues of the normalised ``AᵀA``).

    Raises:
        IdentificationError: A is singular (condition above 1e8, where ``AᵀA`` holds
            nothing but rounding): the motion does not excite the parameters.
    """
    n, p = equations.Aty.shape
    M = equations.AtA.sum(axis=0)
    b = equations.Aty.sum(axis=0)
    norms = np.sqrt(np.maximum(np.diag(M), 0.0))
    norms = np.where(norms > 0, norms, 1.0)
    eig = np.linalg.eigvalsh(M / np.outer(norms, norms))
    condition = (math.sqrt(float(eig[-1] / eig[0])) if eig[0] > 0 and np.all(np.isfinite(eig))
                 else math.inf)
    if not math.isfinite(condition) or condition > 1e8:
        raise IdentificationError(f'the identification matrix is singular (condition '
                                  f'{condition:.3g}): the motion does not excite the '
                                  'parameters; record an excitation trajectory')
    beta = np.linalg.solve(M, b)
    dof = np.maximum(1, equations.rows - int(math.ceil(p / n)))
    weights = np.ones(n)
    if weighted:
        sigma2 = equations.rss(beta) / dof
        sigma2 = np.where(sigma2 > 0, sigma2, max(float(sigma2.max()), 1e-24))
        weights = 1.0 / sigma2
        M = np.einsum('j,jpq->pq', weights, equations.AtA)
        beta = np.linalg.solve(M, weights @ equations.Aty)
    rw = float(weights @ equations.rss(beta))
    variance = rw / max(1, int(equations.rows.sum()) - p)
    covariance = variance * np.linalg.pinv(M)
    return beta, np.sqrt(np.clip(np.diag(covariance), 0.0, None)), condition


def residuals_from(equations, beta, nominal):
    """Return the RMS per joint of the residuals with beta, with nominal, and of the efforts.

    From the accumulated sums of ``equations`` (all rows, no mask): three (n,) arrays,
    N*m (N).
    """
    rows = np.maximum(equations.rows, 1)
    return (np.sqrt(equations.rss(beta) / rows), np.sqrt(equations.rss(nominal) / rows),
            np.sqrt(np.maximum(equations.yty, 0.0) / rows))


def identify(model, recording, cutoff=None, decimation=None, weighted=True,
             chunk=BLOCK_SAMPLES, effort_delay=0.0, stiction_band=STICTION_BAND,
             efforts_exclude_gravity=False, efforts_exclude_friction=False):
    """Identify the base and drive parameters of ``model``'s chain from ``recording``.

    In the steps of the module docstring (filter, regress and decimate, fit, statistics).

    Args:
        model: the nominal :class:`~ne_dynamics_ros.dynamics.model.RobotModel` (its
            kinematics define the regressor; its parameters are the nominal values).
        recording: :class:`~ne_dynamics_ros.identification.recording.JointRecording` with
            the model's joints, or a sequence of them (several recordings joined: each
            filtered on its own, their rows fitted together; each split into the same
            folds).
        cutoff: low-pass cutoff, Hz (default min(10 Hz, rate / 5), the slowest
            recording's rate).
        decimation: keep every r-th sample after the parallel low-pass (default: the
            largest r with rate / r >= 4 cutoff).
        weighted: weighted least squares (each joint by its residual deviation).
        chunk: samples per regressor block (bounds the memory, :func:`decimated_blocks`).
        effort_delay: s by which the recorded effort lags the state (half a sample when
            each message carries the effort held over the sample before it, as
            ros2_control's read-update-write cycle reports it), interpolated linearly.
        stiction_band: rad/s (m/s), >= 0: each joint's rows where it moves slower are left
            out of the fit (:func:`stiction_mask`); 0 keeps every row.
        efforts_exclude_gravity: the recorded efforts have g(q) removed (a UR arm's driver
            reports them so by default): the regressor is taken with zero gravity, and the
            parameters that only gravity reveals (zero columns, or columns that only
            gravity told apart) keep their nominal values, named in a warning.
        efforts_exclude_friction: the recorded efforts have the drive friction removed
            (the hardware compensates it): Fv and Fc keep their nominal values.

    Returns:
        :class:`Identification`.

    Raises:
        IdentificationError: joints differ from the model's, too few samples after
            decimation, or the data leave the parameters undetermined.
    """
    recordings = [recording] if hasattr(recording, 't') else list(recording)
    cutoff = _cutoff(model, recordings, cutoff, stiction_band)
    kept, names, G = identifiable_grouping(model)
    n, p = model.n, kept.size
    every = NormalEquations(n, p)        # all rows: column norms, residuals
    outside = NormalEquations(n, p)      # the rows outside the stiction band: the fit
    folds = FoldEquations(FOLDS, n, extended_columns(n))   # those rows, for the physical fit
    samples, squares, count, still, warnings = 0, np.zeros(n), 0, np.ones(n, bool), []
    for one in recordings:
        rate = one.rate
        r = int(decimation) if decimation else max(1, int(rate // (4.0 * cutoff)))
        q, qd, qdd = filtered_states(one, cutoff)                        # step 1
        tau = aligned_efforts(one, effort_delay)
        samples += decimation_index(q.shape[0], r).size
        _accumulate(model, q, qd, qdd, tau, kept, cutoff, rate, r, chunk,  # step 2
                    stiction_band, efforts_exclude_gravity, (every, outside, folds))
        squares += qd.shape[0] * mean_square(qd)
        count += qd.shape[0]
        still_here, said = following_warnings(model, one, qd)
        still &= still_here
        warnings += [f'{one.source}: {w}' for w in said] if len(recordings) > 1 else said
        del q, qd, qdd, tau
    if samples * n < 2 * p:
        raise IdentificationError(f'{samples} samples after decimation: too few for {p} '
                                  'parameters')
    speed = np.sqrt(squares / max(count, 1))
    nominal = G @ model.standard_parameters()
    dead, hardware, fixed = _kept_nominal(model, speed, kept, every, outside, nominal,
                                          efforts_exclude_gravity, efforts_exclude_friction)
    beta, std, condition = _fit(outside, fixed, dead, nominal, weighted)   # step 3
    residual_rms, nominal_rms, effort_rms = residuals_from(every, beta, nominal)  # step 4
    unexcited = [name for name, s in zip(model.joint_names, still) if s]
    warnings += _notes(model, names, G, dead, hardware, efforts_exclude_gravity,
                       efforts_exclude_friction)
    dof = np.maximum(1, outside.rows - int(math.ceil(p / n)))
    sigma = np.sqrt(outside.rss(beta) / dof)
    return Identification(tuple(model.joint_names), names, G, beta, std, nominal, condition,
                          residual_rms, nominal_rms, effort_rms, int(samples), rate / r,
                          cutoff, unexcited, warnings, folds, sigma, still,
                          efforts_exclude_friction)


def _fit(outside, fixed, dead, nominal, weighted):
    """Step 3 on the parameters not kept nominal: ``(beta, std, condition)``.

    ``beta`` (p,) the identified values (nominal where ``dead``), ``std`` (p,) their
    standard deviations (NaN where not identified), ``condition`` the fit's.
    """
    live = np.flatnonzero(~dead)
    fitted, fitted_std, condition = fit_normal(outside.shifted(fixed).columns(live),
                                               weighted)
    beta = nominal.copy()
    beta[live] = fitted
    std = np.full(nominal.size, np.nan)       # nan: not identified (kept nominal)
    std[live] = fitted_std
    return beta, std, condition


def _cutoff(model, recordings, cutoff, stiction_band):
    """Check the joints and the settings; return the cutoff, Hz (the slowest rate's)."""
    if not recordings:
        raise IdentificationError('no recording to identify from')
    for one in recordings:
        if list(one.joints) != list(model.joint_names):
            raise IdentificationError(f'{one.source}: the recording has joints '
                                      f'{list(one.joints)}, the model {model.joint_names}')
    rate = min(one.rate for one in recordings)
    cutoff = float(cutoff) if cutoff is not None else min(DEFAULT_CUTOFF, rate / 5.0)
    check_stiction_band(stiction_band)
    if not 0 < cutoff < rate / 2:
        raise IdentificationError(f'cutoff {cutoff} Hz must be in (0, {rate / 2:g}) Hz '
                                  f'for a {rate:g} Hz recording')
    return cutoff


def _accumulate(model, q, qd, qdd, tau, kept, cutoff, rate, r, chunk, stiction_band,
                efforts_exclude_gravity, sums):
    """Step 2: add one recording's rows to ``sums`` = (every, outside, folds).

    ``every``: the normal equations of every row (column norms, residuals); ``outside``:
    of the rows outside the stiction band (the fit); ``folds``: those rows per fold on the
    extended columns (the physical fit's data).
    """
    every, outside, folds = sums
    gravity = np.zeros(3) if efforts_exclude_gravity else None
    for index, W, T, qd_kept in decimated_blocks(model, q, qd, qdd, tau, cutoff, rate, r,
                                                 chunk, gravity):
        mask = stiction_mask(qd_kept, stiction_band)
        base = W[:, :, kept]
        every.add(base, T)
        outside.add(base, T, mask)
        folds.add(fold_of(index, q.shape[0]), W, T, mask)


def _kept_nominal(model, speed, kept, every, outside, nominal, efforts_exclude_gravity,
                  efforts_exclude_friction):
    """Which parameters keep their nominal values, and the values taken out of the efforts.

    Returns (dead (p,) bool: not fitted, hardware (p,) bool: not in the efforts at all,
    fixed (p,): the nominal values of the dead ones that the efforts contain).

    Raises:
        IdentificationError: no parameter is excited.
    """
    p = kept.size
    norms = every.column_norms()
    _, dead = unexcited_parameters(model, None, norms, kept, speed)
    friction = np.array([k % PER_JOINT in (11, 12) for k in kept])
    hardware = np.zeros(p, dtype=bool)        # what the hardware took out of the efforts
    if efforts_exclude_friction:
        hardware |= friction
    if efforts_exclude_gravity:
        # a column that is zero in an excited recording is one only gravity fills
        hardware |= norms <= 1e-9 * max(float(norms.max()), 1e-300)
        live_now = np.flatnonzero(~(dead | hardware))
        dependent = np.zeros(p, dtype=bool)
        dependent[live_now] = dependent_columns(outside.columns(live_now))
        hardware |= dependent
    dead |= hardware
    if not np.any(~dead):
        raise IdentificationError('the recording excites no parameter: did the arm move?')
    # parameters the recording does not excite keep their nominal values
    fixed = np.where(dead, nominal, 0.0)
    if efforts_exclude_friction:        # not in the efforts at all: nothing to take out
        fixed[friction] = 0.0
    return dead, hardware, fixed


def _notes(model, names, G, dead, hardware, efforts_exclude_gravity,
           efforts_exclude_friction):
    """Return the warnings on what is kept nominal, and why."""
    warnings = []
    if np.any(hardware):
        excluded = (('gravity', efforts_exclude_gravity),
                    ('friction', efforts_exclude_friction))
        why = ' and '.join(what for what, on in excluded if on)
        warnings.append(f'the efforts were recorded without {why}: '
                        f'{[names[k] for k in np.flatnonzero(hardware)]} cannot be seen in '
                        'them and keep their nominal values')
        dead = dead & ~hardware
    if np.any(dead):
        fixed = [names[k] for k in np.flatnonzero(dead)]
        joints = sorted({model.joint_names[int(G[k].nonzero()[0].max()) // PER_JOINT]
                         for k in np.flatnonzero(dead)}, key=model.joint_names.index)
        warnings.append(f'the recording does not excite {fixed} (joints {joints}): they keep '
                        'their nominal values')
    return warnings


__all__ = ['decimated_blocks', 'fit_normal', 'NormalEquations', 'residuals_from',
           'following_warnings', 'identifiable_grouping', 'identify', 'Identification',
           'regress', 'check_stiction_band', 'stiction_mask', 'unexcited_parameters']
