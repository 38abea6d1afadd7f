"""Reading measured joint states: which joints, whether believable, and their velocities.

Pure module (no ROS). :class:`StateReader` turns one ``sensor_msgs/JointState``'s fields
(:class:`JointStateSample`) into ``(q, qd)`` in chain order for the controller
(:class:`~ne_dynamics_ros.control.controller.ComputedTorqueController`):

* **Joints**: the state's names in any order, extra joints ignored; a controlled joint
  missing or a name given twice is an error. The chain's indices into the last names
  seen are kept, so the usual state (the same names again) is read without a lookup.
* **Plausibility**: a position beyond 1e6 (:data:`MAX_POSITION`), beyond a URDF joint
  limit by more than ``position_limit_margin``, or a measured or estimated speed beyond
  :data:`SPEED_FACTOR` x the URDF velocity limit is not a state of the arm: a
  :class:`JointStateError` says why (and the velocity estimator restarts).
* **Velocity estimation**: a state without velocities (or with all-NaN velocities, as
  ``joint_state_broadcaster`` sends for a missing interface) gets filtered finite
  differences of its positions (the run's :class:`~ne_dynamics_ros.control.sensing.
  velocity_estimator.VelocityEstimator`), timed by the state's stamps.

Units: q in rad (m for prismatic joints), qd in rad/s (m/s).
"""
import math
from collections import Counter
from operator import itemgetter, le
from typing import NamedTuple, Optional, Sequence

import numpy as np

#: No joint of an arm measures beyond this, rad or m (a continuous joint would need
#: 160 000 turns): a larger position is a glitch, not a state.
MAX_POSITION = 1e6
#: A measured or estimated speed more than this many times the URDF velocity limit is not
#: believed either (no arm moves that fast; a glitch or a unit error does).
SPEED_FACTOR = 10.0
#: A joint state naming more joints than this is dropped unread: no robot has that many,
#: and checking the names of a larger message would hold up the control path.
MAX_STATE_JOINTS = 10_000


class JointStateError(ValueError):
    """A measured joint state cannot be used (the message says why)."""


def _picker(index):
    """Return a function giving the items of a sequence at ``index`` (a list), a tuple."""
    if index is None:
        return None
    if len(index) == 1:
        i = index[0]
        return lambda values: (values[i],)
    return itemgetter(*index)


class JointStateSample(NamedTuple):
    """One measured joint state, as ``sensor_msgs/JointState`` carries it.

    Attributes:
        names: (k,) joint names, any order; joints that are not controlled are ignored.
        positions: (k,) rad (m).
        velocities: (k,) rad/s (m/s), or empty / all NaN to have them estimated.
        efforts: (k,) N*m (N) or empty; only checked for length.
        stamp_ns: ``header.stamp``, ns on the controller's clock; 0 = unstamped.
        steady_ns: a monotonic clock at receipt, ns, for the state timeout; None = the
            ``now_ns`` given to :meth:`ComputedTorqueController.update`.
    """

    names: Sequence[str]
    positions: Sequence[float]
    velocities: Sequence[float] = ()
    efforts: Sequence[float] = ()
    stamp_ns: int = 0
    steady_ns: Optional[int] = None


class StateReader:
    """Read joint states for one model: (q, qd) in chain order, or why not.

    Keeps what reading needs from one state to the next: the chain's indices into the
    last names seen, the plausibility bounds (from the model's limits and the settings'
    ``position_limit_margin``) and the origin of the stamps; the velocity estimator is
    the run's (:class:`~ne_dynamics_ros.control.sensing.activation.Sensing`), passed to
    :meth:`measured`. Not thread-safe: the controller calls it under its lock.

    Args:
        model: the :class:`~ne_dynamics_ros.dynamics.model.RobotModel` (joint names,
            position and velocity limits).
        settings: the controller's settings (``position_limit_margin``).
    """

    def __init__(self, model, settings):
        self.model = model
        #: (names of the last state, as a tuple; the chain's indices into them, a list)
        self._name_cache = (None, None, None)      # names, chain indices, their picker
        self._stamp_origin_ns = None
        self.set_bounds(settings)

    def set_bounds(self, settings):
        """Take the plausibility bounds of ``settings`` (``position_limit_margin``)."""
        margin = self._margin = settings.position_limit_margin
        with np.errstate(invalid='ignore'):              # inf - inf: no limit, no margin
            low = np.maximum(self.model.lower_limits - margin, -MAX_POSITION)
            high = np.minimum(self.model.upper_limits + margin, MAX_POSITION)
        #: Plain-float bounds of the plausibility checks on the hot path.
        self._position_bounds = (np.where(np.isnan(low), -MAX_POSITION, low).tolist(),
                                 np.where(np.isnan(high), MAX_POSITION, high).tolist())
        self._speed_bounds = (SPEED_FACTOR * self.model.velocity_limits).tolist()
        self._negative_speed_bounds = [-m for m in self._speed_bounds]

    def position(self, names: Sequence[str], positions: Sequence[float]) -> Optional[list]:
        """Return q (chain order, a list) of a state's positions, None if not believable.

        Only the positions are read (the velocities of an old state are of no use); the
        estimator is not touched.
        """
        try:
            state = self.measured(names, positions, [0.0] * len(names), (), 0, 0.0, None)
        except JointStateError:
            return None
        return None if state is None else state[0].tolist()

    def _measurement_time(self, stamp_ns: int, now: float) -> float:
        """Time (s) a state was measured, for velocity estimation: its stamp, else ``now``.

        Stamps count from the first stamp seen, so float seconds keep sub-microsecond
        resolution whatever clock the publisher stamps with.
        """
        if stamp_ns == 0:
            return now
        if self._stamp_origin_ns is None:
            self._stamp_origin_ns = stamp_ns
        return (stamp_ns - self._stamp_origin_ns) * 1e-9

    def _chain_index(self, names):
        """Return the chain joints' indices into ``names``, a list; None if it names none.

        Linear and at C speed (a set and ``tuple.index``): a state of thousands of names
        must not hold up the control path. Raises JointStateError for a name given twice
        or a chain joint missing.
        """
        key = tuple(names)
        if self._name_cache[0] == key:
            return self._name_cache[1]
        present = set(key)
        if len(present) != len(key):
            name = Counter(key).most_common(1)[0][0]
            raise JointStateError(f'joint {name[:80]!r} appears twice')
        chain = self.model.joint_names
        if not any(name in present for name in chain):
            index = None
        else:
            missing = [name for name in chain if name not in present]
            if missing:
                raise JointStateError(f'joints {missing} missing')
            index = [key.index(name) for name in chain]
        self._name_cache = (key, index, _picker(index))
        return index

    def measured(self, names, positions, velocities, efforts, stamp_ns, now, estimator):
        """(q, qd) in chain order; None if the state names none of our joints.

        ``estimator``: the run's :class:`~ne_dynamics_ros.control.sensing.velocity_estimator.
        VelocityEstimator`, fed the positions of a state without velocities (None: the
        state has them).

        Raises:
            JointStateError: mismatched lengths, missing or duplicated joints, NaN/inf.
        """
        k = len(names)
        if k > MAX_STATE_JOINTS:
            raise JointStateError(f'{k} joint names, more than MAX_STATE_JOINTS '
                                  f'({MAX_STATE_JOINTS}): dropped unread')
        for field, values in (('position', positions), ('velocity', velocities),
                              ('effort', efforts)):
            size = len(values)
            if field == 'position' and size != k or size not in (0, k):
                raise JointStateError(f'{field} has {size} values for {k} names')
        index = self._chain_index(names)
        if index is None:
            return None
        q = np.asarray(positions, dtype=float)[index]
        # One pass of plain comparisons (NaN fails them all); the reason is worked out
        # only for a state that fails.
        low, high = self._position_bounds
        if not all(lo <= v <= hi for v, lo, hi in zip(q.tolist(), low, high)):
            self._position_error(q)
        if len(velocities):
            qd = np.asarray(velocities, dtype=float)[index]
            # All NaN: joint_state_broadcaster's filler for a missing velocity interface.
            values = qd.tolist()
            if not all(v != v for v in values):
                if not all(-m <= v <= m for v, m in zip(values, self._speed_bounds)):
                    if not np.all(np.isfinite(qd)):
                        raise JointStateError(f'velocity contains NaN or inf: {values}')
                    self._check_speed(qd, 'velocity')
                return q, qd
        with np.errstate(over='ignore', invalid='ignore'):
            qd = estimator.update(q, self._measurement_time(stamp_ns, now))
        try:
            self._check_speed(qd, 'estimated velocity')
        except JointStateError:
            # a glitch must not poison the finite differences of the states after it
            estimator.reset()
            raise
        return q, qd

    def _position_error(self, q):
        """Raise the JointStateError that explains why positions ``q`` are not believed."""
        if not np.all(np.isfinite(q)):
            raise JointStateError(f'position contains NaN or inf: {q.tolist()}')
        if np.abs(q).max() > MAX_POSITION:
            j = int(np.argmax(np.abs(q)))
            raise JointStateError(f'position of {self.model.joint_names[j]} is {q[j]:.6g}, '
                                  f'beyond {MAX_POSITION:g}: not a measurement')
        margin = self._margin
        outside = (q < self.model.lower_limits - margin) | (q > self.model.upper_limits + margin)
        j = int(np.flatnonzero(outside)[0])
        raise JointStateError(
            f'position of {self.model.joint_names[j]} is {q[j]:.6g}, outside its limits '
            f'[{self.model.lower_limits[j]:.6g}, {self.model.upper_limits[j]:.6g}] by more '
            f'than position_limit_margin {margin:g}')

    def _check_speed(self, qd, what):
        """Raise JointStateError for speeds beyond SPEED_FACTOR x the URDF limits."""
        limit = SPEED_FACTOR * self.model.velocity_limits
        fast = ~(np.abs(qd) <= limit)                 # NaN and inf count as too fast
        if np.any(fast):
            j = int(np.flatnonzero(fast)[0])
            raise JointStateError(
                f'{what} of {self.model.joint_names[j]} is {qd[j]:.6g}, beyond '
                f'{SPEED_FACTOR:g} x its limit {self.model.velocity_limits[j]:.6g}')

    def usual(self, names, positions, velocities, efforts):
        """(q, qd) as lists in chain order for the usual state; None for any other.

        The usual state: the joint names of the previous state, a position and a velocity
        per name, efforts empty or one per name, every position within its bounds and
        every velocity within its speed bound, all plain comparisons (NaN fails them).
        Any other state goes to :meth:`measured`, which names what is wrong,
        estimates missing velocities or finds the joints of new names.
        """
        key, index, pick = self._name_cache
        k = len(names)
        if (index is None or k != len(key) or len(positions) != k or len(velocities) != k
                or len(efforts) not in (0, k) or names is not key and tuple(names) != key):
            return None
        q = list(map(float, pick(positions)))
        qd = list(map(float, pick(velocities)))
        low, high = self._position_bounds
        # element-wise comparisons at C speed (map over operator.le); NaN fails them
        if not (all(map(le, low, q)) and all(map(le, q, high))
                and all(map(le, self._negative_speed_bounds, qd))
                and all(map(le, qd, self._speed_bounds))):
            return None
        return q, qd

    def efforts(self, names, efforts):
        """Return the state's efforts in chain order (a list), or None.

        None when they are not one finite value per name of the state just read (by
        :meth:`usual` or :meth:`measured`): the composite update then leaves them out.
        """
        key, index, pick = self._name_cache
        if index is None or len(efforts) != len(key) or len(names) != len(key):
            return None
        values = list(map(float, pick(efforts)))
        return values if all(map(math.isfinite, values)) else None


__all__ = ['JointStateError', 'JointStateSample', 'MAX_POSITION', 'MAX_STATE_JOINTS',
           'SPEED_FACTOR', 'StateReader']
