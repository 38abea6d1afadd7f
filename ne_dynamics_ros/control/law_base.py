"""The protocol of the control-law objects, and what a law is built from (no ROS).

:class:`Law` is the protocol (:mod:`~ne_dynamics_ros.control.law` says what each member
means and lists the laws); :class:`LawContext` what a law is built from; :class:`LawStep`
one state as a law sees it.

Units: q in rad (m for prismatic joints), qd in rad/s, efforts in N·m (N).
"""
from dataclasses import dataclass
from typing import List, Sequence

from ne_dynamics_ros.control.laws import clamp_values, ControlLawConfig, ControlMode

#: Modes whose law carries the load the adaptive part holds (learned or declared).
LOAD_CARRYING_MODES = frozenset({ControlMode.ADAPTIVE, ControlMode.CARTESIAN_IMPEDANCE})


@dataclass(frozen=True)
class LawContext:
    """What a law is built from: the controller's fixed parts and the settings in force.

    Attributes:
        model: the :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        dynamics: what the law calls for M, C, g: the model or its generated program
            (:class:`~ne_dynamics_ros.codegen.CompiledDynamics`).
        config: the law's :class:`~ne_dynamics_ros.control.laws.ControlLawConfig` (mode,
            gains, gravity, limits, friction flags).
        settings: the :class:`~ne_dynamics_ros.control.settings.ControllerSettings` in
            force (immutable: new settings are a new context).
        adaptive: the controller's :class:`~ne_dynamics_ros.control.adaptive_mode.
            AdaptiveMode` (what it learned is kept across modes and runs).
        contact: the controller's :class:`~ne_dynamics_ros.control.contact_mode.
            ContactMode` (friction at measured velocities, the comply law).
    """

    model: object
    dynamics: object
    config: ControlLawConfig
    settings: object
    adaptive: object
    contact: object

    @property
    def adaptive_law(self):
        """The adaptive law whose load the model carries, else None.

        In mode ``adaptive`` its law; in mode ``cartesian_impedance`` the load it holds
        (learned before in mode ``adaptive``, or declared), once it holds a mass.
        """
        mode, law = self.config.mode, self.adaptive.law
        if mode is ControlMode.ADAPTIVE or (mode in LOAD_CARRYING_MODES
                                            and getattr(law, 'mass', 0.0) > 0.0):
            return law
        return None


class LawStep:
    """One state as a law sees it (lists of n floats, chain order).

    ``now``: the controller's clock, s; ``t``: the state's instant (its stamp), s; ``q``,
    ``qd``: the measured positions and velocities; ``reference``: ``(q_d, qd_d, qdd_d)``
    of the run's reference at ``t``; ``efforts``: the measured efforts, or None;
    ``extra``: efforts added before the limits (the integral action), or None.
    """

    __slots__ = ('now', 't', 'q', 'qd', 'reference', 'efforts', 'extra')

    def __init__(self, now, t, q, qd, reference, efforts, extra):
        self.now, self.t, self.q, self.qd = now, t, q, qd
        self.reference, self.efforts, self.extra = reference, efforts, extra


class Law:
    """The protocol of a control law (module docstring); joint laws derive from it.

    Args:
        context: the :class:`LawContext` in force.
    """

    mode: ControlMode = None
    follows_trajectory = True
    integrates = True
    #: the measured efforts are read for it (:attr:`LawStep.efforts`; None otherwise)
    needs_efforts = False
    #: why a trajectory is refused when ``follows_trajectory`` is False
    refusal = ''

    def __init__(self, context: LawContext):
        self.context = context

    def effort(self, step: LawStep) -> List[float]:
        """Return the n efforts of one state (clamped, finite; see the module docstring)."""
        raise NotImplementedError

    def reconfigured(self, context: LawContext) -> 'Law':
        """Return this law under new settings of the same mode (default: a new object)."""
        return type(self)(context)

    def restarted(self) -> 'Law':
        """Return the law for a new run (a hold, a resume): a new object, nothing kept."""
        return type(self)(self.context)


def clamped(tau: Sequence[float], context: LawContext) -> List[float]:
    """Return ``tau`` (n floats) checked finite and clamped to the effort limits."""
    return clamp_values(tau, context.config.gain_values[2])


__all__ = ['clamped', 'Law', 'LawContext', 'LawStep', 'LOAD_CARRYING_MODES']
