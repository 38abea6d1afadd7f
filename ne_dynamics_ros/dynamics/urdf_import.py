"""URDF -> serial kinematic chain with lumped rigid bodies (pure Python + NumPy, no ROS).

The document is read and parsed by :mod:`ne_dynamics_ros.dynamics.urdf_text`
(:func:`~ne_dynamics_ros.dynamics.urdf_text.parse_urdf`: size bound, declared encoding,
``defusedxml``, names and numbers checked), whose names are importable from here too.

The chain runs from ``base_link`` to ``tip_link``.  ``revolute``, ``continuous`` and
``prismatic`` joints are actuated.  ``fixed`` joints are merged: their transform folds into
the constant part of the chain and the links they carry are lumped (full inertia tensor,
parallel-axis theorem) into the moving body they hang from.  Links hanging off the chain
through movable joints that are not part of it (a gripper's fingers, say) are lumped as
rigid at those joints' zero position, with a warning.

Frames: every constant transform here is a 4x4 homogeneous matrix ``T_A_B`` giving the
pose of frame B expressed in frame A (metres, radians).  URDF ``rpy`` is the fixed-axis
roll-pitch-yaw ``R = Rz(yaw) Ry(pitch) Rx(roll)``.

Only :class:`~ne_dynamics_ros.errors.URDFError` (and its :class:`InertiaError`) leaves this
module for a bad description: graph walks are iterative and detect cycles; a link with
two parent joints is an error; values beyond :data:`MAX_LENGTH`, :data:`MAX_MASS` and
:data:`MAX_INERTIA` (which no arm has, and whose dynamics overflow double precision) are
refused naming the element.
"""
from dataclasses import dataclass, field
import math
from typing import Tuple

import numpy as np

from ..errors import InertiaError, URDFError
# reading the document is urdf_text's; its names stay importable from here
from .urdf_text import (MAX_URDF_BYTES, parse_urdf, read_urdf_text,  # noqa: F401
                        urdf_xml_bytes)

ACTUATED_TYPES = ('revolute', 'continuous', 'prismatic')

#: Largest absolute length in m, mass in kg and inertia entry in kg·m² accepted: far beyond
#: any arm, far below where the recursion's products overflow double precision.
MAX_LENGTH = 1e4
MAX_MASS = 1e7
MAX_INERTIA = 1e12


@dataclass(frozen=True)
class RigidBody:
    """Mass properties of a rigid body, expressed in one frame F.

    Attributes:
        mass: kg, >= 0.
        com: (3,) centre of mass in F, m.
        inertia: (3, 3) inertia tensor about the centre of mass, axes of F, kg·m².
    """

    mass: float
    com: np.ndarray
    inertia: np.ndarray

    @staticmethod
    def massless():
        """Return a body with zero mass and zero inertia."""
        return RigidBody(0.0, np.zeros(3), np.zeros((3, 3)))

    def transformed(self, T_F_B):
        """Return this body (given in frame B) in frame F; T_F_B is B's pose in F."""
        R = T_F_B[:3, :3]
        return RigidBody(self.mass, T_F_B[:3, :3] @ self.com + T_F_B[:3, 3],
                         R @ self.inertia @ R.T)

    def combined(self, other):
        """Return the union of two bodies given in the same frame (parallel-axis theorem)."""
        mass = self.mass + other.mass
        if mass > 0.0:
            com = (self.mass * self.com + other.mass * other.com) / mass
        else:
            com = np.zeros(3)
        inertia = (self.inertia + _steiner(self.mass, self.com - com)
                   + other.inertia + _steiner(other.mass, other.com - com))
        return RigidBody(mass, com, inertia)


def _steiner(mass, offset):
    """Parallel-axis term m(|r|²E - r rᵀ) for a point mass at ``offset``."""
    return mass * (float(offset @ offset) * np.eye(3) - np.outer(offset, offset))


@dataclass(frozen=True)
class ChainJoint:
    """One actuated joint of the chain, in URDF terms.

    Attributes:
        name: URDF joint name.
        joint_type: 'revolute', 'continuous' or 'prismatic'.
        T_parent_joint: (4, 4) pose of the joint frame (= the child link frame at q = 0)
            in the frame of the previous moving body (the child link of the previous
            actuated joint, or the base link for the first joint); fixed joints in
            between are folded in.
        axis: (3,) unit joint axis in the joint frame (URDF ``<axis>``).
        child_link: URDF name of the link this joint moves.
        lower, upper: position limits (rad or m); -inf/inf when absent or continuous.
        effort_limit: N·m or N; inf when absent or zero.
        velocity_limit: rad/s or m/s; inf when absent or zero.
        damping: viscous coefficient from ``<dynamics damping>``, N·m·s/rad or N·s/m.
        friction: Coulomb level from ``<dynamics friction>``, N·m or N.
    """

    name: str
    joint_type: str
    T_parent_joint: np.ndarray
    axis: np.ndarray
    child_link: str
    lower: float = -math.inf
    upper: float = math.inf
    effort_limit: float = math.inf
    velocity_limit: float = math.inf
    damping: float = 0.0
    friction: float = 0.0

    @property
    def is_prismatic(self):
        """True for a prismatic joint."""
        return self.joint_type == 'prismatic'

    def motion(self, q):
        """(4, 4) transform of the child link frame in the joint frame at joint value ``q``."""
        T = np.eye(4)
        if self.is_prismatic:
            T[:3, 3] = self.axis * q
        else:
            T[:3, :3] = axis_angle(self.axis, q)
        return T


@dataclass(frozen=True)
class Chain:
    """A serial chain read from a URDF.

    Attributes:
        base_link, tip_link: URDF link names at the two ends.
        joints: the actuated joints, base to tip.
        bodies: per joint, the lumped rigid body it moves, expressed in its child link
            frame.
        T_last_tip: (4, 4) pose of the tip link in the child link frame of the last joint.
        warnings: human-readable notes (e.g. movable side joints lumped at zero).
        body_links: per joint, the URDF links lumped into its body (child link first).
    """

    base_link: str
    tip_link: str
    joints: Tuple[ChainJoint, ...]
    bodies: Tuple[RigidBody, ...]
    T_last_tip: np.ndarray
    warnings: Tuple[str, ...] = field(default_factory=tuple)
    body_links: Tuple[Tuple[str, ...], ...] = field(default_factory=tuple)

    @property
    def n(self):
        """Number of actuated joints."""
        return len(self.joints)

    def link_poses(self, q):
        """URDF forward kinematics.

        Args:
            q: (n,) joint values (rad or m), URDF joint coordinates.

        Returns:
            list of n (4, 4) poses of the child link of each joint, then the tip link's
            pose, all in the base link frame.
        """
        T = np.eye(4)
        poses = []
        for joint, qi in zip(self.joints, q):
            T = T @ joint.T_parent_joint @ joint.motion(qi)
            poses.append(T)
        poses.append(T @ self.T_last_tip)
        return poses


def axis_angle(axis, angle):
    """Rotation matrix (3, 3) for a rotation of ``angle`` rad about unit vector ``axis``."""
    x, y, z = axis
    c, s = math.cos(angle), math.sin(angle)
    C = 1.0 - c
    return np.array([
        [c + x * x * C, x * y * C - z * s, x * z * C + y * s],
        [y * x * C + z * s, c + y * y * C, y * z * C - x * s],
        [z * x * C - y * s, z * y * C + x * s, c + z * z * C],
    ])


def rpy_matrix(rpy):
    """URDF fixed-axis roll-pitch-yaw to a rotation matrix: Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(y), math.sin(y))
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def _pose(origin, where):
    """4x4 transform of a urdf_parser_py ``Pose`` (None -> identity), finite-checked."""
    T = np.eye(4)
    if origin is None:
        return T
    xyz = np.asarray(origin.xyz if origin.xyz is not None else [0, 0, 0], dtype=float)
    rpy = np.asarray(origin.rpy if origin.rpy is not None else [0, 0, 0], dtype=float)
    if xyz.shape != (3,) or rpy.shape != (3,) or not (np.all(np.isfinite(xyz))
                                                      and np.all(np.isfinite(rpy))):
        raise URDFError(f'{where}: <origin> must have 3 finite xyz and 3 finite rpy values')
    if np.abs(xyz).max() > MAX_LENGTH or np.abs(rpy).max() > 1e6:
        raise URDFError(f'{where}: <origin xyz="{" ".join(map(str, xyz))}"> is beyond '
                        f'{MAX_LENGTH:g} m (or rpy beyond 1e6 rad): no arm is that large, '
                        'and its dynamics would not be finite')
    T[:3, :3] = rpy_matrix(rpy)
    T[:3, 3] = xyz
    return T


def link_body(link):
    """Return the rigid body of a URDF link in its link frame (massless without <inertial>).

    Raises:
        InertiaError: negative/non-finite mass, or an inertia tensor that is not
            symmetric positive semi-definite or breaks the triangle inequality.
    """
    inertial = link.inertial
    if inertial is None:
        return RigidBody.massless()
    where = f'link "{link.name}" <inertial>'
    mass = inertial.mass if inertial.mass is not None else 0.0
    if not math.isfinite(mass) or mass < 0.0:
        raise InertiaError(f'{where}: mass must be finite and >= 0, got {mass}')
    if mass > MAX_MASS:
        raise InertiaError(f'{where}: mass {mass:g} kg is beyond {MAX_MASS:g} kg')
    if inertial.inertia is None:
        inertia = np.zeros((3, 3))
    else:
        inertia = np.asarray(inertial.inertia.to_matrix(), dtype=float)
    # the bound first: eigenvalues of entries near 1e308 do not converge
    if not np.abs(inertia).max() <= MAX_INERTIA:
        if not np.all(np.isfinite(inertia)):
            raise InertiaError(f'{where}: inertia has non-finite entries')
        raise InertiaError(f'{where}: inertia entries beyond {MAX_INERTIA:g} kg*m^2')
    check_inertia(inertia, where)
    T = _pose(inertial.origin, where)
    return RigidBody(float(mass), np.zeros(3), inertia).transformed(T)


def check_inertia(inertia, where):
    """Validate a (3, 3) inertia tensor about the centre of mass.

    Raises:
        InertiaError: non-finite, not positive semi-definite, or principal moments that
            break the triangle inequality I1 + I2 >= I3 (relative tolerance 1e-9).
    """
    if not np.all(np.isfinite(inertia)):
        raise InertiaError(f'{where}: inertia has non-finite entries')
    eig = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    tol = 1e-9 * max(1e-12, float(np.max(np.abs(eig))))
    if eig[0] < -tol:
        raise InertiaError(f'{where}: inertia tensor is not positive semi-definite '
                           f'(principal moments {eig.tolist()})')
    if eig[0] + eig[1] < eig[2] - tol:
        raise InertiaError(f'{where}: principal moments {eig.tolist()} break the triangle '
                           'inequality I1 + I2 >= I3 (no rigid body has them)')


def _joint_limits(joint):
    lower, upper, effort, velocity = -math.inf, math.inf, math.inf, math.inf
    where = f'joint "{joint.name}"'
    lim = joint.limit
    try:
        if lim is not None:
            if joint.type != 'continuous':
                lower = float(lim.lower) if lim.lower is not None else lower
                upper = float(lim.upper) if lim.upper is not None else upper
            if lim.effort is not None and float(lim.effort) != 0.0:
                effort = float(lim.effort)
            if lim.velocity is not None and float(lim.velocity) != 0.0:
                velocity = float(lim.velocity)
        damping = friction = 0.0
        if joint.dynamics is not None:
            damping = float(joint.dynamics.damping or 0.0)
            friction = float(joint.dynamics.friction or 0.0)
    except (TypeError, ValueError):
        raise URDFError(f'{where}: <limit>/<dynamics> values must be numbers') from None
    for name, value in (('lower', lower), ('upper', upper)):
        if math.isnan(value):
            raise URDFError(f'{where}: <limit {name}> is NaN')
    if lower > upper:
        raise URDFError(f'{where}: <limit lower="{lower}"> is above upper="{upper}"')
    for name, value in (('effort', effort), ('velocity', velocity)):
        if not value > 0:            # NaN, negative (a zero means "absent", as ROS reads it)
            raise URDFError(f'{where}: <limit {name}="{value}"> must be > 0')
    for name, value in (('damping', damping), ('friction', friction)):
        if not (math.isfinite(value) and value >= 0):
            raise URDFError(f'{where}: <dynamics {name}="{value}"> must be finite and >= 0')
    return lower, upper, effort, velocity, damping, friction


def _joint_axis(joint):
    axis = np.asarray(joint.axis if joint.axis is not None else [1.0, 0.0, 0.0], dtype=float)
    norm = float(np.linalg.norm(axis)) if axis.shape == (3,) else 0.0
    if not math.isfinite(norm) or norm < 1e-12:
        raise URDFError(f'joint "{joint.name}": <axis xyz> must be a finite non-zero 3-vector')
    return axis / norm


def build_chain(robot, base_link=None, tip_link=None):
    """Extract the serial chain ``base_link`` -> ``tip_link`` from a parsed URDF.

    Args:
        robot: urdf_parser_py ``Robot`` (see :func:`parse_urdf`).
        base_link: chain start; default the URDF root link.
        tip_link: chain end; default the single end of the movable tree below the base
            (the child link of the only terminal movable joint, continued through fixed
            joints while they do not branch).

    Returns:
        :class:`Chain`.

    Raises:
        URDFError: unknown links, tip not below base, branching tree without a tip (the
            message lists the candidates), no actuated joint, ``floating``/``planar``/
            mimic joints in the chain.
        InertiaError: an unphysical ``<inertial>`` on a link of the chain.
    """
    links = robot.link_map
    children, parent_joint, root = _tree(robot)
    if base_link is None:
        base_link = root
    if base_link not in links:
        raise URDFError(f'base_link "{base_link}" is not a link of robot "{robot.name}"')
    if tip_link is None:
        tip_link = _default_tip(base_link, children)
    if tip_link not in links:
        raise URDFError(f'tip_link "{tip_link}" is not a link of robot "{robot.name}"')
    path = _path(parent_joint, base_link, tip_link)
    joints, T_last_tip = _chain_joints(path, base_link, tip_link)
    on_path = {j.name for j in path}
    warnings = []
    bodies, body_links = [], []
    for k, cj in enumerate(joints):
        stop = joints[k + 1].name if k + 1 < len(joints) else None
        body, names = _lump(links, children, cj.child_link, on_path, stop, warnings)
        bodies.append(body)
        body_links.append(names)
    return Chain(base_link, tip_link, tuple(joints), tuple(bodies), T_last_tip,
                 tuple(warnings), tuple(body_links))


def _tree(robot):
    """Return ``(children, parent_joint, root)`` of a URDF that is checked to be a tree.

    ``children``: link name -> its child joints; ``parent_joint``: link name -> the joint
    above it. Raises URDFError for two parent joints, not one root, or a cycle.
    """
    links = robot.link_map
    children = {name: [] for name in links}
    parent_joint = {}
    for joint in robot.joints:
        children[joint.parent].append(joint)
        if joint.child in parent_joint:
            raise URDFError(f'link "{joint.child}" has two parent joints, '
                            f'"{parent_joint[joint.child].name}" and "{joint.name}"; a URDF '
                            'is a tree')
        parent_joint[joint.child] = joint
    roots = [name for name in links if name not in parent_joint]
    if len(roots) != 1:
        raise URDFError(f'URDF must have exactly one root link, found {sorted(roots)[:10]}')
    # a tree: every link reachable from the root (a loop is not, having no root of its own)
    reached, stack = {roots[0]}, [roots[0]]
    while stack:
        for joint in children[stack.pop()]:
            if joint.child not in reached:
                reached.add(joint.child)
                stack.append(joint.child)
    if len(reached) != len(links):
        lost = sorted(set(links) - reached)
        raise URDFError(f'links {lost[:10]} are not below the root "{roots[0]}": their joints '
                        'form a cycle; a URDF is a tree')
    return children, parent_joint, roots[0]


def _path(parent_joint, base_link, tip_link):
    """Return the URDF joints from ``base_link`` down to ``tip_link``, in order."""
    path = []
    link = tip_link
    seen = {link}
    while link != base_link:
        if link not in parent_joint:
            raise URDFError(f'tip_link "{tip_link}" is not below base_link "{base_link}"')
        joint = parent_joint[link]
        path.append(joint)
        link = joint.parent
        if link in seen:
            raise URDFError(f'the joints above tip_link "{tip_link}" form a cycle through '
                            f'link "{link}"; a URDF is a tree')
        seen.add(link)
    path.reverse()
    return path


def _chain_joints(path, base_link, tip_link):
    """Return the actuated :class:`ChainJoint` list of ``path`` and ``T_last_tip``.

    Fixed joints fold into the next joint's constant transform (or into ``T_last_tip``,
    the last actuated joint's child frame to the tip). Raises URDFError for a joint type
    or a mimic joint the chain cannot have, or a chain without an actuated joint.
    """
    joints = []
    T_acc = np.eye(4)
    for joint in path:
        T_acc = T_acc @ _pose(joint.origin, f'joint "{joint.name}"')
        if joint.type == 'fixed':
            continue
        if joint.type not in ACTUATED_TYPES:
            raise URDFError(f'joint "{joint.name}" of type "{joint.type}" is in the chain '
                            f'{base_link} -> {tip_link}; only revolute, continuous, '
                            'prismatic and fixed joints are supported there')
        if joint.mimic is not None:
            raise URDFError(f'joint "{joint.name}" in the chain {base_link} -> {tip_link} '
                            f'mimics "{joint.mimic.joint}"; mimic joints are not supported '
                            'in the chain')
        lower, upper, effort, velocity, damping, friction = _joint_limits(joint)
        joints.append(ChainJoint(joint.name, joint.type, T_acc, _joint_axis(joint),
                                 joint.child, lower, upper, effort, velocity, damping,
                                 friction))
        T_acc = np.eye(4)
    if not joints:
        raise URDFError(f'no revolute, continuous or prismatic joint between '
                        f'"{base_link}" and "{tip_link}"')
    return joints, T_acc


def _default_tip(base_link, children):
    """Return the only terminal movable joint's child, extended through unbranched fixed joints.

    Iterative (no recursion limit on long chains); a cycle below the base is an error.
    """
    order, parent_of, seen, stack = [], {}, {base_link}, [base_link]
    while stack:                                   # depth-first, each link once
        link = stack.pop()
        order.append(link)
        for joint in children[link]:
            if joint.child in seen:
                raise URDFError(f'joint "{joint.name}" closes a cycle at link "{joint.child}"; '
                                'a URDF is a tree')
            seen.add(joint.child)
            parent_of[joint.child] = joint
            stack.append(joint.child)
    movable_below = {}
    terminal = []
    for link in reversed(order):                   # children before their parents
        found = False
        for joint in children[link]:
            below = movable_below[joint.child]
            if joint.type != 'fixed':
                if not below:
                    terminal.append(joint.child)
                found = True
            found = found or below
        movable_below[link] = found
    if not terminal:
        raise URDFError(f'no movable joint below base_link "{base_link}"')
    if len(terminal) > 1:
        raise URDFError(f'the tree below "{base_link}" branches; give tip_link, one of '
                        f'{sorted(terminal)[:10]}' + (' ...' if len(terminal) > 10 else ''))
    tip = terminal[0]
    while len(children[tip]) == 1 and children[tip][0].type == 'fixed':
        tip = children[tip][0].child
    return tip


def _lump(links, children, start, on_path, stop_joint, warnings):
    """Lump ``start`` and everything rigidly attached to it into one body in start's frame.

    The walk stops at ``stop_joint`` (the next actuated joint of the chain); movable
    side joints are frozen at their zero position with a warning. Returns (body, names of
    the links lumped, ``start`` first).
    """
    body = RigidBody.massless()
    stack = [(start, np.eye(4))]
    names = []
    while stack:
        link_name, T = stack.pop()
        if link_name in names:
            raise URDFError(f'link "{link_name}" is reached twice (a cycle); a URDF is a tree')
        names.append(link_name)
        body = body.combined(link_body(links[link_name]).transformed(T))
        for joint in children[link_name]:
            if joint.name == stop_joint:
                continue
            if joint.type != 'fixed' and joint.name not in on_path:
                warnings.append(f'joint "{joint.name}" is not in the chain; link '
                                f'"{joint.child}" is lumped as rigid at its zero position')
            stack.append((joint.child, T @ _pose(joint.origin, f'joint "{joint.name}"')))
    return body, tuple(names)
