"""The identify pipeline: recording in, an identified URDF and parameter YAML out.

One function shared by ``ne-dynamics identify`` and ``ne-dynamics-demo --identify``:
:func:`identify_model` takes the nominal URDF text, its model and a recording, and runs
:func:`~ne_dynamics_ros.identification.estimation.identify` (base and drive parameters,
stiction band, the warnings naming joints that did not follow),
:func:`~ne_dynamics_ros.identification.consistency.consistent_parameters` (the closest
physical model) and the writers (:func:`~ne_dynamics_ros.identification.urdf_writer.
identified_urdf`, :func:`~ne_dynamics_ros.identification.urdf_writer.parameters_yaml`).
Nothing is written to disk here: the caller writes both texts together (the tools'
output writer, :mod:`ne_dynamics_ros.tools.files`).
"""
from dataclasses import dataclass
import math
import re

import numpy as np

from ne_dynamics_ros.errors import IdentificationError, require
from ne_dynamics_ros.identification.estimation import Identification, identify, STICTION_BAND
from ne_dynamics_ros.identification.recording import check_positions, drop_jumps
from ne_dynamics_ros.identification.thresholds import contact_thresholds, MARGIN

#: ``--effort-delay`` must stay under this fraction of the recording's duration.
MAX_DELAY_FRACTION = 0.1


@dataclass(frozen=True)
class IdentifiedModel:
    """What :func:`identify_model` returns.

    Attributes:
        result: the least-squares :class:`~ne_dynamics_ros.identification.estimation.
            Identification` (values, deviations, residuals, warnings).
        consistent: the physically consistent standard parameters
            (:class:`~ne_dynamics_ros.identification.consistency.ConsistentParameters`).
        urdf: the identified URDF text (UTF-8, declared so).
        params_yaml: the parameter YAML text for both nodes.
        values: its ``ros__parameters`` as plain values (``armature``, ``damping``,
            ``friction`` lists, ``friction_compensation``, the recommended ``kp``, ``kd``,
            ``ki``, ``integral_limit``, and ``contact.threshold``).
        gains: the :class:`~ne_dynamics_ros.control.gains.GainRecommendation` behind
            those gains (sized for the identified model at the recording's rate).
    """

    result: Identification
    consistent: object
    urdf: str
    params_yaml: str
    values: dict
    gains: object = None


def check_effort_delay(effort_delay, recording=None, name='effort delay'):
    """Validate ``--effort-delay``: finite, >= 0, under a tenth of the recording, in s.

    ``recording`` None: only what can be told before reading it (the command line checks
    that before any work). ``name``: how messages call it.

    Raises:
        IdentificationError: naming the value and the bound.
    """
    if not (isinstance(effort_delay, (int, float)) and math.isfinite(effort_delay)
            and effort_delay >= 0):
        raise IdentificationError(f'{name} must be a finite time >= 0 s, got '
                                  f'{effort_delay!r}')
    if recording is None:
        return
    duration = float(recording.t[-1] - recording.t[0])
    if effort_delay >= MAX_DELAY_FRACTION * duration:
        raise IdentificationError(
            f'{name} {effort_delay:g} s is not under a tenth of the {duration:.3g} s '
            'recording: the efforts would be matched to other states (it is half a sample '
            'for ros2_control, e.g. 0.001 s at 500 Hz)')


def utf8_declared(text):
    """Return URDF ``text`` with its XML declaration (if any) saying UTF-8.

    The text was decoded as its declaration said (:func:`~ne_dynamics_ros.dynamics.
    urdf_import.read_urdf_text`); it is written back as UTF-8, so a latin-1 declaration
    would misname the written file.
    """
    return re.sub(r'(\A\s*<\?xml[^>]*encoding\s*=\s*["\'])[A-Za-z0-9._-]+', r'\g<1>UTF-8',
                  text.lstrip('\ufeff'), count=1)


def identify_model(urdf_text, model, recording, cutoff=None, effort_delay=0.0,
                   stiction_band=STICTION_BAND, header='', efforts_exclude_gravity=False,
                   efforts_exclude_friction=False):
    """Identify ``model``'s arm from ``recording``; return the texts to write.

    Args:
        urdf_text: the nominal URDF, as read (:func:`~ne_dynamics_ros.dynamics.
            urdf_import.read_urdf_text`); the identified one is this text with the
            inertials and joint dynamics changed.
        model: the nominal :class:`~ne_dynamics_ros.dynamics.model.RobotModel` loaded
            from it.
        recording: :class:`~ne_dynamics_ros.identification.recording.JointRecording`.
        cutoff, stiction_band: as for :func:`~ne_dynamics_ros.identification.
            estimation.identify`.
        effort_delay: s, checked by :func:`check_effort_delay`.
        header: comment lines at the top of the YAML (where it came from).
        efforts_exclude_gravity, efforts_exclude_friction: the recorded efforts have g(q)
            (the friction) removed by the hardware, as a UR's driver reports them: see
            :func:`~ne_dynamics_ros.identification.estimation.identify`; the YAML then
            says ``hardware_compensates_gravity`` (``_friction``): true.

    Returns:
        :class:`IdentifiedModel`.

    Samples whose position jumps beyond twice the velocity limit are dropped first
    (:func:`~ne_dynamics_ros.identification.recording.drop_jumps`; the first warning of
    the result counts them).

    Raises:
        RecordingError: a position no joint measures (beyond 1e6 rad, NaN), naming the
            joint and the value; more than 1 % of the samples jump.
        IdentificationError: from the checks, the estimation or the consistency step.
        MissingDependencyError: cvxpy or SciPy is not installed (one line naming the pip
            extra).
    """
    from ne_dynamics_ros.identification.consistency import consistent_parameters
    from ne_dynamics_ros.identification.urdf_writer import (identified_urdf,
                                                            parameter_values, parameters_yaml)
    require('yaml', 'the parameter YAML of ne-dynamics identify')
    check_effort_delay(effort_delay, recording)
    check_positions(recording, model.joint_names)
    clean = drop_jumps(recording, model.velocity_limits, model.joint_names)
    notes = clean.notes[len(recording.notes):]
    del recording                # the caller may have let go of it: no two copies held
    with np.errstate(all='ignore'):     # no raw NumPy warning: failures are checked below
        result = identify(model, clean, cutoff=cutoff, effort_delay=effort_delay,
                          stiction_band=stiction_band,
                          efforts_exclude_gravity=efforts_exclude_gravity,
                          efforts_exclude_friction=efforts_exclude_friction)
    result.warnings[:0] = list(notes)
    if not (np.all(np.isfinite(result.beta)) and np.any(result.effort_rms > 0)):
        raise IdentificationError(f'{clean.source}: the efforts are all zero or the fit '
                                  'is not finite: does the recording carry the measured '
                                  'efforts (joint_state_broadcaster with an effort state '
                                  'interface)?')
    consistent = consistent_parameters(result.grouping, result.beta,
                                       model.standard_parameters(), result.std)
    urdf = identified_urdf(utf8_declared(urdf_text), model, consistent.parameters)
    hardware = {'hardware_compensates_gravity': efforts_exclude_gravity,
                'hardware_compensates_friction': efforts_exclude_friction}
    gains = _recommended_gains(model, consistent.parameters, clean, result.cutoff)
    thresholds = contact_thresholds(model.with_parameters(consistent.parameters), clean,
                                    with_gravity=not efforts_exclude_gravity,
                                    with_friction=not efforts_exclude_friction)
    extra = dict(gains.values(), **{'contact.threshold': thresholds})
    header = '\n'.join(([header] if header else []) + gains.describe() + [
        f'contact.threshold: {MARGIN:g} x the largest external effort the momentum '
        f'observer read over this recording + the identified Coulomb friction '
        f'(ne_dynamics_ros.identification.thresholds)'])
    text = parameters_yaml(model, consistent.parameters, header, extra=extra, **hardware)
    values = parameter_values(model, consistent.parameters, **hardware)
    values.update(extra)
    return IdentifiedModel(result, consistent, urdf, text, values, gains)


def _recommended_gains(model, parameters, recording, cutoff):
    """Size the gains for the identified model, at the recording's rate and noise.

    :func:`~ne_dynamics_ros.control.gains.recommended_gains` with the position noise
    measured in the recording (:func:`~ne_dynamics_ros.identification.signals.
    position_noise`).
    """
    from ne_dynamics_ros.control.gains import recommended_gains
    from ne_dynamics_ros.identification.signals import position_noise
    return recommended_gains(model.with_parameters(parameters), recording.rate,
                             position_noise=position_noise(recording.q, cutoff,
                                                           recording.rate))


def drive_errors(plant, identified, identifiable=None):
    """Return the relative errors (n,) of identified drive values against a plant's.

    ``|identified - plant| / plant`` per joint, nan where the plant's value is 0 (nothing
    to compare) and where ``identifiable`` (n,) is False (e.g. an armature that folds into
    a link's inertia, ``Ia1`` into ``ZZ1R``). For armature (kg*m^2), damping
    (N*m*s/rad) or dry friction (N*m) alike: the demo and ``benchmarks/bench_mujoco.py``
    judge a simulated plant's hidden values with it.
    """
    plant, identified = np.asarray(plant, dtype=float), np.asarray(identified, dtype=float)
    with np.errstate(divide='ignore', invalid='ignore'):
        error = np.where(plant > 0, np.abs(identified - plant) / plant, np.nan)
    if identifiable is not None:
        error = np.where(identifiable, error, np.nan)
    return error


__all__ = ['check_effort_delay', 'drive_errors', 'identify_model', 'IdentifiedModel',
           'MAX_DELAY_FRACTION', 'utf8_declared']
