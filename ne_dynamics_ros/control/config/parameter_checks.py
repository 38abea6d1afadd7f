"""The checks of the parameter table's values (:mod:`~ne_dynamics_ros.control.parameters`).

Each ``check(value, n, name)`` returns the value normalised or raises
:class:`~ne_dynamics_ros.errors.ControlParameterError` naming the parameter; ``n``
is the number of joints, or None before the model is known. Pure module (no ROS).
"""
import math

import numpy as np

from ne_dynamics_ros.errors import ControlParameterError

_SEQUENCES = (list, tuple, np.ndarray)


def is_unset(value) -> bool:
    """Return whether a parameter is left unset: None, or an empty list, tuple or array."""
    return value is None or (isinstance(value, _SEQUENCES) and len(value) == 0)


def expand_gain(value, n: int, name: str) -> np.ndarray:
    """Turn a gain given as one value or one value per joint into an (n,) array.

    Args:
        value: a number, or a sequence of ``n`` numbers (chain order).
        n: number of joints.
        name: parameter name used in error messages (``'kp'``, ``'kd'``).

    Raises:
        ControlParameterError: wrong length, NaN/inf, or a negative gain.
    """
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    if arr.ndim != 1 or arr.size not in (1, n):
        raise ControlParameterError(
            f'{name} must be one value or {n} values (one per joint), got {arr.size}')
    if not np.all(np.isfinite(arr)):
        raise ControlParameterError(f'{name} contains NaN or inf')
    if np.any(arr < 0.0):
        raise ControlParameterError(f'{name} must be >= 0, got {arr.tolist()}')
    return np.broadcast_to(arr, (n,)).copy()


def check_effort_limits(value, n: int) -> np.ndarray:
    """Validate effort limits (N*m or N), one positive value per joint, inf allowed.

    Raises:
        ControlParameterError: wrong length, NaN, or a value <= 0.
    """
    arr = np.asarray(value, dtype=float).reshape(-1)
    if arr.size != n:
        raise ControlParameterError(f'effort_limits needs {n} values, got {arr.size}')
    if np.any(np.isnan(arr)) or np.any(arr <= 0.0):
        raise ControlParameterError(f'effort_limits must all be > 0, got {arr.tolist()}')
    return arr


def check_gravity(value) -> np.ndarray:
    """Validate a gravity vector: three finite numbers in m/s^2 (base frame).

    Raises:
        ControlParameterError: not three finite numbers.
    """
    arr = np.asarray(value, dtype=float).reshape(-1)
    if arr.size != 3 or not np.all(np.isfinite(arr)):
        raise ControlParameterError(
            f'gravity must be 3 finite numbers (m/s^2), got {arr.tolist()}')
    arr = arr.copy()
    arr.flags.writeable = False         # shared by the settings and the law: constant
    return arr


def checked_joints(joints, chain):
    """Return ``(joints, order)``: the command order and its indices into ``chain``.

    ``joints``: the command order (e.g. the effort controller's ``joints``), each chain
    joint exactly once, or None (the chain's order); ``order`` is None when it is the
    chain's order (nothing to reorder).

    Raises:
        ControlParameterError: ``joints`` does not list each chain joint exactly once.
    """
    chain = list(chain)
    joints = chain if joints is None else list(joints)
    if not all(isinstance(j, str) for j in joints) or sorted(joints) != sorted(chain):
        raise ControlParameterError(f'joints {joints} must list each chain joint {chain} '
                                    'exactly once')
    return joints, (None if joints == chain else [chain.index(j) for j in joints])


def numbers(value, name) -> np.ndarray:
    """Return a number or sequence of numbers as a 1-D float array (no booleans, no text).

    Raises:
        ControlParameterError: anything else, naming ``name``.
    """
    items = value if isinstance(value, _SEQUENCES) else [value]
    if any(isinstance(v, (bool, np.bool_, str, bytes)) for v in items):
        raise ControlParameterError(
            f'{name} must be a number or an array of numbers, got {value!r}')
    try:
        return np.atleast_1d(np.asarray(value, dtype=float)).reshape(-1)
    except (TypeError, ValueError):
        raise ControlParameterError(
            f'{name} must be a number or an array of numbers, got {value!r}') from None


def scalar(value, name) -> float:
    """Return a single number as a float; ControlParameterError otherwise."""
    values = numbers(value, name)
    if isinstance(value, _SEQUENCES) or values.size != 1:
        raise ControlParameterError(f'{name} must be a single number, got {value!r}')
    return float(values[0])


def per_joint(values, n, name):
    """One value for every joint or one per joint: an (n,) array (as given if n is None)."""
    values = np.asarray(values, dtype=float)
    if n is None or values.size == n:
        return values
    if values.size == 1:
        return np.full(n, values[0])
    raise ControlParameterError(f'{name} needs 1 or {n} values (one per joint), got '
                                f'{values.size}')


def checked_one_of(choices):
    """Return a check that accepts one of ``choices`` (text)."""
    def check(value, n, name):
        if value not in choices:
            raise ControlParameterError(f'{name} {value!r} is not one of: '
                                        f'{", ".join(choices)}')
        return value
    return check


def checked_flag(value, n, name):
    """Check a bool (``true``/``false``)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ControlParameterError(f'{name} must be true or false, got {value!r}')
    return bool(value)


def checked_positive(value, n, name):
    """Check one finite number > 0."""
    value = scalar(value, name)
    if not (math.isfinite(value) and value > 0.0):
        raise ControlParameterError(f'{name} must be a finite value > 0, got {value}')
    return value


def checked_non_negative(value, n, name):
    """Check one finite number >= 0."""
    value = scalar(value, name)
    if not (math.isfinite(value) and value >= 0.0):
        raise ControlParameterError(f'{name} must be finite and >= 0, got {value!r}')
    return value


#: The longest loop delay the controller predicts across, s: beyond it the state is older
#: than the default state_timeout and no prediction is worth making.
MAX_DELAY_COMPENSATION = 0.1


def checked_delay(value, n, name):
    """Check a delay in s: finite, 0 <= value <= :data:`MAX_DELAY_COMPENSATION`."""
    value = scalar(value, name)
    if not (math.isfinite(value) and 0.0 <= value <= MAX_DELAY_COMPENSATION):
        raise ControlParameterError(
            f'{name} must be >= 0 and <= {MAX_DELAY_COMPENSATION} s, got {value!r}')
    return value


def checked_fraction(value, n, name):
    """Check one number in [0, 1)."""
    value = scalar(value, name)
    if not (math.isfinite(value) and 0.0 <= value < 1.0):
        raise ControlParameterError(f'{name} must be >= 0 and < 1, got {value!r}')
    return value


def checked_non_negative_or_inf(value, n, name):
    """Check one number >= 0, ``.inf`` allowed."""
    value = scalar(value, name)
    if not value >= 0.0:
        raise ControlParameterError(f'{name} must be >= 0 (inf: no check), got {value}')
    return value


def checked_gains(value, n, name):
    """Check a gain: one value >= 0 or one per joint."""
    values = numbers(value, name)
    return expand_gain(values, n or values.size, name)


def checked_six(value, n, name):
    """Check a Cartesian stiffness: one finite value >= 0 or six (x, y, z, then about them)."""
    values = numbers(value, name)
    if values.size not in (1, 6) or not np.all(np.isfinite(values) & (values >= 0.0)):
        raise ControlParameterError(f'{name} must be one or six finite values >= 0 (N/m for '
                                    f'x, y, z, then N*m/rad about x, y, z), got '
                                    f'{values.tolist()}')
    return np.broadcast_to(values, (6,)).copy()


def checked_six_or_unset(value, n, name):
    """Check a Cartesian stiffness (:func:`checked_six`), or unset: None or empty -> None."""
    return None if is_unset(value) else checked_six(value, n, name)


def checked_speeds(value, n, name):
    """Check a pair of speed bounds: two finite values > 0 (m/s, then rad/s)."""
    values = numbers(value, name)
    if values.size != 2 or not np.all(np.isfinite(values) & (values > 0.0)):
        raise ControlParameterError(f'{name} must be two finite values > 0 (m/s, rad/s), '
                                    f'got {values.tolist()}')
    return values


def checked_posture(value, n, name):
    """Check a posture: unset (empty), or n finite joint positions."""
    if is_unset(value):
        return None
    return checked_joint_values(value, n, name, np.isfinite, 'finite')


def checked_ki(value, n, name):
    """Check ``ki``: one value >= 0 or one per joint."""
    values = numbers(value, name)
    if not np.all(np.isfinite(values) & (values >= 0.0)):
        raise ControlParameterError(f'{name} must be finite and >= 0, got {values.tolist()}')
    return per_joint(values, n, name)


def checked_integral_limit(value, n, name):
    """Check ``integral_limit``: one value > 0 (``.inf`` allowed) or one per joint."""
    values = numbers(value, name)
    if not np.all(values > 0.0):
        raise ControlParameterError(
            f'{name} must be > 0 N m (inf: no bound), got {values.tolist()}')
    return per_joint(values, n, name)


def check_cutoff(value) -> float:
    """Validate a filter cut-off frequency in Hz (> 0, inf allowed).

    Raises:
        ControlParameterError: NaN or <= 0.
    """
    value = float(value)
    if math.isnan(value) or value <= 0.0:
        raise ControlParameterError(f'velocity_filter_cutoff must be > 0 Hz, got {value}')
    return value


def checked_gravity(value, n, name):
    """Check ``gravity``: three finite numbers, m/s²."""
    return check_gravity(numbers(value, name))


def checked_cutoff(value, n, name):
    """Check ``velocity_filter_cutoff``, Hz."""
    return check_cutoff(scalar(value, name))


def checked_byte_count(value, n, name):
    """Check a byte count: an integer > 0."""
    if type(value) is not int or value <= 0:
        raise ControlParameterError(f'{name} must be an integer > 0, got {value!r}')
    return value


def checked_thresholds(value, n, name):
    """Contact thresholds: unset (no detection), or one value or n values > 0 (inf: off)."""
    if is_unset(value):
        return None
    values = numbers(value, name)
    if not np.all(values > 0.0):           # NaN fails too
        raise ControlParameterError(f'{name} must be > 0 (inf: no detection on that '
                                    f'joint), got {values.tolist()}')
    return per_joint(values, n, name)


def checked_debounce(value, n, name):
    """Check ``contact.debounce``: an integer number of states >= 1."""
    if type(value) is not int or not 1 <= value <= 1000:
        raise ControlParameterError(f'{name} must be an integer from 1 to 1000, got '
                                    f'{value!r}')
    return value


def checked_priority(value, n, name):
    """Check ``realtime_priority``: an integer 0 to 99."""
    if type(value) is not int or not 0 <= value <= 99:
        raise ControlParameterError(f'{name} must be an integer from 0 to 99, got {value!r}')
    return value


def checked_latency(value, n, name):
    """Check ``cpu_dma_latency``: an integer >= -1 (microseconds; -1: leave it alone)."""
    if type(value) is not int or not -1 <= value <= 2_000_000_000:
        raise ControlParameterError(f'{name} must be an integer >= -1 (microseconds; -1: '
                                    f'leave it alone), got {value!r}')
    return value


def checked_joint_values(value, n, name, ok, what):
    """Check per-joint values: unset, or n finite values meeting ``ok`` (``what`` says it)."""
    if value is None:
        return None
    values = numbers(value, name)
    if not np.all(np.isfinite(values) & ok(values)):
        raise ControlParameterError(f'{name} must be {what}, got {values.tolist()}')
    if n is not None and values.size != n:
        raise ControlParameterError(f'{name} needs {n} values (one per joint), got '
                                    f'{values.size}')
    return values


def checked_drive_values(value, n, name):
    """Armature, damping or friction: unset, or n values >= 0."""
    return checked_joint_values(value, n, name, lambda v: v >= 0.0, 'finite values >= 0')


def checked_friction_velocity(value, n, name):
    """Check identified v_s per joint: unset, or n finite values > 0."""
    return checked_joint_values(value, n, name, lambda v: v > 0.0, 'finite values > 0')


def checked_friction_offset(value, n, name):
    """Check a constant friction effort per joint: unset, or n finite values (either sign)."""
    return checked_joint_values(value, n, name, lambda v: np.ones(v.shape, bool), 'finite values')


def checked_effort_limits(value, n, name):
    """Check ``effort_limits``: unset, or one value > 0 per joint."""
    if value is None:
        return None
    values = numbers(value, name)
    return check_effort_limits(values, n if n is not None else values.size)


def checked_joint_names(value, n, name):
    """Check ``joints``: unset, or distinct names."""
    if value is None:
        return None
    if not isinstance(value, _SEQUENCES) or not all(isinstance(v, str) for v in value):
        raise ControlParameterError(f'{name} must be a list of joint names, got {value!r}')
    return list(value)


def checked_text(value, n, name):
    """Check a text value."""
    if not isinstance(value, str):
        raise ControlParameterError(f'{name} must be text, got {value!r}')
    return value


__all__ = ['checked_byte_count', 'checked_cutoff', 'checked_debounce', 'checked_drive_values',
           'checked_effort_limits', 'checked_flag', 'checked_fraction',
           'checked_friction_offset', 'checked_friction_velocity', 'checked_gains',
           'checked_gravity', 'checked_integral_limit', 'checked_joint_names',
           'checked_delay', 'checked_joint_values', 'checked_ki',
           'checked_non_negative',
           'checked_non_negative_or_inf', 'checked_one_of', 'checked_positive',
           'checked_posture', 'checked_priority', 'checked_six', 'checked_six_or_unset',
           'checked_speeds',
           'checked_text', 'checked_thresholds', 'is_unset', 'numbers', 'per_joint', 'scalar']
