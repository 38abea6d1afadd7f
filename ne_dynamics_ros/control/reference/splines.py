"""Segment polynomials of joint_trajectory_controller's spline interpolation, vectorised.

Pure module (NumPy only). Between two waypoints the degree follows the fields *both*
carry (positions only: linear; + velocities: cubic; + accelerations: quintic), with the
coefficients of ``interpolate_between_points`` in ros2_controllers'
``joint_trajectory_controller/src/trajectory.cpp``: :func:`segment_coefficients` works
them out for every segment of a trajectory at once; :func:`segment_rows` and
:func:`evaluate_rows` sample one segment with plain floats (the control path).
:mod:`ne_dynamics_ros.control.reference.trajectory` builds the reference from them.
"""
import numpy as np


def segment_rows(coefficients, k):
    """Segment ``k`` of (p, m - 1, n) coefficients as n lists of 6 (zeros beyond p)."""
    rows = coefficients[:, k].T.tolist()
    pad = [0.0] * (6 - coefficients.shape[0])
    return [row + pad for row in rows] if pad else rows


def evaluate_rows(rows, s):
    """Return lists q, qd, qdd of the polynomials ``sum_j row[j] s**j`` at ``s`` (Horner).

    ``rows``: one sequence of 6 coefficients per joint (a segment's (6, n) coefficients,
    transposed). Plain floats: a joint costs about 30 operations, less than NumPy's call
    overhead for a (3, 6) @ (6, n) product.
    """
    q, qd, qdd = [], [], []
    for c0, c1, c2, c3, c4, c5 in rows:
        q.append(c0 + s * (c1 + s * (c2 + s * (c3 + s * (c4 + s * c5)))))
        qd.append(c1 + s * (2.0 * c2 + s * (3.0 * c3 + s * (4.0 * c4 + s * (5.0 * c5)))))
        qdd.append(2.0 * c2 + s * (6.0 * c3 + s * (12.0 * c4 + s * (20.0 * c5))))
    return q, qd, qdd


def segment_coefficients(times, positions, qd, qdd, has_vel, has_acc):
    """Return the (p, m - 1, n) polynomial coefficients of every segment, all at once.

    Segment k runs from waypoint k to k + 1; ``q(s) = sum_j c[j, k] s**j`` for ``s`` in
    ``[0, T_k]``, with joint_trajectory_controller's ``interpolate_between_points``
    coefficients: quintic where both waypoints give velocities and accelerations, cubic
    where both give velocities, linear otherwise (unused coefficients are zero). Each
    kind is worked out on its own segments only, and coefficient-major; ``p`` is 2 when
    every segment is linear, 4 when none is quintic, else 6 (the coefficients of higher
    powers, all zero, are left out), so a trajectory of positions only costs two array
    operations and a third of the memory.
    ``times`` (m,) must increase strictly; ``positions``, ``qd``, ``qdd`` (m, n) (rows of
    points that do not give them are ignored); ``has_vel``, ``has_acc`` (m,) bool.
    """
    m, n = positions.shape
    has_acc = has_acc & has_vel
    cubic = has_vel[:-1] & has_vel[1:]
    quintic = has_acc[:-1] & has_acc[1:]
    planes = 6 if quintic.any() else 4 if cubic.any() else 2
    coefficients = np.zeros((planes, max(m - 1, 0), n))
    if m < 2:
        return coefficients
    with np.errstate(over='ignore', invalid='ignore'):
        T = np.diff(times)[:, None]
        dq = positions[1:] - positions[:-1]
        coefficients[0] = positions[:-1]
        if not cubic.any():
            np.divide(dq, T, out=coefficients[1])
            return coefficients
        linear = np.flatnonzero(~cubic)
        coefficients[1, linear] = dq[linear] / T[linear]
        for rows, kind in ((_rows(cubic & ~quintic), 3), (_rows(quintic), 5)):
            if rows is None:
                continue
            # every segment of a kind (the usual case): slices, views of the arrays, where
            # index arrays copied each operand (a 1 000-point quintic goal 1.05 -> 0.61 ms)
            after = _shifted(rows)
            T_, dq_ = T[rows], dq[rows]
            qd_a, qd_b = qd[rows], qd[after]
            coefficients[1, rows] = qd_a
            T2, T3 = T_ ** 2, T_ ** 3
            if kind == 3:
                coefficients[2, rows] = (3.0 * dq_ - (2.0 * qd_a + qd_b) * T_) / T2
                coefficients[3, rows] = (2.0 * (-dq_) + (qd_a + qd_b) * T_) / T3
                continue
            qdd_a, qdd_b = qdd[rows], qdd[after]
            coefficients[2, rows] = 0.5 * qdd_a
            coefficients[3, rows] = (20.0 * dq_ - (8.0 * qd_b + 12.0 * qd_a) * T_
                                     - (3.0 * qdd_a - qdd_b) * T2) / (2.0 * T3)
            coefficients[4, rows] = (-30.0 * dq_ + (14.0 * qd_b + 16.0 * qd_a) * T_
                                     + (3.0 * qdd_a - 2.0 * qdd_b) * T2) / (2.0 * T_ ** 4)
            coefficients[5, rows] = (12.0 * dq_ - 6.0 * (qd_b + qd_a) * T_
                                     - (qdd_a - qdd_b) * T2) / (2.0 * T_ ** 5)
    return coefficients


def _rows(mask):
    """Return the segments ``mask`` selects: a slice for all, else indices (None: none)."""
    if mask.all():
        return slice(0, mask.size)
    rows = np.flatnonzero(mask)
    return rows if rows.size else None


def _shifted(rows):
    """Return the waypoints after ``rows`` (a slice or indices): each segment's end."""
    return slice(rows.start + 1, rows.stop + 1) if isinstance(rows, slice) else rows + 1


__all__ = ['evaluate_rows', 'segment_coefficients', 'segment_rows']
