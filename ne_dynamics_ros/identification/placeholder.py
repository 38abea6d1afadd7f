"""Placeholder inertials in a URDF: told apart from a model (no ROS).

Description packages made for visualisation often carry no ``<inertial>`` at all, or the
same value on every link (1 kg unit cubes), or masses of a few grams. A prior toward such
a "nominal" model pulls the identified one toward it (toward zero masses), and margins
relative to it say nothing. :func:`placeholder_inertials` says when the nominal inertials
are of that kind; ``ne-dynamics identify`` then takes its prior from the data
(:func:`~ne_dynamics_ros.identification.physical_fit.select_model`, ``own_prior``).
"""
import numpy as np

#: Every link lighter than this, kg: placeholder masses.
LIGHTEST = 1e-3


def _central_inertia(link):
    """Return the sorted principal moments of ``link`` about its centre of mass, kg·m²."""
    J = np.array(link.inertia_origin, dtype=float)
    m = float(link.mass)
    c = np.asarray(link.first_moment, dtype=float) / m
    return np.sort(np.linalg.eigvalsh(J - m * (c @ c * np.eye(3) - np.outer(c, c))))


def placeholder_inertials(model) -> str:
    """Say why ``model``'s link inertials are placeholders, or '' when they look real.

    Placeholders: no link of the chain has a mass (no ``<inertial>``), every link weighs
    under :data:`LIGHTEST`, every link has the same mass, or every link the same
    inertia tensor about its centre of mass (principal moments to 1e-9).

    Args:
        model: a :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
    """
    links = list(model.links)
    masses = np.array([float(link.mass) for link in links])
    if not np.any(masses > 0.0):
        return 'no link of the chain has a mass (no <inertial> elements)'
    if np.all(masses < LIGHTEST):
        return f'every link of the chain weighs under {LIGHTEST * 1e3:g} g'
    if len(links) > 1 and np.allclose(masses, masses[0], rtol=1e-9, atol=0.0):
        return f'every link of the chain has the same mass, {masses[0]:g} kg'
    if len(links) > 1 and np.all(masses > 0.0):
        moments = np.array([_central_inertia(link) for link in links])
        if np.allclose(moments, moments[0], rtol=1e-9, atol=1e-12):
            return 'every link of the chain has the same inertia tensor'
    return ''


__all__ = ['LIGHTEST', 'placeholder_inertials']
