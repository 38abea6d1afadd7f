"""Joint velocities from positions, for joint states that carry none.

Pure module (no ROS import). ``joint_state_broadcaster`` publishes no velocity (or NaN)
when the hardware has no velocity state interface; the controller then estimates qd by
filtered finite differences of the measured positions.
"""
import math

import numpy as np

from ne_dynamics_ros.control.config.parameter_checks import check_cutoff


class VelocityEstimator:
    """Joint velocities from positions: finite differences through a first-order low-pass.

    Used when ``/joint_states`` carries no velocities. For samples ``q_k`` at times
    ``t_k``: ``v_k = (q_k - q_{k-1}) / (t_k - t_{k-1})`` and
    ``qd_k = qd_{k-1} + a (v_k - qd_{k-1})`` with ``a = dt / (dt + 1 / (2 pi f_c))``
    (discretised RC filter, cut-off ``f_c`` in Hz; ``f_c = inf`` gives raw differences).
    The first sample gives zero velocity. A sample whose time does not advance leaves the
    estimate unchanged; a jump back in time restarts the estimator.
    """

    def __init__(self, n: int, cutoff_hz: float = 50.0):
        """Create an estimator for ``n`` joints with cut-off frequency ``cutoff_hz`` (Hz > 0)."""
        self.n = n
        self.cutoff_hz = check_cutoff(cutoff_hz)
        self.reset()

    def reset(self):
        """Forget the history: the next sample gives zero velocity."""
        self._q = None
        self._t = None
        self._qd = np.zeros(self.n)

    def update(self, q, t: float) -> np.ndarray:
        """Feed positions ``q`` (n,) measured at time ``t`` (s); return the (n,) estimate."""
        q = np.array(q, dtype=float)
        if self._q is None or t < self._t:
            self._q, self._t, self._qd = q, t, np.zeros(self.n)
            return self._qd.copy()
        dt = t - self._t
        if dt <= 0.0:
            return self._qd.copy()
        raw = (q - self._q) / dt
        if math.isinf(self.cutoff_hz):
            alpha = 1.0
        else:
            alpha = dt / (dt + 1.0 / (2.0 * math.pi * self.cutoff_hz))
        self._qd = self._qd + alpha * (raw - self._qd)
        self._q, self._t = q, t
        return self._qd.copy()
