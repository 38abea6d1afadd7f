"""Least-squares sums accumulated block by block: bounded memory for long recordings.

Pure module (NumPy). :class:`NormalEquations` holds each joint's ``AᵀA``, ``Aᵀy``, ``yᵀy``
and row count for the least-squares fit (:mod:`~ne_dynamics_ros.identification.
estimation`); :class:`FoldEquations` the same per contiguous fold of the recording, for the
cross-validation of the physical fit (:mod:`~ne_dynamics_ros.identification.physical_fit`).
A 2-million-sample recording then needs the memory of one block of its regressor, not of
all of it.
"""
import numpy as np


class NormalEquations:
    """Each joint's least-squares sums, accumulated block by block (bounded memory).

    For joint j over the rows added: ``AtA[j] = A_jᵀ A_j`` (p, p), ``Aty[j] = A_jᵀ y_j``,
    ``yty[j] = y_jᵀ y_j`` and ``rows[j]``. The fit, the weights, the residuals and the
    column norms all follow from these sums, so a 2-million-sample recording needs the
    memory of one block of its regressor, not of all of it (which would be (N, n, p)
    float64: 5 GB for 2 million samples of a 6-joint arm).
    """

    def __init__(self, n, p):
        self.AtA = np.zeros((n, p, p))
        self.Aty = np.zeros((n, p))
        self.yty = np.zeros(n)
        self.rows = np.zeros(n, dtype=np.int64)

    def add(self, W, tau, mask=None):
        """Add rows: ``W`` (m, n, p), ``tau`` (m, n), ``mask`` (m, n) rows to use (None: all)."""
        for j in range(W.shape[1]):
            A, y = W[:, j, :], tau[:, j]
            if mask is not None:
                A, y = A[mask[:, j]], y[mask[:, j]]
            self.AtA[j] += A.T @ A
            self.Aty[j] += A.T @ y
            self.yty[j] += y @ y
            self.rows[j] += y.size

    def shifted(self, beta0):
        """Return the sums of the problem ``y - A beta0`` (a copy)."""
        out = NormalEquations(*self.Aty.shape)
        out.AtA = self.AtA.copy()
        out.rows = self.rows.copy()
        AtA_b = self.AtA @ beta0
        out.Aty = self.Aty - AtA_b
        out.yty = self.yty - 2.0 * self.Aty @ beta0 + AtA_b @ beta0
        return out

    def columns(self, keep):
        """Return the sums restricted to the columns ``keep`` (indices)."""
        out = NormalEquations(len(self.yty), len(keep))
        out.AtA = self.AtA[:, keep][:, :, keep]
        out.Aty = self.Aty[:, keep]
        out.yty = self.yty.copy()
        out.rows = self.rows.copy()
        return out

    def rss(self, beta):
        """Return each joint's residual sum of squares with ``beta``: (n,), >= 0."""
        quadratic = np.einsum('p,jpq,q->j', beta, self.AtA, beta)
        value = self.yty - 2.0 * self.Aty @ beta + quadratic
        return np.maximum(value, 0.0)

    def column_norms(self):
        """Return the norm of every column of the stacked A: (p,)."""
        return np.sqrt(np.maximum(np.einsum('jpp->p', self.AtA), 0.0))


class FoldEquations:
    """The weighted normal equations of each fold, per joint, on the extended columns.

    ``AtA`` (F, n, P, P), ``Aty`` (F, n, P), ``yty`` (F, n), ``rows`` (F, n): sums over
    each fold's rows (a fold: a contiguous share of the recording's time).
    """

    def __init__(self, folds, n, P):
        self.AtA = np.zeros((folds, n, P, P))
        self.Aty = np.zeros((folds, n, P))
        self.yty = np.zeros((folds, n))
        self.rows = np.zeros((folds, n))
        self._weighted = (None, None)     # (weights' bytes, each fold's weighted sums)

    def add(self, fold, W, tau, mask=None):
        """Add rows to ``fold`` (an (m,) int array): W (m, n, P), tau (m, n), mask (m, n)."""
        n = W.shape[1]
        for f in np.unique(fold):
            here = fold == f
            for j in range(n):
                rows = here if mask is None else here & mask[:, j]
                A, y = W[rows, j, :], tau[rows, j]
                self.AtA[f, j] += A.T @ A
                self.Aty[f, j] += A.T @ y
                self.yty[f, j] += y @ y
                self.rows[f, j] += y.size
        self._weighted = (None, None)

    def _fold_sums(self, weights):
        """Return each fold's sums weighted per joint: (F, P, P), (F, P), (F,).

        Kept for the last ``weights`` (a cross-validation asks for the same weights
        thousands of times, on other folds and columns).
        """
        weights = np.asarray(weights, dtype=float)
        key = weights.tobytes()
        if self._weighted[0] != key:
            self._weighted = (key, (np.einsum('j,fjpq->fpq', weights, self.AtA),
                                    np.einsum('j,fjp->fp', weights, self.Aty),
                                    self.yty @ weights))
        return self._weighted[1]

    def totals(self, folds, weights, cols):
        """Return (M, b, c, rows) of the folds ``folds``, weighted per joint, on ``cols``."""
        AtA, Aty, yty = self._fold_sums(weights)
        M = AtA[folds].sum(axis=0)[np.ix_(cols, cols)]
        b = Aty[folds].sum(axis=0)[cols]
        return M, b, float(yty[folds].sum()), float(self.rows[folds].sum())

    def fold_totals(self, weights, cols):
        """Return every fold's weighted sums on ``cols``: (F, p, p), (F, p), (F,), rows (F,)."""
        AtA, Aty, yty = self._fold_sums(weights)
        return (AtA[:, cols][:, :, cols], Aty[:, cols], yty.copy(),
                self.rows.sum(axis=1))


__all__ = ['FoldEquations', 'NormalEquations']
