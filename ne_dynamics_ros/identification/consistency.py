"""A physically consistent full parameter set that reproduces identified base parameters.

The base parameters beta = G pi fix only some combinations of the standard parameters pi;
a controller (and the URDF) needs all of them, and each link must be a body that can exist.
Among all pi with ``G pi = beta`` exactly, :func:`consistent_parameters` takes the one
closest to the nominal pi_0 (each parameter scaled by its nominal size) such that every
link's pseudo-inertia matrix (Wensing, Kim & Slotine, "Linear matrix inequalities for
physically consistent inertial parameter identification", IEEE RA-L 3(1), 2018)

    J_j = [[ ½ tr(I_j) E - I_j ,  MS_j ],
           [ MS_jᵀ             ,  M_j  ]]      (I_j: inertia about origin j, kg·m²)

is positive definite, which is exactly: mass > 0, inertia about the centre of mass positive
definite and the triangle inequalities of its principal moments; and Ia, Fv, Fc >= 0.
That is a small semidefinite programme, solved with ``cvxpy`` (Clarabel, else SCS).
If no consistent pi reproduces beta exactly (noise pushed beta outside the consistent set),
the closest consistent beta is taken in the metric of beta's standard deviations, and the
result says how far it is.
"""
from dataclasses import dataclass
import warnings

import numpy as np

from ne_dynamics_ros.dynamics.parameters import PER_JOINT
from ne_dynamics_ros.errors import IdentificationError, require

#: Smallest eigenvalue asked of each pseudo-inertia, relative to the link's nominal size.
MARGIN = 1e-6


@dataclass(frozen=True)
class ConsistentParameters:
    """Result of :func:`consistent_parameters`.

    Attributes:
        parameters: (13 n,) standard parameters, every link physical.
        exact: True when G pi = beta holds (to the solver's tolerance).
        base_error: (p,) G pi - beta.
        solver: the cvxpy solver used.
    """

    parameters: np.ndarray
    exact: bool
    base_error: np.ndarray
    solver: str


def _scales(pi0, n):
    """Per-parameter scale: nominal size with a floor per kind (kg, kg·m, kg·m², drive)."""
    floors = np.array([1e-3] * 6 + [1e-2] * 3 + [0.1] + [1e-2] * 3)
    return np.maximum(np.abs(pi0), np.tile(floors, n))


def _pseudo_matrix(p, j):
    XX, XY, XZ, YY, YZ, ZZ, MX, MY, MZ, M = p[PER_JOINT * j:PER_JOINT * j + 10]
    trace = (XX + YY + ZZ) / 2
    return np.array([[trace - XX, -XY, -XZ, MX], [-XY, trace - YY, -YZ, MY],
                     [-XZ, -YZ, trace - ZZ, MZ], [MX, MY, MZ, M]])


def _physical(pi, congruences):
    """Tell whether every scaled pseudo-inertia is positive definite (what load_model asks)."""
    return all(np.linalg.eigvalsh(T @ _pseudo_matrix(pi, j) @ T).min() > 0
               for j, T in enumerate(congruences))


def _pseudo_inertia(cp, x, j):
    XX, XY, XZ, YY, YZ, ZZ, MX, MY, MZ, M = (x[PER_JOINT * j + k] for k in range(10))
    trace = (XX + YY + ZZ) / 2
    return cp.bmat([[trace - XX, -XY, -XZ, MX],
                    [-XY, trace - YY, -YZ, MY],
                    [-XZ, -YZ, trace - ZZ, MZ],
                    [MX, MY, MZ, M]])


def consistent_parameters(grouping, beta, nominal, std=None, n=None):
    """Find the physical standard parameters closest to ``nominal`` that reproduce ``beta``.

    Args:
        grouping: (p, 13 n) G with beta = G pi.
        beta: (p,) identified base (and drive) parameters.
        nominal: (13 n,) nominal standard parameters (the URDF's).
        std: (p,) standard deviations of beta, for the fallback metric.
        n: joints (default from the sizes).

    Returns:
        :class:`ConsistentParameters`.

    Raises:
        IdentificationError: the solver fails on both problems.
    """
    cp = require('cvxpy', 'the physically consistent model of ne-dynamics identify')
    G = np.asarray(grouping, dtype=float)
    beta = np.asarray(beta, dtype=float)
    pi0 = np.asarray(nominal, dtype=float)
    n = n or pi0.size // PER_JOINT
    scale = _scales(pi0, n)
    # Unknowns scaled to the nominal sizes (pi = pi0 + scale * z)
    z = cp.Variable(pi0.size)
    x = pi0 + cp.multiply(scale, z)
    constraints, congruences = _physical_constraints(cp, x, pi0, n)
    closeness = cp.sum_squares(z)
    row_scale = np.maximum(np.abs(G) @ scale, 1e-9)
    exact_problem = cp.Problem(cp.Minimize(closeness), constraints + [
        cp.multiply(1.0 / row_scale, G @ x - beta) == 0])
    sigma = np.asarray(std, dtype=float) if std is not None else np.abs(beta) * 0.01
    sigma = np.where(np.isfinite(sigma), sigma, 0.01 * np.abs(beta))   # nan: not identified
    sigma = np.maximum(sigma, 1e-9 * np.maximum(np.abs(beta), 1.0))
    misfit = cp.sum_squares(cp.multiply(1.0 / sigma, G @ x - beta))
    solvers = [s for s in ('CLARABEL', 'SCS') if s in cp.installed_solvers()]

    def solve(problem):
        for solver in solvers:
            try:
                with warnings.catch_warnings():     # "may be inaccurate": checked below
                    warnings.simplefilter('ignore', UserWarning)
                    problem.solve(solver=solver)
            except cp.error.SolverError:
                continue
            if (problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and z.value is not None
                    and _physical(pi0 + scale * z.value, congruences)):
                return solver
            if problem.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
                return None
        return None

    solver = solve(exact_problem)
    exact = solver is not None
    if not exact:
        # beta lies outside the consistent set: the closest consistent beta (in units of
        # its standard deviations), then, among the parameter sets reaching it, the one
        # closest to the nominal
        solver = solve(cp.Problem(cp.Minimize(misfit), constraints))
        if solver is None:
            raise IdentificationError('no physically consistent parameter set found (the '
                                      f'semidefinite programme failed with {solvers})')
        best = float(misfit.value)
        solver = solve(cp.Problem(cp.Minimize(closeness),
                                  constraints + [misfit <= best * (1 + 1e-3) + 1e-6]))
        if solver is None:
            raise IdentificationError('no physically consistent parameter set found near '
                                      'the nominal one')
    pi = pi0 + scale * np.asarray(z.value, dtype=float)
    # the solver meets Ia, Fv, Fc >= 0 to its tolerance: make them exactly >= 0
    drive = np.zeros(pi.size, dtype=bool)
    for k in (10, 11, 12):
        drive[k::PER_JOINT] = True
    pi[drive] = np.maximum(pi[drive], 0.0)
    return ConsistentParameters(pi, exact, G @ pi - beta, solver)


def _physical_constraints(cp, x, pi0, n):
    """Each link's scaled pseudo-inertia positive definite, Ia, Fv, Fc >= 0.

    Each pseudo-inertia by a congruence T J T (T = diag of 1/sqrt of its nominal inertia
    and mass scales), so that kg, kg·m and kg·m² of very different links meet the solver
    at similar sizes. Returns (constraints, the congruences T).
    """
    constraints, congruences = [], []
    for j in range(n):
        block = pi0[PER_JOINT * j:PER_JOINT * j + 10]
        inertia = max(1e-4, float(np.abs(block[:6]).max()))
        mass = max(0.1, abs(float(block[9])))
        T = np.diag([inertia ** -0.5] * 3 + [mass ** -0.5])
        congruences.append(T)
        J = _pseudo_inertia(cp, x, j)
        constraints.append(T @ ((J + J.T) / 2) @ T >> MARGIN * np.eye(4))
        constraints += [x[PER_JOINT * j + 10] >= 0, x[PER_JOINT * j + 11] >= 0,
                        x[PER_JOINT * j + 12] >= 0]
    return constraints, congruences


__all__ = ['consistent_parameters', 'ConsistentParameters']
