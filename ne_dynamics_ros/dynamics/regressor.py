"""The joint-torque regressor ``tau = W(q, q̇, q̈) · pi`` from the Newton–Euler recursion.

``pi`` is the standard parameter vector of :mod:`ne_dynamics_ros.dynamics.standard_parameters`
(13 per joint: XX ... ZZ, MX, MY, MZ, M of link j at origin O_j, then Ia, Fv, Fc).
Sign convention: ``W pi = M(q) q̈ + C(q, q̇) q̇ + g(q) + Ia q̈ + Fv q̇ + Fc tanh(q̇/v_s)``,
i.e. :meth:`~ne_dynamics_ros.dynamics.model.RobotModel.rnea` plus
:meth:`~ne_dynamics_ros.dynamics.model.RobotModel.friction_torques` less its constant
``friction_offset`` (no parameter of ``pi``; v_s per joint); a tip wrench's term
``-J_tipᵀ w_tip`` does not depend on ``pi`` and is kept apart (:func:`tip_wrench_torques`).

How: the outward recursion of the model's convention (modified DH, Craig 2005, §6.5, or
Luh–Walker–Paul DH, Lee et al. 1982, eqs 3.21–3.23) gives ω_i, ω̇_i and the acceleration
v̇_i of origin i in frame i. Each link's wrench at O_i is linear in its 10 parameters
(Renaud 1987: moments of body i at O_i)::

    F_i = M v̇_i + (ω̇_i^ + ω_i^ ω_i^) MS            N_i = L(ω̇_i) J + ω_i^ L(ω_i) J - v̇_i^ MS

(``a^`` the cross-product matrix, ``L(v) J`` the product J v written on J's six entries),
and the inward recursion (Craig's inward iteration; Lee et al. 1982, eqs 3.25–3.27)
carries these 6 x 10 blocks to every joint below, exactly as it carries the wrenches. No
finite differences.

Shapes: one state (n,) gives (n, 13 n); a batch (N, n) gives (N, n, 13 n).
"""
import numpy as np

from ne_dynamics_ros.dynamics.dh import Convention
from ne_dynamics_ros.dynamics.standard_parameters import PER_JOINT
from ne_dynamics_ros.dynamics.rnea import (forward_dh, forward_dh_reference, forward_mdh,
                                           forward_mdh_reference)

STANDARD_GRAVITY = (0.0, 0.0, -9.81)


def _cross_matrix(v):
    """Return the (B, 3, 3) cross-product matrices of (B, 3) vectors."""
    x, y, z = v[:, 0], v[:, 1], v[:, 2]
    zero = np.zeros_like(x)
    return np.stack([np.stack([zero, -z, y], -1), np.stack([z, zero, -x], -1),
                     np.stack([-y, x, zero], -1)], -2)


def _tensor_times(v):
    """Return the (B, 3, 6) matrices L(v) with L(v) [XX, XY, XZ, YY, YZ, ZZ] = J v."""
    x, y, z = v[:, 0], v[:, 1], v[:, 2]
    zero = np.zeros_like(x)
    return np.stack([np.stack([x, y, z, zero, zero, zero], -1),
                     np.stack([zero, x, zero, y, z, zero], -1),
                     np.stack([zero, zero, x, zero, y, z], -1)], -2)


def _link_block(w, wd, vd):
    """Return the (B, 6, 10) map of a link's 10 inertial parameters to its wrench at O_i."""
    B = w.shape[0]
    W, Wd, Vd = _cross_matrix(w), _cross_matrix(wd), _cross_matrix(vd)
    block = np.zeros((B, 6, 10))
    block[:, :3, 6:9] = Wd + W @ W
    block[:, :3, 9] = vd
    block[:, 3:, :6] = _tensor_times(wd) + W @ _tensor_times(w)
    block[:, 3:, 6:9] = -Vd
    return block


def _as_columns(vector, B):
    """Stack a 3-tuple of floats or (B,) arrays into a (B, 3) array."""
    return np.stack([np.broadcast_to(np.asarray(c, dtype=float), (B,)) for c in vector], -1)


def _rotation(link, ct, st, convention):
    """Return the (B, 3, 3) rotations R_{i-1,i} (frame i axes in frame i-1)."""
    ca, sa = link.cos_alpha, link.sin_alpha
    B = ct.shape[0]
    R = np.empty((B, 3, 3))
    if convention is Convention.MDH:       # Rx(alpha_{i-1}) Rz(theta_i)
        R[:, 0] = np.stack([ct, -st, np.zeros(B)], -1)
        R[:, 1] = np.stack([ca * st, ca * ct, np.full(B, -sa)], -1)
        R[:, 2] = np.stack([sa * st, sa * ct, np.full(B, ca)], -1)
    else:                                  # Rz(theta_i) Rx(alpha_i)
        R[:, 0] = np.stack([ct, -st * ca, st * sa], -1)
        R[:, 1] = np.stack([st, ct * ca, -ct * sa], -1)
        R[:, 2] = np.stack([np.zeros(B), np.full(B, sa), np.full(B, ca)], -1)
    return R


def regressor(model, q, qd, qdd, gravity=STANDARD_GRAVITY):
    """Joint-torque regressor W with ``W pi = rnea + friction`` (module docstring).

    Args:
        model: a :class:`~ne_dynamics_ros.dynamics.model.RobotModel` (its kinematics and
            convention are used, not its parameters).
        q, qd, qdd: (n,) or (N, n) joint positions (rad, m), velocities, accelerations.
        gravity: (3,) gravity acceleration in the base link frame, m/s².

    Returns:
        (n, 13 n) for one state, (N, n, 13 n) for a batch; columns in the order of
        :func:`~ne_dynamics_ros.dynamics.standard_parameters.parameter_names`.

    Raises:
        ne_dynamics_ros.errors.StateError: malformed or non-finite arrays.
    """
    s = model.checked_states(q=q, qd=qd, qdd=qdd)
    q, qd, qdd = s['q'], s['qd'], s['qdd']
    single = q.ndim == 1
    q, qd, qdd = (np.atleast_2d(a) for a in (q, qd, qdd))
    B, n = q.shape
    base_acc = model.base_acceleration(gravity)
    prismatic = model.prismatic[:, None]
    theta = model.theta_offsets[:, None] + np.where(prismatic, 0.0, q.T)
    d = model.d_offsets[:, None] + np.where(prismatic, q.T, 0.0)
    ct, st = np.cos(theta), np.sin(theta)
    links = model.links
    mdh = model.convention is Convention.MDH
    forward = forward_mdh if mdh else forward_dh
    frames = forward(links, ct, st, d, qd.T, qdd.T, base_acc)

    at = slice(1, 4) if mdh else slice(2, 5)         # (w, wd, vd) in a frame
    blocks = [_link_block(*(_as_columns(v, B) for v in frame[at])) for frame in frames]
    W = _joint_rows(model, ct, st, frames, blocks, B)
    _drive_columns(model, W, qd, qdd)
    return W[0] if single else W


def _drive_columns(model, W, rates, accelerations):
    """Fill the Ia, Fv, Fc columns of the rows W (B, n, 13 n) in place, (B, n) inputs."""
    for i in range(model.n):
        col = PER_JOINT * i
        W[:, i, col + 10] = accelerations[:, i]
        W[:, i, col + 11] = rates[:, i]
        W[:, i, col + 12] = np.tanh(rates[:, i] / model.coulomb_velocity[i])


def _joint_rows(model, ct, st, frames, blocks, B):
    """Carry each link's (B, 6, 10) wrench block inward to every joint below it.

    ``frames``: the outward recursion's, per link (MDH: ``p`` first; DH: ``z, r`` first);
    ``blocks``: per link, its 10 parameters' wrench at O_i in frame i. Returns the
    (B, n, 13 n) rows with the inertial columns filled (the drive columns are zero).
    """
    links, n = model.links, model.n
    mdh = model.convention is Convention.MDH
    P = PER_JOINT * n
    W = np.zeros((B, n, P))
    U = np.zeros((B, 6, P))        # wrench of links i..n at origin i, frame i, per parameter
    for i in range(n - 1, -1, -1):
        if i < n - 1:              # bring links i+1..n's wrench from O_{i+1} to O_i
            R = _rotation(links[i + 1], ct[i + 1], st[i + 1], convention=model.convention)
            f = R @ U[:, :3]
            m = R @ U[:, 3:]
            if mdh:
                p = _as_columns(frames[i + 1][0], B)               # O_{i+1} in frame i
            else:
                p = (R @ _as_columns(frames[i + 1][1], B)[:, :, None])[:, :, 0]
            U = np.concatenate([f, m + _cross_matrix(p) @ f], axis=1)
        col = PER_JOINT * i
        U[:, :, col:col + 10] += blocks[i]
        if mdh:
            W[:, i] = U[:, 2] if links[i].prismatic else U[:, 5]
        else:
            z = np.array([0.0, links[i].sin_alpha, links[i].cos_alpha])
            if links[i].prismatic:
                W[:, i] = np.einsum('k,bkp->bp', z, U[:, :3])
            else:                                     # moment about O_{i-1}
                r = _as_columns(frames[i][1], B)
                m = U[:, 3:] + _cross_matrix(r) @ U[:, :3]
                W[:, i] = np.einsum('k,bkp->bp', z, m)
    return W


def _reference_block(w, w_r, wd_r, vd_r, b_r):
    """Return the (B, 6, 10) wrench map of :func:`_link_block` with two rate vectors.

    ``F = M v̇_r + b_r·MS`` and ``N = L(ω̇_r) J + ½[ω^ L(ω_r) + ω_r^ L(ω)] J - v̇_r^ MS``
    (b_r of :func:`~ne_dynamics_ros.dynamics.rnea.reference_b_matrix`).
    """
    block = np.zeros((w.shape[0], 6, 10))
    block[:, :3, 6:9] = b_r
    block[:, :3, 9] = vd_r
    block[:, 3:, :6] = _tensor_times(wd_r) + 0.5 * (
        _cross_matrix(w) @ _tensor_times(w_r) + _cross_matrix(w_r) @ _tensor_times(w))
    block[:, 3:, 6:9] = -_cross_matrix(vd_r)
    return block


def reference_regressor(model, q, qd, qd_r, qdd_r, gravity=STANDARD_GRAVITY):
    """Slotine & Li's regressor Y with ``Y pi = M q̈_r + C(q, q̇) q̇_r + g + friction(q̇_r)``.

    C is the Christoffel matrix (``Ṁ - 2C`` skew-symmetric; ``C(q, x) y = C(q, y) x``),
    the armature is in M (column Ia: q̈_r) and the drive friction is taken at the
    reference rate (columns Fv: q̇_r, Fc: tanh(q̇_r / v_s)). Computed in one pass of the
    Newton–Euler recursion with two rate vectors (Niemeyer & Slotine 1991;
    :func:`~ne_dynamics_ros.dynamics.rnea.forward_mdh_reference`,
    :func:`~ne_dynamics_ros.dynamics.rnea.forward_dh_reference`) for the adaptive law of
    Slotine & Li (IJRR 6(3), 1987): ``q̇_r = q̇_d + Λ e``, ``q̈_r = q̈_d + Λ ė``. With
    ``qd_r = qd`` it is :func:`regressor` itself.

    Args:
        model: a :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        q, qd, qd_r, qdd_r: (n,) or (N, n): positions (rad, m), measured rates,
            reference rates and reference accelerations.
        gravity: (3,) m/s² in the base link frame.

    Returns:
        (n, 13 n) or (N, n, 13 n), columns as :func:`regressor`'s.

    Raises:
        ne_dynamics_ros.errors.StateError: malformed or non-finite arrays.
    """
    s = model.checked_states(q=q, qd=qd, qdd=qdd_r)
    r = model.checked_states(q=q, qd=qd_r, qdd=qdd_r)
    q, qd, qd_r, qdd_r = s['q'], s['qd'], r['qd'], s['qdd']
    single = q.ndim == 1
    q, qd, qd_r, qdd_r = (np.atleast_2d(a) for a in (q, qd, qd_r, qdd_r))
    B, n = q.shape
    prismatic = model.prismatic[:, None]
    theta = model.theta_offsets[:, None] + np.where(prismatic, 0.0, q.T)
    d = model.d_offsets[:, None] + np.where(prismatic, q.T, 0.0)
    ct, st = np.cos(theta), np.sin(theta)
    mdh = model.convention is Convention.MDH
    forward = forward_mdh_reference if mdh else forward_dh_reference
    frames = forward(model.links, ct, st, d, qd.T, qd_r.T, qdd_r.T,
                     model.base_acceleration(gravity))
    blocks = []
    for frame in frames:
        w, w_r, wd_r, vd_r, b_r = frame[1:] if mdh else frame[2:]
        blocks.append(_reference_block(
            _as_columns(w, B), _as_columns(w_r, B), _as_columns(wd_r, B),
            _as_columns(vd_r, B), np.stack([_as_columns(row, B) for row in b_r], 1)))
    Y = _joint_rows(model, ct, st, frames, blocks, B)
    _drive_columns(model, Y, qd_r, qdd_r)
    return Y[0] if single else Y


def tip_wrench_torques(model, q, f_tip):
    """Return the efforts ``-J_tipᵀ w_tip`` a tip wrench adds to ``W pi``.

    Args:
        q: (n,) joint positions. f_tip: (6,) force (N) and moment (N·m) of the environment
            on the tip link, tip link frame (as :meth:`RobotModel.rnea` takes it).

    Returns:
        (n,) N·m / N, independent of the dynamic parameters.
    """
    q = model.checked_vector(q, 'q', allow_batch=False)
    zero = np.zeros(model.n)
    return (model.rnea(q, zero, zero, (0.0, 0.0, 0.0), f_tip)
            - model.rnea(q, zero, zero, (0.0, 0.0, 0.0)))
