"""Khalil's standard dynamic parameters of a serial chain, in its DH or MDH link frames.

Per joint j (1-based in names, chain order) 13 parameters, ``p = 13 n`` in all::

    XXj XYj XZj YYj YZj ZZj   inertia tensor of link j about origin O_j, axes of frame j,
                              kg·m² (XY = the tensor's xy element = -∫xy dm, like URDF ixy)
    MXj MYj MZj               first moment MS_j = M_j c_j, c_j the centre of mass in frame j,
                              kg·m
    Mj                        mass, kg
    Iaj                       armature (reflected rotor inertia G² J_m), kg·m² (kg if
                              prismatic): adds Ia q̈
    Fvj                       viscous friction (URDF <dynamics damping>), N·m·s/rad (N·s/m):
                              adds Fv q̇
    Fcj                       Coulomb friction (URDF <dynamics friction>), N·m (N): adds
                              Fc tanh(q̇ / v_s), v_s = the model's coulomb_velocity

These are the moments of order 0, 1 and 2 of body j at point O_j of Renaud (1987)
("moments of body i at point O_i", Huygens' theorem), in the frames of the model's
convention: ``dh`` (frame j at the distal end of link j, Lee et al. 1982, eq. 2.1) or
``mdh`` (frame j on joint j's axis, Craig 2005). The joint efforts are linear in
them: ``tau = W(q, q̇, q̈) · pi`` (:mod:`ne_dynamics_ros.dynamics.regressor`).
"""
import copy
import dataclasses

import numpy as np

from ne_dynamics_ros.errors import ModelError

INERTIAL_NAMES = ('XX', 'XY', 'XZ', 'YY', 'YZ', 'ZZ', 'MX', 'MY', 'MZ', 'M')
DRIVE_NAMES = ('Ia', 'Fv', 'Fc')
PER_JOINT = len(INERTIAL_NAMES) + len(DRIVE_NAMES)
UNITS = {'XX': 'kg*m^2', 'XY': 'kg*m^2', 'XZ': 'kg*m^2', 'YY': 'kg*m^2', 'YZ': 'kg*m^2',
         'ZZ': 'kg*m^2', 'MX': 'kg*m', 'MY': 'kg*m', 'MZ': 'kg*m', 'M': 'kg',
         'Ia': 'kg*m^2 (kg)', 'Fv': 'N*m*s/rad (N*s/m)', 'Fc': 'N*m (N)'}


def parameter_names(n):
    """Return the 13 n parameter names in vector order: ``XX1 ... Fc1, XX2 ... Fcn``."""
    return [f'{name}{j}' for j in range(1, n + 1) for name in INERTIAL_NAMES + DRIVE_NAMES]


def inertial_index(n):
    """Return the (10 n,) indices of the inertial parameters in the standard vector."""
    return np.array([PER_JOINT * j + k for j in range(n) for k in range(len(INERTIAL_NAMES))])


def frame_change(X):
    """Return the 10x10 map of one link's inertial parameters from frame A to frame B.

    Args:
        X: (4, 4) pose of frame A in frame B (points: r_B = R r_A + p).

    Returns:
        T with ``pi_B = T pi_A`` for [XX, XY, XZ, YY, YZ, ZZ, MX, MY, MZ, M]:
        ``M_B = M``, ``MS_B = R MS + M p``, and, with c = R MS,
        ``J_B = R J Rᵀ + 2 (p·c) E - c pᵀ - p cᵀ + M (|p|² E - p pᵀ)`` (Huygens' theorem
        for a moved origin, Renaud's moments at a point).
    """
    R, p = X[:3, :3], X[:3, 3]
    T = np.zeros((10, 10))
    for k in range(10):
        e = np.zeros(10)
        e[k] = 1.0
        J = np.array([[e[0], e[1], e[2]], [e[1], e[3], e[4]], [e[2], e[4], e[5]]])
        ms, m = e[6:9], e[9]
        c = R @ ms
        Jb = (R @ J @ R.T + 2.0 * (p @ c) * np.eye(3) - np.outer(c, p) - np.outer(p, c)
              + m * ((p @ p) * np.eye(3) - np.outer(p, p)))
        T[:, k] = [Jb[0, 0], Jb[0, 1], Jb[0, 2], Jb[1, 1], Jb[1, 2], Jb[2, 2],
                   *(c + m * p), m]
    return T


def standard_parameters(model):
    """Return the model's (13 n,) standard parameter vector (see the module docstring)."""
    values = []
    for j, link in enumerate(model.links):
        J = link.inertia_origin
        values += [J[0][0], J[0][1], J[0][2], J[1][1], J[1][2], J[2][2],
                   *link.first_moment, link.mass,
                   model.armature[j], model.damping[j], model.friction[j]]
    return np.array(values, dtype=float)


def model_with_parameters(model, parameters):
    """Return a copy of ``model`` with its dynamic parameters replaced by ``parameters``.

    Kinematics, limits and names are kept. Any finite vector is accepted, also one that
    describes no physical body (a base-parameter vector with regrouped values, say): the
    recursions only need M, MS and J, and stay exact for it.

    Args:
        model: a :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        parameters: (13 n,) in the order of :func:`parameter_names`.

    Raises:
        ModelError: wrong length or a NaN/inf value (the message names the parameter).
    """
    pi = np.asarray(parameters, dtype=float).reshape(-1)
    n = model.n
    if pi.size != PER_JOINT * n:
        raise ModelError(f'a parameter vector of {model.n} joints has {PER_JOINT * n} values, '
                         f'got {pi.size}')
    bad = [name for name, v in zip(parameter_names(n), pi) if not np.isfinite(v)]
    if bad:
        raise ModelError(f'parameters {bad} are NaN or inf')
    blocks = pi.reshape(n, PER_JOINT)
    links = []
    for link, b in zip(model.links, blocks.tolist()):
        xx, xy, xz, yy, yz, zz, mx, my, mz, m = b[:10]
        links.append(dataclasses.replace(
            link, mass=m, first_moment=(mx, my, mz),
            inertia_origin=((xx, xy, xz), (xy, yy, yz), (xz, yz, zz))))
    out = copy.copy(model)
    out.links = tuple(links)
    out.armature = blocks[:, 10].copy()
    out.damping = blocks[:, 11].copy()
    out.friction = blocks[:, 12].copy()
    return out
