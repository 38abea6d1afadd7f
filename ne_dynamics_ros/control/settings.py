"""The controller's run-time settings, generated from the parameter table.

:class:`ControllerSettings` is built from :data:`ne_dynamics_ros.control.parameters.
PARAMETERS` (the parameters marked ``runtime``), as generate_parameter_library generates a
typed struct for a ros2_controllers controller from its YAML: one field per run-time
parameter, in the table's order, documented with the table's description and unit, each
value checked by the table's check. Nothing here retypes a name of the table. Pure module
(no ROS).
"""
import dataclasses
import enum
from typing import Mapping, Optional

import numpy as np

from ne_dynamics_ros.control import parameters
from ne_dynamics_ros.errors import ControlParameterError

#: ``{name: default}`` of the run-time settings: the parameters of the table that may
#: change while the node runs (:data:`ne_dynamics_ros.control.parameters.RUNTIME`).
DEFAULT_SETTINGS = parameters.defaults(runtime_only=True)


def field_name(name: str) -> str:
    """Return a parameter's settings attribute (``contact.threshold``: ``contact_threshold``)."""
    return name.replace('.', '_')


def _plain(value):
    """Return a checked value as the plain value it was checked from (enum value, list)."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _attributes():
    """Return the generated class's ``Attributes`` section: settings, units, descriptions."""
    lines = []
    for name in parameters.RUNTIME:
        spec = parameters.BY_NAME[name]
        per_joint = ' (n,)' if spec.type == 'double_array' and name != 'gravity' else ''
        unit = f' [{spec.unit}]' if spec.unit else ''
        lines.append(f'    {field_name(name)}:{per_joint}{unit} {spec.description}')
    return '\n'.join(lines)


def _from_values(cls, values: Mapping, n: Optional[int] = None):
    """Validate plain values (names as in :data:`DEFAULT_SETTINGS`; absent = default).

    ``n`` is the number of joints; ``None`` (no model yet) checks everything except the
    number of gains.

    Raises:
        ControlParameterError: an unknown name, a wrong type, or a value out of range; the
            message names the setting.
    """
    unknown = sorted(set(values) - set(DEFAULT_SETTINGS))
    if unknown:
        raise ControlParameterError(f'unknown controller settings {unknown}')
    merged = dict(DEFAULT_SETTINGS, **values)
    # each value checked as the parameter table says (the node checks with it too)
    return cls(**{field_name(name): parameters.check(name, merged[name], n)
                  for name in DEFAULT_SETTINGS})


def _as_values(self) -> dict:
    """Return the settings as plain values, the inverse of :meth:`from_values`."""
    return {name: _plain(getattr(self, field_name(name))) for name in DEFAULT_SETTINGS}


ControllerSettings = dataclasses.make_dataclass(
    'ControllerSettings', [(field_name(name), object) for name in parameters.RUNTIME],
    frozen=True,
    namespace={'from_values': classmethod(_from_values), 'as_values': _as_values})
ControllerSettings.__module__ = __name__
ControllerSettings.__doc__ = (
    'The run-time settings of the computed-torque controller, validated.\n\n'
    'Generated from the parameter table (one field per run-time parameter; the values as '
    'the table\'s checks return them: ``mode`` a :class:`~ne_dynamics_ros.control.laws.'
    'ControlMode`, per-joint values (n,) arrays). Build it with :meth:`from_values`.\n\n'
    'Attributes:\n' + _attributes() + '\n')


def for_joints(settings, n: int):
    """Return ``settings`` checked for ``n`` joints: a :class:`ControllerSettings`.

    ``settings``: a :class:`ControllerSettings` (checked again when its per-joint values
    are not n long, e.g. made before the model was known), a mapping of plain values, or
    None (the defaults).

    Raises:
        ControlParameterError: as :meth:`ControllerSettings.from_values`.
    """
    if not isinstance(settings, ControllerSettings):
        return ControllerSettings.from_values(settings or {}, n)
    per_joint = (settings.kp, settings.kd, settings.ki, settings.integral_limit)
    if any(v is None or np.size(v) != n for v in per_joint):
        return ControllerSettings.from_values(settings.as_values(), n)
    return settings


__all__ = ['ControllerSettings', 'DEFAULT_SETTINGS', 'for_joints']
