"""RobotModel: a URDF chain in DH/MDH form with its Newton–Euler dynamics (no ROS imports).

Sign convention everywhere: ``M(q) q̈ + C(q, q̇) q̇ + g(q) = tau + J_tipᵀ w_tip`` with joint
values, rates and efforts in URDF joint coordinates (what ``/joint_states`` carries), in
the chain order of :attr:`RobotModel.joint_names`; rad, rad/s, rad/s², N·m for revolute
and continuous joints, m, m/s, m/s², N for prismatic ones.
"""
import math

import numpy as np

from .dh import Convention, dh_frames, JointType, link_transform
from .friction import drive_friction
from ..errors import ModelError, StateError, URDFError
from .rnea import LinkDynamics, rnea_dh, rnea_mdh
from .standard_parameters import model_with_parameters, standard_parameters
from .regressor import regressor, STANDARD_GRAVITY
from .urdf_import import build_chain, parse_urdf


def load_model(urdf, base_link=None, tip_link=None, convention='mdh', armature=None,
               coulomb_velocity=0.01, damping=None, friction=None, max_bytes=None,
               friction_velocity=None, friction_offset=None):
    """Read a URDF and build a :class:`RobotModel`.

    Args:
        urdf: URDF XML text or a path to a URDF file.
        base_link: first link of the chain (fixed base); default the URDF root link.
        tip_link: last link; default the single end of the movable tree (see
            :func:`ne_dynamics_ros.dynamics.urdf_import.build_chain`).
        convention: ``'mdh'`` (modified DH and the recursion of Craig 2005, §6.5) or
            ``'dh'`` (standard DH and the Luh–Walker–Paul recursion as Lee et al. 1982
            write it, eqs 3.21–3.27).
        armature: None or (n,) reflected rotor inertia per actuated joint, G²·J_m
            (kg·m² for revolute, kg for prismatic), in chain order; added as
            ``armature * q̈`` (Pinocchio's convention).
        coulomb_velocity: velocity scale v_s (rad/s or m/s, > 0) of the Coulomb friction
            smoothing ``friction * tanh(q̇ / v_s)`` in :meth:`RobotModel.friction_torques`.
        damping, friction: None (the URDF's ``<dynamics>``) or (n,) viscous (N·m·s/rad or
            N·s/m) and Coulomb (N·m or N) friction per joint, >= 0, replacing the URDF's
            (e.g. identified values from ``ne-dynamics identify``'s parameter YAML).
        max_bytes: largest URDF accepted, bytes (default
            :data:`~ne_dynamics_ros.dynamics.urdf_import.MAX_URDF_BYTES`, 16 MiB).
        friction_velocity: None or (n,) identified v_s per joint, > 0 (rad/s or m/s),
            replacing ``coulomb_velocity`` in :meth:`RobotModel.friction_torques` (the
            friction at measured velocities; ``ne-dynamics identify`` writes it).
        friction_offset: None or (n,) constant effort per joint, N·m (N), added to the
            friction (a drive's or torque sensor's offset; identified, 0 by default).

    Returns:
        RobotModel.

    Raises:
        URDFError, InertiaError: see :func:`ne_dynamics_ros.dynamics.urdf_import.parse_urdf` and
            :func:`~ne_dynamics_ros.dynamics.urdf_import.build_chain`.
        ModelError: bad ``convention``, ``armature``, ``coulomb_velocity``, ``damping``,
            ``friction``, ``friction_velocity`` or ``friction_offset``.
    """
    convention = Convention.parse(convention)
    for name, value in (('base_link', base_link), ('tip_link', tip_link)):
        if value is not None and not isinstance(value, str):
            raise URDFError(f'{name} must be a link name (text), got {type(value).__name__}')
    chain = build_chain(parse_urdf(urdf, max_bytes), base_link, tip_link)
    model = RobotModel(chain, convention, armature, coulomb_velocity)
    for name, value in (('damping', damping), ('friction', friction)):
        if value is not None:
            values = model.checked_vector(value, name, allow_batch=False)
            if np.any(values < 0):
                raise ModelError(f'{name} must be >= 0 per joint, got {values.tolist()}')
            setattr(model, name, values)
    model.set_friction_shape(friction_velocity, friction_offset)
    return model


def finite_efforts(values, what):
    """Return ``values`` if all finite.

    Raises:
        StateError: naming ``what``: the result overflowed double precision (the inputs
            were finite, far beyond any arm).
    """
    if not np.all(np.isfinite(values)):
        raise StateError(f'{what}: the result is not finite in double precision for this '
                         'state (velocities or accelerations far beyond any arm)')
    return values


class RobotModel:
    """A serial arm in DH/MDH form with recursive Newton–Euler dynamics.

    Build it with :func:`load_model`.  The model is constant after construction.

    Attributes:
        joint_names: list of the n actuated URDF joints, base to tip.
        n: number of actuated joints.
        convention: :class:`~ne_dynamics_ros.dynamics.dh.Convention`.
        base_link, tip_link: URDF link names of the chain ends.
        base_transform: (4, 4) pose of DH frame 0 in the base link frame.
        tool_transform: (4, 4) pose of the tip link in DH frame n.
        joint_types: list of :class:`~ne_dynamics_ros.dynamics.dh.JointType`.
        lower_limits, upper_limits: (n,) rad or m (-inf/inf when absent or continuous).
        effort_limits: (n,) N·m or N (inf when absent or zero in the URDF).
        velocity_limits: (n,) rad/s or m/s (inf when absent).
        damping: (n,) viscous coefficients from URDF ``<dynamics damping>``.
        friction: (n,) Coulomb levels from URDF ``<dynamics friction>``.
        armature: (n,) reflected rotor inertias (kg·m² or kg).
        links: tuple of :class:`~ne_dynamics_ros.dynamics.rnea.LinkDynamics` in DH frames.
        warnings: notes from the URDF import (e.g. side joints lumped at zero).
        chain: the :class:`~ne_dynamics_ros.dynamics.urdf_import.Chain` it was built from
            (URDF frames; :class:`RobotModel` of another convention can be built from it).
        prismatic: (n,) bool, which joints are prismatic.
        theta_offsets, d_offsets: (n,) the DH/MDH ``theta`` (rad) and ``d`` (m) at q = 0.
    """

    def __init__(self, chain, convention, armature=None, coulomb_velocity=0.01):
        """Build from a :class:`~ne_dynamics_ros.dynamics.urdf_import.Chain` (see load_model)."""
        self.chain = chain
        self.convention = Convention.parse(convention)
        self.joint_names = [j.name for j in chain.joints]
        self.n = chain.n
        self.base_link, self.tip_link = chain.base_link, chain.tip_link
        self.warnings = list(chain.warnings)

        frames = dh_frames(chain, self.convention)
        self._rows = frames.rows
        self.base_transform = frames.frames[0]
        poses = chain.link_poses(np.zeros(self.n))
        self.tool_transform = np.linalg.inv(frames.frames[-1]) @ poses[-1]
        links = []
        for row, body, F, L in zip(frames.rows, chain.bodies, frames.frames[1:], poses[:-1]):
            # Both the DH frame i and the URDF child link frame are fixed to body i.
            in_dh = body.transformed(np.linalg.inv(F) @ L)
            c = in_dh.com
            inertia_origin = in_dh.inertia + in_dh.mass * (c @ c * np.eye(3) - np.outer(c, c))
            links.append(LinkDynamics(
                prismatic=row.type is JointType.PRISMATIC, a=row.a, alpha=row.alpha,
                d=row.d, theta=row.theta, cos_alpha=math.cos(row.alpha),
                sin_alpha=math.sin(row.alpha), mass=in_dh.mass,
                first_moment=tuple((in_dh.mass * c).tolist()),
                inertia_origin=tuple(tuple(r) for r in inertia_origin.tolist())))
        self.links = tuple(links)
        self._recursion = rnea_mdh if self.convention is Convention.MDH else rnea_dh

        self.joint_types = [row.type for row in self._rows]
        self.prismatic = np.array([t is JointType.PRISMATIC for t in self.joint_types])
        self.theta_offsets = np.array([row.theta for row in self._rows])
        self.d_offsets = np.array([row.d for row in self._rows])
        self.lower_limits = np.array([j.lower for j in chain.joints], dtype=float)
        self.upper_limits = np.array([j.upper for j in chain.joints], dtype=float)
        self.effort_limits = np.array([j.effort_limit for j in chain.joints], dtype=float)
        self.velocity_limits = np.array([j.velocity_limit for j in chain.joints], dtype=float)
        self.damping = np.array([j.damping for j in chain.joints], dtype=float)
        self.friction = np.array([j.friction for j in chain.joints], dtype=float)
        if armature is None:
            armature = np.zeros(self.n)
        self.armature = self.checked_vector(armature, 'armature', allow_batch=False)
        if np.any(self.armature < 0):
            raise ModelError(f'armature must be >= 0, got {self.armature.tolist()}')
        try:
            scale = np.broadcast_to(np.asarray(coulomb_velocity, dtype=float), (self.n,))
        except (TypeError, ValueError):
            scale = np.array([math.nan])
        if isinstance(coulomb_velocity, (bool, str)) or not np.all(
                np.isfinite(scale) & (scale > 0)):
            raise ModelError(f'coulomb_velocity must be a finite number > 0 (or n of them), '
                             f'got {coulomb_velocity!r}')
        #: (n,) v_s of each joint's ``Fc tanh(q̇ / v_s)``, rad/s (m/s).
        self.coulomb_velocity = scale.copy()
        #: (n,) identified v_s (at measured velocities), or None.
        self.friction_velocity = None
        #: (n,) constant effort added to the friction, N·m (N).
        self.friction_offset = np.zeros(self.n)
        self._gravity_cache = (None, None)

    def set_friction_shape(self, friction_velocity=None, friction_offset=None):
        """Set the identified v_s (n,) > 0 and offsets (n,) of the friction (None: keep).

        Raises:
            ModelError: not n finite values, or a v_s that is not > 0.
        """
        if friction_velocity is not None:
            values = self.checked_vector(friction_velocity, 'friction_velocity',
                                         allow_batch=False)
            if np.any(values <= 0):
                raise ModelError(f'friction_velocity must be > 0 per joint, got '
                                 f'{values.tolist()}')
            self.friction_velocity = values
            self.coulomb_velocity = values.copy()
        if friction_offset is not None:
            self.friction_offset = self.checked_vector(friction_offset, 'friction_offset',
                                                       allow_batch=False)

    def __repr__(self):
        """Short description: name of chain ends, convention and joints."""
        return (f'RobotModel({self.base_link} -> {self.tip_link}, '
                f'{self.convention.value}, joints={self.joint_names})')

    # ---- argument checking ------------------------------------------------------------------

    def checked_vector(self, value, name, allow_batch=True):
        """Return ``value`` as a float array of shape (n,) (or (N, n) if ``allow_batch``).

        Raises:
            StateError: not numeric, another shape, or NaN/inf (the message names
                ``name`` and the joints).
        """
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise StateError(f'{name} must be numeric, got {value!r}') from None
        ok_shape = arr.ndim == 1 or (allow_batch and arr.ndim == 2)
        if not ok_shape or arr.shape[-1] != self.n:
            want = f'({self.n},)' + (f' or (N, {self.n})' if allow_batch else '')
            raise StateError(f'{name} must have shape {want} for joints {self.joint_names}, '
                             f'got shape {arr.shape}')
        if not np.isfinite(arr).all():
            raise StateError(f'{name} contains NaN or inf: {arr.tolist()}')
        return arr

    def checked_states(self, **arrays):
        """Return the arrays ``name=value`` checked by :meth:`checked_vector`, as a dict.

        Raises:
            StateError: as :meth:`checked_vector`, or shapes that differ.
        """
        checked = {k: self.checked_vector(v, k) for k, v in arrays.items()}
        shapes = {v.shape for v in checked.values()}
        if len(shapes) > 1:
            detail = ', '.join(f'{k} {v.shape}' for k, v in checked.items())
            raise StateError(f'joint arrays must have the same shape, got {detail}')
        return checked

    @staticmethod
    def _three(value, name):
        try:
            values = [float(v) for v in value]
        except (TypeError, ValueError):
            values = []
        if len(values) != 3 or not all(math.isfinite(v) for v in values):
            raise StateError(f'{name} must be a finite 3-vector, got {value!r}')
        return np.array(values)

    def base_acceleration(self, gravity):
        """Return v̇_0 = -g expressed in DH frame 0, m/s², a 3-tuple (cached for a repeated g).

        ``gravity``: the 3-vector in the base link frame. Newton–Euler takes gravity as an
        upward acceleration of the base (Craig 2005, §6.5; Pinocchio likewise).

        Raises:
            StateError: not a finite 3-vector.
        """
        g = tuple(self._three(gravity, 'gravity').tolist())
        if g != self._gravity_cache[0]:
            R0 = self.base_transform[:3, :3]
            self._gravity_cache = (g, tuple((-(R0.T @ np.array(g))).tolist()))
        return self._gravity_cache[1]

    # ---- dynamics ---------------------------------------------------------------------------

    def rnea(self, q, qd, qdd, gravity=STANDARD_GRAVITY, f_tip=None):
        """Inverse dynamics by the recursive Newton–Euler algorithm.

        ``tau = M(q) q̈ + C(q, q̇) q̇ + g(q) + armature * q̈ - J_tipᵀ w_tip``.

        The recursion is that of Craig (2005), §6.5, for ``mdh`` models and the
        Luh–Walker–Paul form of Lee et al. (1982), eqs 3.21–3.27, for ``dh``; prismatic
        terms as in Sasaki (1990), eqs 2.31–2.39.

        Args:
            q, qd, qdd: (n,) or (N, n) joint positions (rad | m), velocities, accelerations,
                URDF joint coordinates, order :attr:`joint_names`.  A batch of N states is
                vectorised over N.
            gravity: (3,) gravitational acceleration in the base link frame, m/s²;
                enters as base acceleration v̇_0 = -g (Angeles 2007, eq. 7.44).
            f_tip: None or (6,) wrench (force N, moment N·m) exerted by the environment
                on the tip link, about the tip link origin, in the tip link frame
                (Angeles 2007, eq. 7.38).  The same wrench is used for every state of a
                batch.

        Returns:
            (n,) or (N, n) joint efforts, N·m (revolute) / N (prismatic).

        Raises:
            StateError: wrong shapes, mismatched shapes, NaN or inf; or efforts that are
                not finite (a state so large that double precision overflows).
        """
        s = self.checked_states(q=q, qd=qd, qdd=qdd)
        with np.errstate(over='ignore', invalid='ignore'):
            tau = self._rigid_body(s['q'], s['qd'], s['qdd'], gravity, f_tip)
            tau = tau + self.armature * s['qdd']
        return finite_efforts(tau, 'rnea')

    def _rigid_body(self, q, qd, qdd, gravity, f_tip):
        """Rigid-body RNEA on validated arrays (no armature)."""
        base_acc = self.base_acceleration(gravity)
        f_end = n_end = (0.0, 0.0, 0.0)
        if f_tip is not None:
            w = np.asarray(f_tip, dtype=float)
            if w.shape != (6,) or not np.all(np.isfinite(w)):
                raise StateError(f'f_tip must be a finite 6-vector (force, moment), got {f_tip!r}')
            # Wrench of the environment on the tip, moved to DH frame n; link n exerts
            # the opposite on the environment.
            R, p = self.tool_transform[:3, :3], self.tool_transform[:3, 3]
            force = R @ w[:3]
            moment = R @ w[3:] + np.cross(p, force)
            f_end, n_end = tuple((-force).tolist()), tuple((-moment).tolist())
        if q.ndim == 2 and q.shape[0] == 1:   # one state: the scalar path is faster
            return self._rigid_body(q[0], qd[0], qdd[0], gravity, f_tip)[None, :]
        if q.ndim == 1:
            theta, d = [], []
            for link, qi in zip(self.links, q.tolist()):
                theta.append(link.theta if link.prismatic else link.theta + qi)
                d.append(link.d + qi if link.prismatic else link.d)
            tau = self._recursion(self.links, [math.cos(t) for t in theta],
                                  [math.sin(t) for t in theta], d, qd.tolist(),
                                  qdd.tolist(), base_acc, f_end, n_end)
            return np.array(tau, dtype=float)
        theta = self.theta_offsets[:, None] + np.where(self.prismatic[:, None], 0.0, q.T)
        d = self.d_offsets[:, None] + np.where(self.prismatic[:, None], q.T, 0.0)
        tau = self._recursion(self.links, np.cos(theta), np.sin(theta), d,
                              np.ascontiguousarray(qd.T), np.ascontiguousarray(qdd.T),
                              base_acc, f_end, n_end)
        return np.stack([np.broadcast_to(t, (q.shape[0],)) for t in tau], axis=1)

    def gravity_torques(self, q, gravity=STANDARD_GRAVITY):
        """Gravity efforts g(q) = rnea(q, 0, 0), (n,) or (N, n), N·m / N.

        As in Angeles (2007), §7.5.
        """
        q = self.checked_vector(q, 'q')
        zero = np.zeros_like(q)
        return self.rnea(q, zero, zero, gravity)

    def coriolis_torques(self, q, qd):
        """Coriolis and centrifugal efforts C(q, q̇) q̇ = rnea(q, q̇, 0) with g = 0.

        Args:
            q, qd: (n,) or (N, n).

        Returns:
            (n,) or (N, n), N·m / N.
        """
        s = self.checked_states(q=q, qd=qd)
        return self.rnea(s['q'], s['qd'], np.zeros_like(s['q']), (0.0, 0.0, 0.0))

    def mass_matrix(self, q):
        """Joint-space inertia matrix M(q) including armature (Angeles 2007, §7.5).

        Column j is rnea(q, 0, e_j) with gravity off, computed for all columns in one
        batched recursion.

        Args:
            q: (n,) joint positions.

        Returns:
            (n, n) symmetric positive definite (for a physically valid model), kg·m² / kg.
        """
        q = self.checked_vector(q, 'q', allow_batch=False)
        eye = np.eye(self.n)
        M = self.rnea(np.tile(q, (self.n, 1)), np.zeros((self.n, self.n)), eye,
                      (0.0, 0.0, 0.0))
        M = M.T
        return 0.5 * (M + M.T)

    def forward_dynamics(self, q, qd, tau, gravity=STANDARD_GRAVITY, f_tip=None):
        """Joint accelerations q̈ = M(q)⁻¹ (tau - C(q, q̇) q̇ - g(q) + J_tipᵀ w_tip).

        Solved through the mass matrix, as in Angeles (2007), §7.5.

        Args:
            q, qd, tau: (n,) joint positions, velocities and applied efforts.
            gravity, f_tip: as in :meth:`rnea`.

        Returns:
            (n,) accelerations, rad/s² / m/s².

        Raises:
            StateError: bad arrays.
        """
        q, qd, tau = (self.checked_vector(value, name, allow_batch=False)
                      for name, value in (('q', q), ('qd', qd), ('tau', tau)))
        bias = self.rnea(q, qd, np.zeros(self.n), gravity, f_tip)
        return np.linalg.solve(self.mass_matrix(q), tau - bias)

    def standard_parameters(self):
        """Khalil's standard parameters (13 n,): XX ... ZZ, MX, MY, MZ, M, Ia, Fv, Fc per joint.

        Moments of link j at origin O_j in the model's DH/MDH frame j (see
        :mod:`ne_dynamics_ros.dynamics.standard_parameters` for names and units).
        """
        return standard_parameters(self)

    def with_parameters(self, parameters):
        """Return a copy of this model with the (13 n,) standard parameters replaced.

        Raises:
            ModelError: wrong length or NaN/inf (see
                :func:`~ne_dynamics_ros.dynamics.standard_parameters.model_with_parameters`).
        """
        return model_with_parameters(self, parameters)

    def regressor(self, q, qd, qdd, gravity=STANDARD_GRAVITY):
        """Joint-torque regressor W, ``W @ standard_parameters() = rnea + friction_torques``.

        Args:
            q, qd, qdd: (n,) or (N, n).
            gravity: (3,) m/s², base link frame.

        Returns:
            (n, 13 n) or (N, n, 13 n); see :func:`ne_dynamics_ros.dynamics.regressor.regressor`.
        """
        return regressor(self, q, qd, qdd, gravity)

    def friction_torques(self, qd):
        """Joint friction efforts from URDF ``<dynamics damping friction>``.

        ``tau_f = damping * q̇ + friction * tanh(q̇ / v_s) + friction_offset``
        (:func:`~ne_dynamics_ros.dynamics.friction.drive_friction`, with velocity scale
        ``v_s = coulomb_velocity`` given to :func:`load_model`). Positive values oppose
        motion when subtracted from the applied effort, i.e. the arm needs
        ``tau + tau_f`` to move at q̇.

        Args:
            qd: (n,) or (N, n) joint velocities.

        Returns:
            same shape as ``qd``, N·m / N.
        """
        qd = self.checked_vector(qd, 'qd')
        return drive_friction(qd, self.damping, self.friction, self.coulomb_velocity,
                              self.friction_offset)

    # ---- kinematics and tables ----------------------------------------------------------

    def dh_table(self):
        """Return the DH (or MDH) table, one :class:`~ne_dynamics_ros.dynamics.dh.DHRow` per joint.

        Lengths in m, angles in rad.  For MDH rows ``a`` and ``alpha`` are a[i-1],
        alpha[i-1].  ``theta`` and ``d`` are offsets: the joint adds q to ``theta``
        (revolute) or ``d`` (prismatic).
        """
        return list(self._rows)

    def dh_forward_kinematics(self, q):
        """Poses of DH frames 0..n and of the tip link, from the DH chain.

        Args:
            q: (n,) joint values.

        Returns:
            list of n + 2 (4, 4) poses in the base link frame: frames 0..n, then the tip.
        """
        q = self.checked_vector(q, 'q', allow_batch=False)
        T = self.base_transform.copy()
        poses = [T]
        for row, qi in zip(self._rows, q):
            T = T @ link_transform(row, qi, self.convention)
            poses.append(T)
        poses.append(T @ self.tool_transform)
        return poses

    def urdf_forward_kinematics(self, q):
        """Poses of each joint's child link and of the tip, from the URDF chain.

        Args:
            q: (n,) joint values.

        Returns:
            list of n + 1 (4, 4) poses in the base link frame.
        """
        q = self.checked_vector(q, 'q', allow_batch=False)
        return self.chain.link_poses(q)

    def joint_axes(self, q, use_dh=True):
        """Joint axis lines at configuration q, in the base link frame.

        Args:
            q: (n,) joint values.
            use_dh: compute from the DH chain (True) or from the URDF (False).

        Returns:
            (points, directions): two (n, 3) arrays; the axis of joint i passes through
            points[i] with unit direction directions[i].
        """
        if use_dh:
            poses = self.dh_forward_kinematics(q)
            frames = poses[0:self.n] if self.convention is Convention.DH else poses[1:self.n + 1]
            return (np.array([F[:3, 3] for F in frames]), np.array([F[:3, 2] for F in frames]))
        poses = self.urdf_forward_kinematics(q)[:self.n]
        return (np.array([T[:3, 3] for T in poses]),
                np.array([T[:3, :3] @ j.axis for T, j in zip(poses, self.chain.joints)]))


def fk_residual(model, samples=100, seed=0, scale=math.pi):
    """Largest disagreement between DH and URDF forward kinematics over random q.

    For each sample, compares the tip pose (position m, rotation-matrix entries) and every
    joint axis line (direction, and the distance of the URDF axis point from the DH
    axis line, m).  Prismatic joints are sampled in [-0.5, 0.5] m.

    Args:
        model: RobotModel.
        samples: number of random configurations (plus q = 0).
        seed: NumPy seed.
        scale: revolute joints are sampled uniformly in [-scale, scale] rad.

    Returns:
        float, the largest residual (m or dimensionless).
    """
    rng = np.random.default_rng(seed)
    worst = 0.0
    span = np.where(model.prismatic, 0.5, scale)
    for k in range(samples + 1):
        q = np.zeros(model.n) if k == 0 else rng.uniform(-span, span)
        tip_dh = model.dh_forward_kinematics(q)[-1]
        tip_urdf = model.urdf_forward_kinematics(q)[-1]
        worst = max(worst, float(np.max(np.abs(tip_dh - tip_urdf))))
        p_dh, z_dh = model.joint_axes(q, use_dh=True)
        p_u, z_u = model.joint_axes(q, use_dh=False)
        worst = max(worst, float(np.max(np.abs(z_dh - z_u))))
        off = p_u - p_dh
        perp = off - np.sum(off * z_dh, axis=1, keepdims=True) * z_dh
        worst = max(worst, float(np.max(np.linalg.norm(perp, axis=1))))
    return worst
