"""Write an identified model back: the URDF with new inertias and friction, and node YAML.

:func:`identified_urdf` edits the URDF *text*: in the child link of each actuated joint of
the chain it replaces (or adds) the ``<inertial>`` element with the identified body, and in
each joint it replaces (or adds) ``<dynamics damping friction>``; every other byte is
kept. Links that were lumped into a joint's body through fixed joints (a flange, a tool
mount) lose their ``<inertial>``: their mass is now part of the identified body, which is
written into the moving link. The result is loaded back and checked against the parameters
before it is returned.

:func:`parameters_yaml` writes ``joints``, ``armature``, ``damping``, ``friction`` (per
joint, in the order of ``joints``) under ``/**: ros__parameters:``, which
``computed_torque_node`` and ``sim_arm_node`` both read (``--params-file``).
"""
import re

import numpy as np

from ne_dynamics_ros.dynamics.dh import dh_frames
from ne_dynamics_ros.dynamics.standard_parameters import PER_JOINT
from ne_dynamics_ros.errors import IdentificationError


def _number(value):
    return repr(float(value))


def link_inertial(model, parameters, j):
    """Return mass (kg), centre of mass (3,) m, inertia (3, 3) kg·m² about it, URDF frame j."""
    P = parameters[PER_JOINT * j:PER_JOINT * j + 10]
    XX, XY, XZ, YY, YZ, ZZ, MX, MY, MZ, M = P
    if not M > 0:
        raise IdentificationError(f'link of joint {model.joint_names[j]} has mass {M}; a URDF '
                                  'link needs a positive mass')
    J = np.array([[XX, XY, XZ], [XY, YY, YZ], [XZ, YZ, ZZ]])
    c = np.array([MX, MY, MZ]) / M
    inertia_c = J - M * (c @ c * np.eye(3) - np.outer(c, c))
    frames = dh_frames(model.chain, model.convention).frames
    poses = model.chain.link_poses(np.zeros(model.n))
    X = np.linalg.inv(frames[j + 1]) @ poses[j]            # URDF link frame in DH frame j
    R, p = X[:3, :3], X[:3, 3]
    return float(M), R.T @ (c - p), R.T @ inertia_c @ R


def _inertial_xml(mass, com, inertia, indent):
    i = inertia
    return (f'<inertial>\n{indent}  <origin xyz="{" ".join(_number(v) for v in com)}" '
            f'rpy="0 0 0"/>\n{indent}  <mass value="{_number(mass)}"/>\n'
            f'{indent}  <inertia ixx="{_number(i[0, 0])}" ixy="{_number(i[0, 1])}" '
            f'ixz="{_number(i[0, 2])}" iyy="{_number(i[1, 1])}" iyz="{_number(i[1, 2])}" '
            f'izz="{_number(i[2, 2])}"/>\n{indent}</inertial>')


def _element(text, tag, name):
    """(start, end, self-closing) of the robot's element ``<tag ... name="name" ...>``.

    A URDF ``<joint>`` has a ``type`` attribute; the ``<joint name=...>`` references inside
    ``<transmission>`` and ``<ros2_control>`` have none and are skipped.
    """
    quoted = re.escape(name)
    pattern = re.compile(rf'<{tag}\b[^>]*?\bname\s*=\s*(["\']){quoted}\1[^>]*?(/?)>', re.S)
    matches = [m for m in pattern.finditer(text)
               if tag != 'joint' or re.search(r'\btype\s*=', m.group(0))]
    if len(matches) != 1:
        raise IdentificationError(f'cannot find exactly one <{tag} name="{name}"> in the URDF '
                                  f'text (found {len(matches)})')
    m = matches[0]
    if m.group(2) == '/':
        return m.start(), m.end(), True
    close = text.find(f'</{tag}>', m.end())
    if close < 0:
        raise IdentificationError(f'<{tag} name="{name}"> is not closed')
    return m.start(), close + len(f'</{tag}>'), False


def _indent_before(text, position):
    line_start = text.rfind('\n', 0, position) + 1
    prefix = text[line_start:position]
    return prefix if prefix.strip() == '' else ''


def _replace_child(text, tag, name, child, new):
    """Replace element ``child`` inside ``<tag name=...>`` by ``new`` (None: remove it).

    When absent, ``new`` is added before the closing tag.
    """
    start, end, self_closing = _element(text, tag, name)
    block = text[start:end]
    indent = _indent_before(text, start)
    inner_indent = indent + '  '
    pattern = re.compile(rf'[ \t]*<{child}\b[^>]*?/>[ \t]*\n?'
                         rf'|[ \t]*<{child}\b.*?</{child}>[ \t]*\n?', re.S)
    found = pattern.search(block)
    if found:
        replacement = '' if new is None else f'{inner_indent}{new}\n'
        block = block[:found.start()] + replacement + block[found.end():]
    elif new is not None:
        if self_closing:
            block = block[:-2].rstrip() + f'>\n{inner_indent}{new}\n{indent}</{tag}>'
        else:
            close = block.rfind(f'</{tag}>')
            head = block[:close].rstrip(' \t')
            if not head.endswith('\n'):
                head += '\n'
            block = head + f'{inner_indent}{new}\n{indent}' + block[close:]
    return text[:start] + block + text[end:]


def identified_urdf(text, model, parameters):
    """Return the URDF ``text`` with the identified ``parameters`` (module docstring).

    Args:
        text: the nominal URDF text (the one ``model`` was loaded from).
        model: the nominal :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        parameters: (13 n,) physically consistent standard parameters.

    Raises:
        IdentificationError: a link or joint cannot be located in the text, a mass is not
            positive, or the written URDF does not load back to the same parameters.
    """
    from ne_dynamics_ros import load_model
    parameters = np.asarray(parameters, dtype=float)
    chain = model.chain
    for j, joint in enumerate(chain.joints):
        mass, com, inertia = link_inertial(model, parameters, j)
        links = chain.body_links[j] if chain.body_links else (joint.child_link,)
        start, _, _ = _element(text, 'link', links[0])
        indent = _indent_before(text, start) + '  '
        text = _replace_child(text, 'link', links[0], 'inertial',
                              _inertial_xml(mass, com, inertia, indent))
        for other in links[1:]:
            text = _replace_child(text, 'link', other, 'inertial', None)
        Fv, Fc = parameters[PER_JOINT * j + 11], parameters[PER_JOINT * j + 12]
        text = _replace_child(text, 'joint', joint.name, 'dynamics',
                              f'<dynamics damping="{_number(Fv)}" friction="{_number(Fc)}"/>')
    check = load_model(text, base_link=model.base_link, tip_link=model.tip_link,
                       convention=model.convention.value, armature=model.armature)
    got = check.standard_parameters()
    inertial = np.ones(parameters.size, dtype=bool)
    inertial[10::PER_JOINT] = False                        # armature is not in a URDF
    scale = max(1.0, float(np.abs(parameters[inertial]).max()))
    error = float(np.abs(got[inertial] - parameters[inertial]).max())
    if error > 1e-9 * scale:
        raise IdentificationError(f'the written URDF loads back {error:.3g} away from the '
                                  'identified parameters')
    return text


def parameters_yaml(model, parameters, header='', hardware_compensates_gravity=False,
                    hardware_compensates_friction=False, extra=None):
    """YAML text with ``joints``, ``armature``, ``damping``, ``friction`` for both nodes.

    The values of :func:`parameter_values` (and ``extra``, e.g. the recommended gains)
    under ``/**: ros__parameters``, after ``header`` as comment lines.
    """
    import yaml
    values = parameter_values(model, parameters, hardware_compensates_gravity,
                              hardware_compensates_friction)
    values.update(extra or {})
    nested = {}
    for name, value in values.items():        # groups nested, as ROS parameter files are
        *groups, last = name.split('.')
        place = nested
        for group in groups:
            place = place.setdefault(group, {})
        place[last] = value
    data = {'/**': {'ros__parameters': nested}}
    comment = ''.join(f'# {line}\n' for line in header.splitlines())
    return comment + yaml.safe_dump(data, sort_keys=False)


def parameter_values(model, parameters, hardware_compensates_gravity=False,
                     hardware_compensates_friction=False) -> dict:
    """Return the node parameters of an identified model: {name: value}.

    ``joints``, ``armature`` (kg*m^2), ``damping`` (N*m*s/rad), ``friction`` (N*m), chain
    order. When the parameters carry friction (any damping or Coulomb level above zero),
    also ``friction_compensation: true``: identified friction is there to be compensated
    (computed_torque_node evaluates it at the desired velocity; sim_arm_node ignores the
    setting). Identified from efforts the hardware had already taken gravity (or
    friction) out of, the model must be used the same way:
    ``hardware_compensates_gravity: true`` (``hardware_compensates_friction: true``).
    """
    p = np.asarray(parameters, dtype=float)
    values = {
        'joints': list(model.joint_names),
        'armature': [float(v) for v in p[10::PER_JOINT]],
        'damping': [float(v) for v in p[11::PER_JOINT]],
        'friction': [float(v) for v in p[12::PER_JOINT]]}
    if any(values['damping']) or any(values['friction']):
        values['friction_compensation'] = True
    if hardware_compensates_gravity:
        values['hardware_compensates_gravity'] = True
    if hardware_compensates_friction:
        values['hardware_compensates_friction'] = True
    return values


__all__ = ['identified_urdf', 'link_inertial', 'parameter_values', 'parameters_yaml']
