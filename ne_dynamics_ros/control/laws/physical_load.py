"""Loads that can exist: the pseudo-inertia, the test and the projection the adaptive law uses.

Pure module (no ROS). A rigid body's 10 inertial parameters at a frame origin (XX, XY,
XZ, YY, YZ, ZZ in kg·m², MX, MY, MZ in kg·m, M in kg; Khalil's names) are those of a
body that can exist exactly when its pseudo-inertia ``[[½ tr(J) E - J, MS], [MSᵀ, M]]``
is positive semidefinite (Wensing, Kim & Slotine, "Linear matrix inequalities for
physically consistent inertial parameter identification", IEEE RA-L 3(1), 2018);
:func:`is_physical` tests that (with a mass bound and, optionally, a bounding sphere),
:func:`project_physical` returns a physical load near any 10 parameters. Both run on
control steps of :mod:`~ne_dynamics_ros.control.laws.slotine_li`'s law, so they are written in
plain scalars.
"""
import math

import numpy as np


def pseudo_inertia(parameters) -> np.ndarray:
    """Return the (4, 4) pseudo-inertia of 10 parameters at a frame origin.

    ``[[½ tr(J) E - J, MS], [MSᵀ, M]]``: positive semidefinite exactly when the
    parameters are those of a physical body (Wensing, Kim & Slotine 2018).
    """
    xx, xy, xz, yy, yz, zz, mx, my, mz, m = parameters
    J = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    P = np.zeros((4, 4))
    P[:3, :3] = 0.5 * np.trace(J) * np.eye(3) - J
    P[:3, 3] = P[3, :3] = (mx, my, mz)
    P[3, 3] = m
    return P


def parameters_of(P) -> np.ndarray:
    """Return the 10 parameters of a (4, 4) pseudo-inertia (the inverse of the above)."""
    S = P[:3, :3]
    J = np.trace(S) * np.eye(3) - S
    return np.array([J[0, 0], J[0, 1], J[0, 2], J[1, 1], J[1, 2], J[2, 2],
                     P[0, 3], P[1, 3], P[2, 3], P[3, 3]])


def is_physical(parameters, mass_max: float, tolerance: float = 1e-12,
                radius: float = math.inf) -> bool:
    """Tell whether 10 parameters are a load that can exist (within ``radius``).

    ``0 <= M <= mass_max``, a positive semidefinite pseudo-inertia (to ``tolerance``,
    kg·m²) and, for a finite ``radius`` (m), all of the load within that distance of the
    frame's origin: ``tr Σ_O = ½ tr(J) <= M radius²`` (Σ_O the density-weighted second
    moments about the origin; Wensing, Kim & Slotine's bounding-sphere condition, which
    also puts the centre of mass within ``radius``). Plain floats, no arrays: it runs every
    control step. With M > 0 the pseudo-inertia is PSD exactly when its Schur complement
    ``Σ = ½ tr(J) E - J - MS MSᵀ / M`` (the second moments about the centre of mass) is; a
    3x3 symmetric matrix is PSD when its principal minors are >= 0. With M = 0 only the
    empty load is.
    """
    xx, xy, xz, yy, yz, zz, mx, my, mz, m = parameters
    if not 0.0 <= m <= mass_max:
        return False
    if m == 0.0:
        return not any(parameters)
    half = 0.5 * (xx + yy + zz)
    if half > m * radius * radius + tolerance:
        return False
    a, b, c = half - xx - mx * mx / m, half - yy - my * my / m, half - zz - mz * mz / m
    d, e, f = -xy - mx * my / m, -xz - mx * mz / m, -yz - my * mz / m
    tol = -tolerance
    return (a >= tol and b >= tol and c >= tol and a * b - d * d >= tol
            and a * c - e * e >= tol and b * c - f * f >= tol
            and a * (b * c - f * f) - d * (d * c - f * e) + e * (d * f - b * e) >= tol)


def project_physical(parameters, mass_max: float, radius: float = math.inf) -> np.ndarray:
    """Return a physical load near ``parameters`` (10,), as :func:`is_physical` asks.

    The load as mass M, centre of mass c and second moments about it Σ (the pseudo-inertia
    is PSD exactly when M >= 0 and Σ is): M <= 0 gives the empty load; M above
    ``mass_max`` is clipped, Σ scaled with it (the same body, lighter); c is pulled in
    to ``radius``; Σ's negative eigenvalues are set to zero (the nearest PSD Σ); then Σ
    is shrunk until ``½ tr(J) = M (|c|² + tr Σ) <= M radius²``. A load that is physical
    comes back as it is. Plain scalars but for Σ's eigenvalues where two coincide: it
    runs on control steps (on bench_node's soak stream, nearly every one).
    """
    if is_physical(parameters, mass_max, radius=radius):
        return np.array(parameters, dtype=float)
    xx, xy, xz, yy, yz, zz, mx, my, mz, m = (float(v) for v in parameters)
    if not m > 0:                          # no mass: only the empty load is a body
        return np.zeros(10)
    cx, cy, cz = mx / m, my / m, mz / m
    half = 0.5 * (xx + yy + zz)
    # Σ = S / M - c cᵀ per unit mass, S = ½ tr(J) E - J the second moments at the origin
    sigma = ((half - xx) / m - cx * cx, -xy / m - cx * cy, -xz / m - cx * cz,
             (half - yy) / m - cy * cy, -yz / m - cy * cz, (half - zz) / m - cz * cz)
    m = min(m, mass_max)
    distance = math.sqrt(cx * cx + cy * cy + cz * cz)
    if distance > radius:
        scale = radius / distance
        cx, cy, cz, distance = cx * scale, cy * scale, cz * scale, radius
    if not _is_psd(sigma):
        sigma = _nearest_psd(sigma)
    s00, s01, s02, s11, s12, s22 = sigma
    spread, spare = s00 + s11 + s22, max(radius * radius - distance * distance, 0.0)
    if spread > spare:
        scale = spare / spread
        s00, s01, s02, s11, s12, s22 = (v * scale for v in sigma)
    # back to the 10 parameters: S = M (Σ + c cᵀ), J = tr(S) E - S
    S00, S11, S22 = m * (s00 + cx * cx), m * (s11 + cy * cy), m * (s22 + cz * cz)
    trace = S00 + S11 + S22
    return np.array([trace - S00, -m * (s01 + cx * cy), -m * (s02 + cx * cz), trace - S11,
                     -m * (s12 + cy * cz), trace - S22, m * cx, m * cy, m * cz, m])


def _nearest_psd(a):
    """Return the PSD matrix nearest the symmetric 3x3 ``a`` (its upper triangle, 6 floats).

    Its negative eigenvalues set to zero. In plain floats: the eigenvalues in closed form
    (Smith, "Eigenvalues of a symmetric 3 x 3 matrix", CACM 4(4), 1961), then ``a`` less
    its one negative eigenvalue's part, or the one positive eigenvalue's part alone, or
    nothing; the eigenvector the longest cross product of two rows of ``a - λ E``.
    NumPy's ``eigh`` where that eigenvalue is not apart from the others. Returns the
    upper triangle (6 floats).
    """
    p, d, e, q, f, r = a
    zero = (0.0,) * 6
    mean = (p + q + r) / 3.0
    spread = math.sqrt(((p - mean) ** 2 + (q - mean) ** 2 + (r - mean) ** 2
                        + 2.0 * (d * d + e * e + f * f)) / 6.0)
    if spread <= 1e-12 * abs(mean) or spread == 0.0:        # a multiple of E
        return a if mean >= 0 else zero
    # half the determinant of (a - mean E) / spread
    bp, bq, br = (p - mean) / spread, (q - mean) / spread, (r - mean) / spread
    bd, be, bf = d / spread, e / spread, f / spread
    half_det = 0.5 * (bp * (bq * br - bf * bf) - bd * (bd * br - bf * be)
                      + be * (bd * bf - bq * be))
    phi = math.acos(min(1.0, max(-1.0, half_det))) / 3.0
    largest = mean + 2.0 * spread * math.cos(phi)
    smallest = mean + 2.0 * spread * math.cos(phi + 2.0 * math.pi / 3.0)
    middle = 3.0 * mean - smallest - largest
    gap = 1e-6 * spread
    if largest <= 0.0:
        return zero
    if smallest >= 0.0:
        return a
    if middle >= 0.0 and middle - smallest > gap:           # one negative: take it out
        n = _eigenvector(a, smallest)
        if n is not None:
            x, y, z = n
            return (p - smallest * x * x, d - smallest * x * y, e - smallest * x * z,
                    q - smallest * y * y, f - smallest * y * z, r - smallest * z * z)
    elif middle < 0.0 and largest - middle > gap:           # one positive: keep it alone
        n = _eigenvector(a, largest)
        if n is not None:
            x, y, z = n
            return (largest * x * x, largest * x * y, largest * x * z, largest * y * y,
                    largest * y * z, largest * z * z)
    values, vectors = np.linalg.eigh(np.array([[p, d, e], [d, q, f], [e, f, r]]))
    b = (vectors * np.maximum(values, 0.0)) @ vectors.T
    return (b[0, 0], b[0, 1], b[0, 2], b[1, 1], b[1, 2], b[2, 2])


def _eigenvector(a, value):
    """Return the unit eigenvector of ``a`` for its simple eigenvalue ``value``, or None.

    ``a``: a symmetric 3x3 matrix as its upper triangle (6 floats).
    """
    p, d, e, q, f, r = a
    rows = ((p - value, d, e), (d, q - value, f), (e, f, r - value))
    best, length = None, 0.0
    for x, y in ((rows[0], rows[1]), (rows[0], rows[2]), (rows[1], rows[2])):
        c = (x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0])
        size = c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
        if size > length:
            best, length = c, size
    if not length > 0.0:
        return None
    norm = math.sqrt(length)
    return (best[0] / norm, best[1] / norm, best[2] / norm)


def _is_psd(a) -> bool:
    """Tell whether the symmetric 3x3 ``a`` (upper triangle, 6 floats) is PSD: its minors."""
    p, d, e, q, f, r = a
    return (p >= 0 and q >= 0 and r >= 0 and p * q - d * d >= 0 and p * r - e * e >= 0
            and q * r - f * f >= 0 and p * (q * r - f * f) - d * (d * r - f * e)
            + e * (d * f - q * e) >= 0)


__all__ = ['is_physical', 'parameters_of', 'project_physical', 'pseudo_inertia']
