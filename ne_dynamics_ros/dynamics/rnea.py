"""Recursive Newton–Euler inverse dynamics in DH / modified-DH link frames.

Two recursions, one per convention, chosen once when a model is built:

* :func:`rnea_mdh` — the outward and inward iterations in modified-DH frames of Craig
  (2005), §6.5, with the prismatic-joint terms of Sasaki (1990), eqs 2.31–2.39, and
  Angeles (2007), Algorithms 7.4.1–7.4.2.
* :func:`rnea_dh` — the Luh–Walker–Paul recursion in standard-DH frames as written by
  Lee et al. (1982), eqs 3.21–3.27, same prismatic terms.

Both take joint values already mapped to the DH variable (URDF q, since every DH z axis
points along its URDF joint axis), and return rigid-body joint efforts
``tau = M(q) q̈ + C(q, q̇) q̇ + g(q) - J_nᵀ w_ext`` (armature and friction are added by the
caller).  Gravity enters as the base acceleration ``v̇_0 = -g`` (Angeles 2007, eq. 7.44).

Vectors are 3-tuples whose components are floats (one state) or (N,) arrays (a batch of
N states): the same arithmetic serves both, scalar calls avoid NumPy's per-call overhead
and batch calls are vectorised over N with no Python loop over states.
"""
from dataclasses import dataclass
from typing import Tuple

Vec = Tuple[object, object, object]


@dataclass(frozen=True)
class LinkDynamics:
    """Constant per-link data for the recursions.

    DH: ``a, alpha`` are a_i, alpha_i and the link transform is Rz(theta)Tz(d)Tx(a)Rx(alpha).
    MDH: ``a, alpha`` are a[i-1], alpha[i-1] and it is Rx(alpha)Tx(a)Rz(theta)Tz(d).

    The body is described by its moments of order 0, 1 and 2 at the frame origin O_i
    (Renaud 1987, "moments of body i at point O_i"; Khalil's
    M, MS = (MX, MY, MZ), J with XX ... ZZ), so the recursions are linear in them.

    Attributes:
        prismatic: joint i is prismatic (q adds to d) rather than revolute (q adds to theta).
        a: m.  alpha: rad.  d: offset, m.  theta: offset, rad.
        cos_alpha, sin_alpha: of ``alpha``.
        mass: M, kg.
        first_moment: MS = M c, c the centre of mass in DH frame i, kg·m.
        inertia_origin: 3x3 nested tuples, J = I_c + M (‖c‖² E - c cᵀ), the inertia
            tensor about origin i, axes of frame i, kg·m² (Huygens' theorem).
    """

    prismatic: bool
    a: float
    alpha: float
    d: float
    theta: float
    cos_alpha: float
    sin_alpha: float
    mass: float
    first_moment: Vec
    inertia_origin: tuple


def vector_add(u, v):
    """Return u + v of two 3-sequences, a tuple (numbers or codegen symbols)."""
    return (u[0] + v[0], u[1] + v[1], u[2] + v[2])


def vector_scale(s, u):
    """Return s u, a tuple."""
    return (s * u[0], s * u[1], s * u[2])


def vector_cross(u, v):
    """Return u × v, a tuple."""
    return (u[1] * v[2] - u[2] * v[1],
            u[2] * v[0] - u[0] * v[2],
            u[0] * v[1] - u[1] * v[0])


def inertia_times(inertia, w):
    """Return J w for a 3x3 nested tuple J (any 3x3: also Renaud's b times a vector)."""
    r0, r1, r2 = inertia
    return (r0[0] * w[0] + r0[1] * w[1] + r0[2] * w[2],
            r1[0] * w[0] + r1[1] * w[1] + r1[2] * w[2],
            r2[0] * w[0] + r2[1] * w[1] + r2[2] * w[2])


def b_matrix(w, wd):
    """Renaud's (1987) b = ω̇^ + ω^ ω^ of the forward recursion: b·p = ω̇ × p + ω × (ω × p).

    Formed once per link (6 products), it serves every vector of that link: the next
    origin and the first moment MS.
    """
    wxx, wyy, wzz = w[0] * w[0], w[1] * w[1], w[2] * w[2]
    wxy, wxz, wyz = w[0] * w[1], w[0] * w[2], w[1] * w[2]
    return ((-(wyy + wzz), wxy - wd[2], wxz + wd[1]),
            (wxy + wd[2], -(wxx + wzz), wyz - wd[0]),
            (wxz - wd[1], wyz + wd[0], -(wxx + wyy)))


def link_wrench(link, w, wd, vd, b):
    """Inertial force and moment about origin i of one link, from its origin's motion.

    ``F = M v̇ + b·MS`` (b·MS = ω̇ × MS + ω × (ω × MS)) and ``N = J ω̇ + ω × (J ω) + MS × v̇``
    (v̇ the acceleration of origin i): the F = m v̇_c, N_c = I ω̇ + ω × Iω of Craig (2005),
    §6.5, moved to the origin, as Renaud (1987) writes it with the moments at O_i.
    """
    ms = link.first_moment
    J = link.inertia_origin
    F = vector_add(vector_scale(link.mass, vd), inertia_times(b, ms))
    N = vector_add(vector_add(inertia_times(J, wd), vector_cross(w, inertia_times(J, w))),
                   vector_cross(ms, vd))
    return F, N


# ---- modified DH (Craig) -------------------------------------------------------------------
# R = R_{i-1,i} = Rx(alpha_{i-1}) Rz(theta_i); ct, st = cos, sin theta_i.

def _mdh_to_child(link, ct, st, v):
    """Rᵀ v: a frame i-1 vector expressed in frame i."""
    ca, sa = link.cos_alpha, link.sin_alpha
    u = ca * v[1] + sa * v[2]
    return (ct * v[0] + st * u, -st * v[0] + ct * u, -sa * v[1] + ca * v[2])


def _mdh_to_parent(link, ct, st, v):
    """R v: a frame i vector expressed in frame i-1."""
    ca, sa = link.cos_alpha, link.sin_alpha
    w = st * v[0] + ct * v[1]
    return (ct * v[0] - st * v[1], ca * w - sa * v[2], sa * w + ca * v[2])


def _mdh_twist(link, v):
    """Rx(alpha)ᵀ v: a frame i-1 vector in frame i before its joint turns (MDH)."""
    ca, sa = link.cos_alpha, link.sin_alpha
    return (v[0], ca * v[1] + sa * v[2], -sa * v[1] + ca * v[2])


def _rz_to_child(ct, st, v):
    """Rz(theta)ᵀ v."""
    return (ct * v[0] + st * v[1], -st * v[0] + ct * v[1], v[2])


def forward_mdh(links, cos_theta, sin_theta, d, qd, qdd, base_acc, combined=None, label=None):
    """Outward recursion in modified-DH frames (Craig 2005, §6.5, the outward iteration).

    Arguments as :func:`rnea_mdh`. Returns, per link i, ``(p, w, wd, vd, b)``: ``p`` the
    origin of frame i in frame i-1 (m), and ω_i, ω̇_i, v̇_i (acceleration of origin i,
    gravity included as v̇_0 = -g) and b_i (:func:`b_matrix`) in frame i.

    ``combined`` (the code generator's; Renaud's s23, c23): per link None, or the
    ``(cos, sin)`` of theta_k + ... + theta_i when links k..i are revolute with
    alpha = 0 between them (parallel axes, k the first of the run). ω_i, ω̇_i are then
    turned from link k's incoming vectors in one rotation,
    ω_i = Rz(Σθ)ᵀ u_k + Σq̇ z and ω̇_i = Rz(Σθ)ᵀ u̇_k + (Rz(Σθ)ᵀ u_k) × Σq̇ z + Σq̈ z
    (u_k = Rx(alpha_{k-1})ᵀ ω_{k-1}): the same vectors in fewer operations on symbols.

    ``label`` (the code generator's): called as ``label(name, vector)`` with each link's
    ω, ω̇, v̇ (``w3``, ``wd3``, ``vd3`` for link 3), to name the generated quantities.
    """
    w = wd = (0.0, 0.0, 0.0)
    b = ((0.0, 0.0, 0.0),) * 3
    vd = base_acc
    frames = []
    run = None        # (u_k, u̇_k, Σ q̇) of the run of parallel revolute joints in progress
    for i, (link, ct, st, di, qdi, qddi) in enumerate(
            zip(links, cos_theta, sin_theta, d, qd, qdd)):
        p = (link.a, -link.sin_alpha * di, link.cos_alpha * di)   # ^{i-1}P_i
        vd = _mdh_to_child(link, ct, st, vector_add(vd, inertia_times(b, p)))
        if combined is not None and combined[i] is not None and run is not None:
            u, ud, qd_run = run
            qd_run = qd_run + qdi
            run = (u, ud, qd_run)
            w_in = _rz_to_child(*combined[i], u)
            wd_in = _rz_to_child(*combined[i], ud)
            w, wd = ((w_in[0], w_in[1], w[2] + qdi),
                     (wd_in[0] + w_in[1] * qd_run, wd_in[1] - w_in[0] * qd_run,
                      wd[2] + qddi))
        else:
            if combined is not None:
                # _mdh_to_child in its two turns, the first kept for a run that may follow
                # (the numeric recursion below keeps one call per vector: it is faster)
                u, ud = _mdh_twist(link, w), _mdh_twist(link, wd)
                w_in, wd_in = _rz_to_child(ct, st, u), _rz_to_child(ct, st, ud)
                run = None if link.prismatic else (u, ud, qdi)
            else:
                w_in = _mdh_to_child(link, ct, st, w)
                wd_in = _mdh_to_child(link, ct, st, wd)
            if link.prismatic:
                w, wd = w_in, wd_in
                vd = (vd[0] + 2.0 * w[1] * qdi, vd[1] - 2.0 * w[0] * qdi, vd[2] + qddi)
            else:
                w = (w_in[0], w_in[1], w_in[2] + qdi)
                wd = (wd_in[0] + w_in[1] * qdi, wd_in[1] - w_in[0] * qdi, wd_in[2] + qddi)
        b = b_matrix(w, wd)
        if label is not None:
            for name, vector in (('w', w), ('wd', wd), ('vd', vd)):
                label(f'{name}{i + 1}', vector)
        frames.append((p, w, wd, vd, b))
    return frames


def rnea_mdh(links, cos_theta, sin_theta, d, qd, qdd, base_acc, f_end, n_end,
             body_wrench=None, combined=None, label=None):
    """Modified-DH Newton–Euler recursion of Craig (2005), §6.5 (outward and inward).

    Args:
        links: n :class:`LinkDynamics` (MDH).
        cos_theta, sin_theta, d: per joint, cos/sin of theta_i and d_i at this state
            (floats or (N,) arrays).
        qd, qdd: per joint, joint rates (rad/s or m/s) and accelerations.
        base_acc: v̇_0 = -g in frame 0 (m/s²).
        f_end, n_end: force (N) and moment about origin n (N·m), in frame n, exerted by
            link n on the environment (the negative of the environment's wrench on it).
        body_wrench: ``(link, w, wd, vd, b) -> (F, N)``, default :func:`link_wrench`;
            the code generator passes an equal form that is cheaper on symbols.
        combined: see :func:`forward_mdh` (the code generator's).
        label: the code generator's naming hook (:func:`forward_mdh`); also given each
            link's F, N (``F3``, ``N3``) and the wrench f, n it transmits (``f3``, ``n3``).

    Returns:
        list of n joint efforts: n_iᵀẐ_i (N·m) or f_iᵀẐ_i (N).
    """
    frames = forward_mdh(links, cos_theta, sin_theta, d, qd, qdd, base_acc, combined, label)
    body_wrench = body_wrench or link_wrench
    return inward_mdh(links, cos_theta, sin_theta, frames,
                      lambda i: body_wrench(links[i], *frames[i][1:]), f_end, n_end, label)


def inward_mdh(links, cos_theta, sin_theta, frames, wrench, f_end, n_end, label=None):
    """Inward iteration of Craig (2005), §6.5, over the links' body wrenches.

    ``frames``: the outward recursion's (``p`` first); ``wrench(i)``: link i's ``(F, N)``
    at origin i in frame i, asked for in the inward order. Returns the n efforts.
    """
    tau = [None] * len(links)
    f, nm = f_end, n_end                 # in frame n, about origin n
    p_child = (0.0, 0.0, 0.0)
    for i in range(len(links) - 1, -1, -1):
        F, N = wrench(i)
        ct, st = cos_theta[i], sin_theta[i]
        f_child = f
        f = vector_add(f_child, F)
        nm = vector_add(vector_add(N, nm), vector_cross(p_child, f_child))
        if label is not None:
            for name, vector in (('F', F), ('N', N), ('f', f), ('n', nm)):
                label(f'{name}{i + 1}', vector)
        tau[i] = f[2] if links[i].prismatic else nm[2]
        f = _mdh_to_parent(links[i], ct, st, f)      # into frame i-1 for the next step
        nm = _mdh_to_parent(links[i], ct, st, nm)
        p_child = frames[i][0]
    return tau


# ---- standard DH (Luh, Walker, Paul; Lee et al. 1982, eqs 3.21-3.27) -----------------------
# R = R_{i-1,i} = Rz(theta_i) Rx(alpha_i).

def _dh_to_child(link, ct, st, v):
    """Rᵀ v: a frame i-1 vector expressed in frame i."""
    ca, sa = link.cos_alpha, link.sin_alpha
    u = -st * v[0] + ct * v[1]
    return (ct * v[0] + st * v[1], ca * u + sa * v[2], -sa * u + ca * v[2])


def _dh_to_parent(link, ct, st, v):
    """R v: a frame i vector expressed in frame i-1."""
    ca, sa = link.cos_alpha, link.sin_alpha
    y1 = ca * v[1] - sa * v[2]
    return (ct * v[0] - st * y1, st * v[0] + ct * y1, sa * v[1] + ca * v[2])


def forward_dh(links, cos_theta, sin_theta, d, qd, qdd, base_acc, label=None):
    """Outward recursion in standard-DH frames (Lee et al. 1982, eqs 3.21–3.23).

    Arguments as :func:`rnea_dh`. Returns, per link i, ``(z, r, w, wd, vd, b)``: z_{i-1}
    and the vector r from origin i-1 to origin i, both in frame i (m), and ω_i, ω̇_i, v̇_i
    (acceleration of origin i, gravity included) and b_i (:func:`b_matrix`) in frame i.
    ``label``: as for :func:`forward_mdh`.
    """
    w = wd = (0.0, 0.0, 0.0)
    acc = base_acc
    frames = []
    for link, ct, st, di, qdi, qddi in zip(links, cos_theta, sin_theta, d, qd, qdd):
        z = (0.0, link.sin_alpha, link.cos_alpha)         # z_{i-1} in frame i
        r = (link.a, di * link.sin_alpha, di * link.cos_alpha)   # origin i-1 -> i, frame i
        acc = _dh_to_child(link, ct, st, acc)
        if link.prismatic:
            w = _dh_to_child(link, ct, st, w)
            wd = _dh_to_child(link, ct, st, wd)
            acc = vector_add(acc, vector_add(vector_scale(qddi, z),
                                             vector_scale(2.0 * qdi, vector_cross(w, z))))
        else:
            wd = _dh_to_child(link, ct, st,
                              (wd[0] + w[1] * qdi, wd[1] - w[0] * qdi, wd[2] + qddi))  # 3.22
            w = _dh_to_child(link, ct, st, (w[0], w[1], w[2] + qdi))                   # 3.21
        b = b_matrix(w, wd)
        acc = vector_add(acc, inertia_times(b, r))                                          # 3.23
        if label is not None:
            for name, vector in (('w', w), ('wd', wd), ('vd', acc)):
                label(f'{name}{len(frames) + 1}', vector)
        frames.append((z, r, w, wd, acc, b))
    return frames


def rnea_dh(links, cos_theta, sin_theta, d, qd, qdd, base_acc, f_end, n_end,
            body_wrench=None, label=None):
    """Luh–Walker–Paul recursion in standard-DH frames (Lee et al. 1982, eqs 3.21–3.27).

    Arguments and result as :func:`rnea_mdh`, with standard-DH ``links``.  Moments n_i
    are taken about origin i-1 and expressed in frame i (eq 3.26); tau_i is their
    component on z_{i-1} (eq 3.27). ``label``: the code generator's naming hook, as for
    :func:`rnea_mdh`.
    """
    frames = forward_dh(links, cos_theta, sin_theta, d, qd, qdd, base_acc, label)
    body_wrench = body_wrench or link_wrench
    return inward_dh(links, cos_theta, sin_theta, frames,
                     lambda i: body_wrench(links[i], *frames[i][2:]), f_end, n_end, label)


def inward_dh(links, cos_theta, sin_theta, frames, wrench, f_end, n_end, label=None):
    """Inward recursion of Lee et al. (1982), eqs 3.24–3.27, over the links' body wrenches.

    ``frames``: the outward recursion's (``z, r`` first); ``wrench(i)``: link i's
    ``(F, N)`` (eq 3.24), asked for in the inward order. Returns the n efforts.
    """
    tau = [None] * len(links)
    f, nm = f_end, n_end          # f_{n+1}, n_{n+1} in frame n, about origin n
    for i in range(len(links) - 1, -1, -1):
        z, r = frames[i][:2]
        F, N = wrench(i)                                                                 # 3.24
        ct, st = cos_theta[i], sin_theta[i]
        nm = vector_add(vector_add(nm, vector_cross(r, vector_add(f, F))), N)        # 3.26
        f = vector_add(f, F)                                                                 # 3.25
        if label is not None:
            for name, vector in (('F', F), ('N', N), ('f', f), ('n', nm)):
                label(f'{name}{i + 1}', vector)
        tau[i] = (f if links[i].prismatic else nm)                                     # 3.27
        tau[i] = z[1] * tau[i][1] + z[2] * tau[i][2]
        if i > 0:
            f = _dh_to_parent(links[i], ct, st, f)
            nm = _dh_to_parent(links[i], ct, st, nm)
    return tau


# ---- two velocity arguments (Slotine & Li; Niemeyer & Slotine 1991) -------------------------
# The recursions above are quadratic in the joint rates. With a second rate vector q̇_r,
# every product of two rate-linear quantities a(q̇) b(q̇) becomes ½ [a(q̇) b(q̇_r) +
# a(q̇_r) b(q̇)]: the result is the symmetric bilinear form C(q, q̇) q̇_r of the Christoffel
# C (C(q, x) y = C(q, y) x), so M q̈_r + C(q, q̇) q̇_r + g with Ṁ - 2C skew-symmetric, and
# the plain recursion again when q̇_r = q̇.

def reference_b_matrix(w, w_r, wd_r):
    """Return b_r with b_r·p = ω̇_r × p + ½[ω × (ω_r × p) + ω_r × (ω × p)] (3x3 tuples).

    ω × (ω_r × p) = ω_r (ω·p) - p (ω·ω_r), so the symmetric part is
    ½(ω_r ωᵀ + ω ω_rᵀ) - (ω·ω_r) E; with ω_r = ω it is :func:`b_matrix`.
    """
    dot = w[0] * w_r[0] + w[1] * w_r[1] + w[2] * w_r[2]
    xy = 0.5 * (w[0] * w_r[1] + w_r[0] * w[1])
    xz = 0.5 * (w[0] * w_r[2] + w_r[0] * w[2])
    yz = 0.5 * (w[1] * w_r[2] + w_r[1] * w[2])
    return ((w[0] * w_r[0] - dot, xy - wd_r[2], xz + wd_r[1]),
            (xy + wd_r[2], w[1] * w_r[1] - dot, yz - wd_r[0]),
            (xz - wd_r[1], yz + wd_r[0], w[2] * w_r[2] - dot))


def forward_mdh_reference(links, cos_theta, sin_theta, d, qd, qd_r, qdd_r, base_acc):
    """Outward recursion in MDH frames with two rate vectors (see the section comment).

    As :func:`forward_mdh` with ``qd`` the measured rates and ``qd_r``, ``qdd_r`` the
    reference rates and accelerations. Returns per link ``(p, w, w_r, wd_r, vd_r, b_r)``
    in frame i: ω (from q̇), ω_r (from q̇_r), the reference ω̇_r and v̇_r (origin i,
    gravity included), b_r (:func:`reference_b_matrix`).
    """
    w = w_r = wd_r = (0.0, 0.0, 0.0)
    b = ((0.0, 0.0, 0.0),) * 3
    vd = base_acc
    frames = []
    rates = zip(links, cos_theta, sin_theta, d, qd, qd_r, qdd_r)
    for link, ct, st, di, q1, q2, qdd in rates:
        p = (link.a, -link.sin_alpha * di, link.cos_alpha * di)
        vd = _mdh_to_child(link, ct, st, vector_add(vd, inertia_times(b, p)))
        w_in = _mdh_to_child(link, ct, st, w)
        wr_in = _mdh_to_child(link, ct, st, w_r)
        wd_in = _mdh_to_child(link, ct, st, wd_r)
        if link.prismatic:
            w, w_r, wd_r = w_in, wr_in, wd_in
            # 2 ω × ẑ q̇ symmetrised: ω × ẑ q̇_r + ω_r × ẑ q̇
            vd = (vd[0] + w[1] * q2 + w_r[1] * q1, vd[1] - w[0] * q2 - w_r[0] * q1,
                  vd[2] + qdd)
        else:
            w = (w_in[0], w_in[1], w_in[2] + q1)
            w_r = (wr_in[0], wr_in[1], wr_in[2] + q2)
            wd_r = (wd_in[0] + 0.5 * (w_in[1] * q2 + wr_in[1] * q1),
                    wd_in[1] - 0.5 * (w_in[0] * q2 + wr_in[0] * q1), wd_in[2] + qdd)
        b = reference_b_matrix(w, w_r, wd_r)
        frames.append((p, w, w_r, wd_r, vd, b))
    return frames


def forward_dh_reference(links, cos_theta, sin_theta, d, qd, qd_r, qdd_r, base_acc):
    """Outward recursion in standard-DH frames with two rate vectors.

    As :func:`forward_dh` (Lee et al. 1982, eqs 3.21–3.23) with the products of rates symmetrised.
    Returns per link ``(z, r, w, w_r, wd_r, vd_r, b_r)`` in frame i.
    """
    w = w_r = wd_r = (0.0, 0.0, 0.0)
    acc = base_acc
    frames = []
    rates = zip(links, cos_theta, sin_theta, d, qd, qd_r, qdd_r)
    for link, ct, st, di, q1, q2, qdd in rates:
        z = (0.0, link.sin_alpha, link.cos_alpha)
        r = (link.a, di * link.sin_alpha, di * link.cos_alpha)
        acc = _dh_to_child(link, ct, st, acc)
        if link.prismatic:
            w = _dh_to_child(link, ct, st, w)
            w_r = _dh_to_child(link, ct, st, w_r)
            wd_r = _dh_to_child(link, ct, st, wd_r)
            acc = vector_add(acc, vector_add(
                vector_scale(qdd, z), vector_add(vector_scale(q2, vector_cross(w, z)),
                                                 vector_scale(q1, vector_cross(w_r, z)))))
        else:
            wd_r = _dh_to_child(link, ct, st, (
                wd_r[0] + 0.5 * (w[1] * q2 + w_r[1] * q1),
                wd_r[1] - 0.5 * (w[0] * q2 + w_r[0] * q1), wd_r[2] + qdd))
            w = _dh_to_child(link, ct, st, (w[0], w[1], w[2] + q1))
            w_r = _dh_to_child(link, ct, st, (w_r[0], w_r[1], w_r[2] + q2))
        b = reference_b_matrix(w, w_r, wd_r)
        acc = vector_add(acc, inertia_times(b, r))
        frames.append((z, r, w, w_r, wd_r, acc, b))
    return frames


def reference_wrench(link, w, w_r, wd_r, vd_r, b_r):
    """Return a link's ``(F, N)`` at origin i with two rate vectors (frame i).

    ``F = M v̇_r + b_r·MS`` and ``N = J ω̇_r + ½[ω × (J ω_r) + ω_r × (J ω)] + MS × v̇_r``:
    :func:`link_wrench` with its products of rates symmetrised (equal to it when
    ω_r = ω), the rows of the regressor's reference block.
    """
    ms, J = link.first_moment, link.inertia_origin
    F = vector_add(vector_scale(link.mass, vd_r), inertia_times(b_r, ms))
    gyro = vector_add(vector_cross(w, inertia_times(J, w_r)),
                      vector_cross(w_r, inertia_times(J, w)))
    N = vector_add(vector_add(inertia_times(J, wd_r), vector_scale(0.5, gyro)),
                   vector_cross(ms, vd_r))
    return F, N


def rnea_reference(links, convention_mdh, cos_theta, sin_theta, d, qd, qd_r, qdd_r, base_acc,
                   wrench=None, label=None):
    """Return ``M(q) q̈_r + C(q, q̇) q̇_r + g(q)`` (n efforts) in one two-rate recursion.

    Slotine & Li's reference torque with the Christoffel C (Niemeyer & Slotine 1991):
    the outward recursion of :func:`forward_mdh_reference` (``convention_mdh``) or
    :func:`forward_dh_reference`, the links' :func:`reference_wrench`, then Craig's or
    Lee et al.'s inward recursion. Armature and friction are the caller's.

    ``wrench(i, frame)``: replaces link i's wrench (the code generator's hook: a load
    with symbolic parameters); ``label``: the code generator's naming hook.
    Returns ``(tau, frames)``: the n efforts and the outward recursion's frames.
    """
    forward = forward_mdh_reference if convention_mdh else forward_dh_reference
    frames = forward(links, cos_theta, sin_theta, d, qd, qd_r, qdd_r, base_acc)
    skip = 1 if convention_mdh else 2

    def body(i):
        if wrench is not None:
            return wrench(i, frames[i])
        return reference_wrench(links[i], *frames[i][skip:])

    inward = inward_mdh if convention_mdh else inward_dh
    zero = (0.0, 0.0, 0.0)
    return inward(links, cos_theta, sin_theta, frames, body, zero, zero, label), frames


def body_twist(links, convention_mdh, cos_theta, sin_theta, d, rates, body):
    """Return ``(v, ω)`` of link ``body``'s origin moving with joint ``rates`` (frame body).

    The velocity recursion (Craig 2005, §6.5; Lee et al. 1982, eqs 3.21 and the velocity
    of 3.23): ω_i, and v_i of origin i, from a fixed base; m/s and rad/s for rates in rad/s
    (m/s).
    """
    w = v = (0.0, 0.0, 0.0)
    for i in range(body + 1):
        link, ct, st, rate = links[i], cos_theta[i], sin_theta[i], rates[i]
        if convention_mdh:
            p = (link.a, -link.sin_alpha * d[i], link.cos_alpha * d[i])
            v = _mdh_to_child(link, ct, st, vector_add(v, vector_cross(w, p)))
            w = _mdh_to_child(link, ct, st, w)
            if link.prismatic:
                v = (v[0], v[1], v[2] + rate)
            else:
                w = (w[0], w[1], w[2] + rate)
        else:
            z = (0.0, link.sin_alpha, link.cos_alpha)          # z_{i-1} in frame i
            r = (link.a, d[i] * link.sin_alpha, d[i] * link.cos_alpha)
            v = _dh_to_child(link, ct, st, v)
            if link.prismatic:
                w = _dh_to_child(link, ct, st, w)
                v = vector_add(v, vector_scale(rate, z))
            else:
                w = _dh_to_child(link, ct, st, (w[0], w[1], w[2] + rate))
            v = vector_add(v, vector_cross(w, r))
    return v, w


def _symmetric_pairs(u, v):
    """Return the coefficients of (XX, XY, XZ, YY, YZ, ZZ) in ``uᵀ J v``."""
    return (u[0] * v[0], u[0] * v[1] + u[1] * v[0], u[0] * v[2] + u[2] * v[0],
            u[1] * v[1], u[1] * v[2] + u[2] * v[1], u[2] * v[2])


def wrench_power(w, w_r, wd_r, vd_r, b_r, v_s, w_s):
    """Return the 10 coefficients of a body's parameters in ``(F, N) · (v_s, ω_s)``.

    ``(F, N)`` the :func:`reference_wrench` at origin i, ``(v_s, ω_s)`` a twist of that
    origin (frame i): ``Aᵀ ξ`` for the body's (6, 10) wrench map A, so that with the twist
    of :func:`body_twist` at rates s, ``Y_bodyᵀ s`` (the body's regressor columns, joint
    space) without forming Y. Order XX, XY, XZ, YY, YZ, ZZ, MX, MY, MZ, M.
    """
    a = _symmetric_pairs(w_s, wd_r)
    b = _symmetric_pairs(vector_cross(w_s, w), w_r)
    c = _symmetric_pairs(vector_cross(w_s, w_r), w)
    J = tuple(x + 0.5 * (y + z) for x, y, z in zip(a, b, c))
    ms = vector_add(inertia_times(tuple(zip(*b_r)), v_s), vector_cross(vd_r, w_s))
    m = vd_r[0] * v_s[0] + vd_r[1] * v_s[1] + vd_r[2] * v_s[2]
    return J + ms + (m,)
