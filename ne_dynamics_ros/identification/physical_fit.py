"""A physically plausible model fitted to the data, judged on motion it was not fitted on.

Pure module (NumPy, SciPy, cvxpy). The least-squares base parameters of
:mod:`~ne_dynamics_ros.identification.estimation` fit the recording best, but a real
recording leaves many directions of the parameter space barely determined: an
unconstrained fit then moves them wherever the noise pulls (on a KUKA LWR4+ recording: an
armature of 3.4 kg·m² on joints whose link-side torque sensors see no rotor, a model that
predicts another motion worse than the placeholder URDF), and the closest physical set
that reproduces those values exactly can be absurd (a UR10e upper arm of 575 kg).
:func:`select_model` instead fits the *standard* parameters directly, every link a body
that can exist, with a prior that keeps what the data do not determine near the nominal
model:

    minimise   Σ_j w_j ‖A_j x − y_j‖² / R  +  λ Σ_i d(J_i, J_i⁰)
    subject to J_i ⪰ MARGIN · J_i⁰,   Ia, Fv, Fc ≥ 0

with ``x`` the links' 10 inertial parameters and the selected drive terms of every joint
(armature ``Ia``, viscous ``Fv``, Coulomb ``Fc tanh(q̇ / v_s)`` at one velocity scale v_s
of :data:`VELOCITY_SCALES` per joint, a constant ``offset``), ``w_j = 1 / σ_j²`` each
joint's residual variance of the least-squares fit, ``R`` the rows, ``J_i`` link i's
pseudo-inertia (Wensing, Kim & Slotine, "Linear Matrix Inequalities for Physically
Consistent Inertial Parameter Identification: A Statistical Perspective on the Mass
Distribution", IEEE RA-L 3(1), 2018, eq. 6: positive definite exactly when a mass
distribution has these moments) and ``d`` the log-det (Bregman) divergence of the
pseudo-inertias, ``d(J, J⁰) = −log det(J⁰⁻¹ J) + tr(J⁰⁻¹ J) − 4`` (T. Lee, P. M. Wensing,
F. C. Park, "Geometric Robot Dynamic Identification: A Convex Programming Approach", IEEE
T-RO 36(2), 2020, eq. 28): invariant to the units and the frame of each link, and
infinite at the boundary of physical consistency, so links stay inside it.

**What the data decide** (:func:`select_model`), by K-fold cross-validation over
contiguous time blocks of the recording the model is fitted on (never the held-out part):

1. each joint's drive terms (armature, viscous, Coulomb and its v_s, offset): a joint
   keeps a term only where leaving it out raises the cross-validated error by more than
   :data:`SIMPLER_TOLERANCE` (a link-side torque sensor sees no rotor inertia: its
   armature column only fits noise; between terms about as good, Coulomb's bounded
   friction is preferred to viscous friction alone, which grows with speeds the
   recording may not reach), by coordinate descent over the joints on the prior's
   quadratic approximation (``½‖J⁰^-½ (J − J⁰) J⁰^-½‖²_F``, closed form);
2. the prior's weight λ from :data:`PRIOR_WEIGHTS`, by the convex programme itself: the
   largest λ whose cross-validated error is within :data:`SIMPLER_TOLERANCE` of the best
   (the "one-standard-error" rule of Hastie, Tibshirani & Friedman, *The Elements of
   Statistical Learning*, 2009, §7.10: the simplest model about as good as the best).

A URDF whose inertials are placeholders (:mod:`~ne_dynamics_ros.identification.
placeholder`: none, all equal, all under 1 g) gives no nominal model to lean on: the
prior's J⁰ is then the data's own physically consistent fit (``own_prior``). Over 600
lines because the programme, its candidates and that prior are one fit, each step
reading the others' columns and margins.
"""
from dataclasses import dataclass, field
import itertools
import math
import warnings
from typing import List

import numpy as np

from ne_dynamics_ros.dynamics.standard_parameters import PER_JOINT
from ne_dynamics_ros.errors import IdentificationError, require

#: Candidate velocity scales v_s of ``Fc tanh(q̇ / v_s)``, rad/s (m/s).
VELOCITY_SCALES = (0.003, 0.01, 0.03, 0.1)
#: Candidate prior weights λ (per row of weighted squared error).
PRIOR_WEIGHTS = (1e-4, 1e-3, 1e-2, 1e-1)
#: Every link's pseudo-inertia at least this share of the nominal one (J ⪰ MARGIN J⁰).
MARGIN = 0.01
#: A simpler model is taken when its cross-validated error is within this share of the best.
SIMPLER_TOLERANCE = 0.01
#: Contiguous folds of the cross-validation.
FOLDS = 4
#: Drive terms of a joint, in the order of :attr:`DriveModel.terms`.
DRIVE_TERMS = ('armature', 'viscous', 'coulomb', 'offset')


def extended_columns(n, scales=VELOCITY_SCALES):
    """Return the number of columns of the extended regressor of ``n`` joints.

    Layout: the 13 n standard columns of :func:`~ne_dynamics_ros.dynamics.regressor.
    regressor`, then ``tanh(q̇_j / v_k)`` for every candidate scale (K n, scale-major),
    then the offsets (n: 1 in joint j's row).
    """
    return (PER_JOINT + len(scales) + 1) * n


def extend_regressor(W, qd, scales=VELOCITY_SCALES):
    """Append the Coulomb columns at every candidate v_s and the offset columns to ``W``.

    Args:
        W: (m, n, 13 n) standard regressor; qd: (m, n) velocities, rad/s (m/s).

    Returns:
        (m, n, (14 + K) n) in the layout of :func:`extended_columns`.
    """
    m, n, _ = W.shape
    out = np.zeros((m, n, extended_columns(n, scales)))
    out[:, :, :W.shape[2]] = W
    base = W.shape[2]
    for k, scale in enumerate(scales):
        for j in range(n):
            out[:, j, base + k * n + j] = np.tanh(qd[:, j] / scale)
    for j in range(n):
        out[:, j, base + len(scales) * n + j] = 1.0
    return out


@dataclass(frozen=True)
class DriveModel:
    """Which drive terms each joint has.

    Attributes:
        armature, viscous, offset: (n,) bools.
        coulomb: (n,) index into :data:`VELOCITY_SCALES` of the Coulomb term's v_s, or -1
            (none).
    """

    armature: tuple
    viscous: tuple
    coulomb: tuple
    offset: tuple

    @classmethod
    def full(cls, n, scale_index=1, allowed=None):
        """Every term on each joint where ``allowed`` (a :class:`DriveModel` of bools)."""
        model = cls((True,) * n, (True,) * n, (scale_index,) * n, (True,) * n)
        return model.within(allowed) if allowed is not None else model

    def within(self, allowed):
        """Return this model with the terms ``allowed`` forbids switched off."""
        return DriveModel(
            tuple(a and b for a, b in zip(self.armature, allowed.armature)),
            tuple(a and b for a, b in zip(self.viscous, allowed.viscous)),
            tuple(c if b >= 0 else -1 for c, b in zip(self.coulomb, allowed.coulomb)),
            tuple(a and b for a, b in zip(self.offset, allowed.offset)))

    def replaced(self, j, armature, viscous, coulomb, offset):
        """Return a copy with joint ``j``'s terms replaced."""
        def put(values, value):
            return values[:j] + (value,) + values[j + 1:]
        return DriveModel(put(self.armature, armature), put(self.viscous, viscous),
                          put(self.coulomb, coulomb), put(self.offset, offset))

    def count(self, j):
        """Return the number of terms joint ``j`` has."""
        return (int(self.armature[j]) + int(self.viscous[j]) + int(self.coulomb[j] >= 0)
                + int(self.offset[j]))

    def columns(self, n, scales=VELOCITY_SCALES):
        """Return the extended-regressor columns of the model: inertial ones, then drives."""
        cols = [PER_JOINT * j + k for j in range(n) for k in range(10)]
        for j in range(n):
            if self.armature[j]:
                cols.append(PER_JOINT * j + 10)
            if self.viscous[j]:
                cols.append(PER_JOINT * j + 11)
            if self.coulomb[j] >= 0:
                cols.append(PER_JOINT * n + self.coulomb[j] * n + j)
            if self.offset[j]:
                cols.append((PER_JOINT + len(scales)) * n + j)
        return cols

    def describe(self, j, scales=VELOCITY_SCALES):
        """Return joint ``j``'s terms as text, e.g. ``viscous, Coulomb (v_s 0.03), offset``."""
        terms = []
        if self.armature[j]:
            terms.append('armature')
        if self.viscous[j]:
            terms.append('viscous')
        if self.coulomb[j] >= 0:
            terms.append(f'Coulomb (v_s {scales[self.coulomb[j]]:g})')
        if self.offset[j]:
            terms.append('offset')
        return ', '.join(terms) or 'none'


def pseudo_inertia(p):
    """Return link's 4 x 4 pseudo-inertia from its 10 parameters (XX ... ZZ, MX, MY, MZ, M).

    ``J = [[½ tr(I) E − I, MS], [MSᵀ, M]]`` (Wensing et al. 2018, eq. 6), I the inertia
    about the link's origin (kg·m²), MS the first moment (kg·m), M the mass (kg).
    """
    XX, XY, XZ, YY, YZ, ZZ, MX, MY, MZ, M = (float(v) for v in p[:10])
    trace = (XX + YY + ZZ) / 2
    return np.array([[trace - XX, -XY, -XZ, MX], [-XY, trace - YY, -YZ, MY],
                     [-XZ, -YZ, trace - ZZ, MZ], [MX, MY, MZ, M]])


def _pseudo_map():
    """Return T (16, 10) with vec(J) = T p for a link's 10 parameters (row-major vec)."""
    T = np.zeros((16, 10))
    for k in range(10):
        e = np.zeros(10)
        e[k] = 1.0
        T[:, k] = pseudo_inertia(e).reshape(-1)
    return T


PSEUDO_MAP = _pseudo_map()


def nominal_pseudo_inertias(nominal, n):
    """Return the nominal pseudo-inertias (n, 4, 4), each made positive definite.

    A link the URDF gives no mass or a flat inertia is not a body: its J⁰ gets a small
    multiple of the identity (1e-4 of its trace, at least 1e-6) so that the prior and
    the margin are defined.
    """
    out = np.empty((n, 4, 4))
    for i in range(n):
        J = pseudo_inertia(nominal[PER_JOINT * i:PER_JOINT * i + 10])
        floor = max(1e-4 * float(np.trace(J)), 1e-6)
        if np.linalg.eigvalsh(J).min() < floor:
            J = J + floor * np.eye(4)
        out[i] = J
    return out


@dataclass(frozen=True)
class PhysicalFit:
    """Result of :func:`select_model`.

    Attributes:
        parameters: (13 n,) standard parameters (Khalil's order), every link physical.
        friction_velocity: (n,) v_s of each joint's Coulomb term, rad/s (m/s).
        friction_offset: (n,) constant effort per joint, N·m (N).
        drives: the :class:`DriveModel` chosen.
        prior_weight: λ chosen.
        cv_error: {λ: cross-validated weighted error} of the candidates tried.
        drive_notes: (n,) text per joint: the terms kept and why the others were left out.
        link_notes: (n,) per link: mass nominal → identified, centre-of-mass shift, why.
        min_margin: smallest eigenvalue of ``J⁰^-½ J J⁰^-½`` over the links (≥ MARGIN).
        solver: the cvxpy solver used.
        own_prior: the prior was the data's own fit (placeholder inertials).
    """

    parameters: np.ndarray
    friction_velocity: np.ndarray
    friction_offset: np.ndarray
    drives: DriveModel
    prior_weight: float
    cv_error: dict
    drive_notes: List[str] = field(default_factory=list)
    link_notes: List[str] = field(default_factory=list)
    min_margin: float = math.nan
    solver: str = ''
    own_prior: bool = False

    def model(self, nominal):
        """Return ``nominal`` (a RobotModel) with these parameters and friction shape."""
        out = nominal.with_parameters(self.parameters)
        out.set_friction_shape(self.friction_velocity, self.friction_offset)
        return out


def _quadratic_prior(J0s, n, P_cols):
    """Return (Q (p, p), x0 (p,)) of the prior's quadratic approximation on the columns."""
    p = len(P_cols)
    Q = np.zeros((p, p))
    for i in range(n):
        inv = np.linalg.inv(J0s[i])
        K = np.kron(inv, inv)                # vec(A J B) = (A ⊗ Bᵀ) vec(J), row-major
        Qi = 0.5 * PSEUDO_MAP.T @ K @ PSEUDO_MAP
        Q[10 * i:10 * i + 10, 10 * i:10 * i + 10] = Qi
    return Q


def _held_out_error(fold_sums, X):
    """Return the held-out folds' weighted error per row, Σ_f (c_f − 2 b_fᵀx_f + x_fᵀM_f x_f).

    ``fold_sums``: :meth:`~ne_dynamics_ros.identification.normal_equations.FoldEquations.
    fold_totals`; ``X``: (F, p) each fold's fit on the other folds.
    """
    Mf, bf, cf, rf = fold_sums
    errors = cf - 2.0 * np.einsum('fp,fp->f', bf, X) + np.einsum('fp,fpq,fq->f', X, Mf, X)
    return float(np.maximum(errors, 0.0).sum()) / max(float(rf.sum()), 1.0)


def _ridge_cv_score(equations, weights, cols, lam, Q, x0, drive_scale):
    """:func:`_cv_score` of the closed-form minimiser, all folds in one batched solve.

    Each fold's fit minimises ``(xᵀMx − 2bᵀx)/rows + λ (x−x0)ᵀQ(x−x0) + tiny drive ridge``
    on the other folds' sums.
    """
    sums = equations.fold_totals(weights, cols)
    Mf, bf, _, rf = sums
    rows = rf.sum() - rf
    A = (Mf.sum(axis=0) - Mf) / rows[:, None, None] + lam * Q + np.diag(drive_scale)
    rhs = (bf.sum(axis=0) - bf) / rows[:, None] + lam * Q @ x0
    try:
        X = np.linalg.solve(A, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:
        X = np.array([np.linalg.lstsq(a, r, rcond=None)[0] for a, r in zip(A, rhs)])
    return _held_out_error(sums, X)


def _cv_score(equations, weights, cols, solve):
    """Cross-validated weighted error per row: Σ over folds of the held-out fold's error."""
    F = equations.AtA.shape[0]
    X = []
    for f in range(F):
        x = solve([g for g in range(F) if g != f], cols)
        if x is None:
            return math.inf
        X.append(x)
    return _held_out_error(equations.fold_totals(weights, cols), np.array(X))


def _nominal_x(nominal, n, cols):
    """Return the nominal values on the extended columns (drive terms 0: no prior)."""
    x0 = np.zeros(len(cols))
    for k, c in enumerate(cols):
        if c < PER_JOINT * n and c % PER_JOINT < 10:
            x0[k] = nominal[c]
    return x0


def select_drives(equations, weights, nominal, n, allowed, lam=1e-2, passes=2):
    """Choose each joint's drive terms by cross-validation (module docstring, step 1).

    Args:
        equations: :class:`~ne_dynamics_ros.identification.normal_equations.
            FoldEquations` of the fit's rows.
        weights: (n,) 1 / σ_j².
        nominal: (13 n,) nominal standard parameters.
        allowed: :class:`DriveModel` of what each joint may have (e.g. no friction where
            the hardware removed it from the efforts, nothing on a joint that never moved).
        lam: the prior weight of the quadratic approximation during the search.

    Returns:
        (:class:`DriveModel`, notes: (n,) text of what each joint's choice rests on).
    """
    J0s = nominal_pseudo_inertias(nominal, n)
    options = []
    for armature, viscous, offset in itertools.product((True, False), repeat=3):
        for coulomb in list(range(len(VELOCITY_SCALES))) + [-1]:
            options.append((armature, viscous, coulomb, offset))
    cache = {}
    # the prior's block on the inertial columns, the same for every candidate
    inertial_prior = _quadratic_prior(J0s, n, range(10 * n))

    def score(drives):
        cols = drives.columns(n)
        key = tuple(cols)
        if key not in cache:
            Q = np.zeros((len(cols), len(cols)))
            Q[:10 * n, :10 * n] = inertial_prior
            x0 = _nominal_x(nominal, n, cols)
            tiny = np.r_[np.zeros(10 * n), np.full(len(cols) - 10 * n, 1e-9)]
            cache[key] = _ridge_cv_score(equations, weights, cols, lam, Q, x0, tiny)
        return cache[key]

    drives = DriveModel.full(n, 1, allowed)
    for _ in range(passes):
        changed = False
        for j in range(n):
            scored = []
            for option in options:
                candidate = drives.replaced(j, *option).within(allowed)
                scored.append((score(candidate), candidate.count(j), candidate))
            best = min(s for s, _, _ in scored)
            near = [c for c in scored if c[0] <= best * (1 + SIMPLER_TOLERANCE)]
            # among models about as good: the fewest terms, then one whose friction stays
            # bounded (Coulomb rather than viscous alone: it extrapolates less to faster
            # motion than the recording's), then the lowest error
            choice = min(near, key=lambda c: (c[1], c[2].viscous[j] and c[2].coulomb[j] < 0,
                                              c[0]))[2]
            if choice != drives:
                changed = True
            drives = choice
        if not changed:
            break
    return drives, _drive_notes(drives, allowed, score, n)


def _drive_notes(drives, allowed, score, n):
    """Return (n,) texts: each joint's terms and what the cross-validated error says of each."""
    base = score(drives)
    notes = [''] * n
    for j in range(n):
        dropped = []
        for term, off in (('armature', (False, drives.viscous[j], drives.coulomb[j],
                                        drives.offset[j])),
                          ('viscous', (drives.armature[j], False, drives.coulomb[j],
                                       drives.offset[j])),
                          ('Coulomb', (drives.armature[j], drives.viscous[j], -1,
                                       drives.offset[j])),
                          ('offset', (drives.armature[j], drives.viscous[j],
                                      drives.coulomb[j], False))):
            on = {'armature': drives.armature[j], 'viscous': drives.viscous[j],
                  'Coulomb': drives.coulomb[j] >= 0, 'offset': drives.offset[j]}[term]
            may = {'armature': allowed.armature[j], 'viscous': allowed.viscous[j],
                   'Coulomb': allowed.coulomb[j] >= 0, 'offset': allowed.offset[j]}[term]
            if on:
                worse = score(drives.replaced(j, *off)) / base - 1
                dropped.append(f'{term} (without it the cross-validated error is '
                               f'{100 * worse:.1f}% higher)')
            elif may:
                with_it = drives.replaced(j, *(
                    (True,) + off[1:] if term == 'armature' else
                    off[:1] + (True,) + off[2:] if term == 'viscous' else
                    off[:2] + (1,) + off[3:] if term == 'Coulomb' else off[:3] + (True,)))
                change = score(with_it) / base - 1
                verdict = ('higher' if change >= 0 else
                           f'lower, under the {100 * SIMPLER_TOLERANCE:g}% a term must earn')
                dropped.append(f'no {term} (with it the cross-validated error is '
                               f'{100 * abs(change):.1f}% {verdict})')
            else:
                dropped.append(f'no {term} (not in the efforts or the joint did not move)')
        notes[j] = '; '.join(dropped)
    return notes


class _Programme:
    """The convex programme of the module docstring, built once for a set of columns.

    The data (``M / rows``, ``b / rows``) and λ are cvxpy parameters, so the folds and
    the candidate weights re-solve it without building it again (cvxpy's parametrised
    programmes: the canonicalisation is most of the cost of a small programme).
    """

    def __init__(self, cp, J0s, n, cols, allowed_negative, solvers):
        p = len(cols)
        self.cp, self.solvers = cp, solvers
        self.x = cp.Variable(p)
        self.R = cp.Parameter((p, p))
        self.b = cp.Parameter(p)
        self.lam = cp.Parameter(nonneg=True)
        constraints, prior = [], 0
        # tr(J⁰⁻¹ J) is linear in the link's 10 parameters: one row of coefficients
        trace_rows = np.zeros(p)
        for i in range(n):
            J = _pseudo_expression(cp, self.x, i)
            constraints.append(J - MARGIN * J0s[i] >> 0)
            prior -= cp.log_det(J)
            trace_rows[10 * i:10 * i + 10] = PSEUDO_MAP.T @ np.linalg.inv(J0s[i]).T.reshape(-1)
        prior += trace_rows @ self.x
        for k in range(10 * n, p):
            if not allowed_negative[k]:
                constraints.append(self.x[k] >= 0)
        objective = cp.sum_squares(self.R @ self.x) - 2 * self.b @ self.x + self.lam * prior
        self.problem = cp.Problem(cp.Minimize(objective), constraints)

    def solve(self, M, b, rows, lam):
        """Return (x, solver) for the data ``M``, ``b`` of ``rows`` rows and λ, or (None, '')."""
        cp = self.cp
        eig, V = np.linalg.eigh((M + M.T) / 2 / rows)
        self.R.value = np.sqrt(np.clip(eig, 0.0, None))[:, None] * V.T
        self.b.value = b / rows
        self.lam.value = lam
        for solver in self.solvers:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter('ignore')
                    self.problem.solve(solver=solver)
            except (cp.error.SolverError, ValueError, ArithmeticError):
                continue
            x = self.x.value
            if self.problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and x is not None \
                    and np.all(np.isfinite(x)):
                return np.asarray(x, dtype=float), solver
        return None, ''


def _pseudo_expression(cp, x, i):
    """Return link ``i``'s pseudo-inertia as one affine map of its 10 parameters.

    One product with :data:`PSEUDO_MAP` rather than sixteen scalar entries: cvxpy's
    canonicalisation time grows with the number of expression nodes.
    """
    return cp.reshape(PSEUDO_MAP @ x[10 * i:10 * i + 10], (4, 4), order='C')


def _repair_margin(x, J0s, n):
    """Move each link just inside ``J ⪰ MARGIN J⁰`` if the solver left it a hair outside."""
    x = x.copy()
    for i in range(n):
        J = pseudo_inertia(x[10 * i:10 * i + 10])
        S = np.linalg.cholesky(J0s[i])
        Si = np.linalg.inv(S)
        low = float(np.linalg.eigvalsh(Si @ J @ Si.T).min())
        if low < MARGIN:
            # J + t J0 has its relative eigenvalues raised by t: t takes the smallest to MARGIN
            t = (MARGIN - low) * 1.0001
            p0 = np.linalg.lstsq(PSEUDO_MAP, J0s[i].reshape(-1), rcond=None)[0]
            x[10 * i:10 * i + 10] += t * p0
    return x


def relative_margins(parameters, J0s, n):
    """Return (n,) the smallest eigenvalue of ``J⁰^-½ J J⁰^-½`` per link (>= MARGIN wanted)."""
    out = np.empty(n)
    for i in range(n):
        J = pseudo_inertia(parameters[PER_JOINT * i:PER_JOINT * i + 10])
        Si = np.linalg.inv(np.linalg.cholesky(J0s[i]))
        out[i] = float(np.linalg.eigvalsh(Si @ J @ Si.T).min())
    return out


def select_model(equations, weights, nominal, n, allowed, names=None, progress=None,
                 own_prior=False):
    """Fit the physical model with the drive terms and prior weight the data support.

    ``own_prior``: the nominal inertials are placeholders
    (:func:`~ne_dynamics_ros.identification.placeholder.placeholder_inertials`): the
    prior's J⁰ is then the data's own, the physically consistent least-squares fit
    (λ = 0, every link only ``J ⪰ MARGIN · 1e-6 I``), not the nominal one.

    Args:
        equations: :class:`~ne_dynamics_ros.identification.normal_equations.
            FoldEquations` of the rows to fit (extended columns).
        weights: (n,) 1 / σ_j² per joint (σ_j: the least-squares residual deviation).
        nominal: (13 n,) nominal standard parameters (the prior's J⁰; the drive values
            of joints whose terms are not allowed are kept).
        n: joints; names: (n,) joint names for the notes.
        allowed: :class:`DriveModel` of the terms each joint may have.
        progress: None or a callable taking one line of text (long fits say where they are).

    Returns:
        :class:`PhysicalFit`.

    Raises:
        IdentificationError: the convex programme fails for every candidate.
        MissingDependencyError: cvxpy is not installed.
    """
    cp = require('cvxpy', 'the physically consistent model of ne-dynamics identify')
    solvers = [s for s in ('CLARABEL', 'SCS') if s in cp.installed_solvers()]
    names = list(names) if names is not None else [str(j + 1) for j in range(n)]
    nominal = np.asarray(nominal, dtype=float)
    weights = np.asarray(weights, dtype=float)
    J0s = nominal_pseudo_inertias(nominal, n)
    say = progress or (lambda text: None)
    say('choosing the drive terms of each joint by cross-validation')
    drives, drive_notes = select_drives(equations, weights, nominal, n, allowed,
                                        lam=0.0 if own_prior else 1e-2)
    cols = drives.columns(n)
    negative = np.zeros(len(cols), dtype=bool)
    offset_start = (PER_JOINT + len(VELOCITY_SCALES)) * n
    negative[[k for k, c in enumerate(cols) if c >= offset_start]] = True
    F = equations.AtA.shape[0]
    if own_prior:
        say('the prior from the data: the physically consistent least-squares fit')
        nominal, J0s = _own_prior(cp, equations, weights, nominal, n, cols, negative, solvers)
    programme = _Programme(cp, J0s, n, cols, negative, solvers)
    cv = {}
    for lam in PRIOR_WEIGHTS:
        say(f'prior weight {lam:g}: {F}-fold cross-validation')

        def solve(train, cols_, lam=lam):
            M, b, _, rows = equations.totals(train, weights, cols_)
            return programme.solve(M, b, rows, lam)[0]
        cv[lam] = _cv_score(equations, weights, cols, solve)
    finite = {lam: v for lam, v in cv.items() if math.isfinite(v)}
    if not finite:
        raise IdentificationError('no physically consistent parameter set found (the '
                                  f'convex programme failed with {solvers})')
    best = min(finite.values())
    lam = max(v for v, e in finite.items() if e <= best * (1 + SIMPLER_TOLERANCE))
    M, b, _, rows = equations.totals(list(range(F)), weights, cols)
    x, solver = programme.solve(M, b, rows, lam)
    if x is None:
        raise IdentificationError('no physically consistent parameter set found (the '
                                  f'convex programme failed with {solvers})')
    x = _repair_margin(x, J0s, n)
    parameters, friction_velocity, friction_offset = _standard(
        x, cols, nominal, n, drives, allowed)
    margins = relative_margins(parameters, J0s, n)
    link_notes = _link_notes(parameters, nominal, M / rows, lam, J0s, n, names, cols)
    return PhysicalFit(parameters, friction_velocity, friction_offset, drives, lam, cv,
                       drive_notes, link_notes, float(margins.min()), solver, own_prior)


def _own_prior(cp, equations, weights, nominal, n, cols, negative, solvers):
    """Return (nominal, J⁰s) with the links' inertials of the prior-free consistent fit."""
    floor = np.array([1e-6 * np.eye(4)] * n)
    M, b, _, rows = equations.totals(list(range(equations.AtA.shape[0])), weights, cols)
    x, _ = _Programme(cp, floor, n, cols, negative, solvers).solve(M, b, rows, 0.0)
    if x is None:
        raise IdentificationError('no physically consistent parameter set found for the '
                                  f'prior (the convex programme failed with {solvers})')
    own = np.array(nominal, dtype=float)
    for i in range(n):
        own[PER_JOINT * i:PER_JOINT * i + 10] = x[10 * i:10 * i + 10]
    return own, nominal_pseudo_inertias(own, n)


def _standard(x, cols, nominal, n, drives, allowed):
    """Map the solution back to (13 n standard parameters, v_s (n,), offsets (n,))."""
    parameters = nominal.copy()
    for j in range(n):                 # a drive term a joint may have but was left out is 0
        for k, may in ((10, allowed.armature[j]), (11, allowed.viscous[j]),
                       (12, allowed.coulomb[j] >= 0)):
            if may:
                parameters[PER_JOINT * j + k] = 0.0
    friction_velocity = np.full(n, VELOCITY_SCALES[1])
    friction_offset = np.zeros(n)
    K = len(VELOCITY_SCALES)
    for value, c in zip(x, cols):
        if c < PER_JOINT * n:
            parameters[c] = value
        elif c < (PER_JOINT + K) * n:
            k, j = divmod(c - PER_JOINT * n, n)
            parameters[PER_JOINT * j + 12] = max(value, 0.0)
            friction_velocity[j] = VELOCITY_SCALES[k]
        else:
            friction_offset[c - (PER_JOINT + K) * n] = value
    for j in range(n):
        for k in (10, 11, 12):
            parameters[PER_JOINT * j + k] = max(parameters[PER_JOINT * j + k], 0.0)
    return parameters, friction_velocity, friction_offset


def _link_notes(parameters, nominal, data, lam, J0s, n, names, cols):
    """Per link: mass nominal → identified, centre-of-mass shift, and what moved it.

    "What moved it": the data's curvature of the objective along the link's mass against
    the prior's (``data[M, M]`` against ``λ Q[M, M]``): over 1 the data decide the mass,
    under it the prior holds it near the nominal.
    """
    Q = _quadratic_prior(J0s, n, cols)
    notes = []
    for i in range(n):
        p0 = nominal[PER_JOINT * i:PER_JOINT * i + 10]
        p = parameters[PER_JOINT * i:PER_JOINT * i + 10]
        m0, m = float(p0[9]), float(p[9])
        c0 = p0[6:9] / m0 if m0 > 0 else np.zeros(3)
        c = p[6:9] / m
        k = 10 * i + 9
        ratio = data[k, k] / max(lam * Q[k, k], 1e-300)
        if ratio >= 1:
            why = f'the data see its mass (curvature {ratio:.3g}x the prior\'s)'
        else:
            why = ('the data do not see its mass alone: the prior holds what they leave '
                   'free, and it moves with the combinations they determine')
        notes.append(f'link of {names[i]}: mass {m0:.4g} -> {m:.4g} kg '
                     f'({m / m0 if m0 > 0 else math.inf:.2f}x), centre of mass moved '
                     f'{1000 * float(np.linalg.norm(c - c0)):.1f} mm; {why}')
    return notes


def fold_of(index, total, folds=FOLDS):
    """Return the fold (int array) of each kept sample ``index`` (m,) of ``total`` samples."""
    return np.minimum((np.asarray(index) * folds) // max(total, 1), folds - 1)


__all__ = ['DRIVE_TERMS', 'DriveModel', 'extend_regressor', 'extended_columns',
           'fold_of', 'FOLDS', 'MARGIN', 'nominal_pseudo_inertias',
           'PhysicalFit', 'PRIOR_WEIGHTS', 'pseudo_inertia', 'relative_margins',
           'select_drives', 'select_model', 'SIMPLER_TOLERANCE', 'VELOCITY_SCALES']
