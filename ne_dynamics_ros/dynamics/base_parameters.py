"""Base (minimal) inertial parameters: which standard parameters the torques can tell apart.

Renaud's conclusion (``004_6b1448616b3233f9.txt``) asks to gather together all parameters
that occur together; the result is the set of base parameters, each a linear combination
of standard ones (:mod:`ne_dynamics_ros.dynamics.parameters`). Two methods:

**Numeric (Gautier's QR).** Stack the inertial columns of the regressor over random
states, take the QR decomposition without pivoting, and keep the columns whose diagonal
entry of R is not negligible: they are independent of the columns before them. Every other
column is a combination of kept ones, ``W_d = W_b K``, so ``tau = W_b (pi_b + K pi_d)``:
the base parameters are ``beta = pi_b + K pi_d``. Columns are scanned link by link from
the base, so later links' parameters fold into earlier ones, as Khalil's rules do.

**Closed form (Khalil–Gautier, MDH frames; grounded in 004's augmented body).** For
``j = n, ..., 2``:

* joint j revolute: the part of link j that is symmetric about z_j (mass M_j, first moment
  MZ_j along z_j, inertia YY_j (E - z_j z_jᵀ)) moves exactly as if it were fixed to link
  j-1, so it is added to link j-1's parameters through the constant transform between the
  frames; then ``XXR_j = XX_j - YY_j`` and YY_j, MZ_j, M_j leave the model;
* joint j prismatic: link j's six inertia-tensor entries (a free couple, the same rotation
  as link j-1) are added to link j-1's, rotated into frame j-1; they leave the model;

and at the base, parameters whose columns vanish identically are dropped: for a first
revolute joint, every parameter of link 1 but ZZ1 (and MX1, MY1 when gravity is not along
z_1); for a first prismatic joint, all but M1. The rules cover general serial chains;
special geometries (e.g. a second joint parallel to a vertical first joint, or axes that
keep further combinations together) can leave more dependencies, which only the numeric
method finds: :func:`base_parameters` then says the closed form is not complete and uses
the numeric result.

The drive parameters Ia, Fv, Fc are listed apart (each multiplies its own q̈_j, q̇_j,
tanh(q̇_j/v_s); Ia1 of a first revolute joint about the gravity axis adds to ZZ1).

Works in both conventions: the closed form needs MDH frames (frame j on joint j's axis),
so for a ``dh`` model it is computed on the same URDF chain in MDH and reported as such.
"""
from dataclasses import dataclass, field
from typing import List

import numpy as np

from ne_dynamics_ros.dynamics.dh import Convention, link_transform
from ne_dynamics_ros.dynamics.parameters import (
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


def stacked_regressor(model, samples=None, seed=0):
    """Stack the inertial regressor columns over random states: (samples * n, 10 n).

    Positions uniform in the joint limits (±pi where unlimited, ±0.5 m for prismatic
    joints without limits), velocities and accelerations standard normal.
    """
    n = model.n
    samples = samples or max(30, 8 * n)
    rng = np.random.default_rng(seed)
    lower = np.where(np.isfinite(model.lower_limits), model.lower_limits,
                     np.where(model._prismatic, -0.5, -np.pi))
    upper = np.where(np.isfinite(model.upper_limits), model.upper_limits,
                     np.where(model._prismatic, 0.5, np.pi))
    q = rng.uniform(lower, upper, (samples, n))
    W = model.regressor(q, rng.normal(size=(samples, n)), rng.normal(size=(samples, n)))
    return W.reshape(samples * n, -1)[:, inertial_index(n)]


def numeric_base(model, samples=None, seed=0):
    """Run Gautier's QR: return (kept columns, K with W_d = W_b K, dependent, rank).

    Column indices are into the 10 n inertial columns.
    """
    W = stacked_regressor(model, samples, seed)
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


def closed_form_grouping(model, gravity=(0.0, 0.0, -9.81)):
    """Regroup by Khalil–Gautier's rules in MDH frames: (G on inertial columns, kept, notes).

    ``G`` is (10 n, 10 n): row k gives base parameter k (meaningful for kept k) as a
    combination of standard inertial parameters. ``model`` must use MDH frames.
    """
    n = model.n
    G = np.eye(10 * n)
    removed = set()
    rows = model.dh_table()
    for j in range(n - 1, 0, -1):                # 0-based link j, folded into link j-1
        row = rows[j]
        X = link_transform(row, 0.0, Convention.MDH)   # frame j in frame j-1
        T = frame_change(X)
        sel = np.zeros((10, 10))
        block = slice(10 * j, 10 * j + 10)
        parent = slice(10 * (j - 1), 10 * j)
        if model._prismatic[j]:
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
    # Link 1: what survives of it, given how joint 1 moves and where gravity points.
    g0 = model.base_transform[:3, :3].T @ np.asarray(gravity, dtype=float)
    R1 = link_transform(rows[0], 0.0, Convention.MDH)[:3, :3]
    z1 = R1[:, 2]
    notes = []
    if model._prismatic[0]:
        keep1 = {9}                              # only M1 (moves along z1, no rotation)
    else:
        keep1 = {5}                              # ZZ1
        g_perp = g0 - (g0 @ z1) * z1
        if np.linalg.norm(g_perp) > 1e-12 * max(1.0, np.linalg.norm(g0)):
            keep1 |= {6, 7}                      # MX1, MY1 feel the gravity torque
    removed.update(k for k in range(10) if k not in keep1)
    kept = np.array(sorted(set(range(10 * n)) - removed))
    return G, kept, notes


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
    from ne_dynamics_ros.dynamics.model import RobotModel   # for the MDH twin of a DH model
    n = model.n
    names = parameter_names(n)
    inertial = inertial_index(n)
    kept_numeric, K, dependent, rank = numeric_base(model, samples, seed)
    mdh = model if model.convention is Convention.MDH else RobotModel(
        model._chain, Convention.MDH, model.armature, model.coulomb_velocity)
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
