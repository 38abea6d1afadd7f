"""Adaptive computed torque: Slotine & Li's law with a rigid load's parameters adapted.

Pure module (no ROS). Lee, Chung, Mudge & Turney (1982) close with adaptive control for
loads that vary within a task cycle (end of §5); this is
Slotine & Li's ("On the adaptive control of robot manipulators", IJRR 6(3), 1987), with
``e = q_d - q`` (the package's sign):

    q̇_r = q̇_d + Λ e,   q̈_r = q̈_d + Λ ė,   s = q̇_r - q̇ = ė + Λ e,
    τ = Y(q, q̇, q̇_r, q̈_r) π̂ + K_D s,   π̂̇ = Γ Yᵀ s,

``Y`` the regressor of :func:`~ne_dynamics_ros.dynamics.regressor.reference_regressor`
(``Y π = M q̈_r + C q̇_r + g`` with the Christoffel C, so ``Ṁ - 2C`` is skew and
``V = ½ sᵀ M s + ½ π̃ᵀ Γ⁻¹ π̃`` decreases). ``K_D = K M̂(q)`` (M̂ the model with the
estimated load) is folded into Y's acceleration argument, ``τ = Y(q, q̇, q̇_r, q̈_r + K s)
π̂``, and the update takes Y at that argument too: the error dynamics are then
``M ṡ + C s + M K s = -Y(q, q̇, q̇_r, q̈_r + K s) π̃``, and V still decreases (one K for
every joint; per joint where ``sᵀ M K s >= 0``). Per control step this is one generated
function (:class:`~ne_dynamics_ros.codegen.payload_step.PayloadStep`: the two-rate
recursion with the load's parameters as symbols, ``Yᵀ s`` as the power of the load's
wrench in its body's twist), not a (n, 13 n) regressor. What adapts here is a rigid *payload*: the
10 inertial parameters (XX, XY, XZ, YY, YZ, ZZ at the link frame's origin, MX, MY, MZ,
M; kg·m², kg·m, kg) of a load fixed to ``link`` (default the tip link), expressed in
that link's URDF frame; the arm's own (identified) model stays as it is, and so do its
friction terms (compensated by the caller as in computed torque).

Choices, each measured on a UR5e plant with a hidden drive model and a 2 kg load picked
and released every cycle (``benchmarks/bench_adaptive.py``): ``K_D = K M̂(q)`` with K in
1/s (the gain acts on the model's inertia, as computed torque's kd does); ``Γ = γ diag(L⁴ I₆,
L² I₃, 1)`` for (J, MS, M), which makes the three kinds of parameter move alike for a
load of size ``L``; with Λ = K = 40–50 1/s the worst joint stayed at 2.2–2.8e-4 rad from
the third cycle on. Here, at 500 Hz on the Pinocchio plants of the PUMA 560 and of a
UR5e with rotor inertia, the prototype's L = 0.3 m let the wrists' second moments drift
(to ~1 kg·m² on the PUMA) until the sampled loop diverged; with L = 0.1 m (γ = 300) a
2 kg load at the flange is learned within 3 % in 30 ms and held
(``test/unit/test_adaptive.py``).

The update is discrete (``π̂ += dt Γ Y_pᵀ s`` at the control rate), frozen when the
caller says so (a saturated command, a held reference, inactive) or when anything is not
finite, and projected after every step onto physical loads: ``0 <= M <= mass_max``, a
positive semidefinite pseudo-inertia (the load's density-weighted second moments), and
the whole load within ``radius`` of the link's origin (``½ tr J <= M radius²``), so an
estimate never becomes a load that cannot exist. The radius is what lets a load be put
down: with the pseudo-inertia alone a mass near zero may keep any second moments, and on
the PUMA each release left some behind until the error, growing cycle by cycle, made the
500 Hz loop diverge in the 7th cycle (``test_picked_and_released_loads_leave_no_drift_
behind``).
"""
import math
from typing import Optional

import numpy as np

from ne_dynamics_ros.codegen.payload_step import (base_columns, BaseStep, PayloadStep,
                                                  without_friction)
from ne_dynamics_ros.control.laws.physical_load import is_physical, project_physical
from ne_dynamics_ros.dynamics.model import STANDARD_GRAVITY
from ne_dynamics_ros.dynamics.standard_parameters import frame_change, inertial_index, PER_JOINT
from ne_dynamics_ros.dynamics.regressor import reference_regressor
from ne_dynamics_ros.errors import ModelError

#: Default Γ's scale γ and its length L (m): Γ = γ diag(L⁴ I₆, L² I₃, 1).
DEFAULT_ADAPTATION_GAIN = 300.0
DEFAULT_LENGTH = 0.1
#: Default bound of the estimated load's mass, kg.
DEFAULT_MASS_MAX = 20.0
#: Default radius about the load link's origin that holds the whole load, m.
DEFAULT_RADIUS = 0.2


def adaptation_gains(gain: float = DEFAULT_ADAPTATION_GAIN,
                     length: float = DEFAULT_LENGTH) -> np.ndarray:
    """Return Γ's (10,) diagonal γ (L⁴ × 6, L² × 3, 1) for (J, MS, M).

    Raises:
        ModelError: a gain < 0 or a length <= 0, or either not finite.
    """
    if not (isinstance(gain, (int, float)) and 0 <= gain < math.inf):
        raise ModelError(f'adaptation gain must be >= 0, got {gain!r}')
    if not (isinstance(length, (int, float)) and 0 < length < math.inf):
        raise ModelError(f'adaptation length must be > 0 m, got {length!r}')
    return gain * np.array([length ** 4] * 6 + [length ** 2] * 3 + [1.0])


#: Above this ratio of the inertia a load may add about a joint's axis to the joint's own,
#: adaptive mode warns (:func:`load_inertia_ratio`). Measured on the UR5e on MuJoCo at
#: 500 Hz with 2 kg picked each cycle: wrist 3 without rotor inertia (ratio ~4000 for a
#: load of up to 10 kg within 0.2 m) diverged 30 ms after the first pick; with 0.003
#: kg·m² of rotor inertia (ratio ~130) it tracked within 2.7e-4 rad.
LOAD_INERTIA_RATIO_WARNING = 1000.0


def load_inertia_ratio(model, link: Optional[str] = None, mass_max: float = DEFAULT_MASS_MAX,
                       radius: float = DEFAULT_RADIUS, configurations: int = 50) -> np.ndarray:
    """Return (n,) the most inertia a load may add about each joint, over the joint's own.

    The load: at most ``mass_max`` kg, all of it within ``radius`` m of ``link``'s origin
    (default the tip link), as :class:`PayloadAdaptation` keeps its estimate. About a
    revolute joint's axis it adds at most ``mass_max (d + radius)²`` (d the origin's
    distance from the axis), to a prismatic joint ``mass_max``; the joint's own inertia is
    the diagonal of the model's mass matrix, armature included. Both over random
    configurations (:func:`~ne_dynamics_ros.control.laws.gains.workspace_configurations`),
    the largest ratio. Joints after ``link`` carry no load: 0.

    An estimate is a load like that, and while it is wrong the sampled loop of a joint
    sees its gains multiplied by up to this ratio (the feedback acts through M̂): above
    :data:`LOAD_INERTIA_RATIO_WARNING` a joint can be driven unstable (a URDF without the
    drives' rotor inertia, whose last wrist has 1e-4 kg·m² of its own).

    Raises:
        ModelError: ``link`` is neither the tip link nor a joint's child link.
    """
    from ne_dynamics_ros.control.laws.gains import workspace_configurations
    body, _ = link_frame(model, link)
    link = link or model.tip_link
    children = [joint.child_link for joint in model.chain.joints]
    index = model.n if link == model.tip_link else children.index(link)
    carried = np.arange(model.n) <= body
    ratio = np.zeros(model.n)
    for q in workspace_configurations(model, configurations):
        origin = model.urdf_forward_kinematics(q)[index][:3, 3]
        points, directions = model.joint_axes(q, use_dh=False)
        distance = np.linalg.norm(np.cross(directions, origin - points), axis=1)
        added = np.where(model.prismatic, mass_max, mass_max * (distance + radius) ** 2)
        ratio = np.maximum(ratio, np.where(carried, added / np.diag(model.mass_matrix(q)), 0.0))
    return ratio


def link_frame(model, link: Optional[str] = None):
    """Return ``(body index, T)``: the chain body carrying ``link``, its parameter map.

    ``pi_body = T pi_link`` (:func:`~ne_dynamics_ros.dynamics.standard_parameters.frame_change`
    from the link's URDF frame to the body's DH frame).

    ``link``: the tip link (default) or a joint's child link.

    Raises:
        ModelError: ``link`` is neither (the message lists the choices).
    """
    zero = np.zeros(model.n)
    dh = model.dh_forward_kinematics(zero)          # DH frames 0..n, then the tip
    urdf = model.urdf_forward_kinematics(zero)      # each joint's child link, then the tip
    children = [joint.child_link for joint in model.chain.joints]
    link = link or model.tip_link
    if link == model.tip_link:
        body = model.n - 1
        pose = urdf[-1]
    elif link in children:
        body = children.index(link)
        pose = urdf[body]
    else:
        raise ModelError(f'adaptation_link {link!r} is not the tip link {model.tip_link!r} '
                         f'or a joint\'s child link {children}')
    X = np.linalg.inv(dh[body + 1]) @ pose          # link j (0-based) is in DH frame j + 1
    return body, frame_change(X)


def _per_joint(value, n, name, positive=False):
    """(n,) gains, 1/s, from one value or n: finite, > 0 (``positive``) or >= 0."""
    try:
        values = np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
    except ValueError:
        raise ModelError(f'{name} needs 1 or {n} values, got {value!r}') from None
    if not np.all(np.isfinite(values)) or np.any(values <= 0 if positive else values < 0):
        raise ModelError(f'{name} must be {"> 0" if positive else ">= 0"} 1/s per joint, '
                         f'got {values.tolist()}')
    return values


class SlotineLi:
    """Slotine & Li's law over parameters ``p`` standing for ``π = fixed + mapping p``.

    The part :class:`PayloadAdaptation` and :class:`BaseAdaptation` share: the gains, the
    step (generated, or the NumPy regressor), the discrete update. Not built directly.

    Attributes:
        estimate: (m,) the adapted parameters.
        initial: (m,) what :meth:`reset` goes back to.
    """

    def __init__(self, model, lam, k, gamma, mass_max, gravity, fixed, mapping, kinds,
                 generated_step, initial, radius=math.inf):
        self.model = model
        self.radius = radius
        self.gravity = tuple(float(g) for g in gravity)
        self.initial = np.array(initial, dtype=float)
        self.estimate = self.initial.copy()
        self._kinds = np.asarray(kinds, dtype=int)       # per parameter: 0 J, 1 MS, 2 M
        self._fixed, self._mapping = fixed, mapping
        self.set_gains(lam, k, adaptation_gains() if gamma is None else gamma, mass_max,
                       None if math.isinf(radius) else radius)
        self._generated = generated_step.step if generated_step is not None else None
        #: ``rows(q, qd, qdd) -> (tau_fixed, W)`` of the measured state (the composite
        #: update's; :func:`~ne_dynamics_ros.codegen.payload_step.measured_rows_source`).
        self.rows = generated_step.rows if generated_step is not None else self._rows

    def _rows(self, q, qd, qdd):
        """``rows`` from the NumPy regressor (the reference path)."""
        Y = reference_regressor(self.model, q, qd, qd, qdd, self.gravity)
        return (Y @ self._fixed).tolist(), (Y @ self._mapping).tolist()

    def model_parameters(self) -> np.ndarray:
        """Return the standard inertial parameters of the model with the estimate, (13 n,).

        Khalil's order per joint (:mod:`~ne_dynamics_ros.dynamics.standard_parameters`): what
        :meth:`~ne_dynamics_ros.dynamics.model.RobotModel.with_parameters` builds the
        arm with the load from.
        """
        return self._fixed + self._mapping @ self.estimate

    def reset(self):
        """Forget what was learned (back to :attr:`initial`)."""
        self.estimate = self.initial.copy()

    def set_gains(self, lam, k, gamma=None, mass_max=None, radius=None):
        """Change Λ, K (and Γ, the mass and radius bounds) keeping the estimate (checked).

        ``gamma``: the (10,) diagonal of :func:`adaptation_gains`, one value per kind of
        parameter (second moments, first moments, mass).
        """
        n = self.model.n
        lam_, k_ = _per_joint(lam, n, 'lambda', positive=True), _per_joint(k, n, 'K')
        if gamma is not None:
            gamma = np.asarray(gamma, dtype=float)
            if gamma.shape != (10,) or not np.all(gamma >= 0) or not np.all(np.isfinite(gamma)):
                raise ModelError(f'gamma must be 10 finite values >= 0, got {gamma}')
            self.gamma = gamma[[0, 6, 9]][self._kinds]
            self._gamma_values = self.gamma.tolist()
        if mass_max is not None:
            if not (isinstance(mass_max, (int, float)) and 0 <= mass_max < math.inf):
                raise ModelError(f'payload_mass_max must be a mass >= 0 kg, got {mass_max!r}')
            self.mass_max = float(mass_max)
        if radius is not None:
            if not (isinstance(radius, (int, float)) and 0 < radius < math.inf):
                raise ModelError(f'payload_radius must be a length > 0 m, got {radius!r}')
            self.radius = float(radius)
        if mass_max is not None or radius is not None:
            self.estimate = self._physical(self.estimate)
        self.lam, self.k = lam_, k_
        self._gains = (lam_.tolist(), k_.tolist())

    def _physical(self, estimate):
        """Return ``estimate`` made admissible (here: as it is)."""
        return np.asarray(estimate, dtype=float)

    def _admissible(self, estimate) -> bool:
        return True

    def effort(self, q, qd, q_d, qd_d, qdd_d):
        """Return ``(tau, s, Y_p)`` for one state from the NumPy regressor, not adapting.

        The reference the generated step is checked against (same law, module doc).

        Args:
            q, qd: (n,) measured positions (rad, m) and rates; q_d, qd_d, qdd_d: (n,) the
                reference, chain order.

        Returns:
            tau (n,) N·m (N), rigid body and load only (no friction, not clamped); the
            sliding variable s = ė + Λ e (n,); the regressor of the adapted parameters
            Y_p (n, m) at ``q̈_r + K s``, for :meth:`update`.

        Raises:
            ne_dynamics_ros.errors.StateError: a non-finite or malformed state.
        """
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        e = np.asarray(q_d, dtype=float) - q
        ed = np.asarray(qd_d, dtype=float) - qd
        qd_r = np.asarray(qd_d, dtype=float) + self.lam * e
        s = qd_r - qd
        a = np.asarray(qdd_d, dtype=float) + self.lam * ed + self.k * s
        Y = reference_regressor(self.model, q, qd, qd_r, a, self.gravity)
        Y_p = Y @ self._mapping
        return Y @ self._fixed + Y_p @ self.estimate, s, Y_p

    def update(self, Y_p, s, dt: float):
        """Adapt the estimate over ``dt`` s: ``p̂ += dt Γ Y_pᵀ s`` (kept admissible).

        Nothing changes for ``dt <= 0`` or a non-finite step.
        """
        self.adapt(Y_p.T @ s, dt)

    def values(self, q, qd, q_d, qd_d, qdd_d):
        """Return ``(tau, g)`` of one state as lists, by the generated step (the hot path).

        ``q ... qdd_d``: n floats each, chain order, already checked finite. ``tau`` as
        :meth:`effort`'s (n efforts, N·m / N), ``g = Y_pᵀ s`` (m) for :meth:`adapt`.
        Either may hold NaN or inf if the state overflows: the caller checks.
        """
        if self._generated is None:
            tau, s, Y_p = self.effort(q, qd, q_d, qd_d, qdd_d)
            return tau.tolist(), (Y_p.T @ s).tolist()
        return self._generated(q, qd, q_d, qd_d, qdd_d, *self._gains, self.estimate.tolist())

    def model_values(self, q, qd, qdd, estimate=None):
        """Return ``M̂(q) q̈ + Ĉ(q, q̇) q̇ + ĝ(q)`` (n floats) with ``estimate`` (m,).

        Default the current estimate; the law's effort at ``q_d = q``, ``q̇_d = q̇``.
        """
        if estimate is None or self._generated is None:
            saved = self.estimate
            if estimate is not None:
                self.estimate = np.asarray(estimate, dtype=float)
            try:
                return self.values(q, qd, q, qd, qdd)[0]
            finally:
                self.estimate = saved
        return self._generated(q, qd, q, qd, qdd, *self._gains, list(estimate))[0]

    def adapt(self, g, dt: float):
        """Adapt over ``dt`` s from ``g = Y_pᵀ s`` (m): ``p̂ += dt Γ g``, kept admissible.

        Nothing changes for ``dt <= 0`` or a non-finite step.
        """
        if not dt > 0:
            return
        estimate = [p + dt * gamma * x
                    for p, gamma, x in zip(self.estimate.tolist(), self._gamma_values, g)]
        if not all(map(math.isfinite, estimate)):
            return
        if not self._admissible(estimate):
            estimate = self._physical(estimate)
        self.estimate = np.array(estimate)

    def step(self, q, qd, q_d, qd_d, qdd_d, dt: float, adapt: bool = True):
        """Return ``(tau, s)`` of one state, then adapt over ``dt`` (s) unless ``adapt`` False.

        ``adapt`` False freezes the estimate (a saturated command, a held reference).

        Raises:
            ne_dynamics_ros.errors.StateError: a non-finite or malformed state.
        """
        checked = self.model.checked_states(q=q, qd=qd, qdd=qdd_d)
        reference = self.model.checked_states(q=q_d, qd=qd_d)
        tau, g = self.values(*(np.asarray(v, dtype=float).tolist() for v in (
            checked['q'], checked['qd'], reference['q'], reference['qd'], checked['qdd'])))
        if adapt and all(map(math.isfinite, tau)):
            self.adapt(g, dt)
        s = self.lam * (reference['q'] - checked['q']) + reference['qd'] - checked['qd']
        return np.array(tau), s


class PayloadAdaptation(SlotineLi):
    """Slotine & Li's adaptive computed torque for a load of unknown inertia (module doc).

    Args:
        model: the arm's :class:`~ne_dynamics_ros.dynamics.model.RobotModel` without the
            load (identified or nominal); its friction is not part of this law.
        lam: Λ, (n,) or one value, 1/s, > 0.
        k: K, (n,) or one value, 1/s, >= 0 (K_D = K M̂(q)).
        gamma: Γ's (10,) diagonal (:func:`adaptation_gains`), >= 0; zeros: a fixed
            model (Slotine & Li without adaptation).
        link: the link the load is fixed to (default the tip link).
        mass_max: bound of the estimated mass, kg.
        gravity: (3,) m/s² in the base link frame.
        generated: run each step as generated code (default; checked against the NumPy
            regressor when built), else the NumPy regressor (a reference, ~100× slower).
        radius: the load lies within this distance of ``link``'s origin, m
            (:data:`DEFAULT_RADIUS`): it bounds the second moments by the mass, so that a
            released load takes its inertia with it.

    Attributes:
        estimate: (10,) the load's parameters in ``link``'s frame, kept physical
            (:func:`~ne_dynamics_ros.control.laws.physical_load.is_physical`,
            :func:`~ne_dynamics_ros.control.laws.physical_load.project_physical`).

    Raises:
        ModelError: bad gains, link or bound.
    """

    def __init__(self, model, lam, k, gamma=None, link=None, mass_max=DEFAULT_MASS_MAX,
                 gravity=STANDARD_GRAVITY, generated=True, radius=None):
        self.body, T = link_frame(model, link)
        self.link = link or model.tip_link
        mapping = np.zeros((PER_JOINT * model.n, 10))
        mapping[PER_JOINT * self.body:PER_JOINT * self.body + 10] = T
        # the arm's rigid bodies and armature; its friction is the caller's (as in
        # computed torque: compensated at the desired velocity, or left to the drive)
        step = PayloadStep(model, self.body, T, gravity) if generated else None
        super().__init__(model, lam, k, gamma, mass_max, gravity, without_friction(model),
                         mapping, [0] * 6 + [1] * 3 + [2], step, np.zeros(10),
                         DEFAULT_RADIUS if radius is None else radius)

    def _physical(self, estimate):
        return project_physical(estimate, self.mass_max, self.radius)

    def _admissible(self, estimate) -> bool:
        return is_physical(estimate, self.mass_max, radius=self.radius)

    @property
    def mass(self) -> float:
        """The estimated load mass, kg."""
        return float(self.estimate[9])

    def declare(self, mass: float, com, inertia):
        """Make a load the caller knows (a gripper closed on it) the estimate.

        ``mass`` kg >= 0; ``com`` (3,) m in the link's frame; ``inertia`` (6,) ixx, ixy,
        ixz, iyy, iyz, izz about the centre of mass, kg·m². Kept physical, within
        ``mass_max`` and ``radius`` (:func:`~ne_dynamics_ros.control.laws.physical_load.
        project_physical`); adaptation goes on from
        it. Raises ModelError for values not finite or a negative mass.
        """
        values = np.concatenate([[mass], np.ravel(com), np.ravel(inertia)]).astype(float)
        if values.shape != (10,) or not np.all(np.isfinite(values)) or mass < 0:
            raise ModelError(f'a declared load needs a finite mass >= 0 kg, a (3,) centre '
                             f'of mass and (6,) inertia, got {mass!r}, {com!r}, {inertia!r}')
        c = values[1:4]
        xx, xy, xz, yy, yz, zz = values[4:]
        J = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]) + mass * (
            (c @ c) * np.eye(3) - np.outer(c, c))
        p = np.concatenate([J[np.triu_indices(3)], mass * c, [mass]])
        self.estimate = p if self._admissible(p.tolist()) else np.asarray(
            self._physical(p.tolist()), dtype=float)

    @property
    def center_of_mass(self) -> np.ndarray:
        """(3,) the estimated centre of mass in the link's frame, m (zeros without mass)."""
        m = self.estimate[9]
        return self.estimate[6:9] / m if m > 0 else np.zeros(3)


class BaseAdaptation(SlotineLi):
    """Slotine & Li with every base parameter of the arm adapted (``adaptation: base``).

    The arm's base parameters (:func:`~ne_dynamics_ros.codegen.payload_step.base_columns`:
    Gautier's grouping under the default gravity, every inertial parameter under another)
    start from the model's values and adapt with Γ per kind of parameter (the kind of the
    parameter each group is named after). A load is learned into the last links' groups;
    nothing keeps the groups physical (a group is no body), only finite. The armature
    stays the model's, friction the caller's.

    Args:
        model, lam, k, gamma, gravity, generated: as :class:`PayloadAdaptation`.

    Attributes:
        estimate: (m,) the base parameters; ``columns`` their standard indices.
    """

    def __init__(self, model, lam, k, gamma=None, gravity=STANDARD_GRAVITY, generated=True):
        self.columns, values = base_columns(model, gravity)
        fixed = without_friction(model)
        fixed[inertial_index(model.n)] = 0.0
        mapping = np.zeros((PER_JOINT * model.n, len(self.columns)))
        mapping[self.columns, np.arange(len(self.columns))] = 1.0
        kinds = [0 if c % PER_JOINT < 6 else 1 if c % PER_JOINT < 9 else 2
                 for c in self.columns]
        step = BaseStep(model, self.columns, gravity) if generated else None
        super().__init__(model, lam, k, gamma, DEFAULT_MASS_MAX, gravity, fixed, mapping,
                         kinds, step, values)


__all__ = ['adaptation_gains', 'BaseAdaptation', 'DEFAULT_ADAPTATION_GAIN', 'DEFAULT_LENGTH',
           'DEFAULT_MASS_MAX', 'DEFAULT_RADIUS', 'link_frame', 'load_inertia_ratio',
           'LOAD_INERTIA_RATIO_WARNING', 'PayloadAdaptation', 'SlotineLi']
