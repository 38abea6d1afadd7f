"""Contact thresholds from an identification recording, for ``ne-dynamics identify``.

Pure module (NumPy). The node's momentum observer
(:class:`~ne_dynamics_ros.control.observer.MomentumObserver`) reads what its model does
not explain as external effort. During the recording nothing touched the arm, so the
observer run over it, with the identified model, the recorded efforts as the efforts
that acted (``sim_arm_node`` and ``joint_state_broadcaster`` report the effort of the
step that ended at each state) and the node's default gain, shows how large ``r`` gets
from model error, noise and friction alone. The rule (:func:`contact_thresholds`)::

    threshold_i = 2 max_k |r_i,k| + Fc_i

twice the largest free-motion ``r`` of joint i (the excitation moves faster than the
motions it will see, so twice is a margin for what the recording did not reach) plus the
identified Coulomb friction ``Fc_i``: while a joint sticks, dry friction takes up to
``Fc_i`` of an effort without motion, which the model (smooth at rest) cannot tell from
an external one. A joint whose limit is known gets at least 1 % of it.
"""
from typing import List

import numpy as np

from ne_dynamics_ros.control.observer import MomentumObserver
from ne_dynamics_ros.dynamics.model import STANDARD_GRAVITY

#: The node's default observer gain (``contact.observer_gain``), 1/s.
DEFAULT_GAIN = 60.0
#: Multiple of the largest free-motion ``|r|`` in the rule.
MARGIN = 2.0
#: Least threshold, as a share of the joint's effort limit.
FLOOR = 0.01


def observed_effort(model, t, q, qd, effort, gain=DEFAULT_GAIN, with_gravity=True,
                    with_friction=True) -> np.ndarray:
    """Run the momentum observer over a recording; return r, (N, n) N·m (N).

    Args:
        model: the (identified) :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        t: (N,) s; q, qd: (N, n) rad, rad/s (qd None: differences of q);
        effort: (N, n) the efforts recorded, each the one that acted over the step
            ending at its state, N·m (N).
        gain: K_O, 1/s.
        with_gravity, with_friction: False where the recorded efforts exclude them
            (the hardware compensates them).
    """
    t = np.asarray(t, dtype=float)
    q = np.asarray(q, dtype=float)
    qd = np.gradient(q, t, axis=0) if qd is None else np.asarray(qd, dtype=float)
    n = q.shape[1]
    # the observer's own momentum increments, all states at once (the same formula)
    dt = np.diff(t, prepend=t[0] - 1.0)[:, None]
    qdd = np.vstack([np.zeros((1, n)), np.diff(qd, axis=0)]) / dt
    gravity = np.array(STANDARD_GRAVITY) if with_gravity else np.zeros(3)
    model_effort = model.rnea(q, qd, qdd, gravity=gravity)
    friction = model.friction_torques(qd) if with_friction else np.zeros_like(qd)
    observer = MomentumObserver(n, gain)
    r = np.zeros_like(q)
    for k in range(len(t)):
        row = model_effort[k].tolist()
        r[k] = observer.update(float(t[k]), qd[k].tolist(), lambda qdd_k: row,
                               friction[k].tolist(), effort[k].tolist() if k else None)
    return r


def contact_thresholds(model, recording, gain=DEFAULT_GAIN, with_gravity=True,
                       with_friction=True) -> List[float]:
    """Return ``contact.threshold`` (n floats, N·m or N) for ``model`` from ``recording``.

    The rule of the module docstring, over the observer's ``r`` on the recording
    (:func:`observed_effort`). ``recording``: a :class:`~ne_dynamics_ros.identification.
    recording.JointRecording` of the joints of ``model``, in its order.
    """
    r = observed_effort(model, recording.t, recording.q, recording.qd, recording.effort,
                        gain, with_gravity, with_friction)
    largest = np.abs(r).max(axis=0)
    coulomb = np.asarray(model.friction, dtype=float) if with_friction else 0.0
    threshold = MARGIN * largest + coulomb
    limits = np.asarray(model.effort_limits, dtype=float)
    floor = np.where(np.isfinite(limits), FLOOR * limits, 0.0)
    return [float(f'{v:.4g}') for v in np.maximum(threshold, floor)]


__all__ = ['contact_thresholds', 'DEFAULT_GAIN', 'FLOOR', 'MARGIN', 'observed_effort']
