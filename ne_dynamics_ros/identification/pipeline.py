"""The identify pipeline: recording in, an identified URDF and parameter YAML out.

One function shared by ``ne-dynamics identify`` and ``ne-dynamics-demo --identify``:
:func:`identify_model` takes the nominal URDF text, its model and a recording; holds out
the end of the recording (or takes a second one) for validation; runs
:func:`~ne_dynamics_ros.identification.estimation.identify` on the rest (least-squares
base and drive parameters, stiction band, the warnings naming joints that did not
follow), :func:`~ne_dynamics_ros.identification.physical_fit.select_model` (the physical
model with a prior toward the nominal one, drive terms and prior weight chosen by
cross-validation), :func:`~ne_dynamics_ros.identification.validation.validate` (both
models on the held-out motion), the contact thresholds and the writers
(:func:`~ne_dynamics_ros.identification.urdf_writer.identified_urdf`,
:func:`~ne_dynamics_ros.identification.urdf_writer.parameters_yaml`).
Nothing is written to disk here: the caller writes both texts together (the tools'
output writer, :mod:`ne_dynamics_ros.tools.files`).
"""
import dataclasses
from dataclasses import dataclass
import math
import re

import numpy as np

from ne_dynamics_ros.errors import IdentificationError, require
from ne_dynamics_ros.identification.estimation import Identification, identify, STICTION_BAND
from ne_dynamics_ros.identification.physical_fit import DriveModel, FOLDS, select_model
from ne_dynamics_ros.identification.placeholder import placeholder_inertials
from ne_dynamics_ros.identification.conditioning import (check_positions, drop_jumps, joined,
                                                         locate, resampled)
from ne_dynamics_ros.identification.thresholds import contact_thresholds, observed_effort
from ne_dynamics_ros.identification.validation import (count_contacts, DEFAULT_FRACTION,
                                                       split, validate)

#: ``--effort-delay`` must stay under this fraction of the recording's duration.
MAX_DELAY_FRACTION = 0.1


@dataclass(frozen=True)
class IdentifiedModel:
    """What :func:`identify_model` returns.

    Attributes:
        result: the least-squares :class:`~ne_dynamics_ros.identification.estimation.
            Identification` (values, deviations, residuals, warnings).
        urdf: the identified URDF text (UTF-8, declared so).
        params_yaml: the parameter YAML text for both nodes.
        values: its ``ros__parameters`` as plain values (``armature``, ``damping``,
            ``friction``, ``friction_velocity``, ``friction_offset`` lists,
            ``friction_compensation``, the recommended ``kp``, ``kd``, ``ki``,
            ``integral_limit``, and ``contact.threshold``).
        gains: the :class:`~ne_dynamics_ros.control.laws.gains.GainRecommendation` behind
            those gains (sized for the identified model at the recording's rate).
        physical: the :class:`~ne_dynamics_ros.identification.physical_fit.PhysicalFit`
            (drive terms chosen, prior weight, per-link notes).
        validation: the :class:`~ne_dynamics_ros.identification.validation.
            ValidationReport` on the held-out motion, or None (nothing held out).
        thresholds: the contact thresholds (:mod:`~ne_dynamics_ros.identification.
            thresholds`) with their rule and what they left out.
    """

    result: Identification
    urdf: str
    params_yaml: str
    values: dict
    gains: object = None
    physical: object = None
    validation: object = None
    thresholds: object = None


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
                   efforts_exclude_friction=False, validation=DEFAULT_FRACTION,
                   progress=None):
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
        validation: the share of the recording held out at its end (0 <= f < 0.9; 0:
            none), or a second :class:`~ne_dynamics_ros.identification.recording.
            JointRecording` of the same joints: the model is fitted on the rest and
            judged there beside the nominal one (:mod:`~ne_dynamics_ros.identification.
            validation`); the contact thresholds are set from the fitted part and the
            contacts they would report on the held-out part are counted.
        progress: None or a callable taking a line of text (the long steps).

    Returns:
        :class:`IdentifiedModel`.

    Samples whose position jumps beyond twice the velocity limit are dropped first
    (:func:`~ne_dynamics_ros.identification.conditioning.drop_jumps`, counted in the
    warnings); irregular time steps are resampled to a uniform grid (:func:`regular`).

    Raises:
        RecordingError: a position no joint measures (beyond 1e6 rad, NaN), naming the
            joint and the value; more than 1 % of the samples jump.
        IdentificationError: from the checks, the estimation or the physical fit.
        MissingDependencyError: cvxpy or SciPy is not installed (one line naming the pip
            extra).
    """
    from ne_dynamics_ros.identification.urdf_writer import identified_urdf
    require('yaml', 'the parameter YAML of ne-dynamics identify')
    say = progress or (lambda text: None)
    fits, held = _prepared(model, recording, validation, effort_delay)
    del recording                # the caller may have let go of it: no two copies held
    notes = [note for one in fits + (held or []) for note in one.notes]
    with np.errstate(all='ignore'):     # no raw NumPy warning: failures are checked below
        say('least squares on the fitted part')
        result = identify(model, fits, cutoff=cutoff, effort_delay=effort_delay,
                          stiction_band=stiction_band,
                          efforts_exclude_gravity=efforts_exclude_gravity,
                          efforts_exclude_friction=efforts_exclude_friction)
    result.warnings[:0] = list(dict.fromkeys(n for n in notes if n not in result.warnings))
    _check_fit(result, ' + '.join(one.source for one in fits))
    placeholder = placeholder_inertials(model)
    if placeholder:
        result.warnings.append(
            f'the URDF\'s inertials are placeholders ({placeholder}): the physical model '
            'takes no prior toward them, but one from the data (the physically '
            'consistent least-squares fit); its link masses are the data\'s')
    physical = physical_model(model, result, say, own_prior=bool(placeholder))
    identified = physical.model(model)
    with_gravity, with_friction = not efforts_exclude_gravity, not efforts_exclude_friction
    say('contact thresholds from the momentum observer over the fitted part')
    thresholds = _thresholds(identified, fits, with_gravity, with_friction)
    result.warnings.extend(thresholds.all_warnings)
    report = None
    if held is not None:
        say('judging both models on the held-out motion')
        report = _held_out_report(model, identified, held, result, thresholds, effort_delay,
                                  with_gravity, with_friction)
    urdf = identified_urdf(utf8_declared(urdf_text), model, physical.parameters)
    gains = _recommended_gains(model, physical.parameters, fits[0], result.cutoff)
    text, values = _parameter_texts(model, physical, gains, thresholds, header,
                                    efforts_exclude_gravity, efforts_exclude_friction)
    return IdentifiedModel(result, urdf, text, values, gains, physical, report, thresholds)


def _check_fit(result, source):
    """Raise IdentificationError, naming ``source``, when the efforts are all zero."""
    if not (np.all(np.isfinite(result.beta)) and np.any(result.effort_rms > 0)):
        raise IdentificationError(f'{source}: the efforts are all zero or the fit is not '
                                  'finite: does the recording carry the measured efforts '
                                  '(joint_state_broadcaster with an effort state '
                                  'interface)?')


def _prepared(model, recording, validation, effort_delay):
    """Return (the parts to fit, the held-out parts or None): lists, checked, regular.

    ``recording``: one or several; ``validation``: a share held out at the end of each, or
    one or several recordings.
    """
    def ready(one):
        check_effort_delay(effort_delay, one)
        check_positions(one, model.joint_names)
        return regular(drop_jumps(one, model.velocity_limits, model.joint_names))
    fits = [ready(one) for one in _listed(recording)]
    if isinstance(validation, (int, float)):
        parts = [split(one, validation) for one in fits]
        fits, held = [a for a, _ in parts], [b for _, b in parts if b is not None] or None
    else:
        held = [ready(one) for one in _listed(validation)]
    for one in fits:
        check_effort_delay(effort_delay, one)
    return fits, held


def _listed(recording):
    """Return ``recording`` as a list of recordings (one, or a sequence of them)."""
    return [recording] if hasattr(recording, 't') else list(recording)


def _thresholds(identified, fits, with_gravity, with_friction):
    """Return the contact thresholds over the fitted parts, times placed in their files."""
    whole, starts = joined(fits)
    thresholds = contact_thresholds(identified, whole, with_gravity=with_gravity,
                                    with_friction=with_friction)
    if len(fits) == 1:
        return thresholds
    placed = []
    for left in thresholds.largest_excluded:
        if left is not None:
            source, time = locate(left.time, starts)
            left = dataclasses.replace(left, time=time, source=source)
        placed.append(left)
    return dataclasses.replace(thresholds, largest_excluded=placed)


def _held_out_report(model, identified, held, result, thresholds, effort_delay, with_gravity,
                     with_friction):
    """Judge both models on ``held``; count the contacts the thresholds would report there.

    Adds a warning to ``result`` for each joint the identified model predicts worse.
    """
    report = validate(model, identified, held, result.cutoff, effort_delay, with_gravity,
                      with_friction, model.joint_names)
    held, _ = joined(held)
    for name in report.worse:
        result.warnings.append(
            f'{name}: the identified model predicts the held-out motion worse than the '
            'nominal one (see the table): the recording does not excite this joint as '
            'the held-out motion does; record a richer excitation, or keep the nominal '
            'model for it')
    r = observed_effort(identified, held.t, held.q, held.qd, held.effort,
                        with_gravity=with_gravity, with_friction=with_friction)
    contacts, ratio = count_contacts(r, thresholds.values, t=held.t,
                                     band=None if with_friction is False else
                                     identified.friction)
    return dataclasses.replace(report, false_contacts=contacts, largest_ratio=ratio)


def _parameter_texts(model, physical, gains, thresholds, header, efforts_exclude_gravity,
                     efforts_exclude_friction):
    """Return (the parameter YAML text, its values as a dict) of the identified model."""
    from ne_dynamics_ros.identification.urdf_writer import parameter_values, parameters_yaml
    hardware = {'hardware_compensates_gravity': efforts_exclude_gravity,
                'hardware_compensates_friction': efforts_exclude_friction}
    extra = dict(gains.values(), **{'contact.threshold': thresholds.values})
    if not efforts_exclude_friction:
        extra.update(friction_velocity=[float(v) for v in physical.friction_velocity],
                     friction_offset=[float(v) for v in physical.friction_offset])
    header = '\n'.join(([header] if header else []) + gains.describe() + [
        'contact.threshold: from the momentum observer over the fitted part, per joint: '
        + '; '.join(f'{name} {rule}' for name, rule in zip(model.joint_names,
                                                           thresholds.rule))
        + ' (ne_dynamics_ros.identification.thresholds)',
        f'drive terms and prior weight {physical.prior_weight:g} chosen by '
        f'{FOLDS}-fold cross-validation on the fitted part '
        '(ne_dynamics_ros.identification.physical_fit)'])
    text = parameters_yaml(model, physical.parameters, header, extra=extra, **hardware)
    values = parameter_values(model, physical.parameters, **hardware)
    values.update(extra)
    return text, values


#: A recording is resampled when its steps spread more than this share of the mean step
#: (standard deviation): a UR's 10/12 ms steps spread 9 %, a Panda's 19 %; a clock's
#: jitter of under a percent (the KUKA LWR4+ recordings: 0.9 %) is left alone, as
#: interpolating over jittered stamps would only smear samples taken at a steady rate.
IRREGULAR_SPREAD = 0.02


def regular(recording):
    """Return ``recording`` on a uniform grid at its mean rate if its steps are irregular.

    Irregular: the standard deviation of the steps over :data:`IRREGULAR_SPREAD` of their
    mean (:meth:`~ne_dynamics_ros.identification.recording.JointRecording.steps`); then
    :func:`~ne_dynamics_ros.identification.conditioning.resampled`, else the recording
    itself.
    """
    spread = recording.steps()
    if spread.std > IRREGULAR_SPREAD * spread.mean:
        return resampled(recording)
    return recording


def physical_model(model, result, progress=None, own_prior=False):
    """Return the physical model of ``result``: select_model on its fold equations.

    :func:`~ne_dynamics_ros.identification.physical_fit.select_model`, each joint
    weighted by its least-squares residual variance; the drive terms a joint may have:
    none on a joint that did not move, no friction terms where the efforts were recorded
    without friction. ``result``: an :class:`~ne_dynamics_ros.identification.estimation.
    Identification` of ``model``; ``progress``: None or a callable taking a line of text;
    ``own_prior``: the model's inertials are placeholders (no prior toward them).
    """
    return select_model(result.folds, _weights(result.sigma), model.standard_parameters(),
                        model.n, _allowed(model, result), model.joint_names, progress,
                        own_prior=own_prior)


def _weights(sigma):
    """Return 1 / σ² per joint (n,), σ floored at 1e-6 of the largest."""
    sigma = np.asarray(sigma, dtype=float)
    floor = max(float(np.nanmax(sigma)) * 1e-6, 1e-12)
    return 1.0 / np.maximum(np.nan_to_num(sigma, nan=floor), floor) ** 2


def _allowed(model, result):
    """Return the drive terms each joint may have (a DriveModel).

    None on a joint that did not move, no friction terms where the efforts were recorded
    without friction.
    """
    moved = ~np.asarray(result.still, dtype=bool)
    friction = moved & (not result.hardware_friction)
    return DriveModel(tuple(bool(v) for v in moved), tuple(bool(v) for v in friction),
                      tuple(0 if v else -1 for v in friction),
                      tuple(bool(v) for v in friction))


def _recommended_gains(model, parameters, recording, cutoff):
    """Size the gains for the identified model, at the recording's rate and noise.

    :func:`~ne_dynamics_ros.control.laws.gains.recommended_gains` with the position noise
    measured in the recording (:func:`~ne_dynamics_ros.identification.signals.
    position_noise`).
    """
    from ne_dynamics_ros.control.laws.gains import recommended_gains
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
           'MAX_DELAY_FRACTION', 'physical_model', 'utf8_declared']
