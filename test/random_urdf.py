"""Hypothesis strategy for random serial-chain URDFs, and a Pinocchio reference for them.

A generated robot is a chain ``base -> ... -> tip`` of 1–9 actuated joints (revolute,
continuous, prismatic; axes along ±x/±y/±z or arbitrary unit vectors), with 0–2 fixed
joints and links in between, side links hanging off the chain through fixed joints,
occasionally a side link through a revolute joint that is not in the chain (lumped at
zero by our loader, locked at zero in Pinocchio's reduced model), random origins (with
rpy often a multiple of pi/2, so parallel, anti-parallel and intersecting axes are
common), and random physically valid inertias (full tensors, some links massless).
"""
import math

from hypothesis import strategies as st
import numpy as np

QUARTER_TURNS = [k * math.pi / 2 for k in range(-2, 3)]
# DH parameters of nearly parallel axes are ill-conditioned by nature (the common normal's
# foot runs off to ~L/angle): random geometry keeps axes parallel to rounding or at least
# CONDITIONING rad apart; test_dh.py covers the nearly parallel case on its own.
CONDITIONING = 1e-3


def _snap_angle(angle):
    quarter = round(angle / (math.pi / 2)) * (math.pi / 2)
    return quarter if abs(angle - quarter) < CONDITIONING else angle


AXES = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]
ORIGIN_KINDS = ('zero', 'axis', 'random')
JOINT_TYPES = ('revolute', 'continuous', 'prismatic')


def _f(x):
    return repr(float(x))


class _Choices:
    """The chain's choices, drawn from one NumPy generator seeded by Hypothesis.

    Hypothesis draws the joint count and a seed; everything else comes from the seed.
    Drawing each of a chain's ~300 values through Hypothesis took 11 ms a chain (most of
    the random-chain tests' time), and shrinking a URDF value by value says little that
    the failing chain (printed whole in the ``xml`` of the falsifying example) does not.
    Interval bounds come up as often as Hypothesis's own float strategy makes them
    (one draw in ten takes an end), so zero offsets, zero second moments and the
    extreme masses stay common.
    """

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def boolean(self):
        return bool(self.rng.random() < 0.5)

    def choice(self, values):
        return values[int(self.rng.integers(len(values)))]

    def integer(self, low, high):
        """Return an integer in [low, high]."""
        return int(self.rng.integers(low, high + 1))

    def uniform(self, low, high, size=None):
        if size is not None:
            return [self.uniform(low, high) for _ in range(size)]
        u = self.rng.random()
        if u < 0.05:
            return float(low)
        if u < 0.1:
            return float(high)
        return float(self.rng.uniform(low, high))

    def unit_vector(self):
        """Axis along ±x/±y/±z or an arbitrary unit vector."""
        if self.boolean():
            return np.array(self.choice(AXES), dtype=float)
        v = np.array(self.uniform(-1, 1, 3))
        v[np.abs(v) < CONDITIONING] = 0.0
        norm = np.linalg.norm(v)
        if norm < 0.1:
            return np.array([0.0, 0.0, 1.0])
        return v / norm

    def origin(self):
        """<origin> xyz/rpy: zero, axis-aligned or random offsets; quarter or random angles."""
        kind = self.choice(ORIGIN_KINDS)
        if kind == 'zero':
            xyz = [0.0, 0.0, 0.0]
        elif kind == 'axis':
            xyz = [0.0, 0.0, 0.0]
            xyz[self.integer(0, 2)] = self.uniform(-0.6, 0.6)
        else:
            xyz = self.uniform(-0.6, 0.6, 3)
        if self.boolean():
            rpy = [self.choice(QUARTER_TURNS) for _ in range(3)]
        else:
            rpy = [_snap_angle(a) for a in self.uniform(-math.pi, math.pi, 3)]
        return xyz, rpy

    def inertial(self):
        """Return an <inertial> element (or '' for a massless link) with a valid full inertia."""
        if self.integer(0, 9) == 0:
            return ''
        mass = 0.0 if self.boolean() else self.uniform(0.01, 20.0)
        # Principal moments from second moments a, b, c >= 0: always physical.
        a, b, c = self.uniform(0.0, 0.5, 3)
        principal = np.diag([b + c, a + c, a + b]) * max(mass, 0.1) + 1e-4 * np.eye(3)
        R = _rpy(self.uniform(-math.pi, math.pi, 3))
        inertia = R @ principal @ R.T
        (cx, cy, cz), rpy = self.origin()
        return (f'<inertial><origin xyz="{_f(cx)} {_f(cy)} {_f(cz)}" '
                f'rpy="{" ".join(_f(v) for v in rpy)}"/><mass value="{_f(mass)}"/>'
                f'<inertia ixx="{_f(inertia[0, 0])}" ixy="{_f(inertia[0, 1])}" '
                f'ixz="{_f(inertia[0, 2])}" iyy="{_f(inertia[1, 1])}" '
                f'iyz="{_f(inertia[1, 2])}" izz="{_f(inertia[2, 2])}"/></inertial>')


def _rpy(rpy):
    r, p, y = rpy
    Rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    Ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    Rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def _origin_xml(origin):
    xyz, rpy = origin
    return (f'<origin xyz="{" ".join(_f(v) for v in xyz)}" '
            f'rpy="{" ".join(_f(v) for v in rpy)}"/>')


_SEED = st.integers(0, 2**32 - 1)


@st.composite
def random_chains(draw, min_joints=1, max_joints=9):
    """Draw a random chain URDF.

    Returns:
        dict with ``xml`` (URDF text), ``tip`` (tip link name), ``joints`` (actuated joint
        names in chain order), ``types`` (their URDF types), ``locked`` (names of side
        movable joints that are not in the chain) and ``seed`` (of its :class:`_Choices`).
    """
    n = draw(st.integers(min_joints, max_joints))
    seed = draw(_SEED)
    pick = _Choices(seed)
    links, joints = [], []
    names, types, locked = [], [], []

    def link(name):
        links.append(f'<link name="{name}">{pick.inertial()}</link>')

    def joint(name, jtype, parent, child, axis=None):
        extra = ''
        if axis is not None:
            extra += f'<axis xyz="{" ".join(_f(v) for v in axis)}"/>'
        if jtype in ('revolute', 'prismatic'):
            extra += '<limit lower="-3" upper="3" effort="100" velocity="2"/>'
        joints.append(f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/>'
                      f'<child link="{child}"/>{_origin_xml(pick.origin())}{extra}</joint>')

    link('base')
    parent = 'base'
    for i in range(n):
        for k in range(pick.integer(0, 2)):
            name = f'fixed_{i}_{k}'
            link(name)
            joint(f'{name}_joint', 'fixed', parent, name)
            parent = name
        jtype = pick.choice(JOINT_TYPES)
        child = f'link_{i}'
        link(child)
        joint(f'joint_{i}', jtype, parent, child, pick.unit_vector())
        names.append(f'joint_{i}')
        types.append(jtype)
        parent = child
        side = pick.integer(0, 6)
        if side <= 1:
            link(f'side_{i}')
            joint(f'side_{i}_joint', 'fixed', child, f'side_{i}')
        elif side == 2:
            link(f'finger_{i}')
            joint(f'finger_{i}_joint', 'revolute', child, f'finger_{i}', pick.unit_vector())
            locked.append(f'finger_{i}_joint')
    link('tip')
    joint('tip_joint', 'fixed', parent, 'tip')
    xml = '<?xml version="1.0"?>\n<robot name="random">' + ''.join(links) + ''.join(joints) \
        + '</robot>'
    return {'xml': xml, 'tip': 'tip', 'joints': names, 'types': types, 'locked': locked,
            'seed': seed}


class PinocchioReference:
    """Pinocchio model of a URDF chain, driven with URDF joint coordinates in chain order.

    Side joints named in ``locked`` are locked at zero (``pin.buildReducedModel``);
    continuous joints' (cos, sin) configuration is handled here.
    """

    def __init__(self, xml, joint_names, tip_link, armature=None, locked=()):
        import pinocchio as pin
        self.pin = pin
        model = pin.buildModelFromXML(xml)
        if locked:
            ids = [model.getJointId(name) for name in locked]
            model = pin.buildReducedModel(model, ids, pin.neutral(model))
        self.model = model
        self.data = model.createData()
        self.ids = [model.getJointId(name) for name in joint_names]
        assert all(i < model.njoints for i in self.ids), 'joint missing in Pinocchio model'
        assert model.nv == len(joint_names), 'Pinocchio has extra degrees of freedom'
        if armature is not None:
            for jid, value in zip(self.ids, armature):
                model.armature[model.joints[jid].idx_v] = value
        self.tip_frame_id = fid = model.getFrameId(tip_link)
        self.tip_frame = model.frames[fid]

    def configuration(self, q):
        """Pinocchio configuration vector from URDF joint values."""
        qp = self.pin.neutral(self.model)
        for jid, value in zip(self.ids, q):
            joint = self.model.joints[jid]
            if joint.nq == 2:
                qp[joint.idx_q:joint.idx_q + 2] = (math.cos(value), math.sin(value))
            else:
                qp[joint.idx_q] = value
        return qp

    def _tangent(self, v):
        out = np.zeros(self.model.nv)
        for jid, value in zip(self.ids, v):
            out[self.model.joints[jid].idx_v] = value
        return out

    def _from_tangent(self, v):
        return np.array([v[self.model.joints[jid].idx_v] for jid in self.ids])

    def rnea(self, q, qd, qdd, gravity=(0, 0, -9.81), f_tip=None):
        """Pinocchio's inverse dynamics, in chain order."""
        pin = self.pin
        self.model.gravity = pin.Motion(np.concatenate([np.asarray(gravity, float), np.zeros(3)]))
        args = [self.model, self.data, self.configuration(q), self._tangent(qd),
                self._tangent(qdd)]
        if f_tip is not None:
            fext = [pin.Force.Zero() for _ in range(self.model.njoints)]
            frame = self.tip_frame
            parent = frame.parentJoint
            fext[parent] = frame.placement.act(pin.Force(np.asarray(f_tip[:3], float),
                                                         np.asarray(f_tip[3:], float)))
            args.append(fext)
        return self._from_tangent(pin.rnea(*args))

    def coriolis_matrix(self, q, qd):
        """Pinocchio's ``computeCoriolisMatrix`` (Ṁ - 2C skew), in chain order."""
        C = self.pin.computeCoriolisMatrix(self.model, self.data, self.configuration(q),
                                           self._tangent(qd))
        idx = [self.model.joints[jid].idx_v for jid in self.ids]
        return C[np.ix_(idx, idx)]

    def gravity_torques(self, q, gravity=(0, 0, -9.81)):
        """Pinocchio's ``computeGeneralizedGravity``, in chain order."""
        pin = self.pin
        self.model.gravity = pin.Motion(np.concatenate([np.asarray(gravity, float), np.zeros(3)]))
        return self._from_tangent(pin.computeGeneralizedGravity(self.model, self.data,
                                                                self.configuration(q)))

    def tip_kinematics(self, q, qd):
        """Pinocchio's tip placement (4, 4), frame Jacobian (6, n), acceleration (6,).

        The Jacobian and the classical acceleration at q̈ = 0 are LOCAL_WORLD_ALIGNED,
        rows [linear; angular]; columns in chain order.
        """
        pin = self.pin
        qp, v = self.configuration(q), self._tangent(qd)
        fid = self.tip_frame_id
        J = pin.computeFrameJacobian(self.model, self.data, qp, fid, pin.LOCAL_WORLD_ALIGNED)
        J = np.asarray(J).reshape(6, self.model.nv)     # (6,) when nv = 1
        pin.forwardKinematics(self.model, self.data, qp, v, 0 * v)
        placement = pin.updateFramePlacement(self.model, self.data, fid)
        a = pin.getFrameClassicalAcceleration(self.model, self.data, fid,
                                              pin.LOCAL_WORLD_ALIGNED)
        idx = [self.model.joints[jid].idx_v for jid in self.ids]
        return placement.homogeneous.copy(), J[:, idx].copy(), a.vector.copy()

    def mass_matrix(self, q):
        """Pinocchio's CRBA mass matrix, in chain order."""
        M = self.pin.crba(self.model, self.data, self.configuration(q))
        M = np.triu(M) + np.triu(M, 1).T
        idx = [self.model.joints[jid].idx_v for jid in self.ids]
        return M[np.ix_(idx, idx)]
