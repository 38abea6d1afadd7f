"""``sim_arm_node``'s flange force-torque sensor, published as a UR e-series' is.

With ``ft_sensor`` set (a link, ``tool0`` on the UR5e), the simulated arm carries a
six-axis sensor there (:meth:`MujocoArm.flange_wrench
<ne_dynamics_ros.simulation.mujoco_arm.MujocoArm.flange_wrench>`: MuJoCo's measured force
and torque, the tool's weight and inertia in them; :meth:`SimulatedArm.flange_wrench
<ne_dynamics_ros.simulation.simulated_arm.SimulatedArm.flange_wrench>`: the wrench applied
there and the payload's weight) and:

* publishes it on ``force_torque_sensor_broadcaster/wrench``
  (``geometry_msgs/WrenchStamped``, ``frame_id`` the link, stamped like the joint state it
  comes with), the topic ros2_controllers' force_torque_sensor_broadcaster gives a UR
  e-series' sensor: the wrench the tool side exerts on the arm (a push along +x reads
  +x), with Gaussian noise of ``ft_noise`` (N, then N·m);
* takes pushes on ``~/applied_wrench`` (``geometry_msgs/WrenchStamped``): a force (N) in
  the base frame (``frame_id`` empty) on the tool at the link's origin,
  held until the next one (a zero force ends it). A torque, another frame, or a value
  that is not finite is dropped with a warning.
"""
import math

import numpy as np
from geometry_msgs.msg import WrenchStamped

from ne_dynamics_ros.errors import ModelError
from ne_dynamics_ros.simulation.mujoco_arm import FT_BODY, MujocoArm

#: The topic force_torque_sensor_broadcaster publishes a UR e-series' sensor on.
SENSOR_TOPIC = 'force_torque_sensor_broadcaster/wrench'


class FlangeSensorIO:
    """The sensor's topic and the pushes' topic of ``node`` for ``arm`` at ``link``.

    Args:
        node: the ``sim_arm_node`` (its logger).
        arm: the :class:`~ne_dynamics_ros.simulation.mujoco_arm.MujocoArm` (built with
            ``ft_sensor=link``) or :class:`~ne_dynamics_ros.simulation.simulated_arm.
            SimulatedArm`.
        link: the sensor's link. noise: (2,) standard deviations, N and N·m.

    Raises:
        ModelError: ``noise`` not two finite values >= 0.
    """

    def __init__(self, node, arm, link, noise):
        noise = np.asarray(noise, dtype=float).reshape(-1)
        if noise.shape != (2,) or not np.all(np.isfinite(noise)) or np.any(noise < 0):
            raise ModelError(f'ft_noise must be two values >= 0 (N, N m), got '
                             f'{noise.tolist()}')
        self._node, self._arm, self._link, self._noise = node, arm, link, noise
        self._body = FT_BODY if isinstance(arm, MujocoArm) else link
        self._rng = np.random.default_rng(0)
        self.publisher = node.create_publisher(WrenchStamped, SENSOR_TOPIC, 10)
        self.subscription = node.create_subscription(WrenchStamped, '~/applied_wrench',
                                                     self._on_push, 10)

    def _on_push(self, msg):
        f, m = msg.wrench.force, msg.wrench.torque
        force = [f.x, f.y, f.z]
        why = ('a torque (the tool is pushed at the link\'s origin)' if any((m.x, m.y, m.z))
               else f'frame {msg.header.frame_id!r} (give the base frame: empty)'
               if msg.header.frame_id
               else 'a value that is not finite' if not all(map(math.isfinite, force))
               else None)
        if why is not None:
            self._node.get_logger().warning(f'applied_wrench dropped: {why}',
                                            throttle_duration_sec=2.0)
            return
        self._arm.push(self._body if any(force) else None, (0.0, 0.0, 0.0), force)

    def publish(self, stamp):
        """Publish the sensor's reading stamped ``stamp`` (a ``builtin_interfaces/Time``)."""
        at = () if self._body == FT_BODY else (self._link,)
        force, torque = self._arm.flange_wrench(*at)
        if self._noise.any():
            force = force + self._rng.normal(0.0, self._noise[0], 3)
            torque = torque + self._rng.normal(0.0, self._noise[1], 3)
        message = WrenchStamped()
        message.header.stamp, message.header.frame_id = stamp, self._link
        w = message.wrench
        w.force.x, w.force.y, w.force.z = (float(v) for v in force)
        w.torque.x, w.torque.y, w.torque.z = (float(v) for v in torque)
        self.publisher.publish(message)


__all__ = ['FlangeSensorIO', 'SENSOR_TOPIC']
