"""Forward kinematics, the geometric Jacobian and J̇q̇ of the tip on the DH/MDH chain (no ROS).

Frames and signs, everywhere in this module:

* A pose is a (4, 4) homogeneous matrix: a frame's rotation and origin (m) in the base
  link frame.
* A 6-vector of the tip is ``[linear; angular]`` in the axes of the base link frame, the
  linear part that of the tip link origin (Pinocchio's ``LOCAL_WORLD_ALIGNED`` frame
  quantities): a velocity ``[v; ω]`` in m/s and rad/s, an acceleration ``[v̇; ω̇]`` in m/s²
  and rad/s² (the classical acceleration: the time derivative of ``[v; ω]``).
* Joint values and rates are URDF joint coordinates in the chain order of
  :attr:`~ne_dynamics_ros.dynamics.model.RobotModel.joint_names`: rad and rad/s for
  revolute and continuous joints, m and m/s for prismatic ones.

The chain is walked once per call on plain floats (a NumPy call per operation on
3-vectors costs more than the operation): the walk of the model's convention is chosen
once, when :class:`ChainKinematics` is built.  In standard DH joint i turns about z of
frame i-1 (Lee et al. 1982), in modified DH about z of frame i (Craig 2005).

The Jacobian column of joint i is ``[z_i × (p_tip − p_i); z_i]`` (revolute) or
``[z_i; 0]`` (prismatic), z_i the unit axis and p_i a point on it (Siciliano, Sciavicco,
Villani & Oriolo 2009, eq. 3.30).  Its rate follows from each column being a motion
vector carried by the bodies before joint i: ``d/dt J_i = V_{i-1} ×ₘ J_i``, V_{i-1} the
spatial velocity of body i-1 taken at the tip point and ×ₘ the motion cross product
(Featherstone 2008, ch. 2), hence

    ``J̇ q̇ = Σ_i (V_{i-1} ×ₘ J_i) q̇_i + [ω × v; 0]``,

the last term turning the spatial acceleration at the (fixed) tip point into the
classical acceleration of the moving tip origin (Featherstone 2008, ch. 2).
"""
import math
import weakref

import numpy as np

from .dh import Convention, link_transform
from ..errors import ModelError, StateError

#: Below this rotation angle (rad) the series of sin(θ)/θ and (1 − cos θ)/θ² are used.
SMALL_ANGLE = 1e-6


# ---- the chain walk, on floats ------------------------------------------------------------
# A frame is 12 floats: the columns x, y, z of its rotation, then its origin o, all in the
# base link frame.  A row is (prismatic, a, cos alpha, sin alpha, d, theta, cos theta,
# sin theta) with d, theta the offsets at q = 0.

def _walk_dh(rows, start, q):
    """Walk standard-DH links ``Rz(θ) Tz(d) Tx(a) Rx(α)``; joint i's axis is z of frame i-1.

    Returns (axes, frame n): per joint (p, z) as 6 floats, p a point of its axis (the
    origin of frame i-1); frame n as 12 floats.
    """
    xx, xy, xz, yx, yy, yz, zx, zy, zz, ox, oy, oz = start
    axes = []
    for (prismatic, a, ca, sa, d, theta, ct, st), qi in zip(rows, q):
        axes.append((ox, oy, oz, zx, zy, zz))
        if prismatic:
            d += qi
        else:
            ct, st = math.cos(theta + qi), math.sin(theta + qi)
        xx, xy, xz, yx, yy, yz = (ct * xx + st * yx, ct * xy + st * yy, ct * xz + st * yz,
                                  ct * yx - st * xx, ct * yy - st * xy, ct * yz - st * xz)
        ox, oy, oz = (ox + d * zx + a * xx, oy + d * zy + a * xy, oz + d * zz + a * xz)
        yx, yy, yz, zx, zy, zz = (ca * yx + sa * zx, ca * yy + sa * zy, ca * yz + sa * zz,
                                  ca * zx - sa * yx, ca * zy - sa * yy, ca * zz - sa * yz)
    return axes, (xx, xy, xz, yx, yy, yz, zx, zy, zz, ox, oy, oz)


def _walk_mdh(rows, start, q):
    """Walk modified-DH links ``Rx(α) Tx(a) Rz(θ) Tz(d)``; joint i's axis is z of frame i.

    Returns (axes, frame n) as :func:`_walk_dh`; the axis point is the origin of frame i.
    """
    xx, xy, xz, yx, yy, yz, zx, zy, zz, ox, oy, oz = start
    axes = []
    for (prismatic, a, ca, sa, d, theta, ct, st), qi in zip(rows, q):
        if prismatic:
            d += qi
        else:
            ct, st = math.cos(theta + qi), math.sin(theta + qi)
        ox, oy, oz = ox + a * xx, oy + a * xy, oz + a * xz
        yx, yy, yz, zx, zy, zz = (ca * yx + sa * zx, ca * yy + sa * zy, ca * yz + sa * zz,
                                  ca * zx - sa * yx, ca * zy - sa * yy, ca * zz - sa * yz)
        xx, xy, xz, yx, yy, yz = (ct * xx + st * yx, ct * xy + st * yy, ct * xz + st * yz,
                                  ct * yx - st * xx, ct * yy - st * xy, ct * yz - st * xz)
        ox, oy, oz = ox + d * zx, oy + d * zy, oz + d * zz
        axes.append((ox, oy, oz, zx, zy, zz))
    return axes, (xx, xy, xz, yx, yy, yz, zx, zy, zz, ox, oy, oz)


def _frame_floats(T):
    """Return the 12 floats of a (4, 4) pose: rotation columns x, y, z, then the origin."""
    return tuple(np.asarray(T, dtype=float)[:3, :].T.ravel().tolist())


def _compose(frame, tool):
    """Frame ``frame · tool`` (both 12 floats: the pose of tool in ``frame``)."""
    xx, xy, xz, yx, yy, yz, zx, zy, zz, ox, oy, oz = frame
    ax, ay, az, bx, by, bz, cx, cy, cz, px, py, pz = tool
    return (xx * ax + yx * ay + zx * az, xy * ax + yy * ay + zy * az,
            xz * ax + yz * ay + zz * az,
            xx * bx + yx * by + zx * bz, xy * bx + yy * by + zy * bz,
            xz * bx + yz * by + zz * bz,
            xx * cx + yx * cy + zx * cz, xy * cx + yy * cy + zy * cz,
            xz * cx + yz * cy + zz * cz,
            ox + xx * px + yx * py + zx * pz, oy + xy * px + yy * py + zy * pz,
            oz + xz * px + yz * py + zz * pz)


def _matrix(frame):
    """(4, 4) pose from 12 floats."""
    xx, xy, xz, yx, yy, yz, zx, zy, zz, ox, oy, oz = frame
    return np.array(((xx, yx, zx, ox), (xy, yy, zy, oy), (xz, yz, zz, oz),
                     (0.0, 0.0, 0.0, 1.0)))


def _columns(axes, prismatic, tip):
    """Jacobian columns ``(v_x, v_y, v_z, ω_x, ω_y, ω_z)`` of the tip origin ``tip[9:]``."""
    ex, ey, ez = tip[9], tip[10], tip[11]
    columns = []
    for (px, py, pz, zx, zy, zz), slides in zip(axes, prismatic):
        if slides:
            columns.append((zx, zy, zz, 0.0, 0.0, 0.0))
        else:
            rx, ry, rz = ex - px, ey - py, ez - pz
            columns.append((zy * rz - zz * ry, zz * rx - zx * rz, zx * ry - zy * rx,
                            zx, zy, zz))
    return columns


def _bias(columns, qd):
    """``J̇ q̇`` (6 floats) from the tip's columns: ``Σ (V_{i-1} ×ₘ J_i) q̇_i + [ω × v; 0]``."""
    vx = vy = vz = wx = wy = wz = 0.0          # V_{i-1}: velocity of body i-1 at the tip
    ax = ay = az = bx = by = bz = 0.0          # its rate, spatial, at the fixed tip point
    for (jx, jy, jz, kx, ky, kz), s in zip(columns, qd):
        # V ×ₘ J = (w × j_v + v × j_ω, w × j_ω)
        ax += s * (wy * jz - wz * jy + vy * kz - vz * ky)
        ay += s * (wz * jx - wx * jz + vz * kx - vx * kz)
        az += s * (wx * jy - wy * jx + vx * ky - vy * kx)
        bx += s * (wy * kz - wz * ky)
        by += s * (wz * kx - wx * kz)
        bz += s * (wx * ky - wy * kx)
        vx, vy, vz = vx + s * jx, vy + s * jy, vz + s * jz
        wx, wy, wz = wx + s * kx, wy + s * ky, wz + s * kz
    return (ax + wy * vz - wz * vy, ay + wz * vx - wx * vz, az + wx * vy - wy * vx,
            bx, by, bz)


# ---- the per-model object -----------------------------------------------------------------

class ChainKinematics:
    """The tip kinematics of one :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.

    Holds the model's constants as floats (DH rows with cos/sin of alpha, frame 0, tool
    transform, URDF link offsets) and nothing that changes: its methods are pure
    functions of their arguments (safe to share between threads).  Build it once per
    model (:func:`chain_kinematics` caches one) and call :meth:`update` on the control
    path.

    Attributes:
        n: number of joints.
        convention: :class:`~ne_dynamics_ros.dynamics.dh.Convention` of the model.
        joint_names: the model's joint names (chain order).
        base_link, tip_link: URDF names of the chain ends.
    """

    def __init__(self, model):
        """Take the constants of ``model`` (a RobotModel; it is not kept)."""
        self.n = model.n
        self.convention = Convention.parse(model.convention)
        self.joint_names = list(model.joint_names)
        self.base_link, self.tip_link = model.base_link, model.tip_link
        self._dh_rows = tuple(model.dh_table())
        self._rows = tuple(
            (bool(p), row.a, math.cos(row.alpha), math.sin(row.alpha), row.d, row.theta,
             math.cos(row.theta), math.sin(row.theta))
            for row, p in zip(self._dh_rows, model.prismatic))
        self._prismatic = tuple(bool(p) for p in model.prismatic)
        self._base = np.array(model.base_transform, dtype=float)
        self._tool = np.array(model.tool_transform, dtype=float)
        self._start = _frame_floats(self._base)
        self._tool_floats = _frame_floats(self._tool)
        self._walk = _walk_mdh if self.convention is Convention.MDH else _walk_dh
        self._links = _link_table(model)
        #: links lumped into a body (fixed to its child link), which keep no pose
        self._lumped = {name: joint.child_link
                        for joint, names in zip(model.chain.joints, model.chain.body_links)
                        for name in names[1:]}

    def _values(self, value, name):
        """``value`` as a list of n finite floats.

        Raises:
            StateError: not n numbers, or NaN/inf (naming ``name`` and the joints).
        """
        try:
            values = [float(v) for v in value]
        except (TypeError, ValueError):
            raise StateError(f'{name} must be {self.n} numbers for joints '
                             f'{self.joint_names}, got {value!r}') from None
        if len(values) != self.n:
            raise StateError(f'{name} must have shape ({self.n},) for joints '
                             f'{self.joint_names}, got {len(values)} values')
        if not math.isfinite(sum(values)) and not all(map(math.isfinite, values)):
            raise StateError(f'{name} contains NaN or inf: {values}')
        return values

    def pose(self, q):
        """Pose of the tip link in the base link frame, (4, 4), m.

        Args:
            q: (n,) joint values, rad (m for prismatic joints).

        Raises:
            StateError: ``q`` not n finite numbers.
        """
        _, frame = self._walk(self._rows, self._start, self._values(q, 'q'))
        return _matrix(_compose(frame, self._tool_floats))

    def jacobian(self, q):
        """Geometric Jacobian of the tip link origin, (6, n), base link frame.

        Rows ``[v; ω]``: column i is ``[z_i × (p_tip − p_i); z_i]`` for a revolute joint
        and ``[z_i; 0]`` for a prismatic one, with z_i the unit axis of joint i (pointing
        along its URDF axis, so a positive q̇_i turns or slides the tip about or along
        +z_i) and p_i a point on it (Siciliano et al. 2009, eq. 3.30).  ``[v; ω] = J q̇``
        is the tip's velocity, m/s and rad/s for q̇ in rad/s (m/s): Pinocchio's
        ``LOCAL_WORLD_ALIGNED`` frame Jacobian.

        Args:
            q: (n,) joint values, rad (m for prismatic joints).

        Raises:
            StateError: ``q`` not n finite numbers.
        """
        axes, frame = self._walk(self._rows, self._start, self._values(q, 'q'))
        tip = _compose(frame, self._tool_floats)
        return np.array(_columns(axes, self._prismatic, tip)).T

    def pose_and_jacobian(self, q):
        """Return ``(T, J)``: :meth:`pose` and :meth:`jacobian` from one walk of the chain.

        Raises:
            StateError: ``q`` not n finite numbers.
        """
        axes, frame = self._walk(self._rows, self._start, self._values(q, 'q'))
        tip = _compose(frame, self._tool_floats)
        return _matrix(tip), np.array(_columns(axes, self._prismatic, tip)).T

    def update(self, q, qd):
        """Tip pose, Jacobian and ``J̇ q̇`` at one joint state, in one walk of the chain.

        The control path's call (operational-space and impedance laws need all three:
        ``ẍ = J q̈ + J̇ q̇``, Khatib 1987).

        Args:
            q: (n,) joint values, rad (m for prismatic joints).
            qd: (n,) joint rates, rad/s (m/s).

        Returns:
            ``(T, J, a)``: T (4, 4) the tip pose (:meth:`pose`), J (6, n) the geometric
            Jacobian (:meth:`jacobian`), a (6,) ``J̇(q, q̇) q̇ = [v̇; ω̇]`` at q̈ = 0, the
            classical acceleration of the tip origin (m/s²) and the tip's angular
            acceleration (rad/s²), base link frame; Pinocchio's
            ``getFrameClassicalAcceleration(..., LOCAL_WORLD_ALIGNED)`` after
            ``forwardKinematics(q, q̇, 0)``.

        Raises:
            StateError: ``q`` or ``qd`` not n finite numbers.
        """
        axes, frame = self._walk(self._rows, self._start, self._values(q, 'q'))
        tip = _compose(frame, self._tool_floats)
        columns = _columns(axes, self._prismatic, tip)
        bias = _bias(columns, self._values(qd, 'qd'))
        return _matrix(tip), np.array(columns).T, np.array(bias)

    def frame_poses(self, q):
        """Poses of DH frames 0..n in the base link frame, a list of n + 1 (4, 4), m.

        Args:
            q: (n,) joint values, rad (m for prismatic joints).

        Raises:
            StateError: ``q`` not n finite numbers.
        """
        T = self._base.copy()
        poses = [T]
        for row, qi in zip(self._dh_rows, self._values(q, 'q')):
            T = T @ link_transform(row, qi, self.convention)
            poses.append(T)
        return poses

    def link_pose(self, q, link):
        """Pose of one link of the chain in the base link frame, (4, 4), m.

        Args:
            q: (n,) joint values, rad (m for prismatic joints).
            link: a URDF link name: the base link, the child link of an actuated joint
                or the tip link; or an int k, 0 <= k <= n: DH frame k (frame 0 is fixed
                to the base; frame k, k >= 1, to the body joint k moves).

        Raises:
            ModelError: ``link`` is not a link of the chain with a pose (the message
                names it, and the links that have one), or a frame index out of range.
            StateError: ``q`` not n finite numbers.
        """
        if isinstance(link, (int, np.integer)) and not isinstance(link, bool):
            if not 0 <= link <= self.n:
                raise ModelError(f'DH frame index must be 0..{self.n}, got {link}')
            return self.frame_poses(q)[int(link)]
        if link == self.tip_link:
            return self.pose(q)
        if not isinstance(link, str) or link not in self._links:
            raise ModelError(self._unknown_link(link))
        index, offset = self._links[link]
        if index is None:
            self._values(q, 'q')
            return offset.copy()
        return self.frame_poses(q)[index] @ offset

    def _unknown_link(self, link):
        """Return the message for a link without a pose on this chain."""
        known = list(self._links)
        if isinstance(link, str) and link in self._lumped:
            return (f'link {link!r} is lumped into the body of link '
                    f'{self._lumped[link]!r} (fixed to it); the chain keeps no pose of its '
                    f'own for it: links with a pose are {known}')
        return (f'link {link!r} is not on the chain {self.base_link} -> {self.tip_link}: '
                f'links with a pose are {known}, or give a DH frame index 0..{self.n}')


def _link_table(model):
    """URDF link name -> (DH frame index or None, (4, 4) pose of the link in that frame).

    The base link (None: the base link frame itself), each joint's child link (fixed to
    DH frame k of the body joint k moves) and the tip link (DH frame n).
    """
    zero = np.zeros(model.n)
    frames = model.dh_forward_kinematics(zero)
    links = {model.base_link: (None, np.eye(4))}
    for k, (joint, L) in enumerate(zip(model.chain.joints,
                                       model.chain.link_poses(zero)[:-1]), 1):
        links[joint.child_link] = (k, np.linalg.solve(frames[k], L))
    links[model.tip_link] = (model.n, np.array(model.tool_transform, dtype=float))
    return links


_CACHE = weakref.WeakKeyDictionary()


def chain_kinematics(model):
    """Return the :class:`ChainKinematics` of ``model``, built once per model.

    It is kept while the model lives (a model that takes no weak reference gets a new
    one each call).
    """
    try:
        found = _CACHE.get(model)
    except TypeError:
        return ChainKinematics(model)
    if found is None:
        found = _CACHE[model] = ChainKinematics(model)
    return found


# ---- functions of a model -----------------------------------------------------------------

def tip_pose(model, q):
    """Pose of ``model.tip_link`` in the base link frame, (4, 4), m.

    The same as ``model.dh_forward_kinematics(q)[-1]``, without the intermediate
    matrices.  See :meth:`ChainKinematics.pose`; raises StateError for a bad ``q``.
    """
    return chain_kinematics(model).pose(q)


def link_pose(model, q, link):
    """Pose of a link of the chain by URDF name or DH frame index, (4, 4), base link frame.

    See :meth:`ChainKinematics.link_pose` (ModelError naming an unknown link).
    """
    return chain_kinematics(model).link_pose(q, link)


def jacobian(model, q):
    """Geometric Jacobian ``[v; ω] = J q̇`` of the tip link origin, (6, n), base link frame.

    See :meth:`ChainKinematics.jacobian` (Siciliano et al. 2009, eq. 3.30).
    """
    return chain_kinematics(model).jacobian(q)


def jacobian_dot_qd(model, q, qd):
    """``J̇(q, q̇) q̇``, (6,): the tip's classical acceleration ``[v̇; ω̇]`` at q̈ = 0.

    m/s² and rad/s², base link frame (the term of ``ẍ = J q̈ + J̇ q̇`` that operational-space
    control compensates, Khatib 1987).  See :meth:`ChainKinematics.update`.
    """
    return chain_kinematics(model).update(q, qd)[2]


def tip_kinematics(model, q, qd):
    """Return the tip's ``(T (4, 4), J (6, n), J̇q̇ (6,))`` in one walk of the chain.

    See :meth:`ChainKinematics.update` (raises StateError for a bad ``q`` or ``qd``).
    """
    return chain_kinematics(model).update(q, qd)


# ---- rotations, quaternions, errors -------------------------------------------------------

def _finite(value, shape, name):
    """``value`` as a float array of ``shape``; ValueError naming ``name`` otherwise."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be numeric, got {value!r}') from None
    if arr.shape != shape or not np.isfinite(arr).all():
        raise ValueError(f'{name} must be a finite array of shape {shape}, got shape '
                         f'{arr.shape}' + ('' if arr.shape != shape else ' with NaN/inf'))
    return arr


def _log(rows):
    """Rotation vector (3 floats) of a rotation matrix given as three rows of floats."""
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = rows
    vx, vy, vz = 0.5 * (r21 - r12), 0.5 * (r02 - r20), 0.5 * (r10 - r01)    # sin θ · u
    s = math.sqrt(vx * vx + vy * vy + vz * vz)
    c = 0.5 * (r00 + r11 + r22 - 1.0)                                       # cos θ
    theta = math.atan2(s, c)
    if c > 0.0:                               # θ < π/2: the axis from the skew part
        scale = theta / s if s > SMALL_ANGLE else 1.0 + s * s / 6.0
        return vx * scale, vy * scale, vz * scale
    # θ >= π/2: from the symmetric part (R + Rᵀ)/2 − cos θ E = (1 − cos θ) u uᵀ, whose
    # largest diagonal entry names a well-conditioned column; the skew part gives the sign
    d0, d1, d2 = r00 - c, r11 - c, r22 - c
    if d0 >= d1 and d0 >= d2:
        ux, uy, uz = d0, 0.5 * (r01 + r10), 0.5 * (r02 + r20)
    elif d1 >= d2:
        ux, uy, uz = 0.5 * (r01 + r10), d1, 0.5 * (r12 + r21)
    else:
        ux, uy, uz = 0.5 * (r02 + r20), 0.5 * (r12 + r21), d2
    norm = math.sqrt(ux * ux + uy * uy + uz * uz)
    if ux * vx + uy * vy + uz * vz < 0.0:
        norm = -norm
    return theta * ux / norm, theta * uy / norm, theta * uz / norm


def rotation_log(R):
    """Rotation vector ``w = θ u`` of a rotation matrix, (3,), rad: ``R = exp([w]×)``.

    θ in [0, π]; accurate to rounding for every angle, 0 and π included (at exactly π
    either of ±π u may be returned; both are the same rotation).  The inverse of
    :func:`rotation_exp` (Siciliano et al. 2009, §2.5; Murray, Li & Sastry 1994, §2.2).

    Args:
        R: (3, 3) rotation matrix.

    Raises:
        ValueError: not a finite (3, 3) array.
    """
    return np.array(_log(_finite(R, (3, 3), 'R').tolist()))


def rotation_exp(w):
    """Rotation matrix ``exp([w]×)``, (3, 3), of a rotation vector w (rad), by Rodrigues.

    ``R = cos θ E + (sin θ / θ) [w]× + ((1 − cos θ) / θ²) w wᵀ``, θ = ‖w‖, with series
    below :data:`SMALL_ANGLE` (Murray, Li & Sastry 1994, §2.2).

    Raises:
        ValueError: not a finite 3-vector.
    """
    wx, wy, wz = _finite(w, (3,), 'w').tolist()
    theta = math.sqrt(wx * wx + wy * wy + wz * wz)
    if theta < SMALL_ANGLE:
        a, b = 1.0 - theta * theta / 6.0, 0.5 - theta * theta / 24.0
    else:
        a, b = math.sin(theta) / theta, 2.0 * (math.sin(0.5 * theta) / theta) ** 2
    c = math.cos(theta)
    return np.array(((c + b * wx * wx, b * wx * wy - a * wz, b * wx * wz + a * wy),
                     (b * wy * wx + a * wz, c + b * wy * wy, b * wy * wz - a * wx),
                     (b * wz * wx - a * wy, b * wz * wy + a * wx, c + b * wz * wz)))


def pose_error(T_target, T):
    """Pose error ``[p_target − p; log(R_target Rᵀ)]``, (6,), base link frame.

    Position error in m, then the rotation vector (rad) of the rotation that takes R to
    R_target, expressed in the base link frame (the angle-and-axis orientation error of
    Siciliano et al. 2009, §3.7.3); zero when the poses are equal, and for small errors
    ``≈ J Δq`` with :func:`jacobian`'s rows.

    Args:
        T_target, T: (4, 4) poses in the base link frame (rotations orthonormal).

    Raises:
        ValueError: not finite (4, 4) arrays.
    """
    A = _finite(T_target, (4, 4), 'T_target')
    B = _finite(T, (4, 4), 'T')
    out = np.empty(6)
    out[:3] = A[:3, 3] - B[:3, 3]
    out[3:] = _log((A[:3, :3] @ B[:3, :3].T).tolist())
    return out


def quaternion_to_matrix(x, y, z, w):
    """Rotation matrix (3, 3) of the quaternion ``w + x i + y j + z k`` (ROS's x, y, z, w).

    The quaternion is normalised first (Siciliano et al. 2009, §2.6).

    Raises:
        ValueError: a component not finite, or all four zero.
    """
    try:
        values = [float(v) for v in (x, y, z, w)]
    except (TypeError, ValueError):
        raise ValueError(f'quaternion components must be numbers, got {(x, y, z, w)!r}') \
            from None
    norm = math.hypot(*values)
    if not math.isfinite(norm) or norm == 0.0:
        raise ValueError(f'quaternion (x, y, z, w) = {tuple(values)} must be finite and '
                         'non-zero')
    x, y, z, w = (v / norm for v in values)
    return np.array(((1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)),
                     (2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)),
                     (2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y))))


def matrix_to_quaternion(R):
    """Return the unit quaternion ``(x, y, z, w)`` (ROS's order, w >= 0) of a rotation matrix.

    Shepperd's (1978) method: the largest of 1 + tr R and 1 + 2 r_kk − tr R gives the
    square root, so the result is accurate for every rotation.

    Args:
        R: (3, 3) rotation matrix.

    Raises:
        ValueError: not a finite (3, 3) array.
    """
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = _finite(R, (3, 3), 'R').tolist()
    trace = r00 + r11 + r22
    largest = max(trace, r00, r11, r22)
    if largest == trace:
        w = 0.5 * math.sqrt(max(1.0 + trace, 0.0))
        f = 0.25 / w
        x, y, z = (r21 - r12) * f, (r02 - r20) * f, (r10 - r01) * f
    elif largest == r00:
        x = 0.5 * math.sqrt(max(1.0 + r00 - r11 - r22, 0.0))
        f = 0.25 / x
        w, y, z = (r21 - r12) * f, (r01 + r10) * f, (r02 + r20) * f
    elif largest == r11:
        y = 0.5 * math.sqrt(max(1.0 - r00 + r11 - r22, 0.0))
        f = 0.25 / y
        w, x, z = (r02 - r20) * f, (r01 + r10) * f, (r12 + r21) * f
    else:
        z = 0.5 * math.sqrt(max(1.0 - r00 - r11 + r22, 0.0))
        f = 0.25 / z
        w, x, y = (r10 - r01) * f, (r02 + r20) * f, (r12 + r21) * f
    norm = math.hypot(x, y, z, w) * (-1.0 if w < 0.0 else 1.0)
    return x / norm, y / norm, z / norm, w / norm


def manipulability(J):
    """Yoshikawa's (1985) manipulability ``sqrt(det(J Jᵀ))`` of a (m, n) Jacobian.

    For n < m (fewer joints than task coordinates) ``J Jᵀ`` is singular and the
    product of the n singular values of J is returned instead (the same measure on the
    reachable subspace).  Units mix m and rad (the rows of :func:`jacobian`): compare
    values of one arm and one tool only.

    Raises:
        ValueError: J not a finite two-dimensional array.
    """
    try:
        J = np.asarray(J, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f'J must be numeric, got {J!r}') from None
    if J.ndim != 2 or J.size == 0 or not np.isfinite(J).all():
        raise ValueError(f'J must be a finite, non-empty (m, n) array, got shape {J.shape}')
    if J.shape[1] >= J.shape[0]:
        return math.sqrt(max(float(np.linalg.det(J @ J.T)), 0.0))
    return float(np.prod(np.linalg.svd(J, compute_uv=False)))
