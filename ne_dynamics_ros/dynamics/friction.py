"""The drive friction model: one function for the model, the laws, the checks, the observer.

Pure module (NumPy and ``math`` only). Sign convention: the effort a drive must add to
move at ``qd`` (it opposes the motion when subtracted from the applied effort)::

    tau_f = Fv qd + Fc tanh(qd / v_s) + offset

viscous as in Sasaki (1990), eq. 2.39 (``b_i q̇_i``), plus Coulomb friction smoothed by
tanh with the velocity scale ``v_s`` (tanh reaches 76 % of the Coulomb level at
``qd = v_s`` and is continuous at rest, so compensation does not chatter), plus a
constant offset (an identified drive's bias). Units: qd in rad/s (m/s), Fv in N·m·s/rad
(N·s/m), Fc and the offset in N·m (N), v_s in rad/s (m/s), > 0.
"""
import math

import numpy as np


def drive_friction(qd, damping, coulomb, velocity_scale, offset):
    """Return ``Fv qd + Fc tanh(qd / v_s) + offset``: the drive friction at ``qd``.

    Two forms of one formula. A list ``qd`` (n floats: one state on the control path,
    where a NumPy call per state costs more than the loop) gives a list, every other
    argument a sequence of n floats or, for ``velocity_scale``, one float. An array
    ``qd``, (n,) or (N, n), gives an array of its shape, the others broadcast against it.

    Args:
        qd: joint velocities, rad/s (m/s).
        damping: Fv, (n,). coulomb: Fc, (n,). velocity_scale: v_s, (n,) or one value > 0.
        offset: (n,) constant efforts.

    Returns:
        The friction efforts, N·m (N), the type and shape of ``qd``.
    """
    if isinstance(qd, list):
        if isinstance(velocity_scale, (int, float)):
            velocity_scale = [velocity_scale] * len(qd)
        return [b * v + c * math.tanh(v / s) + o
                for b, c, v, s, o in zip(damping, coulomb, qd, velocity_scale, offset)]
    return damping * qd + coulomb * np.tanh(qd / velocity_scale) + offset


def friction_values(model):
    """Return a model's ``(Fv, Fc, v_s, offset)``, each n floats, in its joint order.

    :func:`drive_friction`'s arguments for its list form (one state on the control path).
    """
    return (model.damping.tolist(), model.friction.tolist(), model.coulomb_velocity.tolist(),
            model.friction_offset.tolist())


__all__ = ['drive_friction', 'friction_values']
