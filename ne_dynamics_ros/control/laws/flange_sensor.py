"""A flange force-torque sensor as the laws read it: tared, the tool taken out (no ROS).

What a law that reads the operator's (or the environment's) wrench at the tip takes from
a six-axis sensor at the flange (``hand_guiding``; ``cartesian_impedance`` with
``cartesian.wrench: sensor``): its topic, its parameter rows and :class:`FlangeSensor`.

* The topic, ``~/flange_wrench`` (``geometry_msgs/WrenchStamped``, best effort as
  ros2_controllers' force_torque_sensor_broadcaster publishes a UR e-series' sensor:
  remap ``/force_torque_sensor_broadcaster/wrench`` here): the force and the moment about
  the sensor's origin, in its axes, taken as the tip link's frame (``header.frame_id``
  empty, the tip link, or ``ft_sensor.frame``); the wrench the tool side exerts on the
  arm (a push along +x reads +x; the tool's weight reads m g, downward).
* Its bias is tared at the start of each run: the mean over ``ft_sensor.tare_time`` of
  the readings, less the tool, the arm held (hands off then).
* The tool's weight and inertia come out at every state, from ``ft_sensor.tool_mass`` at
  ``ft_sensor.tool_com`` (sensor frame): ``m R^T g`` with its moment ``c x m R^T g``, and
  the mass times the tip's acceleration (which the tool asks of the arm).
* A sensor silent for ``ft_sensor.timeout`` reads as no push.

Units: N, N·m, m, kg, s; the wrench returned in the base link frame, at the tip's origin.
"""
import numpy as np

from ne_dynamics_ros.control.config.parameter_checks import (checked_non_negative,
                                                             checked_positive, checked_text,
                                                             numbers)
from ne_dynamics_ros.control.config.spec import ParameterSpec
from ne_dynamics_ros.control.laws.base import LawInputError, LawTopic
from ne_dynamics_ros.errors import ControlParameterError

#: The sensor's topic (every law that reads it declares this one).
FLANGE_WRENCH = LawTopic(
    'flange_wrench', '~/flange_wrench', 'wrench', sensor_data=True,
    summary='a flange force-torque sensor (geometry_msgs/WrenchStamped, as '
            'force_torque_sensor_broadcaster publishes it: remap '
            '/force_torque_sensor_broadcaster/wrench here), in the tip link\'s frame')


def _checked_com(value, n, name):
    values = numbers(value, name)
    if values.size != 3 or not np.all(np.isfinite(values)):
        raise ControlParameterError(f'{name} must be 3 finite values (m), got '
                                    f'{values.tolist()}')
    return values


#: The sensor's rows of the node's parameter table (the laws that read it list them).
PARAMETERS = (
    ParameterSpec('ft_sensor.frame', 'string', '',
                  'the name the flange sensor\'s header gives its frame, taken as the tip '
                  'link\'s (e.g. tool0_controller on a UR); the tip link\'s name and an empty '
                  'one are always taken.', runtime=True, check=checked_text),
    ParameterSpec('ft_sensor.tool_mass', 'double', 0.0,
                  'the mass of the tool beyond the flange sensor, whose weight and inertia '
                  'are taken out of its reading at every state.', unit='kg',
                  constraints='>= 0', runtime=True, check=checked_non_negative),
    ParameterSpec('ft_sensor.tool_com', 'double_array', [0.0, 0.0, 0.0],
                  'the tool\'s centre of mass in the flange sensor\'s frame.', unit='m',
                  constraints='3 finite values', runtime=True, check=_checked_com),
    ParameterSpec('ft_sensor.tare_time', 'double', 0.2,
                  'how long the flange sensor is averaged for its bias at the start of each '
                  'run of a law that reads it, the arm held (hands off then).', unit='s',
                  constraints='> 0', runtime=True, check=checked_positive),
    ParameterSpec('ft_sensor.timeout', 'double', 0.1,
                  'a flange sensor silent this long reads as no push.', unit='s',
                  constraints='> 0', runtime=True, check=checked_positive),
)


class FlangeSensor:
    """The sensor's readings for one run of a law (module docstring).

    Args:
        settings: the controller's settings (``ft_sensor.*``). model: the chain (its
            ``tip_link``). gravity: (3,) m/s², base frame (the law's).
    """

    def __init__(self, settings, model, gravity):
        self._frames = {'', model.tip_link, settings.ft_sensor_frame}
        self._tip = model.tip_link
        self._mass = float(settings.ft_sensor_tool_mass)
        self._com = np.asarray(settings.ft_sensor_tool_com, dtype=float)
        self._tare_time = float(settings.ft_sensor_tare_time)
        self._timeout = float(settings.ft_sensor_timeout)
        self._gravity = np.asarray(gravity, dtype=float)
        #: the newest reading (6,) in the sensor's frame; a new one came since the last state
        self.reading, self.fresh = None, False
        self._heard = None               # when the newest reading came (the state's time)
        self._tare, self._tare_start = [], None
        #: the bias, (6,) in the sensor's frame; None until tared
        self.bias = None

    def take(self, value):
        """Take a reading (a :class:`~.base.WrenchInput`).

        Raises:
            LawInputError: another frame, or not 3 + 3 finite values (nothing changed).
        """
        if value.frame_id not in self._frames:
            raise LawInputError(
                f'a wrench in frame {value.frame_id!r}: the sensor is taken in the tip '
                f'link\'s frame ({self._tip!r}, or set ft_sensor.frame to '
                f'{value.frame_id!r})')
        reading = np.concatenate([np.asarray(value.force, dtype=float).reshape(-1),
                                  np.asarray(value.torque, dtype=float).reshape(-1)])
        if reading.shape != (6,) or not np.all(np.isfinite(reading)):
            raise LawInputError(f'a wrench must be 3 + 3 finite values, got '
                                f'{reading.tolist()}')
        self.reading, self.fresh = reading, True

    def _tool(self, R):
        """(6,) the tool's weight in the sensor's frame, about its origin."""
        force = self._mass * (R.T @ self._gravity)
        (x, y, z), (a, b, c) = self._com.tolist(), force.tolist()      # com x force
        return np.array((a, b, c, y * c - z * b, z * a - x * c, x * b - y * a))

    def wrench(self, t, R, acceleration):
        """Return (6,) the wrench on the tool, base frame at the tip's origin, or zeros.

        ``t``: the state's instant, s; ``R``: (3, 3) the tip's orientation; ``acceleration``:
        (3,) the tip's acceleration, base frame, m/s². Zeros while taring, before the
        first reading, and once the sensor has been silent for ``ft_sensor.timeout``.
        """
        if self.fresh:
            self.fresh, self._heard = False, t
        if self.reading is None or t - self._heard > self._timeout:
            return np.zeros(6)
        contact = self.reading - self._tool(R)
        if self.bias is None:                 # taring: the arm held, hands off
            if self._tare_start is None:
                self._tare_start = t
            self._tare.append(contact)
            if t - self._tare_start >= self._tare_time:
                self.bias = np.mean(self._tare, axis=0)
            return np.zeros(6)
        contact = contact - self.bias
        force = R @ contact[:3] + self._mass * np.asarray(acceleration, dtype=float)
        return np.concatenate([force, R @ contact[3:]])

    def facts(self):
        """Return the sensor's lines for ``/diagnostics``, ``{key: value}``."""
        if self.reading is None:
            return {'flange sensor': 'no reading on ~/flange_wrench yet'}
        return {'flange sensor bias [N, N*m]': 'taring' if self.bias is None
                else ' '.join(f'{v:.2f}' for v in self.bias)}


__all__ = ['FLANGE_WRENCH', 'FlangeSensor', 'PARAMETERS']
