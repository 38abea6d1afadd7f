"""The external wrench at the tip from the momentum observer's joint efforts (no ROS).

A wrench ``F = [f; m]`` at the tip link's origin (force N, moment N·m about that point)
acts on the joints as ``tau = J^T F``, J the tip's geometric Jacobian (linear rows first,
base frame axes: :mod:`~ne_dynamics_ros.dynamics.kinematics`). Given the observer's
estimate of ``tau_ext`` (:mod:`~ne_dynamics_ros.control.sensing.observer`), the wrench is its image
through the damped pseudo-inverse of ``J^T`` (Nakamura & Hanafusa 1986; Wampler 1986)::

    J = U S V^T      F = U diag(s_i / (s_i^2 + lambda^2)) V^T tau_ext

with ``lambda`` = :data:`DAMPING` of the largest singular value: where J is far from
singular, F is ``J^-T tau`` to ``(lambda / s_i)^2``. A direction whose singular value is
below :data:`SINGULAR` of the largest (near a singularity, or a wrench the joints cannot
feel at all, as along the axis of a stretched arm) is *flagged* and damped, not
amplified: its component of F shrinks toward zero instead of growing as ``1 / s_i``. An
arm of fewer than six joints feels only ``n`` directions: the other ``6 - n`` are flagged
always.

The wrench the arm *feels* is what is estimated: the observer's ``r`` holds every effort
the model does not explain (a load the model lacks, friction it holds wrong), mapped the
same way. Units: N, N·m; frames as the caller asks (the base frame, or the tip link's).
"""
from typing import NamedTuple

import numpy as np

#: ``lambda`` of the damped pseudo-inverse, relative to J's largest singular value.
DAMPING = 1e-3
#: A direction whose singular value is below this fraction of the largest is flagged.
SINGULAR = 0.02


class TipWrench(NamedTuple):
    """The external wrench at the tip, and the directions it cannot be told along.

    Attributes:
        force: (3,) N. moment: (3,) N·m about the tip link's origin. Both in the frame the
            caller asked for (the base frame, or the tip link's).
        flagged: how many of the six directions were flagged (near singular or not felt
            by the joints) and damped, 0 when every direction is seen.
        frame_id: the frame's name (the caller's; '' when not said).
    """

    force: np.ndarray
    moment: np.ndarray
    flagged: int
    frame_id: str = ''


def tip_wrench(jacobian, tau_ext, rotation=None) -> TipWrench:
    """Return the wrench at the tip that ``tau_ext`` is the joint image of (``J^T F``).

    Args:
        jacobian: (6, n) the tip's geometric Jacobian (linear rows first), base frame.
        tau_ext: (n,) external joint efforts, N·m (N), chain order.
        rotation: (3, 3) the tip link's orientation in the base frame: the wrench is
            expressed in the tip link's frame (``R^T f``, ``R^T m``); None: base frame.

    Returns:
        :class:`TipWrench`.

    Raises:
        ValueError: shapes that do not match, or non-finite values.
    """
    J = np.asarray(jacobian, dtype=float)
    tau = np.asarray(tau_ext, dtype=float).reshape(-1)
    if J.ndim != 2 or J.shape[0] != 6 or J.shape[1] != tau.size:
        raise ValueError(f'jacobian {J.shape} and tau_ext ({tau.size},) do not match')
    if not (np.all(np.isfinite(J)) and np.all(np.isfinite(tau))):
        raise ValueError('jacobian or tau_ext holds NaN or inf')
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    largest = float(s[0]) if s.size and s[0] > 0.0 else 1.0
    damping = DAMPING * largest
    F = U @ ((s / (s * s + damping * damping)) * (Vt @ tau))
    flagged = int(np.count_nonzero(s < SINGULAR * largest)) + (6 - s.size)
    force, moment = F[:3], F[3:]
    if rotation is not None:
        R = np.asarray(rotation, dtype=float)
        force, moment = R.T @ force, R.T @ moment
    return TipWrench(force, moment, flagged)


__all__ = ['DAMPING', 'SINGULAR', 'tip_wrench', 'TipWrench']
