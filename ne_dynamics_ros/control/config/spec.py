"""What a parameter is: name, type, default, unit, constraint, and how a value is checked.

Pure module. The node's table (:mod:`ne_dynamics_ros.control.parameters`) is made of
these rows: the node's own, and each law's, declared in the law's module
(:attr:`~ne_dynamics_ros.control.laws.base.Law.parameters`).
"""
from dataclasses import dataclass
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class ParameterSpec:
    """One parameter: what it is, its default, its unit and how a value is checked.

    Attributes:
        name: the ROS parameter name.
        type: ``'string'``, ``'bool'``, ``'integer'``, ``'double'``, ``'double_array'``
            (one value or one per joint), ``'string_array'``.
        default: the default value (None: not set).
        description: what it does.
        unit: SI unit ('' for none).
        constraints: the bounds, in words (the descriptor's ``additional_constraints``).
        runtime: may change while the node runs (otherwise read-only).
        check: ``check(value, n)`` returns the value normalised or raises
            :class:`ControlParameterError` naming the parameter; ``n`` is the number of
            joints, or None before the model is known. None: no check beyond the type.
    """

    name: str
    type: str
    default: Any
    description: str
    unit: str = ''
    constraints: str = ''
    runtime: bool = False
    check: Optional[Callable] = None


__all__ = ['ParameterSpec']
