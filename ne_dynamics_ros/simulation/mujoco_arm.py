"""A simulated arm in MuJoCo: a plant built by another engine than our own or Pinocchio.

:class:`MujocoArm` has the interface of
:class:`~ne_dynamics_ros.simulation.simulated_arm.SimulatedArm` (``joint_names``, ``n``,
``time``, ``position``, ``velocity``, ``effort``, ``reset``, ``step(tau, dt)``,
``acceleration``), so :func:`~ne_dynamics_ros.simulation.closed_loop.run_lockstep`, the
recorder and ``sim_arm_node`` take either.

The model comes from a URDF through MuJoCo's own URDF import, or from an MJCF file. From a
URDF (each step found needed with this machine's MuJoCo): ``<visual>`` and
``<collision>`` are removed with an XML parser first (MuJoCo would open every mesh they name), and
``<mujoco><compiler discardvisual="true" fusestatic="false" inertiafromgeom="false"
balanceinertia="false"/></mujoco>`` keeps the URDF's inertias and every link. Joints are
matched by name, never by order; the URDF's joint limits are not enforced (as a real arm's
controller, not its plant, keeps to them), contacts are off.

A link MuJoCo cannot take: a moving body of zero mass (MuJoCo requires mass and inertia
above ``mjMINVAL``), as link 1 of ``config/puma560.urdf`` carries its published inertia
with m = 0. When such a link hangs from the first joint (its axis fixed in the base), its
inertia about that axis moves into the joint's armature: the link only turns about the
fixed axis, so ``J_axis q̈`` is the only joint torque its inertia causes, exactly; the
body then carries ``TINY_MASS`` kg and ``TINY_INERTIA`` kg·m² about its centre of mass
(below 1e-10 N·m on any joint of the shipped arms). Anywhere else the link is refused,
naming it.

Plant-only quantities the controller is not told: ``armature`` (kg·m² or kg, MuJoCo's
``dof_armature``), viscous ``damping`` (N·m·s/rad, ``dof_damping``), dry ``friction`` (N·m,
``dof_frictionloss``, MuJoCo's friction loss: a constraint force up to that level that
holds the joint at rest), a payload (mass, centre of mass and inertia in the frame of a
named link, a welded body), and Gaussian effort noise (N·m, standard deviation). The
URDF's ``<dynamics damping friction>`` are *not* applied (as in ``SimulatedArm``): the
plant's friction is what these arguments say.

Time stepping: the applied effort is held over ``step``'s ``dt`` (zero-order hold) and the
state advanced by MuJoCo's ``mj_step`` in equal sub-steps of at most ``timestep``
(default 0.5 ms) with ``integrator`` (default ``implicitfast``, MuJoCo's recommended
integrator; ``RK4`` agrees with Pinocchio's ABA + RK4 to 1e-16 rad,
``test/unit/test_mujoco_arm.py``).
"""
import math
import os
import threading
import xml.etree.ElementTree as ElementTree

import defusedxml.ElementTree as SafeET
import numpy as np

from ne_dynamics_ros.simulation.payload_schedule import PayloadSchedule
from ne_dynamics_ros.errors import ModelError, require, StateError, URDFError
from ne_dynamics_ros.dynamics.urdf_import import urdf_xml_bytes
from ne_dynamics_ros.simulation.simulated_arm import checked_joint_values

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
#: Mass (kg) and principal inertia (kg·m²) given to a zero-mass link MuJoCo would refuse.
TINY_MASS = 1e-9
TINY_INERTIA = 1e-12
INTEGRATORS = ('implicitfast', 'implicit', 'RK4', 'Euler')


def _per_joint(value, n, name, minimum=0.0, allow_inf=False):
    """Broadcast one value or n values to an (n,) array >= ``minimum``.

    Finite unless ``allow_inf``; raises ModelError naming ``name`` otherwise.
    """
    if value is None:
        return np.zeros(n)
    array = np.atleast_1d(np.asarray(value, dtype=float)).ravel()
    if array.size == 1:
        array = np.full(n, array[0])
    if array.size != n:
        raise ModelError(f'{name} needs 1 or {n} values (one per joint), got {array.size}')
    if np.any(np.isnan(array)) or not (allow_inf or np.all(np.isfinite(array))) \
            or np.any(array < minimum):
        raise ModelError(f'{name} must be finite and >= {minimum:g}, got {array.tolist()}')
    return array


def _urdf_for_mujoco(urdf):
    """Return (URDF XML for MuJoCo's import, the element tree it came from)."""
    text = urdf_xml_bytes(urdf)          # size bound, declared encoding, byte-order mark
    try:
        root = SafeET.fromstring(text, forbid_dtd=True)
    except (ElementTree.ParseError, ValueError) as exc:
        raise URDFError(f'the URDF is not well-formed XML: {exc}') from exc
    if root.tag != 'robot':
        raise URDFError(f'the root element is <{root.tag}>, not <robot>')
    for link in root.iter('link'):
        for tag in ('visual', 'collision'):
            for element in link.findall(tag):
                link.remove(element)
    for element in root.findall('mujoco'):
        root.remove(element)
    mujoco_element = ElementTree.SubElement(root, 'mujoco')
    ElementTree.SubElement(mujoco_element, 'compiler', discardvisual='true',
                           fusestatic='false', inertiafromgeom='false',
                           balanceinertia='false')
    return root


def _massless_links(root):
    """Links with an ``<inertial>`` of (near) zero mass: {link: (joint, inertia 3x3, axis)}."""
    parents = {}
    for joint in root.iter('joint'):
        child, parent = joint.find('child'), joint.find('parent')
        if child is not None and parent is not None:
            parents[child.get('link')] = (joint, parent.get('link'))
    found = {}
    for link in root.iter('link'):
        inertial = link.find('inertial')
        mass = inertial.find('mass') if inertial is not None else None
        if mass is None or float(mass.get('value', '0')) > TINY_MASS:
            continue
        joint, _ = parents.get(link.get('name'), (None, None))
        if joint is None or joint.get('type') == 'fixed':
            continue
        inertia = inertial.find('inertia')
        values = {k: float(inertia.get(k, '0')) if inertia is not None else 0.0
                  for k in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')}
        J = np.array([[values['ixx'], values['ixy'], values['ixz']],
                      [values['ixy'], values['iyy'], values['iyz']],
                      [values['ixz'], values['iyz'], values['izz']]])
        origin = inertial.find('origin')
        rpy = [float(v) for v in (origin.get('rpy', '0 0 0') if origin is not None
                                  else '0 0 0').split()]
        axis_element = joint.find('axis')
        axis = np.array([float(v) for v in (axis_element.get('xyz', '1 0 0')
                                            if axis_element is not None else '1 0 0').split()])
        found[link.get('name')] = (joint, _rotation(rpy) @ J @ _rotation(rpy).T,
                                   axis / np.linalg.norm(axis))
    return found, parents


def _rotation(rpy):
    """URDF rpy (fixed axes X, Y, Z) as a rotation matrix."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(y), math.sin(y))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _deepest_body(spec):
    """Return the body farthest from the world (the last of the deepest): the tip link."""
    best, best_depth = None, -1
    for body in spec.bodies[1:]:
        depth, parent = 0, body.parent
        while parent is not None:
            depth, parent = depth + 1, parent.parent
        if depth >= best_depth:
            best, best_depth = body.name, depth
    return best


def _movable_ancestors(link, parents):
    """How many movable joints lie between ``link`` and the root."""
    count = 0
    while link in parents:
        joint, link = parents[link]
        count += joint.get('type') != 'fixed'
    return count


#: The body of the force-torque sensor (``ft_sensor``: push it to push the tool), its site.
FT_BODY, FT_SITE = 'ne_dynamics_ft', 'ne_dynamics_ft_site'


def _spec(mujoco, urdf, mjcf_path):
    """Return ``(MjSpec, moved)`` of the URDF or MJCF file; ``moved``: joint -> armature.

    A massless link on the first joint gets a tiny mass, its inertia about the joint axis
    moved into that joint's armature (MuJoCo needs mass on a moving body).
    """
    if (urdf is None) == (mjcf_path is None):
        raise ModelError('give either a URDF or an MJCF file (mjcf_path), not both')
    moved = {}                            # joint -> armature added for a massless link
    if urdf is not None:
        root = _urdf_for_mujoco(urdf)
        massless, parents = _massless_links(root)
        for link, (joint, J, axis) in massless.items():
            if _movable_ancestors(link, parents) != 1:
                raise URDFError(
                    f'link {link!r} has no mass: MuJoCo needs mass on a moving body, and '
                    'its inertia can be moved into the armature only on the first joint')
            moved[joint.get('name')] = float(axis @ J @ axis)
            element = next(e for e in root.iter('link') if e.get('name') == link)
            inertial = element.find('inertial')
            inertial.find('mass').set('value', repr(TINY_MASS))
            inertia = inertial.find('inertia')
            if inertia is None:
                inertia = ElementTree.SubElement(inertial, 'inertia')
            for key, value in (('ixx', TINY_INERTIA), ('iyy', TINY_INERTIA),
                               ('izz', TINY_INERTIA), ('ixy', 0.0), ('ixz', 0.0),
                               ('iyz', 0.0)):
                inertia.set(key, repr(value))
        try:
            spec = mujoco.MjSpec.from_string(ElementTree.tostring(root, encoding='unicode'))
        except ValueError as exc:
            raise URDFError(f'MuJoCo cannot import the URDF: {exc}') from exc
    else:
        if not os.path.isfile(os.fspath(mjcf_path)):
            raise ModelError(f'mjcf_path {os.fspath(mjcf_path)!r}: no such file')
        try:
            spec = mujoco.MjSpec.from_file(os.fspath(mjcf_path))
        except ValueError as exc:
            raise URDFError(f'MuJoCo cannot load {os.fspath(mjcf_path)!r}: {exc}') from exc
    return spec, moved


def _joint_names(mujoco, model, joints):
    """Return the simulated joints: ``joints`` checked, or every hinge and slide joint."""
    one_dof = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    movable = [model.joint(j).name for j in range(model.njnt)
               if int(model.jnt_type[j]) in one_dof]
    names = list(joints) if joints else movable
    unknown = [j for j in names if j not in movable]
    if unknown:
        raise ModelError(f'joints {unknown} are not hinge or slide joints of the model '
                         f'(it has {movable})')
    if len(set(names)) != len(names):
        raise ModelError(f'joints lists a joint twice: {names}')
    if not names:
        raise ModelError('the model has no movable joint to simulate')
    return names


class MujocoArm:
    """Forward dynamics of a fixed-base arm by MuJoCo, effort held over each step.

    Args:
        urdf: URDF XML text or file path (MuJoCo's URDF import, see the module docstring);
            or None with ``mjcf_path``.
        mjcf_path: an MJCF file instead of a URDF (its joints named as the URDF's).
        joints: the actuated joints, the order of every public array; default: every
            hinge or slide joint of the model, in its order.
        armature, damping, friction: per joint (one value for all, or n): rotor inertia
            (kg·m² / kg), viscous damping (N·m·s/rad / N·s/m), dry friction level (N·m / N).
        payload_mass: kg, welded to ``payload_link`` (default: the deepest link, the
            arm's tip: ``tool0`` for the UR5e, ``flange`` for the PUMA);
            ``payload_com`` (m) and ``payload_inertia`` (kg·m², 3 principal values or a
            3x3 matrix about the centre of mass) in that link's frame.
        effort_noise: standard deviation of Gaussian noise added to each applied effort,
            N·m (N); ``seed`` seeds it.
        gravity: m/s² in the world (URDF root) frame.
        timestep: the longest MuJoCo step, s (default 0.5 ms).
        integrator: one of ``INTEGRATORS`` (default ``implicitfast``).
        initial_positions, initial_velocities: (n,) initial state (default zero).
        effort_limits: (n,) applied efforts are clipped to ``[-limit, limit]``.
        payload_schedule: loads picked and released at given times
            (:class:`~ne_dynamics_ros.simulation.payload_schedule.PayloadSchedule`, point
            masses at ``payload_link``), applied at the start of each :meth:`step`.
        ft_sensor: a link to put a six-axis force-torque sensor at (its origin and axes,
            as a UR e-series flange sensor sits at ``tool0``), or None: a massless body
            :data:`FT_BODY` welded there, MuJoCo's force and torque sensors on it, and
            the payload (at that link) beyond it, so that the sensor carries the tool's
            weight and inertia and whatever pushes the tool (push :data:`FT_BODY`):
            :meth:`flange_wrench`.

    Raises:
        URDFError: the URDF is unreadable or MuJoCo refuses it (the message is MuJoCo's,
            naming the element), or a zero-mass link that is not on the first joint.
        ModelError: unknown joints or payload link, negative, NaN or inf plant values.
    """

    def __init__(self, urdf=None, mjcf_path=None, joints=None, armature=None, damping=None,
                 friction=None, payload_mass=0.0, payload_link=None,
                 payload_com=(0.0, 0.0, 0.0), payload_inertia=(0.0, 0.0, 0.0),
                 effort_noise=0.0, seed=0, gravity=DEFAULT_GRAVITY, timestep=0.0005,
                 integrator='implicitfast', initial_positions=None, initial_velocities=None,
                 effort_limits=None, payload_schedule=None, ft_sensor=None):
        mujoco = require('mujoco', 'the MuJoCo plant')
        self._mujoco = mujoco
        spec, moved = _spec(mujoco, urdf, mjcf_path)
        self.payload_mass = float(payload_mass)
        if not math.isfinite(self.payload_mass) or self.payload_mass < 0:
            raise ModelError(f'payload_mass must be a finite mass >= 0 kg, got {payload_mass}')
        names = [b.name for b in spec.bodies]
        self.payload_link = payload_link or _deepest_body(spec)
        self.payload_schedule = payload_schedule or PayloadSchedule([])
        self.ft_sensor = ft_sensor
        if ft_sensor is not None:
            self._add_ft_sensor(mujoco, spec, names, ft_sensor)
        if self.payload_mass > 0 or self.payload_schedule:
            self._add_payload(spec, names, payload_com, payload_inertia)
        try:
            model = spec.compile()
        except ValueError as exc:
            raise URDFError(f'MuJoCo cannot compile the model: {exc}') from exc
        self.model = model
        self.data = mujoco.MjData(model)
        # one data, reset for each one-off computation (acceleration, inverse_dynamics):
        # making an MjData of this model takes 0.6 ms (its arena), resetting one 4 us
        self._scratch = (None, None)              # (the model it is of, the data)
        self._scratch_lock = threading.Lock()
        self.joint_names = _joint_names(mujoco, model, joints)
        self.n = n = len(self.joint_names)
        self._qadr = np.array([model.joint(j).qposadr[0] for j in self.joint_names])
        self._vadr = np.array([model.joint(j).dofadr[0] for j in self.joint_names])
        self.armature = _per_joint(armature, n, 'armature')
        self.damping = _per_joint(damping, n, 'damping')
        self.friction = _per_joint(friction, n, 'friction')
        model.dof_armature[:] = 0.0
        model.dof_damping[:] = 0.0
        model.dof_frictionloss[:] = 0.0
        model.dof_armature[self._vadr] = self.armature
        for name, extra in moved.items():
            model.dof_armature[model.joint(name).dofadr[0]] += extra
        model.dof_damping[self._vadr] = self.damping
        model.dof_frictionloss[self._vadr] = self.friction
        model.jnt_limited[:] = 0
        model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
        self._set_options(gravity, timestep, integrator)
        self.effort_noise = float(effort_noise)
        if not (self.effort_noise >= 0 and math.isfinite(self.effort_noise)):
            raise ModelError(f'effort_noise must be >= 0 N m, got {effort_noise}')
        self._rng = np.random.default_rng(seed)
        self.effort_limits = (None if effort_limits is None or np.size(effort_limits) == 0
                              else _per_joint(effort_limits, n, 'effort_limits', allow_inf=True))
        self._effort = np.zeros(n)
        self._load_com = None
        self._push = None
        self._ft_body = model.body(FT_BODY).id if ft_sensor is not None else None
        #: (n,) the joint efforts of the push in the last sub-step (``qfrc_applied`` of
        #: ``mj_applyFT``), N·m (N): the true external joint effort
        self.external_effort = np.zeros(n)
        # the constraint weights (friction loss' regularisation) depend on the armature
        # set above: recompute what the compiler derived from the model
        mujoco.mj_setConst(model, self.data)
        self.reset(initial_positions, initial_velocities)

    def _set_options(self, gravity, timestep, integrator):
        """Set gravity (m/s², world frame), the step (s) and the integrator."""
        mujoco, model = self._mujoco, self.model
        gravity = np.asarray(gravity, dtype=float).ravel()
        if gravity.shape != (3,) or not np.all(np.isfinite(gravity)):
            raise ModelError(f'gravity must be 3 finite numbers, got {gravity.tolist()}')
        model.opt.gravity[:] = gravity
        if not (timestep > 0 and math.isfinite(timestep)):
            raise ModelError(f'timestep must be a time > 0 s, got {timestep}')
        self.timestep = float(timestep)
        if integrator not in INTEGRATORS:
            raise ModelError(f'integrator {integrator!r} is not one of {INTEGRATORS}')
        self.integrator = integrator
        model.opt.integrator = {
            'implicitfast': mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
            'implicit': mujoco.mjtIntegrator.mjINT_IMPLICIT,
            'RK4': mujoco.mjtIntegrator.mjINT_RK4,
            'Euler': mujoco.mjtIntegrator.mjINT_EULER}[integrator]

    def _add_payload(self, spec, names, com, inertia):
        if self.payload_link not in names:
            raise ModelError(f'payload_link {self.payload_link!r} is not a link of the model '
                             f'(links: {names[1:]})')
        com = np.asarray(com, dtype=float).ravel()
        inertia = np.asarray(inertia, dtype=float)
        if inertia.shape == (3,):
            inertia = np.diag(inertia)
        if com.shape != (3,) or inertia.shape != (3, 3) or not (
                np.all(np.isfinite(com)) and np.all(np.isfinite(inertia))):
            raise ModelError('payload_com must be 3 finite numbers (m) and payload_inertia 3 '
                             'principal values or a 3x3 matrix (kg m^2)')
        if np.any(np.linalg.eigvalsh(0.5 * (inertia + inertia.T)) < 0):
            raise ModelError(f'payload_inertia is not positive semidefinite: '
                             f'{inertia.tolist()}')
        inertia = inertia + TINY_INERTIA * np.eye(3)     # MuJoCo needs it positive
        # a tool at the sensor's link is carried by the sensor
        parent = FT_BODY if self.payload_link == self.ft_sensor else self.payload_link
        body = spec.body(parent).add_body()
        body.name = 'ne_dynamics_payload'
        body.pos = com
        body.ipos = [0.0, 0.0, 0.0]     # the mass at its origin (MjSpec's default: 2 com)
        body.mass = max(self.payload_mass, TINY_MASS)
        body.fullinertia = [inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1],
                            inertia[0, 2], inertia[1, 2]]
        body.explicitinertial = True

    @staticmethod
    def _add_ft_sensor(mujoco, spec, names, link):
        """Weld :data:`FT_BODY` at ``link``'s origin, MuJoCo's force and torque on it."""
        if link not in names:
            raise ModelError(f'ft_sensor {link!r} is not a link of the model '
                             f'(links: {names[1:]})')
        body = spec.body(link).add_body()
        body.name, body.mass, body.inertia = FT_BODY, TINY_MASS, [TINY_INERTIA] * 3
        body.explicitinertial = True
        site = body.add_site()
        site.name = FT_SITE
        for kind, name in ((mujoco.mjtSensor.mjSENS_FORCE, 'ne_dynamics_ft_force'),
                           (mujoco.mjtSensor.mjSENS_TORQUE, 'ne_dynamics_ft_torque')):
            sensor = spec.add_sensor()
            sensor.type, sensor.objtype = kind, mujoco.mjtObj.mjOBJ_SITE
            sensor.objname, sensor.name = FT_SITE, name

    def flange_wrench(self):
        """Return the force-torque sensor's reading ``(force (3,) N, torque (3,) N·m)``.

        In the sensor link's frame, about its origin: the wrench the tool side exerts on
        the arm (a push along +x on the tool reads +x; the tool's weight reads m g,
        downward), as of the start of the last :meth:`step` (MuJoCo's sensors, which read
        the force the arm exerts on the tool: negated here).

        Raises:
            ModelError: the arm was built without ``ft_sensor``.
        """
        if self.ft_sensor is None:
            raise ModelError('this arm has no force-torque sensor: give ft_sensor when '
                             'building it')
        values = -np.array(self.data.sensordata[:6], dtype=float)
        return values[:3], values[3:]

    @property
    def integration_rate(self):
        """Return the most MuJoCo steps per second, Hz (``1 / timestep``)."""
        return 1.0 / self.timestep

    def _check(self, value, name):
        return checked_joint_values(value, self.joint_names, name)

    def reset(self, positions=None, velocities=None, time=0.0):
        """Set the state (public order; default zero) and the clock; zero the effort."""
        mujoco = self._mujoco
        mujoco.mj_resetData(self.model, self.data)
        if positions is not None and np.size(positions):
            self.data.qpos[self._qadr] = self._check(positions, 'initial_positions')
        if velocities is not None and np.size(velocities):
            self.data.qvel[self._vadr] = self._check(velocities, 'initial_velocities')
        self._effort = np.zeros(self.n)
        self.time = float(time)
        mujoco.mj_forward(self.model, self.data)

    @property
    def position(self):
        """Joint positions q (n,), URDF joint coordinates, public order (a copy)."""
        return self.data.qpos[self._qadr].copy()

    @property
    def velocity(self):
        """Joint velocities q' (n,), public order (a copy)."""
        return self.data.qvel[self._vadr].copy()

    @property
    def effort(self):
        """The effort applied over the last step (n,), after clipping and noise."""
        return self._effort.copy()

    def _clip(self, efforts):
        if self.effort_limits is None:
            return efforts
        return np.clip(efforts, -self.effort_limits, self.effort_limits)

    def acceleration(self, positions, velocities, efforts):
        """Joint accelerations q'' (n,) of the plant for a state and applied efforts.

        Friction loss acts as at that state (a constraint force up to its level).
        """
        positions = self._check(positions, 'positions')
        velocities = self._check(velocities, 'velocities')
        efforts = self._clip(self._check(efforts, 'efforts'))
        with self._scratch_lock:
            data = self._fresh_data()
            data.qpos[self._qadr] = positions
            data.qvel[self._vadr] = velocities
            data.qfrc_applied[self._vadr] = efforts
            self._mujoco.mj_forward(self.model, data)
            return data.qacc[self._vadr].copy()

    def inverse_dynamics(self, positions, velocities, accelerations):
        """Return the joint efforts (n,) for a state and accelerations (``mj_inverse``).

        Rigid bodies, armature and damping; without friction loss (a constraint) when the
        plant has none.
        """
        positions = self._check(positions, 'positions')
        velocities = self._check(velocities, 'velocities')
        accelerations = self._check(accelerations, 'accelerations')
        with self._scratch_lock:
            data = self._fresh_data()
            data.qpos[self._qadr] = positions
            data.qvel[self._vadr] = velocities
            data.qacc[self._vadr] = accelerations
            self._mujoco.mj_inverse(self.model, data)
            return data.qfrc_inverse[self._vadr].copy()

    def _fresh_data(self):
        """Return the scratch data of the current model, as a new one (call it locked)."""
        model, data = self._scratch
        if model is not self.model:
            data = self._mujoco.MjData(self.model)
            self._scratch = (self.model, data)
        else:
            self._mujoco.mj_resetData(self.model, data)
        return data

    def set_payload(self, mass, com=(0.0, 0.0, 0.0)):
        """Make the welded load a point mass (kg) at ``com`` (m, ``payload_link``'s frame).

        Only with a load body (``payload_mass`` > 0 or a ``payload_schedule`` at
        construction); mass 0 releases it (``TINY_MASS`` is left).

        Raises:
            ModelError: no load body, or a mass that is not finite and >= 0.
        """
        if not (math.isfinite(mass) and mass >= 0):
            raise ModelError(f'payload mass must be a finite mass >= 0 kg, got {mass}')
        try:
            body = self.model.body('ne_dynamics_payload').id
        except KeyError:
            raise ModelError('this arm has no load body: give payload_mass or '
                             'payload_schedule when building it') from None
        self.model.body_pos[body] = np.asarray(com, dtype=float)
        self.model.body_ipos[body] = 0.0
        self.model.body_mass[body] = max(float(mass), TINY_MASS)
        self.model.body_inertia[body] = TINY_INERTIA
        # mj_setConst works at qpos0 in the data it is given: a scratch one, so that the
        # arm's state is kept
        self._mujoco.mj_setConst(self.model, self._mujoco.MjData(self.model))
        self.payload_mass = float(mass)

    def push(self, link=None, point=(0.0, 0.0, 0.0), force=(0.0, 0.0, 0.0)):
        """Push ``link`` at ``point`` (m, in the link's frame) with ``force`` (N, world).

        Applied through ``mj_applyFT`` into ``qfrc_applied`` at every sub-step from the
        next :meth:`step` on (``xfrc_applied`` would act at the body's centre of mass);
        its joint efforts are :attr:`external_effort`. A push on :data:`FT_BODY` (the tool
        beyond a force-torque sensor) is a force on that body (``xfrc_applied``, with
        the moment of ``point`` about its centre of mass), which the sensor carries; the
        same joint efforts. ``link`` None ends the push.

        Raises:
            ModelError: no body named ``link``.
        """
        self.data.xfrc_applied[:] = 0.0             # the last push on the tool, if any
        if link is None:
            self._push = None
            self.external_effort = np.zeros(self.n)
            return
        try:
            body = self.model.body(link).id
        except KeyError:
            raise ModelError(f'no body {link!r} to push in the MuJoCo model') from None
        self._push = (body, np.array(point, dtype=float), np.array(force, dtype=float))

    def _push_effort(self):
        """Return qfrc (nv,) of the push at the current state (zeros without one)."""
        qfrc = np.zeros(self.model.nv)
        if self._push is not None:
            body, point, force = self._push
            data = self.data
            world = data.xpos[body] + data.xmat[body].reshape(3, 3) @ point
            self._mujoco.mj_applyFT(self.model, data, force, np.zeros(3), world, body, qfrc)
        return qfrc

    def _push_tool(self):
        """Set the push on the sensor's body as a body force (``xfrc_applied``)."""
        body, point, force = self._push
        data = self.data
        (x, y, z), (a, b, c) = (data.xpos[body] + data.xmat[body].reshape(3, 3) @ point
                                - data.xipos[body]).tolist(), force.tolist()  # r, F: r x F
        data.xfrc_applied[body] = (a, b, c, y * c - z * b, z * a - x * c, x * b - y * a)

    def step(self, efforts, dt):
        """Hold ``efforts`` (n,) for ``dt`` seconds and advance the state.

        ``ceil(dt / timestep)`` equal MuJoCo steps; effort noise is drawn once per call.
        Returns the new simulated time.

        Raises:
            StateError: bad efforts or dt, or the simulation diverged.
        """
        if not dt > 0 or not math.isfinite(dt):
            raise StateError(f'dt must be a finite time > 0 s, got {dt}')
        effort = self._clip(self._check(efforts, 'efforts'))
        load = self.payload_schedule.at(self.time) if self.payload_schedule else None
        if load is not None and (load[0] != self.payload_mass or self._load_com is None
                                 or np.any(load[1] != self._load_com)):
            self.set_payload(*load)
            self._load_com = load[1]
        if self.effort_noise:
            effort = effort + self._rng.normal(0.0, self.effort_noise, self.n)
        self._effort = effort
        substeps = max(1, math.ceil(dt / self.timestep - 1e-9))
        self.model.opt.timestep = dt / substeps
        self.data.qfrc_applied[:] = 0.0
        self.data.qfrc_applied[self._vadr] = effort
        if self._push is None:                    # the sub-steps in one call
            self._mujoco.mj_step(self.model, self.data, substeps)
        for _ in range(0 if self._push is None else substeps):
            pushed = self._push_effort()          # at each sub-step's state
            self.external_effort = pushed[self._vadr]
            if self._push[0] == self._ft_body:
                self._push_tool()
            else:
                self.data.qfrc_applied[:] = pushed
                self.data.qfrc_applied[self._vadr] += effort
            self._mujoco.mj_step(self.model, self.data)
        if not (np.isfinite(self.data.qpos).all() and np.isfinite(self.data.qvel).all()):
            raise StateError('the simulation diverged (non-finite state); lower the gains or '
                             'the timestep')
        self.time += dt
        return self.time
