"""Base (minimal) inertial parameters: which standard parameters the torques can tell apart.

The conclusion of Renaud (1987) asks to gather together all parameters
that occur together; the result is the set of base parameters, each a linear combination
of standard ones (:mod:`ne_dynamics_ros.dynamics.standard_parameters`). Two methods:

**Numeric (Gautier's QR).** Stack the inertial columns of the regressor over random
states, take the QR decomposition without pivoting, and keep the columns whose diagonal
entry of R is not negligible: they are independent of the columns before them. Every other
column is a combination of kept ones, ``W_d = W_b K``, so ``tau = W_b (pi_b + K pi_d)``:
the base parameters are ``beta = pi_b + K pi_d``. Columns are scanned link by link from
the base, so later links' parameters fold into earlier ones, as Khalil's rules do.

**Closed form (Khalil–Gautier, MDH frames; grounded in Renaud's augmented body).** For
``j = n, ..., 2``:

* joint j revolute: the part of link j that is symmetric about z_j (mass M_j, first moment
  MZ_j along z_j, inertia YY_j (E - z_j z_jᵀ)) moves exactly as if it were fixed to link
  j-1, so it is added to link j-1's parameters through the constant transform between the
  frames; then ``XXR_j = XX_j - YY_j`` and YY_j, MZ_j, M_j leave the model;
* joint j prismatic: link j's six inertia-tensor entries (a free couple, the same rotation
  as link j-1) are added to link j-1's, rotated into frame j-1; they leave the model;

then the particular cases (Khalil & Dombre), from how each link can move (axes taken in
the base frame at q = 0; parallel axes stay parallel):

* a link behind prismatic joints only moves in translation: only its mass M_j acts;
* a link whose revolute joints so far all have parallel axes turns about one fixed
  direction: of its inertia tensor only ZZ_j acts (XX_j, XY_j, XZ_j, YZ_j do not); link 1
  of a revolute first joint also loses MZ1 and M1;
  the first moment of a prismatic link in such a chain acts only across that direction
  u: MS_j - (MS_kj / u_k) u, two parameters instead of three (k: u's largest coordinate);
* the first revolute link, and any link of a chain of revolute joints on one fixed line,
  keeps MX_j, MY_j only if gravity or an earlier prismatic axis has a component across z_j.

The rules cover general serial chains; other special geometries can leave more
dependencies, which only the
numeric method finds: :func:`base_parameters` then says the closed form is not complete
and uses the numeric result.

The drive parameters Ia, Fv, Fc are listed apart (each multiplies its own q̈_j, q̇_j,
tanh(q̇_j/v_s); Ia1 of a first revolute joint about the gravity axis adds to ZZ1).

Works in both conventions: the closed form needs MDH frames (frame j on joint j's axis),
so for a ``dh`` model it is computed on the same URDF chain in MDH and reported as such.
"""
from dataclasses import dataclass, field
from typing import List

import numpy as np

from ne_dynamics_ros.dynamics.dh import Convention, link_transform
from ne_dynamics_ros.dynamics.model import RobotModel
from ne_dynamics_ros.dynamics.standard_parameters import (
    frame_change, inertial_index, parameter_names, PER_JOINT, standard_parameters)

#: Relative threshold (to the largest column norm) below which a column is dependent.
RANK_TOLERANCE = 1e-8


@dataclass(frozen=True)
class BaseParameter:
    """One base parameter.

    Attributes:
        name: the kept standard parameter's name, with ``R`` appended when others fold
            into it (``ZZ1R``).
        expression: its value in standard parameters, e.g. ``'ZZ1 + YY2 + 0.1866*M3'``.
        value: for the model's own standard parameters (units of the kept parameter).
    """

    name: str
    expression: str
    value: float


@dataclass
class BaseParameterSet:
    """The base parameters of a model and how every standard parameter folds into them.

    Attributes:
        joints: the chain's joint names.
        convention: frames of the standard parameters (``'mdh'`` for the closed form).
        standard_count: 10 n inertial standard parameters.
        base_count: number of inertial base parameters.
        numeric_rank: rank of the stacked regressor (Gautier's QR).
        method: ``'closed_form'`` or ``'numeric'`` (the one whose result this is).
        closed_form_complete: the closed-form count equals the numeric rank.
        base_index: (base_count,) indices of the kept parameters in the standard vector.
        grouping: (base_count, 13 n) matrix G with beta = G pi (inertial columns only).
        parameters: list of :class:`BaseParameter`.
        drive_parameters: names of the drive parameters (Ia, Fv, Fc per joint), apart.
        notes: what the closed form does not cover, if anything.
    """

    joints: List[str]
    convention: str
    standard_count: int
    base_count: int
    numeric_rank: int
    method: str
    closed_form_complete: bool
    base_index: np.ndarray
    grouping: np.ndarray
    parameters: List[BaseParameter]
    drive_parameters: List[str]
    notes: List[str] = field(default_factory=list)

    def values(self, standard):
        """Return beta = G pi for a (13 n,) standard parameter vector."""
        return self.grouping @ np.asarray(standard, dtype=float)

    def standard_from_base(self, beta):
        """Return a (13 n,) standard vector with the same torques: beta in the kept slots.

        Drive parameters are zero; add them separately.
        """
        pi = np.zeros(self.grouping.shape[1])
        pi[self.base_index] = beta
        return pi


def stacked_regressor(model, samples=None, seed=0, inertial_only=True):
    """Stack the regressor over random states: (samples * n, 10 n), or 13 n columns.

    Positions uniform in the joint limits (±pi where unlimited, ±0.5 m for prismatic
    joints without limits), velocities and accelerations standard normal. With
    ``inertial_only=False`` the drive columns (Ia, Fv, Fc) are kept too.
    """
    n = model.n
    samples = samples or max(30, 8 * n)
    rng = np.random.default_rng(seed)
    lower = np.where(np.isfinite(model.lower_limits), model.lower_limits,
                     np.where(model.prismatic, -0.5, -np.pi))
    upper = np.where(np.isfinite(model.upper_limits), model.upper_limits,
                     np.where(model.prismatic, 0.5, np.pi))
    q = rng.uniform(lower, upper, (samples, n))
    W = model.regressor(q, rng.normal(size=(samples, n)), rng.normal(size=(samples, n)))
    W = W.reshape(samples * n, -1)
    return W[:, inertial_index(n)] if inertial_only else W


def numeric_base(model, samples=None, seed=0, inertial_only=True):
    """Run Gautier's QR: return (kept columns, K with W_d = W_b K, dependent, rank).

    Column indices are into the 10 n inertial columns (all 13 n columns, drive parameters
    included, with ``inertial_only=False``: then e.g. Ia1 of a first joint about the
    vertical folds into ZZ1R).
    """
    return column_base(stacked_regressor(model, samples, seed, inertial_only))


def column_base(W):
    """Gautier's QR of a stacked regressor W (rows, p): (kept, K, dependent, rank)."""
    scale = max(float(np.linalg.norm(W, axis=0).max()), 1e-300)
    # The QR decomposition column by column (Gram-Schmidt, orthogonalised twice): a
    # column is kept when its part orthogonal to the kept ones is not negligible. Unlike
    # a library QR without pivoting, a dependent column adds no (noise) direction.
    basis = np.zeros((W.shape[0], 0))
    kept = []
    for k in range(W.shape[1]):
        r = W[:, k] - basis @ (basis.T @ W[:, k])
        r = r - basis @ (basis.T @ r)
        norm = np.linalg.norm(r)
        if norm > RANK_TOLERANCE * scale:
            kept.append(k)
            basis = np.column_stack([basis, r / norm])
    kept = np.array(kept, dtype=int)
    dependent = np.setdiff1d(np.arange(W.shape[1]), kept)
    K = np.linalg.lstsq(W[:, kept], W[:, dependent], rcond=None)[0] if dependent.size \
        else np.zeros((kept.size, 0))
    return kept, K, dependent, int(kept.size)


def _fold_into_parents(model, G):
    """Fold each link's regrouped parameters into its parent's (in ``G``, in place).

    Khalil–Gautier's general rules in MDH frames, from the last link down: a revolute
    link's axisymmetric part about z_j (XX = YY = YY_j, MZ_j, M_j) moves to link j-1
    (XXR_j = XX_j - YY_j stays), a prismatic link's whole inertia tensor (a free couple).
    Returns the set of removed columns (10 j + k).
    """
    removed = set()
    rows = model.dh_table()
    for j in range(model.n - 1, 0, -1):          # 0-based link j, folded into link j-1
        X = link_transform(rows[j], 0.0, Convention.MDH)   # frame j in frame j-1
        T = frame_change(X)
        sel = np.zeros((10, 10))
        block = slice(10 * j, 10 * j + 10)
        parent = slice(10 * (j - 1), 10 * j)
        if model.prismatic[j]:
            for k in range(6):                  # the whole inertia tensor, a free couple
                sel[k, k] = 1.0
            moved = [0, 1, 2, 3, 4, 5]
        else:
            # axisymmetric part about z_j: XX = YY = YY_j, MZ_j, M_j
            sel[0, 3] = sel[3, 3] = 1.0
            sel[8, 8] = 1.0
            sel[9, 9] = 1.0
            moved = [3, 8, 9]
            G[10 * j + 0] = G[10 * j + 0] - G[10 * j + 3]      # XXR_j = XX_j - YY_j
        G[parent] = G[parent] + T @ sel @ G[block]
        removed.update(10 * j + k for k in moved)
    return removed


def closed_form_grouping(model, gravity=(0.0, 0.0, -9.81)):
    """Regroup by Khalil–Gautier's rules in MDH frames: (G on inertial columns, kept, notes).

    ``G`` is (10 n, 10 n): row k gives base parameter k (meaningful for kept k) as a
    combination of standard inertial parameters. ``model`` must use MDH frames.
    """
    G = np.eye(10 * model.n)
    removed = _fold_into_parents(model, G)
    notes = []
    # What survives of each link, given how it can move (Khalil & Dombre's particular
    # cases): axes in the base frame at q = 0 (parallel axes stay parallel as it moves).
    n, rows = model.n, model.dh_table()
    g0 = model.base_transform[:3, :3].T @ np.asarray(gravity, dtype=float)
    g_norm = np.linalg.norm(g0)
    T = np.eye(4)
    revolute_axes, prismatic_axes = [], []
    coaxial = True                 # every joint so far revolute, all on one fixed line
    for j in range(n):
        T = T @ link_transform(rows[j], 0.0, Convention.MDH)
        z, origin = T[:3, 2], T[:3, 3]
        (prismatic_axes if model.prismatic[j] else revolute_axes).append(z)
        if j == 0:
            line = (origin, z)
        coaxial = coaxial and not model.prismatic[j] and _parallel(z, line[1]) and \
            np.linalg.norm(np.cross(origin - line[0], line[1])) <= 1e-9 * max(
                1.0, np.linalg.norm(origin))
        if not revolute_axes:
            # pure translation so far: only the mass acts (the tensor went to link j-1,
            # the first moment never meets an angular velocity or a revolute axis)
            removed.update(10 * j + k for k in range(9))
            continue
        common = revolute_axes[0]
        if not all(_parallel(a, common) for a in revolute_axes):
            continue
        # every rotation so far is about one fixed direction: a planar rotation, in which
        # only ZZ_j of the inertia tensor acts (XX_j, XY_j, XZ_j, YZ_j, YY_j do not)
        removed.update(10 * j + k for k in (0, 1, 2, 3, 4))
        if model.prismatic[j]:
            # a first moment along the rotation direction u never acts (b·MS and the
            # moment of MS × v̇ about u vanish for MS ∥ u): MS and MS - (MS_k/u_k) u act
            # alike, and the latter has no k-th coordinate (k: u's largest one)
            u = T[:3, :3].T @ common
            k = int(np.argmax(np.abs(u)))
            ms = 10 * j + 6
            for i in range(3):
                if i != k:
                    G[ms + i] = G[ms + i] - (u[i] / u[k]) * G[ms + k]
            removed.add(ms + k)
        if j == 0:
            removed.update((8, 9))        # MZ1, M1: link 1 turns about its fixed axis
        if coaxial or (len(revolute_axes) == 1 and not model.prismatic[j]):
            # the first revolute link (or any link of a chain of revolute joints on one
            # fixed line) turns about z_j while its origin accelerates only along the
            # earlier prismatic axes: MX_j, MY_j act only if one of those, or gravity, has
            # a component across z_j
            across = [a for a in prismatic_axes if not _parallel(a, z)]
            if g_norm > 0 and not _parallel(g0, z):
                across.append(g0)
            if not across:
                removed.update((10 * j + 6, 10 * j + 7))
    kept = np.array(sorted(set(range(10 * n)) - removed))
    return G, kept, notes


def _parallel(a, b, tolerance=1e-9):
    """Tell whether vectors a and b are parallel or anti-parallel."""
    return np.linalg.norm(np.cross(a, b)) <= tolerance * np.linalg.norm(a) * np.linalg.norm(b)


def _expression(row, names):
    terms = []
    for coefficient, name in zip(row, names):
        if abs(coefficient) < 1e-12:
            continue
        if abs(coefficient - 1.0) < 1e-12:
            term = name
        elif abs(coefficient + 1.0) < 1e-12:
            term = f'-{name}'
        else:
            term = f'{coefficient:.10g}*{name}'
        terms.append(term)
    text = ' + '.join(terms).replace('+ -', '- ')
    return text or '0'


def base_parameters(model, samples=None, seed=0):
    """Compute the base inertial parameters of ``model`` (see the module docstring).

    The closed form is computed on an MDH version of the model's chain; it is the result
    when its count equals the numeric rank, else the numeric grouping (in the model's own
    frames) is, and ``notes`` says so.

    Returns:
        :class:`BaseParameterSet`.
    """
    n = model.n
    names = parameter_names(n)
    inertial = inertial_index(n)
    kept_numeric, K, dependent, rank = numeric_base(model, samples, seed)
    mdh = model
    if model.convention is not Convention.MDH:
        mdh = RobotModel(model.chain, Convention.MDH, model.armature)
        mdh.set_friction_shape(model.coulomb_velocity, model.friction_offset)
    G_closed, kept_closed, notes = closed_form_grouping(mdh)
    complete = kept_closed.size == rank
    drive = [name for name in names if name.rstrip('0123456789') in ('Ia', 'Fv', 'Fc')]
    if complete:
        source, kept, convention = mdh, kept_closed, 'mdh'
        grouping = np.zeros((kept.size, PER_JOINT * n))
        grouping[:, inertial] = G_closed[kept]
    else:
        notes = notes + [
            f'the closed-form rules leave {kept_closed.size} parameters where the regressor '
            f'has rank {rank}: this geometry keeps further combinations together; using '
            "Gautier's numeric QR grouping"]
        source, kept, convention = model, kept_numeric, model.convention.value
        G = np.zeros((10 * n, 10 * n))
        G[kept, kept] = 1.0
        G[np.ix_(kept, dependent)] = K
        grouping = np.zeros((kept.size, PER_JOINT * n))
        grouping[:, inertial] = G[kept]
    pi = standard_parameters(source)
    values = grouping @ pi
    params = []
    for k, row, value in zip(kept, grouping, values):
        name = names[inertial[k]]
        folded = np.count_nonzero(np.abs(row) > 1e-12) > 1 or abs(row[inertial[k]] - 1) > 1e-12
        params.append(BaseParameter(name + ('R' if folded else ''), _expression(row, names),
                                    float(value)))
    return BaseParameterSet(
        joints=list(model.joint_names), convention=convention, standard_count=10 * n,
        base_count=int(kept.size), numeric_rank=rank,
        method='closed_form' if complete else 'numeric', closed_form_complete=complete,
        base_index=inertial[kept], grouping=grouping, parameters=params,
        drive_parameters=drive, notes=notes)


__all__ = ['BaseParameter', 'BaseParameterSet', 'base_parameters', 'closed_form_grouping',
           'numeric_base', 'RANK_TOLERANCE', 'stacked_regressor']
