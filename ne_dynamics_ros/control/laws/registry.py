"""The laws by mode: the one place that names the modes (no ROS).

:data:`LAW_CLASSES` lists the law classes; the ``mode`` parameter's values, the
:class:`ControlMode` enum, are their names. Everything else asks a law class what it
needs and gives (:class:`~.base.Law`): whether it follows trajectories, carries a load,
which topics it uses. Adding a law is its module and its row here
(``docs/architecture.md`` shows the commit that added ``joint_impedance``).
"""
import enum
from typing import Dict

import numpy as np

from ne_dynamics_ros.control.laws.adaptive import AdaptiveLaw
from ne_dynamics_ros.control.laws.base import JointLaw, Law, LawContext, TOPIC_KINDS
from ne_dynamics_ros.control.laws.cartesian import CartesianImpedanceLaw
from ne_dynamics_ros.control.laws.computed_torque import ComputedTorqueLaw
from ne_dynamics_ros.control.laws.feedforward import FeedforwardLaw
from ne_dynamics_ros.control.laws.gravity import GravityCompensationLaw
from ne_dynamics_ros.control.laws.hand_guiding import HandGuidingLaw
from ne_dynamics_ros.control.laws.joint_impedance import JointImpedanceLaw
from ne_dynamics_ros.errors import ControlParameterError

#: Every law that is a mode, in the order the parameter's description lists them.
LAW_CLASSES = (
    ComputedTorqueLaw,
    FeedforwardLaw,
    GravityCompensationLaw,
    AdaptiveLaw,
    CartesianImpedanceLaw,
    JointImpedanceLaw,
    HandGuidingLaw,
)

#: The mode the node starts in (the ``mode`` parameter's default): the first row's.
DEFAULT_MODE = LAW_CLASSES[0].name
#: The control law applied on every joint state: the ``mode`` parameter's values.
ControlMode = enum.Enum('ControlMode', [(law.name.upper(), law.name) for law in LAW_CLASSES],
                        type=str, module=__name__)

#: The law of each mode: ``LAWS[mode](context)`` builds it.
LAWS: Dict[ControlMode, type] = {ControlMode(law.name): law for law in LAW_CLASSES}


def _topics():
    """Every law's own topics, each once (by name), in the registry's order."""
    seen = {}
    for law in LAW_CLASSES:
        for topic in law.topics:
            if topic.kind not in TOPIC_KINDS:
                raise TypeError(f'{law.__name__} declares {topic.name} of an unknown kind '
                                f'{topic.kind!r} (one of {sorted(TOPIC_KINDS)})')
            if seen.setdefault(topic.name, (law, topic))[1] != topic:
                raise TypeError(f'{topic.name} is declared twice, differently '
                                f'({seen[topic.name][0].__name__} and {law.__name__})')
    return tuple(seen.values())


def _parameters():
    """Every law's parameter rows, each once (a row two laws share, e.g. a sensor's)."""
    rows = {}
    for law in LAW_CLASSES:
        for row in law.parameters:
            if rows.setdefault(row.name, row) is not row:
                raise TypeError(f'{row.name} is declared twice, differently ({law.__name__})')
    return tuple(rows.values())


#: The laws' rows of the node's parameter table, in the registry's order, each once.
LAW_PARAMETERS = _parameters()
#: ``(law class, LawTopic)`` of every law's own topic: the node makes each once,
#: whatever the mode.
LAW_TOPICS = _topics()


def _inputs():
    inputs = {}
    for law in LAW_CLASSES:
        for topic in law.topics:
            if not topic.output:
                inputs.setdefault(topic.key, ([], topic))[0].append(law)
    return {key: (tuple(laws), topic) for key, (laws, topic) in inputs.items()}


#: The input topics by key: ``INPUTS[key] = (the law classes that take it, LawTopic)``.
INPUTS: Dict[str, tuple] = _inputs()


def parse_mode(value) -> ControlMode:
    """Return the :class:`ControlMode` named ``value``.

    Raises:
        ControlParameterError: ``value`` is not one of the mode names.
    """
    try:
        return ControlMode(value)
    except ValueError:
        names = ', '.join(m.value for m in ControlMode)
        raise ControlParameterError(f'mode {value!r} is not one of: {names}') from None


def law_class(mode) -> type:
    """Return the law class of ``mode`` (a :class:`ControlMode` or its name).

    Raises:
        ControlParameterError: no such mode.
    """
    return LAWS[parse_mode(mode)]


def make_law(context: LawContext) -> Law:
    """Return a new law object of ``context``'s mode."""
    return context.law_class(context)


def _joint_law(gains) -> type:
    law = LAWS[gains.mode]
    if not issubclass(law, JointLaw):
        raise ControlParameterError(f'the {gains.mode.value} law has a state of its own: '
                                    'it is an object (LAWS[mode](context))')
    return law


def compute_effort_values(model, gains, q, qd, q_d, qd_d, qdd_d, extra=None):
    """Return the effort of a joint law on lists of n floats (the control path).

    ``gains``: a :class:`~.base.JointGains` of a mode whose law is a
    :class:`~.base.JointLaw`; ``extra``: n efforts added before the limits, or None.
    Raises what :func:`compute_effort` raises.
    """
    return _joint_law(gains).joint_effort(model, gains, q, qd, q_d, qd_d, qdd_d, extra)


def compute_effort(model, gains, q, qd, q_d, qd_d, qdd_d):
    """Apply a joint law and the limits: the effort command to publish.

    Args:
        model: a :class:`~ne_dynamics_ros.dynamics.model.RobotModel` (or anything with its
            interface: ``rnea``, ``gravity_torques``, ``friction_torques``).
        gains: a :class:`~.base.JointGains` (mode, gains, gravity, limits, friction).
        q, qd: (n,) measured joint positions and velocities.
        q_d, qd_d, qdd_d: (n,) reference positions, velocities, accelerations.

    Returns:
        (n,) finite effort, ``|tau_i| <= effort_limits[i]``, chain order.

    Raises:
        NonFiniteEffortError: the law produced NaN/inf.
        ControlParameterError: the mode's law is not a joint law (it keeps a state).
        ne_dynamics_ros.errors.StateError: from the model, for malformed arrays.
    """
    law = _joint_law(gains)
    arrays = [np.asarray(v, dtype=float) for v in (q, qd, q_d, qd_d, qdd_d)]
    n = len(gains.effort_limits)
    if all(a.shape == (n,) for a in arrays):
        return np.array(law.joint_effort(model, gains, *(a.tolist() for a in arrays)))
    return law.checked_effort(model, gains, gains.law_gravity, *arrays)


__all__ = ['compute_effort', 'compute_effort_values', 'ControlMode', 'INPUTS', 'LAW_CLASSES',
           'LAW_PARAMETERS', 'LAW_TOPICS', 'law_class', 'LAWS', 'make_law', 'parse_mode']
