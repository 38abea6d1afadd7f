"""Denavit–Hartenberg parameters of a URDF chain: standard DH and Craig's modified DH.

Conventions (angles in rad, lengths in m):

* **Standard DH** (``'dh'``; Lee et al. 1982, eq. 2.1; Sasaki 1990, eq. 2.30): frame i
  is fixed to link i with z_i on the axis of joint i+1, and
  ``T_{i-1,i} = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)``.
* **Modified DH** (``'mdh'``; Craig 2005; Khalil & Kleinfinger 1986; the frames of
  Renaud 1987): frame i is fixed to link i with z_i on the axis of joint i, and
  ``T_{i-1,i} = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta_i) Tz(d_i)``.

For joint i, ``theta_i = theta_offset_i + q_i`` (revolute) or ``d_i = d_offset_i + q_i``
(prismatic), where q_i is the URDF joint value: every DH z axis points along its URDF
joint axis, so no sign flip is ever needed.

Frame choices where the conventions leave freedom (those of manufacturers' tables):

* The common normal of consecutive axes i, i+1 (direction x_i) is unique unless the axes
  are parallel; for parallel axes it is placed so that ``d`` is zero (it passes through
  the previous frame's foot point on axis i); for coincident axes it repeats x_{i-1}.
  Intersecting axes give ``a = 0`` with x along ±(z_i × z_{i+1}).  Anti-parallel axes give
  ``alpha = ±pi``.
* The sign of each x_i is chosen so that the constant ``theta`` offset lies in
  (-pi/2, pi/2] (``a`` takes whichever sign results, as in UR's tables); the sign of the
  whole x chain is chosen so that the last joint's offset does too, where possible.
* Frame 0 (both conventions) lies on joint 1's axis at the foot of the perpendicular
  from the base link origin, with x_0 = x_1 at q = 0 (so ``theta_1`` offset is 0).
* The last frame n lies on joint n's axis at the foot of the perpendicular from the tip
  link origin, z_n along joint n, x_n along the tip link's x axis projected onto the
  plane normal to z_n (tip y, then z, if that projection vanishes).

Near-parallel axes (sine of the angle between them below 1e-9) are treated as parallel;
the DH form is ill-conditioned there by nature and
:func:`~ne_dynamics_ros.dynamics.model.fk_residual` reports the resulting error.
"""
from dataclasses import dataclass
import enum
import math

import numpy as np

from ..errors import ModelError

PARALLEL_TOL = 1e-9
DISTANCE_TOL = 1e-10


class Convention(str, enum.Enum):
    """Which Denavit–Hartenberg convention a model uses."""

    DH = 'dh'
    MDH = 'mdh'

    @classmethod
    def parse(cls, value):
        """Accept a Convention or a case-insensitive 'dh'/'mdh'; raise ModelError otherwise."""
        try:
            return cls(str(getattr(value, 'value', value)).lower())
        except ValueError:
            raise ModelError(f"convention must be 'dh' or 'mdh', got {value!r}") from None


class JointType(str, enum.Enum):
    """Joint type as the papers' tables write it."""

    REVOLUTE = 'R'
    PRISMATIC = 'P'


@dataclass(frozen=True)
class DHRow:
    """One row of a DH table.

    For ``dh``: (a_i, alpha_i, d_i, theta_i) of ``Rz(theta) Tz(d) Tx(a) Rx(alpha)``.
    For ``mdh``: (a[i-1], alpha[i-1], d_i, theta_i) of ``Rx(alpha) Tx(a) Rz(theta) Tz(d)``.
    ``theta`` and ``d`` are the values at q = 0 (offsets); joint i adds q_i to ``theta``
    (revolute) or to ``d`` (prismatic).  Units m and rad.
    """

    joint: str
    type: JointType
    a: float
    alpha: float
    d: float
    theta: float


def dh_transform(a, alpha, d, theta):
    """Standard-DH link transform ``Rz(theta) Tz(d) Tx(a) Rx(alpha)``, (4, 4)."""
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array([[ct, -st * ca, st * sa, a * ct],
                     [st, ct * ca, -ct * sa, a * st],
                     [0.0, sa, ca, d],
                     [0.0, 0.0, 0.0, 1.0]])


def mdh_transform(a, alpha, d, theta):
    """Modified-DH link transform ``Rx(alpha) Tx(a) Rz(theta) Tz(d)``, (4, 4)."""
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array([[ct, -st, 0.0, a],
                     [st * ca, ct * ca, -sa, -sa * d],
                     [st * sa, ct * sa, ca, ca * d],
                     [0.0, 0.0, 0.0, 1.0]])


def _unit(v):
    return v / np.linalg.norm(v)


def _frame(origin, z, x):
    """Right-handed frame from origin, z and an x (re-orthogonalised against z)."""
    z = _unit(z)
    x = _unit(x - (x @ z) * z)
    T = np.eye(4)
    T[:3, 0], T[:3, 1], T[:3, 2], T[:3, 3] = x, np.cross(z, x), z, origin
    return T


def _signed_angle(u, v, axis):
    """Angle from u to v about ``axis`` (all unit, u and v normal to axis), rad."""
    return math.atan2(float(np.cross(u, v) @ axis), float(u @ v))


def _orient(x, x_prev, z):
    """Flip x so that the angle from x_prev to x about z lies in (-pi/2, pi/2]."""
    c = float(x @ x_prev)
    if c < -1e-12 or (abs(c) <= 1e-12 and float(np.cross(x_prev, x) @ z) < 0.0):
        return -x
    return x


def _perpendicular_to(z, candidates):
    """First candidate's projection on the plane normal to z that does not vanish."""
    for c in candidates:
        p = c - (c @ z) * z
        if np.linalg.norm(p) > 1e-6:
            return _unit(p)
    raise AssertionError('three orthonormal candidates cannot all be parallel to z')


def _common_normal(p1, z1, p2, z2, foot_prev):
    """Feet P (on line 1), Q (on line 2) and unsigned direction x of the common normal.

    Returns (P, Q, x) where x is None for coincident lines (free direction).
    """
    c = np.cross(z1, z2)
    s = float(np.linalg.norm(c))
    if s > PARALLEL_TOL:
        w = p1 - p2
        b, d1, e = float(z1 @ z2), float(z1 @ w), float(z2 @ w)
        den = s * s     # = 1 - b², without its cancellation for nearly parallel lines
        P = p1 + ((b * e - d1) / den) * z1
        Q = p2 + ((e - b * d1) / den) * z2
        # The common normal of non-parallel lines is along z1 × z2 whether they
        # intersect or not (its sign is set later by _orient).
        return P, Q, c / s
    # Parallel: the normal through the previous foot point keeps d = 0.
    P = p1 + float((foot_prev - p1) @ z1) * z1
    Q = p2 + float((P - p2) @ z2) * z2
    gap = Q - P
    if np.linalg.norm(gap) > DISTANCE_TOL:
        return P, Q, _unit(gap)
    return P, P, None


@dataclass(frozen=True)
class DHFrames:
    """DH frames of a chain at q = 0, all as (4, 4) poses in the base link frame.

    Attributes:
        frames: n + 1 poses, frame 0 (fixed to the base) .. frame n (fixed to link n),
            for the requested convention.
        rows: n :class:`DHRow`.
    """

    frames: tuple
    rows: tuple


def dh_frames(chain, convention):
    """Place the DH frames of ``chain`` (see the module docstring for every choice).

    Args:
        chain: :class:`~ne_dynamics_ros.dynamics.urdf_import.Chain`.
        convention: :class:`Convention`.

    Returns:
        :class:`DHFrames`.
    """
    convention = Convention.parse(convention)
    n = chain.n
    poses = chain.link_poses(np.zeros(n))
    points = [T[:3, 3] for T in poses[:n]]
    axes = [_unit(T[:3, :3] @ j.axis) for T, j in zip(poses[:n], chain.joints)]
    T_tip = poses[n]

    # Frame 0 origin: foot of the perpendicular from the base origin on axis 1.
    origin0 = points[0] + float((-points[0]) @ axes[0]) * axes[0]
    base_x = _perpendicular_to(axes[0], np.eye(3))

    feet_on_own = []    # P_i: foot of normal i on axis i (MDH origin i)
    feet_on_next = []   # Q_i: foot of normal i on axis i+1 (DH origin i)
    xs = []
    foot_prev, x_prev = origin0, base_x
    for i in range(n - 1):
        P, Q, x = _common_normal(points[i], axes[i], points[i + 1], axes[i + 1], foot_prev)
        x = x_prev if x is None else _orient(x, x_prev, axes[i])
        feet_on_own.append(P)
        feet_on_next.append(Q)
        xs.append(x)
        foot_prev, x_prev = Q, x
    # Last frame: on axis n at the foot of the perpendicular from the tip origin.
    z_n = axes[n - 1]
    P_n = points[n - 1] + float((T_tip[:3, 3] - points[n - 1]) @ z_n) * z_n
    x_n = _perpendicular_to(z_n, T_tip[:3, :3].T)
    # The x_i signs above form one chain (each follows x_{i-1}); flip the whole chain if
    # that makes the last theta offset lie in (-pi/2, pi/2] too (UR's tables do this).
    if xs and float(xs[-1] @ x_n) < -1e-12:
        xs = [-x for x in xs]
    frame0 = _frame(origin0, axes[0], xs[0] if n > 1 else x_n)

    frames = [frame0]
    if convention is Convention.MDH:
        for i in range(n - 1):
            frames.append(_frame(feet_on_own[i], axes[i], xs[i]))
    else:
        for i in range(n - 1):
            frames.append(_frame(feet_on_next[i], axes[i + 1], xs[i]))
    frames.append(_frame(P_n, z_n, x_n))

    rows = []
    for i, joint in enumerate(chain.joints):
        rows.append(_row(frames[i], frames[i + 1], joint, convention))
    return DHFrames(tuple(frames), tuple(rows))


def _row(F_prev, F, joint, convention):
    """DH parameters relating consecutive frames (both given in the base frame)."""
    x0, z0, o0 = F_prev[:3, 0], F_prev[:3, 2], F_prev[:3, 3]
    x1, z1, o1 = F[:3, 0], F[:3, 2], F[:3, 3]
    delta = o1 - o0
    if convention is Convention.MDH:
        alpha = _signed_angle(z0, z1, x0)
        a = float(delta @ x0)
        d = float(delta @ z1)
        theta = _signed_angle(x0, x1, z1)
    else:
        alpha = _signed_angle(z0, z1, x1)
        a = float(delta @ x1)
        d = float(delta @ z0)
        theta = _signed_angle(x0, x1, z0)
    jtype = JointType.PRISMATIC if joint.is_prismatic else JointType.REVOLUTE
    return DHRow(joint.name, jtype, a, alpha, d, theta)


def link_transform(row, q, convention):
    """(4, 4) transform frame i-1 -> frame i for a DH/MDH row at joint value ``q``."""
    theta, d = row.theta, row.d
    if row.type is JointType.PRISMATIC:
        d += q
    else:
        theta += q
    if convention is Convention.MDH:
        return mdh_transform(row.a, row.alpha, d, theta)
    return dh_transform(row.a, row.alpha, d, theta)
