"""Contact thresholds from an identification recording, for ``ne-dynamics identify``.

Pure module (NumPy, SciPy). The node's momentum observer
(:class:`~ne_dynamics_ros.control.sensing.observer.MomentumObserver`) reads what its model does
not explain as external effort. During the recording nothing touched the arm, so the
observer run over it (:func:`observed_effort`), with the identified model, the recorded
efforts as the efforts that acted (``sim_arm_node`` and ``joint_state_broadcaster``
report the effort of the step that ended at each state) and the node's default gain,
shows how large ``r`` gets from model error, noise and friction alone.

**The rule** (:func:`contact_thresholds`), per joint i::

    threshold_i = MARGIN * P99.9( |r_i,k| : k not a transient of joint i ) + Fc_i,
    capped at EFFORT_FRACTION (20 %) of the joint's effort limit, at least FLOOR (1 %)

after Haddadin, De Luca & Albu-Schäffer, "Robot Collisions: A Survey on Detection,
Isolation, and Identification", IEEE Trans. Robotics 33(6), 2017, §IV (collision
detection: a threshold on the residual must sit above its level in free motion, set
from the residual's statistics on collision-free runs, with the phases the model
explains worst, such as the start and stop of motions and the reversals of the joints
where friction changes sign, handled separately or by time-varying thresholds).

- **A quantile, not the maximum.** On real arms the largest ``|r|`` of a recording is
  set by single samples (a stop transient, one glitch in the efforts): a UR10e shoulder
  got 173.7 N·m (53 % of its limit) from one sample where the 99.9th percentile was
  12.2 N·m. The 99.9th percentile ignores the top 0.1 % of the samples.
- **Transients are left out** (:func:`transients`): the samples within
  :data:`STOP_WINDOW` (0.1 s) before or after a stop, start or reversal of the joint
  (``|q̇_i| <=`` :data:`STOP_BAND` (5 %) of the joint's 99th-percentile speed, or a
  change of sign of ``q̇_i`` between two samples), and the observer's memory of a spike
  in its input (one sample whose innovation ``τ̂_ext,k − r_{k−1}``, against the median
  of its 5 neighbours, moves ``r`` in one step by more than the joint's median ``|r|``
  and :data:`SPIKE` robust deviations of such steps: an effort or velocity glitch),
  from the spike until its trace in ``r`` has decayed below 0.1 % (``ln(1000) / K_O``,
  at least :data:`STOP_WINDOW`). A single outlier in the efforts
  reaches ``r`` through the observer's lag over some ``5 / (K_O dt)`` samples, more than
  the 0.1 % of a short recording: the spike rule, not the quantile alone, keeps it out.
  A joint with fewer than :data:`MIN_KEPT` (10 %) of its samples left (one that barely
  moves) takes all its samples, with a warning. High accelerations alone are *not* left
  out: that is where the model's inertias err most, and contacts happen there too;
  leaving them out would set the threshold under the free motion's residual (and with
  noisy velocities the top tail of ``Δq̇ / dt`` is noise spread over the whole run).
- **MARGIN = 2.** For a residual of Gaussian-like noise, P99.9 is 3.3 σ and twice it
  6.6 σ, exceeded once in ~10¹⁰ samples (a year at 500 Hz), where 1.5 × P99.9 = 4.9 σ
  would be crossed every ~30 min; twice also covers motions faster than the recording's
  (the old rule's factor, on the maximum).
- **+ Fc**, the identified Coulomb friction: while a joint sticks, dry friction takes up
  to ``Fc`` of an effort without motion, which the model (smooth at rest) cannot tell
  from an external one.
- **Cap and floor.** A threshold over 20 % of the joint's effort limit hides most
  contacts: it is capped there, with a warning naming the joint, the value the data
  asked for and what in the data asks for it. A joint whose limit is known gets at least
  1 % of it. An unknown limit (inf) neither caps nor floors.

The observer runs vectorised (:func:`observed_effort`): batch RNEA in blocks of
:data:`BLOCK` samples (bounded memory) and the first-order recursion by
``scipy.signal.lfilter`` (steady sampling) or by an exact exponentially scaled cumulative
sum (any sampling), equal to the online observer driven sample by sample.
"""
from dataclasses import dataclass
import math
from typing import List, NamedTuple, Optional

import numpy as np

from ne_dynamics_ros.control.sensing.observer import MAX_GAP
from ne_dynamics_ros.dynamics.model import STANDARD_GRAVITY
from ne_dynamics_ros.errors import RecordingError

#: The node's default observer gain (``contact.observer_gain``), 1/s.
DEFAULT_GAIN = 60.0
#: Multiple of the free-motion quantile of ``|r|`` in the rule.
MARGIN = 2.0
#: The quantile of ``|r|`` (percent) over the samples that are not transients.
QUANTILE = 99.9
#: Least threshold, as a share of the joint's effort limit.
FLOOR = 0.01
#: Default cap, as a share of the joint's effort limit.
EFFORT_FRACTION = 0.2
#: A joint stops (starts, reverses) where ``|q̇|`` is at most this share of its
#: 99th-percentile speed, or where ``q̇`` changes sign.
STOP_BAND = 0.05
#: Samples this close (s) to a stop, start or reversal are transients.
STOP_WINDOW = 0.1
#: A spike moves r in one step by more than this many robust deviations (1.4826 x the
#: median) of such steps (and by more than the joint's median ``|r|``).
SPIKE = 10.0
#: Least share of a joint's samples the quantile is taken over (else: all samples).
MIN_KEPT = 0.1
#: Samples per block of :func:`observed_effort` (memory ~ a few hundred bytes each).
BLOCK = 50_000
#: Steps whose lengths differ by less than this (relative) are one steady rate (lfilter).
UNIFORM_RTOL = 1e-10
#: Largest ``K_O t`` scaled within one cumulative sum (e^300 ~ 1e130: no overflow).
SCALE_LIMIT = 300.0


def _gains(gain, n):
    """Return K_O as (n,) floats > 0, or raise ValueError."""
    try:
        values = np.broadcast_to(np.asarray(gain, dtype=float), (n,)).copy()
    except (TypeError, ValueError):
        values = np.array([math.nan])
    if isinstance(gain, (bool, str)) or not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError(f'the observer gain needs one or {n} finite values > 0, got {gain!r}')
    return values


def _arrays(model, t, q, qd, effort):
    """Check the recording's arrays; return them as float arrays (qd differentiated)."""
    t = np.asarray(t, dtype=float)
    q = np.asarray(q, dtype=float)
    effort = np.asarray(effort, dtype=float)
    n = model.n
    if t.ndim != 1 or len(t) == 0 or q.shape != (len(t), n) or effort.shape != q.shape:
        raise RecordingError(f'the observer needs t (N,), q and effort (N, {n}) with N > 0, '
                             f'got {t.shape}, {q.shape}, {effort.shape}')
    if qd is None:
        qd = np.gradient(q, t, axis=0) if len(t) > 1 else np.zeros_like(q)
    qd = np.asarray(qd, dtype=float)
    if qd.shape != q.shape:
        raise RecordingError(f'qd must be (N, {n}) like q, got {qd.shape}')
    for name, values in (('t', t), ('q', q), ('qd', qd), ('effort', effort)):
        if not np.all(np.isfinite(values)):
            raise RecordingError(f'the observer needs finite values: {name} has nan or inf')
    return t, q, qd, effort


def observed_effort(model, t, q, qd, effort, gain=DEFAULT_GAIN, with_gravity=True,
                    with_friction=True, block=BLOCK) -> np.ndarray:
    """Run the momentum observer over a recording; return r, (N, n) N·m (N).

    The maths of :meth:`MomentumObserver.update
    <ne_dynamics_ros.control.sensing.observer.MomentumObserver.update>`, vectorised: ``r_0 = 0``;
    for each later sample k, with ``dt_k = t_k − t_{k−1}``,

        τ̂_k = RNEA(q_k, q̇_k, (q̇_k − q̇_{k−1}) / dt_k) + τ_f(q̇_k) − effort_k,

        r_k = r_{k−1} + (1 − exp(−K_O dt_k)) (τ̂_k − r_{k−1}),

    and ``r_k = 0`` (the observer restarts, the next step from there) where ``dt_k >``
    :data:`~ne_dynamics_ros.control.sensing.observer.MAX_GAP` or ``dt_k <= 0``. ``effort_k`` is
    the recorded effort at state k, the one that acted over the step ending there (the
    online observer's ``applied``). The batch RNEA runs in blocks of ``block`` samples
    (memory bounded by the block, not the recording: under 100 MiB at the default for a
    6-joint arm, on top of the (N, n) inputs and result); the recursion runs without a
    loop over samples: ``scipy.signal.lfilter`` over a block at one steady rate (its
    state carried from block to block), else an exact scaled cumulative sum
    ``r_k = e^{−K s_k} (r_in e^{−K dt_0} + Σ_j a_j τ̂_j e^{K s_j})`` over stretches of
    at most ``K s <=`` :data:`SCALE_LIMIT` (``s`` the time since the stretch began,
    restarts subtracting the sum so far).

    Args:
        model: the (identified) :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        t: (N,) s; q, qd: (N, n) rad, rad/s (m, m/s) (qd None: ``np.gradient`` of q).
        effort: (N, n) the efforts recorded, each the one that acted over the step
            ending at its state, N·m (N).
        gain: K_O, one value or (n,), 1/s, > 0.
        with_gravity, with_friction: False where the recorded efforts exclude them
            (the hardware compensates them).
        block: samples per block of the batch RNEA, >= 1.

    Returns:
        (N, n) r, N·m (N), chain order.

    Raises:
        RecordingError: shapes that do not match ``model`` or values not finite.
        ValueError: a gain that is not finite and > 0, or ``block`` < 1.
        StateError: from the model, for states beyond double precision.
    """
    t, q, qd, effort = _arrays(model, t, q, qd, effort)
    gain = _gains(gain, model.n)
    block = int(block)
    if block < 1:
        raise ValueError(f'block must be >= 1 sample, got {block}')
    gravity = np.array(STANDARD_GRAVITY, dtype=float) if with_gravity else np.zeros(3)
    count = len(t)
    r = np.empty_like(q)
    r_in = np.zeros(model.n)
    for b0 in range(0, count, block):
        b1 = min(count, b0 + block)
        dt = np.empty(b1 - b0)
        dt[1:] = np.diff(t[b0:b1])
        dt[0] = t[b0] - t[b0 - 1] if b0 else math.nan
        restart = ~((dt > 0.0) & (dt <= MAX_GAP))        # nan (the first state) too
        qdd = np.empty((b1 - b0, model.n))
        qdd[1:] = np.diff(qd[b0:b1], axis=0)
        qdd[0] = qd[b0] - qd[b0 - 1] if b0 else 0.0
        qdd /= np.where(restart, 1.0, dt)[:, None]
        qdd[restart] = 0.0                                  # unused: r restarts there
        x = model.rnea(q[b0:b1], qd[b0:b1], qdd, gravity=gravity)
        del qdd
        if with_friction:
            x += model.friction_torques(qd[b0:b1])
        x -= effort[b0:b1]
        r[b0:b1] = _recursion(x, dt, restart, gain, r_in)
        r_in = r[b1 - 1].copy()
    return r


def first_order_lag(x, t, gain) -> np.ndarray:
    """Return ``x`` (N, n) through a first-order lag of bandwidth ``gain`` (n,) 1/s.

    ``r_k = r_{k-1} + (1 - e^{-K dt_k}) (x_k - r_{k-1})`` at the samples' times ``t``
    (N,) s, exactly for any steps; 0 at the first sample and after a step over
    :data:`~ne_dynamics_ros.control.sensing.observer.MAX_GAP` or not forward (where the streaming
    filters of the control path start again). The contact detector's second level
    (:class:`~ne_dynamics_ros.control.sensing.observer.ContactDetector`) over a recording.
    """
    x = np.asarray(x, dtype=float)
    t = np.asarray(t, dtype=float)
    dt = np.diff(t, prepend=t[:1])
    restart = (dt <= 0.0) | (dt > MAX_GAP)
    restart[:1] = True
    gain = np.broadcast_to(np.asarray(gain, dtype=float), (x.shape[1],))
    return _recursion(x, dt, restart, gain, np.zeros(x.shape[1]))


def _recursion(x, dt, restart, gain, r_in):
    """Return r (m, n): ``r_k = r_{k−1} + (1 − e^{−K dt_k}) (x_k − r_{k−1})``, 0 at restarts.

    ``r_in`` (n,) is r before the first sample.
    """
    from scipy.signal import lfilter
    steps = dt[~restart]
    if steps.size and not restart[1:].any() and \
            np.ptp(steps) <= UNIFORM_RTOL * steps.mean():
        # one steady rate: a first-order IIR filter, y_k = a x_k + c y_{k-1}
        r = np.empty_like(x)
        first = 1 if restart[0] else 0
        if first:
            r[0], r_in = 0.0, np.zeros_like(r_in)
        step = float(steps.mean())
        for k in np.unique(gain):
            cols = gain == k
            c = math.exp(-k * step)
            r[first:, cols] = lfilter([1.0 - c], [1.0, -c], x[first:, cols], axis=0,
                                      zi=(c * r_in[cols])[None, :])[0]
        return r
    return _scaled_sum(x, dt, restart, gain, r_in)


def _scaled_sum(x, dt, restart, gain, r_in):
    """Run the recursion of :func:`_recursion` for any steps, exactly, by cumulative sums.

    With ``s_k`` the time since the stretch's first sample (restarts count no time) and
    ``a_k = 1 − e^{−K dt_k}`` (0 at restarts),
    ``r_k = e^{−K s_k} (base + Σ_{j=ρ+1..k} a_j x_j e^{K s_j})`` where ρ is the last
    restart up to k (base 0) or none (base ``r_in e^{−K dt_first}``). Stretches end
    before ``K s`` passes :data:`SCALE_LIMIT`; the sum's rounding stays at the scale of
    the recent terms (the older ones are scaled down as much as they decayed).
    """
    m = len(x)
    d = np.where(restart, 0.0, dt)
    elapsed = np.cumsum(d)
    stretch = np.floor(elapsed * gain.max() / SCALE_LIMIT).astype(np.int64)
    edges = np.flatnonzero(np.diff(stretch)) + 1
    r = np.empty_like(x)
    for s, e in zip(np.r_[0, edges], np.r_[edges, m]):
        since = (elapsed[s:e] - elapsed[s])[:, None] * gain          # K s_k, (L, n)
        blend = 1.0 - np.exp(-gain * d[s:e, None])
        total = np.cumsum(blend * x[s:e] * np.exp(since), axis=0)
        marks = np.where(restart[s:e], np.arange(e - s), -1)
        last = np.maximum.accumulate(marks)
        before = np.where((last >= 0)[:, None], total[np.maximum(last, 0)],
                          -r_in * np.exp(-gain * d[s]))
        r[s:e] = np.exp(-since) * (total - before)
        r_in = r[e - 1]
    return r


class Transients(NamedTuple):
    """The samples :func:`transients` leaves out, (N, n) bool each.

    ``stop``: within :data:`STOP_WINDOW` of a stop, start or reversal of the joint;
    ``spike``: in the observer's memory of a spike in its input.
    """

    stop: np.ndarray
    spike: np.ndarray

    @property
    def any(self) -> np.ndarray:
        """Return whether each sample is a transient of either kind, (N, n) bool."""
        return self.stop | self.spike


def _near(t, events, before, after):
    """Return (N,) bool: t_k within [t_e − before, t_e + after] of an event e."""
    at = t[events]
    order = np.argsort(at, kind='stable')
    at = at[order]
    return (np.searchsorted(at, t + before, side='right') -
            np.searchsorted(at, t - after, side='left')) > 0


def transients(t, qd, r, gain=DEFAULT_GAIN) -> Transients:
    """Return the transient samples of each joint (the rule's exclusions).

    Stops, starts and reversals: samples within :data:`STOP_WINDOW` (0.1 s, before or
    after) of one where ``|q̇_i| <=`` :data:`STOP_BAND` × the 99th percentile of
    ``|q̇_i|``, or where ``q̇_i`` changed sign since the previous sample. Spikes: samples
    whose innovation ``u_k = τ̂_k − r_{k−1} = (r_k − r_{k−1}) / a_k``, ``a_k = 1 −
    e^{−K dt_k}`` (the observer's input, recovered from r; 0 where the observer
    restarts), against the median of its 5 neighbours, moves r in that one step,
    ``a_k |u_k − median_5(u)_k|``, by more than both the joint's median ``|r|`` and
    :data:`SPIKE` robust deviations (1.4826 × the median) of such steps (a Hampel
    identifier, with the residual's own level as a floor: smooth data, whose median
    deviation is ~0, and the jitter of real time stamps raise none), and the samples
    after one until ``max(STOP_WINDOW, ln(1000) / K_i)`` (its trace in r decays below
    0.1 %).

    Args:
        t: (N,) s; qd: (N, n) rad/s (m/s); r: (N, n) the observer's output on them
            (:func:`observed_effort`), N·m (N).
        gain: K_O the observer ran with, one value or (n,), 1/s.

    Returns:
        :class:`Transients`.

    Raises:
        ValueError: shapes that differ, or a gain that is not finite and > 0.
    """
    from scipy.ndimage import median_filter
    t = np.asarray(t, dtype=float)
    qd, r = np.asarray(qd, dtype=float), np.asarray(r, dtype=float)
    if t.ndim != 1 or qd.shape != r.shape or qd.shape[:1] != t.shape or qd.ndim != 2:
        raise ValueError(f'transients needs t (N,), qd and r (N, n), got {t.shape}, '
                         f'{qd.shape}, {r.shape}')
    gain = _gains(gain, qd.shape[1])
    count = len(t)
    stop = np.zeros(qd.shape, dtype=bool)
    spike = np.zeros(qd.shape, dtype=bool)
    if count < 2:
        return Transients(stop, spike)
    dt = np.diff(t)
    valid = (dt > 0.0) & (dt <= MAX_GAP)
    for j in range(qd.shape[1]):
        speed = np.abs(qd[:, j])
        events = speed <= STOP_BAND * np.percentile(speed, 99.0)
        events[1:] |= qd[1:, j] * qd[:-1, j] < 0.0
        stop[:, j] = _near(t, events, STOP_WINDOW, STOP_WINDOW)
        blend = np.zeros(count)
        blend[1:] = -np.expm1(-gain[j] * np.where(valid, dt, 0.0))
        u = np.zeros(count)
        u[1:][valid] = np.diff(r[:, j])[valid] / blend[1:][valid]
        step = blend * np.abs(u - median_filter(u, size=5, mode='nearest'))
        events = step > max(SPIKE * 1.4826 * np.median(step), np.median(np.abs(r[:, j])))
        memory = max(STOP_WINDOW, math.log(1000.0) / gain[j])
        spike[:, j] = _near(t, events, 0.0, memory)
    return Transients(stop, spike)


@dataclass(frozen=True)
class Excluded:
    """The largest ``|r|`` a joint's rule left out.

    Attributes:
        effort: r there (signed), N·m (N).
        time: s, in the recording's time (``JointRecording.t``).
        transient: True where the sample was a transient, False where it was kept but
            above the quantile.
        reason: why it was left out, as text.
        source: the recording it is in, where several were joined (``time`` then in
            that recording's own time), else None.
    """

    effort: float
    time: float
    transient: bool
    reason: str
    source: Optional[str] = None


@dataclass(frozen=True)
class ContactThresholds:
    """What :func:`contact_thresholds` found, per joint (lists in chain order).

    Attributes:
        joints: (n,) joint names.
        values: n floats, ``contact.threshold``, N·m (N), 4 significant digits.
        rule: n one-line texts, how each value came (e.g. ``2 x p99.9 |r| (3.1 N·m) +
            Fc 0.5``).
        largest_excluded: n :class:`Excluded` (None where nothing was left out).
        warnings: n lists of str (caps, joints that barely move).
        quantile: n floats, P99.9 of ``|r|`` over the samples kept, N·m (N).
        coulomb: n floats, the Fc added, N·m (N).
        kept: n floats, the share of the samples the quantile was taken over.
        source: the recording's source.
    """

    joints: tuple
    values: List[float]
    rule: List[str]
    largest_excluded: List[Optional[Excluded]]
    warnings: List[List[str]]
    quantile: List[float]
    coulomb: List[float]
    kept: List[float]
    source: str = ''

    def lines(self, source: Optional[str] = None) -> List[str]:
        """Return one printable line per joint.

        The joint, its threshold and rule, and the largest ``|r|`` the rule left out:
        its value, and where (``source``, default the recording's, and the time).
        """
        where = self.source if source is None else source
        out = []
        for name, value, rule, left in zip(self.joints, self.values, self.rule,
                                           self.largest_excluded):
            line = f'{name}: threshold {value:.4g} N·m = {rule}'
            if left is not None:
                line += (f'; largest |r| left out {abs(left.effort):.3g} N·m at '
                         f't = {left.time:.3f} s in {left.source or where} '
                         f'({left.reason})')
            out.append(line)
        return out

    @property
    def all_warnings(self) -> List[str]:
        """Return the warnings of every joint, in joint order."""
        return [w for joint in self.warnings for w in joint]


def contact_thresholds(model, recording, gain=DEFAULT_GAIN, with_gravity=True,
                       with_friction=True, effort_fraction=EFFORT_FRACTION,
                       effort_limits=None) -> ContactThresholds:
    """Return ``contact.threshold`` for ``model`` from ``recording``, with its reasons.

    The rule of the module docstring (Haddadin, De Luca & Albu-Schäffer, IEEE T-RO
    33(6), 2017, §IV): per joint, :data:`MARGIN` × the 99.9th percentile of ``|r|`` over
    the samples that are not transients (:func:`transients`) + the identified Coulomb
    friction ``Fc`` (``model.friction``; 0 without friction), at most
    ``effort_fraction`` of the joint's effort limit (with a warning) and at least
    :data:`FLOOR` of it; ``r`` the observer's output over the recording
    (:func:`observed_effort`).

    Args:
        model: the (identified) :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        recording: a :class:`~ne_dynamics_ros.identification.recording.JointRecording`
            of the joints of ``model``, in its order (t (N,) s; q, qd (N, n) or qd None;
            effort (N, n) N·m (N)).
        gain: K_O of the node's observer, one value or (n,), 1/s.
        with_gravity, with_friction: False where the recorded efforts exclude them.
        effort_fraction: the cap, a share of each joint's effort limit, in (0, 1].
        effort_limits: (n,) N·m (N), inf where unknown (no cap, no floor); default
            ``model.effort_limits``.

    Returns:
        :class:`ContactThresholds` (``values``: the n floats for ``contact.threshold``).

    Raises:
        RecordingError: the recording's joints or arrays do not match ``model``, or hold
            values that are not finite.
        ValueError: ``effort_fraction`` outside (0, 1], ``effort_limits`` not n values
            > 0, or a gain that is not finite and > 0.
    """
    n = model.n
    if len(recording.joints) != n:
        raise RecordingError(f'{recording.source}: the recording has {len(recording.joints)} '
                             f'joints, the model {n}')
    if not 0.0 < float(effort_fraction) <= 1.0:
        raise ValueError(f'effort_fraction must be in (0, 1], got {effort_fraction!r}')
    limits = np.asarray(model.effort_limits if effort_limits is None else effort_limits,
                        dtype=float)
    if limits.shape != (n,) or np.any(np.isnan(limits)) or np.any(limits <= 0):
        raise ValueError(f'effort_limits must be {n} values > 0 (inf: unknown), got '
                         f'{np.asarray(effort_limits).tolist()}')
    t, q, qd, effort = _arrays(model, recording.t, recording.q, recording.qd,
                               recording.effort)
    r = observed_effort(model, t, q, qd, effort, gain, with_gravity, with_friction)
    left_out = transients(t, qd, r, gain)
    coulomb = np.asarray(model.friction, dtype=float) if with_friction else np.zeros(n)
    out = dict(values=[], rule=[], largest_excluded=[], warnings=[], quantile=[],
               coulomb=[], kept=[])
    for j, name in enumerate(recording.joints):
        size = np.abs(r[:, j])
        kept = ~(left_out.stop[:, j] | left_out.spike[:, j])
        warnings = []
        if kept.sum() < max(1, MIN_KEPT * len(t)):
            warnings.append(f'{name}: only {kept.mean():.0%} of the samples are away from '
                            f'stops, reversals and spikes (the joint barely moves?): the '
                            f'{QUANTILE:g}th percentile is taken over all samples')
            kept[:] = True
        level = float(np.percentile(size[kept], QUANTILE))
        fc = float(coulomb[j])
        rule = f'{MARGIN:g} x p{QUANTILE:g} |r| ({level:.3g} N·m) + Fc {fc:.3g}'
        value, rule = _bounded(name, level, fc, float(limits[j]), effort_fraction, rule,
                               warnings)
        out['values'].append(float(f'{value:.4g}'))
        out['rule'].append(rule)
        out['largest_excluded'].append(_largest_excluded(t, r[:, j], size, kept, level,
                                                         left_out, j))
        out['warnings'].append(warnings)
        out['quantile'].append(level)
        out['coulomb'].append(fc)
        out['kept'].append(float(kept.mean()))
    return ContactThresholds(tuple(recording.joints), source=recording.source, **out)


def _bounded(name, level, fc, limit, effort_fraction, rule, warnings):
    """Return (threshold, rule) of a joint: the rule's value within its cap and floor.

    Over ``effort_fraction`` of the ``limit`` (N·m): capped, with a warning appended to
    ``warnings`` naming the joint and what in the data asks for more; under
    :data:`FLOOR` of it: raised.
    """
    asked = MARGIN * level + fc
    value = asked
    if math.isfinite(limit) and asked > effort_fraction * limit:
        value = effort_fraction * limit
        rule += f' = {asked:.4g}, capped at {effort_fraction:.0%} of the limit {limit:g}'
        if MARGIN * level >= fc:
            cause = (f'the {QUANTILE:g}th percentile of |r| is {level:.3g} N·m away '
                     f'from stops: the model explains this joint poorly (re-identify, '
                     f'or check the recorded efforts: units, sign, delay)')
        else:
            cause = (f'its Coulomb friction Fc is {fc:.3g} N·m: a joint that sticks '
                     f'hides that much effort')
        warnings.append(f'{name}: the recording asks for a contact threshold of '
                        f'{asked:.4g} N·m, over {effort_fraction:.0%} of its effort '
                        f'limit {limit:g} N·m; capped at {value:.4g} N·m, which the '
                        f'free motion may cross: {cause}')
    elif math.isfinite(limit) and asked < FLOOR * limit:
        value = FLOOR * limit
        rule += f' = {asked:.3g}, raised to {FLOOR:.0%} of the limit {limit:g}'
    return value, rule


def _largest_excluded(t, r, size, kept, level, left_out, j):
    """Return the :class:`Excluded` of one joint, or None (nothing above the quantile)."""
    k = int(np.argmax(np.where(kept, -np.inf, size))) if not kept.all() else -1
    above = np.flatnonzero(kept & (size > level))
    if above.size and (k < 0 or size[above].max() > size[k]):
        k = int(above[np.argmax(size[above])])
    if k < 0:
        return None
    if kept[k]:
        reason = f'above the {QUANTILE:g}th percentile'
    elif left_out.stop[k, j]:
        reason = 'transient: near a stop, start or reversal'
    else:
        reason = 'transient: after a spike in the observer\'s input'
    return Excluded(float(r[k]), float(t[k]), not kept[k], reason)


__all__ = ['BLOCK', 'contact_thresholds', 'ContactThresholds', 'DEFAULT_GAIN',
           'EFFORT_FRACTION', 'Excluded', 'first_order_lag', 'FLOOR', 'MARGIN', 'MIN_KEPT',
           'observed_effort', 'QUANTILE', 'SPIKE', 'STOP_BAND', 'STOP_WINDOW', 'transients',
           'Transients']
