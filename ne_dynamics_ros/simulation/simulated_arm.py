"""A simulated arm: the plant the computed-torque controller drives in the demo and tests.

The plant is deliberately *not* our own dynamics code: it is built from the URDF by
Pinocchio (``pin.buildModelFromXML``) and integrated with Pinocchio's articulated-body
algorithm (``pin.aba``), so a closed loop through :mod:`ne_dynamics_ros.nodes.sim_arm_node`
checks our Newton-Euler controller against an independent engine.

Equation of motion integrated here (public joint order, URDF joint coordinates)::

    (M(q) + diag(armature)) q'' + C(q, q') q' + g(q) = tau - b * q'

``M`` is the rigid-body mass matrix of the links plus an optional point-mass payload at
the tip link, ``armature`` the reflected rotor inertia per joint (Pinocchio's
``model.armature``, the same per-joint term our RNEA adds), ``b`` the extra viscous
friction per joint (Sasaki 1990, eq. 2.39, writes the same ``b_i q'_i`` term into the joint
torque). The URDF ``<dynamics damping/friction>`` values are *not* applied; use
``joint_friction`` (viscous) and ``coulomb_friction`` (``Fc tanh(q'/v_s)``, as
:meth:`~ne_dynamics_ros.dynamics.model.RobotModel.friction_torques` writes it) to give the
plant friction the controller does not know about.

Time stepping: the applied torque is held constant over a step (zero-order hold, as a
digital controller's D/A converter does) and the state is advanced with classical
fourth-order Runge-Kutta at a fine internal step (``integration_rate``, 1 kHz by
default; a step of ``dt`` is split into ``ceil(dt * integration_rate)`` equal sub-steps).

Joint coordinates: every supported joint has one degree of freedom (revolute,
continuous, prismatic). Pinocchio represents a continuous joint by ``(cos q, sin q)``
(``nq = 2``, ``nv = 1``); this class keeps the unwrapped joint angle ``q`` as its state
and builds Pinocchio's configuration vector from it, so positions in and out are always
URDF joint values (a continuous joint that turns twice reads ``4 pi``).
"""
import math

import numpy as np
import pinocchio as pin

from ne_dynamics_ros.dynamics.urdf_import import urdf_xml_bytes
from ne_dynamics_ros.errors import ModelError, StateError, URDFError
from ne_dynamics_ros.simulation.payload_schedule import PayloadSchedule

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)


def _read_urdf(urdf):
    """Return URDF XML text (no declaration) from an XML string or a file path.

    Read as every reader of the package reads it (:func:`~ne_dynamics_ros.dynamics.
    urdf_import.urdf_xml_bytes`: size bound, declared encoding, byte-order mark).
    """
    return urdf_xml_bytes(urdf).decode('utf-8')


def _per_joint(value, n, name, default=0.0, allow_inf=False):
    """Broadcast a scalar / one-element / n-element value to a float array of shape (n,)."""
    if value is None:
        return np.full(n, float(default))
    array = np.atleast_1d(np.asarray(value, dtype=float)).ravel()
    if array.size == 0:
        return np.full(n, float(default))
    if array.size == 1:
        array = np.full(n, array[0])
    if array.size != n:
        raise ModelError(f'{name} needs 1 or {n} values (one per joint), got {array.size}')
    if np.any(np.isnan(array)) or not (allow_inf or np.all(np.isfinite(array))):
        raise ModelError(f'{name} contains NaN or inf: {array.tolist()}')
    return array


def checked_joint_values(value, joint_names, name):
    """Return ``value`` as a finite (n,) float array, one value per joint of ``joint_names``.

    Raises:
        StateError: another number of values, or NaN/inf (naming ``name`` and the joints).
    """
    n = len(joint_names)
    array = np.asarray(value, dtype=float).ravel()
    if array.shape != (n,):
        raise StateError(f'{name} must have {n} values ({joint_names}), '
                         f'got shape {np.shape(value)}')
    if not np.isfinite(array).all():       # (the method: a third of np.all's cost)
        raise StateError(f'{name} contains NaN or inf: {array.tolist()}')
    return array


class SimulatedArm:
    """Forward dynamics of a fixed-base arm from a URDF, integrated with RK4 and ZOH torque.

    Parameters
    ----------
    urdf : str or path
        URDF XML text or a file path.
    joints : list of str, optional
        The actuated joints, in the order of every public array (positions, velocities,
        efforts). Default: all movable joints in Pinocchio's (depth-first, chain) order.
        Movable joints not listed are locked at zero.
    armature : float or (n,) array
        Reflected rotor inertia per joint, kg m^2 (revolute) or kg (prismatic).
    payload_mass : float
        A point mass (kg) rigidly attached at the origin of ``payload_link``.
    payload_schedule : PayloadSchedule, optional
        Loads picked and released at given times
        (:class:`~ne_dynamics_ros.simulation.payload_schedule.PayloadSchedule`), applied at
        the start of each :meth:`step`.
    payload_link : str, optional
        Link carrying the payload; default: the tip link (the link farthest down the
        fixed-joint chain hanging from the last actuated joint, e.g. ``tool0``).
    joint_friction : float or (n,) array
        Viscous friction coefficient per joint, N m s/rad (N s/m); torque ``-b q'``.
    gravity : (3,) array
        Gravitational acceleration in the base (URDF root) frame, m/s^2.
    integration_rate : float
        Internal RK4 rate, Hz (sub-step ``h <= 1 / integration_rate``).
    initial_positions, initial_velocities : (n,) array, optional
        Initial state (default zero).
    effort_limits : (n,) array, optional
        If given, applied efforts are clipped to ``[-limit, limit]`` (``inf``: no limit).
    coulomb_friction : float or (n,) array
        Coulomb friction per joint, N m (N); torque ``-Fc tanh(q' / coulomb_velocity)``.
    coulomb_velocity : float
        Velocity scale of the Coulomb smoothing, rad/s (m/s).
    """

    def __init__(self, urdf, joints=None, armature=None, payload_mass=0.0, payload_link=None,
                 joint_friction=0.0, gravity=DEFAULT_GRAVITY, integration_rate=1000.0,
                 initial_positions=None, initial_velocities=None, effort_limits=None,
                 coulomb_friction=0.0, coulomb_velocity=0.01, payload_schedule=None):
        xml = _read_urdf(urdf)
        try:
            full_model = pin.buildModelFromXML(xml)
        except (RuntimeError, ValueError) as exc:
            raise URDFError(f'Pinocchio cannot build a model from the URDF: {exc}') from exc
        self.model = self._reduce(full_model, joints)
        model = self.model
        self.joint_names = list(joints) if joints else list(model.names[1:])
        n = len(self.joint_names)
        self.n = n
        if n == 0:
            raise ModelError('the URDF has no movable joint to simulate')

        self._index_joints()

        self.armature = _per_joint(armature, n, 'armature')
        if np.any(self.armature < 0):
            raise ModelError(f'armature must be >= 0, got {self.armature.tolist()}')
        model.armature[self._idx_v] = self.armature

        self.payload_mass = float(payload_mass)
        if not math.isfinite(self.payload_mass) or self.payload_mass < 0:
            raise ModelError(f'payload_mass must be a finite mass >= 0 kg, got {payload_mass}')
        self.payload_link = payload_link or self._default_tip_link()
        if not self.model.existBodyName(self.payload_link):
            raise ModelError(f'payload_link {self.payload_link!r} is not a link of the URDF')
        self._payload_frame = self.model.frames[self.model.getBodyId(self.payload_link)]
        self._bare_inertia = self.model.inertias[self._payload_frame.parentJoint].copy()
        self.payload_schedule = payload_schedule or PayloadSchedule([])
        if self.payload_mass > 0:
            self.set_payload(self.payload_mass)

        self._set_friction(joint_friction, coulomb_friction, coulomb_velocity)
        gravity = np.asarray(gravity, dtype=float).ravel()
        if gravity.shape != (3,) or not np.all(np.isfinite(gravity)):
            raise ModelError(f'gravity must be 3 finite numbers, got {gravity.tolist()}')
        model.gravity.linear = gravity
        self.gravity = gravity

        if not integration_rate > 0:
            raise ModelError(f'integration_rate must be > 0 Hz, got {integration_rate}')
        self.integration_rate = float(integration_rate)
        self.effort_limits = (None if effort_limits is None or np.size(effort_limits) == 0
                              else _per_joint(effort_limits, n, 'effort_limits', allow_inf=True))

        self.data = model.createData()
        self.time = 0.0
        self._theta = np.zeros(model.nv)   # unwrapped joint coordinates, Pinocchio v order
        self._v = np.zeros(model.nv)
        self._tau = np.zeros(model.nv)     # applied effort (after clipping), v order
        self._push = None                  # (frame id, force N in the base frame)
        self.reset(initial_positions, initial_velocities)

    # -- construction helpers -------------------------------------------------------------

    def _index_joints(self):
        """Map public index i <-> Pinocchio joint; only one-DoF joints are supported."""
        model = self.model
        self._idx_v = np.empty(self.n, dtype=int)
        scalar_q, scalar_src, cos_q, sin_q, circle_src = [], [], [], [], []
        for i, name in enumerate(self.joint_names):
            joint = model.joints[model.getJointId(name)]
            if joint.nv != 1 or joint.nq not in (1, 2):
                raise ModelError(f'joint {name!r} ({joint.shortname()}) is not a one-DoF '
                                 'revolute, continuous or prismatic joint')
            self._idx_v[i] = joint.idx_v
            if joint.nq == 1:
                scalar_q.append(joint.idx_q)
                scalar_src.append(i)
            else:
                cos_q.append(joint.idx_q)
                sin_q.append(joint.idx_q + 1)
                circle_src.append(i)
        self._scalar_q = np.array(scalar_q, dtype=int)
        self._scalar_src = np.array(scalar_src, dtype=int)
        self._cos_q = np.array(cos_q, dtype=int)
        self._sin_q = np.array(sin_q, dtype=int)
        self._circle_src = np.array(circle_src, dtype=int)
        self._q_template = pin.neutral(model)
        # Only one-DoF scalar joints with q and v laid out alike: q is theta itself.
        self._q_is_theta = (not circle_src and model.nq == model.nv
                            and all(model.joints[j].idx_q == model.joints[j].idx_v
                                    for j in range(1, model.njoints)))

    def _set_friction(self, joint_friction, coulomb_friction, coulomb_velocity):
        """Check and keep the viscous and Coulomb friction (per joint) and its v_s."""
        n = self.n
        self.joint_friction = _per_joint(joint_friction, n, 'joint_friction')
        if np.any(self.joint_friction < 0):
            raise ModelError(f'joint_friction must be >= 0, got {self.joint_friction.tolist()}')
        self.coulomb_friction = _per_joint(coulomb_friction, n, 'coulomb_friction')
        if np.any(self.coulomb_friction < 0):
            raise ModelError(f'coulomb_friction must be >= 0, got '
                             f'{self.coulomb_friction.tolist()}')
        if not (coulomb_velocity > 0 and math.isfinite(coulomb_velocity)):
            raise ModelError(f'coulomb_velocity must be > 0, got {coulomb_velocity}')
        self.coulomb_velocity = float(coulomb_velocity)
        self._frictionless = not (np.any(self.joint_friction) or np.any(self.coulomb_friction))
        # the coefficients in v order (zero on any other coordinate), for _acceleration
        self._viscous_v, self._coulomb_v = np.zeros(self.model.nv), np.zeros(self.model.nv)
        self._viscous_v[self._idx_v] = self.joint_friction
        self._coulomb_v[self._idx_v] = self.coulomb_friction
        self._viscous_only = not np.any(self.coulomb_friction)   # no tanh term to add

    @staticmethod
    def _reduce(model, joints):
        """Lock every movable joint not in ``joints`` at its neutral (zero) position."""
        if not joints:
            return model
        names = list(model.names)
        unknown = [j for j in joints if j not in names[1:]]
        if unknown:
            raise ModelError(f'joints {unknown} are not movable joints of the URDF '
                             f'(movable joints: {names[1:]})')
        if len(set(joints)) != len(joints):
            raise ModelError(f'joints lists a joint twice: {list(joints)}')
        locked = [model.getJointId(name) for name in names[1:] if name not in joints]
        if not locked:
            return model
        return pin.buildReducedModel(model, locked, pin.neutral(model))

    def _default_tip_link(self):
        """Return the link deepest in the fixed-joint chain below the last actuated joint."""
        model = self.model
        last_joint = max(model.getJointId(name) for name in self.joint_names)
        best, best_depth = None, -1
        for frame_id, frame in enumerate(model.frames):
            if frame.type != pin.FrameType.BODY or frame.parentJoint != last_joint:
                continue
            # Count the frames up to the joint. A reduced model's frames of locked joints
            # can be their own parent frame, hence the guard against a self-loop.
            depth, current = 0, frame_id
            while model.frames[current].type != pin.FrameType.JOINT and depth < len(
                    model.frames):
                parent = model.frames[current].parentFrame
                if parent == current:
                    break
                current, depth = parent, depth + 1
            if depth >= best_depth:
                best, best_depth = frame.name, depth
        return best

    def set_payload(self, mass, com=(0.0, 0.0, 0.0)):
        """Fix a point mass (kg) at ``com`` (m, in ``payload_link``'s frame): a pick.

        It replaces the load before; mass 0 removes it (a release).

        Raises:
            ModelError: a mass that is not finite and >= 0.
        """
        if not (math.isfinite(mass) and mass >= 0):
            raise ModelError(f'payload mass must be a finite mass >= 0 kg, got {mass}')
        frame = self._payload_frame
        point = pin.Inertia(float(mass), np.asarray(com, dtype=float), np.zeros((3, 3)))
        self.model.inertias[frame.parentJoint] = self._bare_inertia + \
            frame.placement.act(point)
        self.payload_mass = float(mass)

    # -- state --------------------------------------------------------------------------

    def _check(self, value, name):
        return checked_joint_values(value, self.joint_names, name)

    def reset(self, positions=None, velocities=None, time=0.0):
        """Set the state (public order; default zero) and the clock; zero the effort."""
        q = np.zeros(self.n) if positions is None or np.size(positions) == 0 else \
            self._check(positions, 'initial_positions')
        qd = np.zeros(self.n) if velocities is None or np.size(velocities) == 0 else \
            self._check(velocities, 'initial_velocities')
        self._theta[self._idx_v] = q
        self._v[self._idx_v] = qd
        self._tau[:] = 0.0
        self.time = float(time)

    @property
    def position(self):
        """Joint positions q (n,), URDF joint coordinates, public order (a copy)."""
        return self._theta[self._idx_v].copy()

    @property
    def velocity(self):
        """Joint velocities q' (n,), public order (a copy)."""
        return self._v[self._idx_v].copy()

    @property
    def effort(self):
        """The effort applied over the last step (n,), after clipping, public order."""
        return self._tau[self._idx_v].copy()

    def configuration(self, positions=None):
        """Pinocchio configuration vector (nq,) for joint positions (public order)."""
        theta = self._theta if positions is None else self._to_v_order(
            self._check(positions, 'positions'))
        return self._pin_q(theta)

    def _to_v_order(self, public):
        out = np.zeros(self.model.nv)
        out[self._idx_v] = public
        return out

    def _pin_q(self, theta):
        """Map unwrapped joint coordinates (v order) to Pinocchio's q (nq,)."""
        if self._q_is_theta:
            return theta
        q = self._q_template.copy()
        public = theta[self._idx_v]
        q[self._scalar_q] = public[self._scalar_src]
        angles = public[self._circle_src]
        q[self._cos_q] = np.cos(angles)
        q[self._sin_q] = np.sin(angles)
        return q

    # -- dynamics -----------------------------------------------------------------------

    def _acceleration(self, theta, v, tau):
        """Forward dynamics in v order: Pinocchio ABA with armature and viscous friction."""
        if self._frictionless:
            return pin.aba(self.model, self.data, self._pin_q(theta), v, tau)
        if self._viscous_only:            # the Coulomb term is zero: the same sum, sooner
            return pin.aba(self.model, self.data, self._pin_q(theta), v,
                           tau - self._viscous_v * v)
        friction = self._viscous_v * v + self._coulomb_v * np.tanh(v / self.coulomb_velocity)
        return pin.aba(self.model, self.data, self._pin_q(theta), v, tau - friction)

    def acceleration(self, positions, velocities, efforts):
        """Joint accelerations q'' (n,) of the plant for a state and applied efforts."""
        theta = self._to_v_order(self._check(positions, 'positions'))
        v = self._to_v_order(self._check(velocities, 'velocities'))
        tau = self._to_v_order(self._clip(self._check(efforts, 'efforts')))
        return self._acceleration(theta, v, tau)[self._idx_v].copy()

    # -- a push at a link, and the flange's force-torque sensor -------------------------

    def push(self, link=None, point=(0.0, 0.0, 0.0), force=(0.0, 0.0, 0.0)):
        """Push ``link``'s origin with ``force`` (N, base frame) from the next step on.

        As :meth:`MujocoArm.push <ne_dynamics_ros.simulation.mujoco_arm.MujocoArm.push>`
        (``point`` must be the origin here): the joint efforts ``J^T F`` (the link's
        Jacobian, Pinocchio's, at the start of each step) are added to the command over
        it. ``link`` None ends the push.

        Raises:
            ModelError: no such link, or a point off its origin.
        """
        if link is None:
            self._push = None
            return
        if not self.model.existBodyName(link):
            raise ModelError(f'no link {link!r} to push in the URDF')
        if np.any(np.asarray(point, dtype=float)):
            raise ModelError('the Pinocchio plant pushes a link at its origin only')
        self._push = (self.model.getFrameId(link), np.array(force, dtype=float))

    def _push_effort(self):
        """Return the push's joint efforts, v order (zeros without one)."""
        if self._push is None:
            return 0.0
        frame, force = self._push
        J = pin.computeFrameJacobian(self.model, self.data, self._pin_q(self._theta), frame,
                                     pin.LOCAL_WORLD_ALIGNED)
        return J[:3].T @ force

    def flange_wrench(self, link=None):
        """Return a force-torque sensor's reading at ``link`` (default the payload link).

        ``(force (3,) N, torque (3,) N·m)`` in the link's frame, about its origin: the
        push applied there (:meth:`push`) and the payload's weight there, the wrench the
        tool side exerts on the arm (a push along +x reads +x); the load's inertia is not
        in it (the Pinocchio plant's sensor is the wrench applied, not MuJoCo's measured
        one).
        """
        link = link or self.payload_link
        frame = self.model.getFrameId(link)
        pin.framesForwardKinematics(self.model, self.data, self._pin_q(self._theta))
        R = self.data.oMf[frame].rotation
        force = self.payload_mass * np.asarray(self.gravity, dtype=float) \
            if link == self.payload_link else np.zeros(3)
        if self._push is not None and self._push[0] == frame:
            force = force + self._push[1]
        return R.T @ force, np.zeros(3)

    def _clip(self, efforts):
        if self.effort_limits is None:
            return efforts
        return np.clip(efforts, -self.effort_limits, self.effort_limits)

    def step(self, efforts, dt):
        """Hold ``efforts`` (n,) constant for ``dt`` seconds and advance the state (RK4).

        The step is split into ``ceil(dt * integration_rate)`` equal RK4 sub-steps.
        Returns the new simulated time.
        """
        if not dt > 0 or not math.isfinite(dt):
            raise StateError(f'dt must be a finite time > 0 s, got {dt}')
        tau = self._to_v_order(self._clip(self._check(efforts, 'efforts')))
        load = self.payload_schedule.at(self.time) if self.payload_schedule else None
        if load is not None:
            self.set_payload(*load)
        self._tau = tau
        tau = tau + self._push_effort()
        substeps = max(1, math.ceil(dt * self.integration_rate - 1e-9))
        h = dt / substeps
        # the products as written h * x, 0.5 * h * x, h / 6.0 * x: the factors once
        half, sixth, acceleration = 0.5 * h, h / 6.0, self._acceleration
        theta, v = self._theta, self._v
        for _ in range(substeps):
            a1 = acceleration(theta, v, tau)
            v2 = v + half * a1
            a2 = acceleration(theta + half * v, v2, tau)
            v3 = v + half * a2
            a3 = acceleration(theta + half * v2, v3, tau)
            v4 = v + h * a3
            a4 = acceleration(theta + h * v3, v4, tau)
            theta = theta + sixth * (v + 2.0 * v2 + 2.0 * v3 + v4)
            v = v + sixth * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        if not (np.isfinite(theta).all() and np.isfinite(v).all()):
            raise StateError('the simulation diverged (non-finite state); '
                             'lower the gains or raise integration_rate')
        self._theta, self._v = theta, v
        self.time += dt
        return self.time

    # -- energy (for tests and sanity checks) -------------------------------------------

    def kinetic_energy(self):
        """Kinetic energy 0.5 q'^T (M(q) + diag(armature)) q', J (links, payload, rotors)."""
        mass = pin.crba(self.model, self.data, self._pin_q(self._theta))
        mass = np.triu(mass) + np.triu(mass, 1).T
        return 0.5 * float(self._v @ mass @ self._v)

    def potential_energy(self):
        """Gravitational potential energy, J, zero at the base origin height."""
        return float(pin.computePotentialEnergy(self.model, self.data,
                                                self._pin_q(self._theta)))

    def energy(self):
        """Return the total mechanical energy, kinetic plus potential, J."""
        return self.kinetic_energy() + self.potential_energy()
