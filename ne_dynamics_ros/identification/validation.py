"""Judge a model on motion it was not fitted on: the held-out part of a recording.

Pure module (NumPy, SciPy). A fit that beats the nominal model on its own recording proves
little; ``ne-dynamics identify`` holds out the end of the recording (or takes a second
one) and reports, per joint, the RMS of the measured effort minus each model's prediction
there (:func:`validate`). Every model compared gets the same preprocessing as the fit:
positions and velocities zero-phase low-pass filtered at the identification's cutoff,
accelerations by central differences of the filtered velocities, on the recording's
(uniform) time grid; the measured efforts are not filtered. The first and last 2 % of
the samples (the filter's start-up) are left out.
"""
from dataclasses import dataclass
import dataclasses
from typing import List

import numpy as np

from ne_dynamics_ros.control.sensing.observer import (RELEASE, SUSTAINED_LEVEL, sustained_levels,
                                                      SUSTAINED_TIME)
from ne_dynamics_ros.dynamics.model import STANDARD_GRAVITY
from ne_dynamics_ros.errors import IdentificationError
from ne_dynamics_ros.identification.signals import (aligned_efforts, decimation_index,
                                                    filtered_states)

#: Samples evaluated at once (bounds the memory of long recordings).
BLOCK = 50000
#: Default share of the recording held out (its end).
DEFAULT_FRACTION = 0.25


@dataclass(frozen=True)
class ValidationReport:
    """Errors on the held-out motion, per joint (chain order).

    Attributes:
        source: what was held out (the file, and which part).
        samples: samples compared.
        effort_rms: (n,) RMS of the measured efforts there, N·m (N).
        nominal_rms: (n,) RMS of measured − predicted with the nominal model.
        identified_rms: (n,) the same with the identified model.
        worse: names of the joints the identified model predicts worse than the nominal.
        false_contacts: contacts the thresholds would have reported there (None when
            not evaluated).
        largest_ratio: (n,) the largest ``|r|`` / threshold there (None when not evaluated).
    """

    source: str
    samples: int
    effort_rms: np.ndarray
    nominal_rms: np.ndarray
    identified_rms: np.ndarray
    worse: List[str]
    false_contacts: object = None
    largest_ratio: object = None

    def lines(self, joints):
        """Return the report as printable lines: a table, one joint a row."""
        out = [f'held-out motion: {self.source}, {self.samples} samples',
               f'{"joint":<16} {"effort RMS":>11} {"nominal RMS":>18} '
               f'{"identified RMS":>18}']
        for name, e, a, b in zip(joints, self.effort_rms, self.nominal_rms,
                                 self.identified_rms):
            rel = (lambda v: v / e if e > 0 else float('inf'))
            out.append(f'{name:<16} {e:>11.4g} {a:>10.4g} ({rel(a):5.2f}) '
                       f'{b:>10.4g} ({rel(b):5.2f})')
        return out


def split(recording, fraction):
    """Split ``recording`` in time: (the first 1 − fraction, the last ``fraction``).

    Args:
        recording: :class:`~ne_dynamics_ros.identification.recording.JointRecording`.
        fraction: share held out, 0 <= fraction < 1 (0: nothing held out, second None).

    Raises:
        IdentificationError: ``fraction`` out of range, or a part too short to use.
    """
    if not (isinstance(fraction, (int, float)) and 0 <= fraction < 0.9):
        raise IdentificationError(f'the share held out for validation must be in [0, 0.9), '
                                  f'got {fraction!r}')
    if fraction == 0:
        return recording, None
    N = recording.t.size
    k = int(round(N * (1 - fraction)))
    if k < 50 or N - k < 50:
        raise IdentificationError(f'{recording.source}: {N} samples are too few to hold '
                                  f'out {100 * fraction:g}% for validation (both parts need '
                                  'at least 50)')
    t0 = recording.t[k]

    def part(rows, text, shift=0.0):
        tracking = recording.tracking_error
        if tracking is not None:
            keep = (tracking[0] >= recording.t[rows][0]) & (tracking[0] <= recording.t[rows][-1])
            tracking = (tracking[0][keep] - shift, tracking[1][keep]) if keep.any() else None
        return dataclasses.replace(
            recording, t=recording.t[rows] - shift, q=recording.q[rows],
            qd=None if recording.qd is None else recording.qd[rows],
            effort=recording.effort[rows], source=text, tracking_error=tracking)
    head = part(slice(0, k), recording.source)
    tail = part(slice(k, N), f'{recording.source}, last {100 * fraction:g}% '
                f'(from {t0:.2f} s)', t0)
    return head, tail


def predicted(model, recording, cutoff, effort_delay=0.0, with_gravity=True,
              with_friction=True):
    """Yield the measured and predicted efforts, (m, n) each, block by block.

    The preprocessing of the module docstring; ``with_gravity`` / ``with_friction``
    False where the recorded efforts exclude them.
    """
    q, qd, qdd = filtered_states(recording, cutoff)
    tau = aligned_efforts(recording, effort_delay)
    index = decimation_index(q.shape[0], 1)
    gravity = np.array(STANDARD_GRAVITY) if with_gravity else np.zeros(3)
    for start in range(0, index.size, BLOCK):
        rows = index[start:start + BLOCK]
        guess = model.rnea(q[rows], qd[rows], qdd[rows], gravity=gravity)
        if with_friction:
            guess = guess + model.friction_torques(qd[rows])
        yield tau[rows], guess


def prediction_rms(model, recording, cutoff, effort_delay=0.0, with_gravity=True,
                   with_friction=True):
    """Return (RMS of measured − predicted (n,), RMS of measured (n,), samples).

    ``recording``: one, or several (each filtered on its own, the sums joined).
    """
    recordings = [recording] if hasattr(recording, 't') else list(recording)
    n = recordings[0].q.shape[1]
    error, power, count = np.zeros(n), np.zeros(n), 0
    for one in recordings:
        for measured, guess in predicted(model, one, cutoff, effort_delay, with_gravity,
                                         with_friction):
            error += ((measured - guess) ** 2).sum(axis=0)
            power += (measured ** 2).sum(axis=0)
            count += measured.shape[0]
    if count == 0:
        raise IdentificationError(f'{recordings[0].source}: no samples to validate on')
    return np.sqrt(error / count), np.sqrt(power / count), count


def validate(nominal, identified, recording, cutoff, effort_delay=0.0, with_gravity=True,
             with_friction=True, joints=None):
    """Compare two models on ``recording`` (held out); return a :class:`ValidationReport`.

    Args:
        nominal, identified: :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        recording: the held-out :class:`~ne_dynamics_ros.identification.recording.
            JointRecording` on a uniform time grid, or several.
        cutoff: the identification's low-pass cutoff, Hz.
        effort_delay, with_gravity, with_friction: as the identification used them.
        joints: (n,) names (default the recording's).
    """
    recordings = [recording] if hasattr(recording, 't') else list(recording)
    joints = list(joints or recordings[0].joints)
    source = ' + '.join(one.source for one in recordings)
    before, effort, count = prediction_rms(nominal, recording, cutoff, effort_delay,
                                           with_gravity, with_friction)
    after, _, _ = prediction_rms(identified, recording, cutoff, effort_delay, with_gravity,
                                 with_friction)
    worse = [name for name, a, b in zip(joints, before, after) if b > a]
    return ValidationReport(source, count, effort, before, after, worse)


def _run_lengths(flags):
    """Return, per sample, the length of the run of True that ends there (0 if False)."""
    flags = np.asarray(flags, dtype=bool)
    index = np.arange(flags.size)
    last_false = np.maximum.accumulate(np.where(flags, -1, index))
    return np.where(flags, index - last_false, 0)


def count_contacts(r, threshold, debounce=3, t=None, band=None,
                   sustained_time=SUSTAINED_TIME, sustained_level=SUSTAINED_LEVEL):
    """Return (contacts, largest ``|r|`` / threshold per joint) of ``r`` (N, n).

    :class:`~ne_dynamics_ros.control.sensing.observer.ContactDetector`'s rule over a recording:
    a contact starts where ``debounce`` samples in a row have some ``|r_j| >
    threshold_j``, or, given the samples' times ``t`` (N,) s, where ``r`` filtered over
    ``sustained_time`` (first order, started again after a gap over
    :data:`~ne_dynamics_ros.control.sensing.observer.MAX_GAP`) exceeds ``b_j + sustained_level
    (threshold_j - b_j)`` with ``b`` the friction ``band`` (n,) (None: 0); it ends once
    every ``|r_j|`` and filtered ``r_j`` has been under
    :data:`~ne_dynamics_ros.control.sensing.observer.RELEASE` of its level for ``debounce``
    samples (the detector's hysteresis), and the next one may start after.
    """
    from ne_dynamics_ros.identification.thresholds import first_order_lag
    r = np.asarray(r, dtype=float)
    threshold = np.asarray(threshold, dtype=float)
    ratio = (np.abs(r) / threshold).max(axis=0) if r.size else np.zeros(threshold.size)
    over = _run_lengths((np.abs(r) > threshold).any(axis=1))
    under = (np.abs(r) < RELEASE * threshold).all(axis=1)
    sustained = np.zeros(len(r), dtype=bool)
    if t is not None and sustained_time > 0.0 and r.size:
        filtered = np.abs(first_order_lag(r, t, 1.0 / sustained_time))
        level = np.array(sustained_levels(threshold, np.zeros(threshold.size) if band is
                                          None else band, sustained_level))
        sustained = (filtered > level).any(axis=1)
        under &= (filtered < RELEASE * level).all(axis=1)
    first_over = np.flatnonzero(over >= debounce)       # a debounced run of the threshold
    starts_sustained = np.flatnonzero(sustained)
    released = np.flatnonzero(_run_lengths(under) >= debounce)
    contacts, free_from = 0, 0      # the detector's counts start again after a release
    while True:
        candidates = [i[np.searchsorted(i, k)] for i, k in (
            (first_over, free_from + debounce - 1), (starts_sustained, free_from))
            if np.searchsorted(i, k) < i.size]
        if not candidates:
            break
        start = min(candidates)
        contacts += 1
        end = np.searchsorted(released, start + debounce)
        if end == released.size:
            break
        free_from = released[end] + 1
    return contacts, ratio


__all__ = ['count_contacts', 'DEFAULT_FRACTION', 'predicted', 'prediction_rms', 'split',
           'validate', 'ValidationReport']
