"""External joint torque by a momentum observer, and contact detection on it.

Pure module (no ROS). Without a force sensor, the model the controller already holds
tells how much of the motion the commanded effort does not explain. De Luca & Mattone
(ICRA 2005) and Haddadin, De Luca & Albu-Schäffer ("Robot Collisions: A Survey on
Detection, Isolation, and Identification", IEEE T-RO 33(6), 2017, §IV) observe the
generalized momentum ``p = M(q) q̇``:

    r(t) = K_O ( p(t) − ∫₀ᵗ (τ + Cᵀ(q, q̇) q̇ − g(q) − τ_f + r) ds − p(0) )

with ``M(q) q̈ + C(q, q̇) q̇ + g(q) + τ_f = τ + τ_ext``, whence ``ṙ = K_O (τ_ext − r)``:
``r`` is the external joint torque through a first-order lag of bandwidth ``K_O`` (1/s),
with no acceleration measured.

**Discrete time.** Between two states ``k − 1`` and ``k`` (``dt`` apart), ``p_k − p_{k−1}
= M_k Δq̇_k + (M_k − M_{k−1}) q̇_{k−1}``, and the second term is the step's
``∫ Ṁ q̇ = ∫ (C + Cᵀ) q̇``, so the integral's ``Cᵀ q̇`` and the momentum's ``Ṁ q̇``
cancel and the observer's step needs one inverse dynamics call at the current state,

    τ̂_ext,k = M(q_k) Δq̇_k / dt + C(q_k, q̇_k) q̇_k + g(q_k) + τ_f(q̇_k) − τ_{k−1}
            = RNEA(q_k, q̇_k, Δq̇_k / dt) + τ_f(q̇_k) − τ_{k−1},

    r_k = r_{k−1} + (1 − exp(−K_O dt)) (τ̂_ext,k − r_{k−1}),

the observer's equation held over the step (zero-order hold: stable for any ``dt``; to
first order in ``dt`` the Euler step ``r_k = K_O Σ (...)`` of the integral form).
``Δq̇_k / dt`` is not a measured acceleration but the momentum's increment: its noise
reaches ``r`` scaled by ``K_O dt``. ``τ_{k−1}`` is the effort that acted over the step:
the command that answered state ``k − 1`` (ros2_control writes it after its update),
after clamping. The model is the controller's: identified inertias, armature, friction
``τ_f`` (viscous and Coulomb at the measured velocity) and, in adaptive mode, the load
it learned. Dry friction makes the estimate uncertain by up to the Coulomb level while a
joint sticks (the friction takes up part of a push): thresholds must allow that band.

**A model that learns.** In adaptive mode the model changes as the law learns a load.
``r`` is kept relative to the model *in force*: each change of the model's effort at the
current state is added to the previous ``r`` (``shift``), as if the new model had been
used all along (exact at rest), so that a load the law has learned is no external
effort, without waiting for the observer's lag. A load *declared* (a gripper closed on
it) arrives with the motion it loads: the model before it was right, and no shift is
applied.

**Contacts: two levels.** A joint whose ``|r|`` exceeds its threshold ``h`` for
``debounce`` states in a row is in contact (a collision: reported within milliseconds).
A push held for a while (a person pushing a held arm: 0.3–3 s) is also in contact when
``r`` low-pass filtered over ``contact.sustained_time`` (``tau``, first order) exceeds

    b + level (h - b)

with ``b`` the joint's friction band (the model's Coulomb level, at most ``h``: a joint
stuck under a command shows up to that much in ``r`` for as long as it sticks, so the
band is never eaten into) and ``level`` = ``contact.sustained_level`` of the margin above
it. Free motion's excursions of ``r`` are short (model errors at reversals, a few tens of
ms) and the filter takes most of them out: on the KUKA LWR4+'s recordings replayed raw,
the filtered ``|r|`` over 0.2 s stays below 0.5 of the margin while single samples reach
0.81 of ``h``; a push of 0.9 ``h`` held 0.3 s reaches 0.7 ``h`` through the filter. The
contact ends once every joint has been under 80 % of its threshold, and its filtered
``r`` under 80 % of its second level, for ``debounce`` states (hysteresis, so that a
contact is reported once).
"""
import math
from typing import List, NamedTuple, Optional, Sequence

from ne_dynamics_ros.control.sensing.friction_estimate import SCALE_RANGE

#: After a gap between states longer than this (s), the observer starts again from the
#: next state (its momentum increment would span the gap).
MAX_GAP = 0.1
#: A contact ends when every ``|r|`` is below this share of its threshold.
RELEASE = 0.8
#: ``contact.sustained_time`` and ``contact.sustained_level``'s defaults: chosen on the
#: KUKA's run 1 (the fitted run; its filtered ``|r|`` reaches 0.42 of the margin), judged
#: on its runs 2 and 3 and on the simulated arms (``bench_contacts_real.py``,
#: ``bench_safety.py``).
SUSTAINED_TIME, SUSTAINED_LEVEL = 0.2, 0.6


def sustained_levels(threshold, band, sustained_level) -> List[float]:
    """Return the second level per joint, ``b + level (h - b)`` with ``b = min(band, h)``.

    ``threshold``: (n,) ``h``, N·m (N); ``band``: (n,) the friction band (the model's
    Coulomb friction); ``sustained_level``: the share of the margin ``h - b``, in [0, 1).
    An infinite ``h`` gives inf (the joint's detection off).
    """
    levels = []
    for b, h in zip(band, threshold):
        b = min(float(b), float(h))
        levels.append(b + sustained_level * (h - b) if math.isfinite(h) else math.inf)
    return levels


#: A contact on a joint at rest whose ``|r|`` is within this many times the joint's
#: Coulomb friction may be stiction beyond the model's (:attr:`Contact.friction`): the
#: upper bound of the Coulomb factor the Cartesian law learns
#: (:data:`~ne_dynamics_ros.control.sensing.friction_estimate.SCALE_RANGE`).
STICTION_RANGE = SCALE_RANGE[1]
#: ... at rest: ``|qd|`` below this, rad/s (m/s)
AT_REST = 0.01


class Contact(NamedTuple):
    """A contact just detected.

    ``joint`` (name), ``effort`` (r there, N·m or N; filtered if sustained),
    ``threshold`` (N·m or N: the one it passed), ``time`` (s, the controller's clock),
    ``sustained``: found by the second level (the filtered ``r``), not the first;
    ``friction``: the joint's Coulomb friction (model) when the joint was at rest and
    ``|effort|`` within :data:`STICTION_RANGE` times it, else 0: then the "contact" may be
    the drive's stiction beyond what the model holds (a cold or worn drive, another arm
    of the type), which a joint's own data cannot tell from a push, and the text says so.
    """

    joint: str
    effort: float
    threshold: float
    time: float
    sustained: bool = False
    friction: float = 0.0

    def text(self) -> str:
        """Return the contact as a sentence (for logs, diagnostics, a goal's result)."""
        if self.sustained:
            text = (f'contact on {self.joint}: a sustained external effort {self.effort:+.2f} '
                    f'N*m (filtered) over its level {self.threshold:.2f} N*m')
        else:
            text = (f'contact on {self.joint}: external effort {self.effort:+.2f} N*m over '
                    f'its threshold {self.threshold:.2f} N*m')
        if self.friction > 0.0:
            text += (f'; the joint was at rest and this is within {STICTION_RANGE:g}x its '
                     f'Coulomb friction {self.friction:.2f} N*m: if nothing touched the '
                     'arm, its friction is above the model\'s (identify it again, or raise '
                     'contact.threshold)')
        return text


class MomentumObserver:
    """De Luca's momentum observer on plain floats (the control path), one per controller.

    Args:
        n: number of joints.
        gain: K_O, (n,) or one value, 1/s, > 0.

    :meth:`update` takes each valid state with the model's terms and returns ``r`` (n
    floats, N·m / N, chain order, positive along the joint's axis: the effort the
    environment applies to the joint).
    """

    def __init__(self, n: int, gain):
        self.n = n
        self.set_gain(gain)
        self.reset()

    def set_gain(self, gain):
        """Set K_O (1/s), one value or n values, each > 0 and finite."""
        values = [float(gain)] * self.n if isinstance(gain, (int, float)) else \
            [float(g) for g in gain]
        if len(values) != self.n or not all(math.isfinite(g) and g > 0 for g in values):
            raise ValueError(f'the observer gain needs {self.n} finite values > 0, got '
                             f'{values}')
        self.gain = values
        self._blend = (None, [])         # (dt, 1 - exp(-K_O dt) per joint)

    def reset(self):
        """Forget the past: the next state starts the observer again from r = 0."""
        self.r = [0.0] * self.n
        self._last = None              # (t, qd) of the previous state

    def update(self, t: float, qd: Sequence[float], dynamics, friction: Sequence[float],
               applied: Optional[Sequence[float]],
               shift: Optional[Sequence[float]] = None) -> List[float]:
        """Advance to the state at ``t`` (s); return ``r`` (n floats).

        Args:
            t: the state's time, s.
            qd: (n,) measured velocities, rad/s (m/s).
            dynamics: ``dynamics(qdd)`` returns the model's ``M(q) qdd + C(q, q̇) q̇ +
                g(q)`` at this state (n floats) for the momentum increment's ``qdd``.
            friction: (n,) the model's friction effort at ``qd``, N·m (N).
            applied: (n,) the effort that acted since the previous state (the last
                command, clamped), or None when none did (the observer restarts).
            shift: (n,) how much the model's effort at this state changed since the
                previous step (an adaptive law's estimate moved), or None: added to the
                previous r, as if the model in force had been used all along (exact at
                rest), so that r is what the model *now* does not explain.
        """
        last, self._last = self._last, (t, list(qd))
        if last is None or applied is None:
            self.r = [0.0] * self.n
            return self.r
        dt = t - last[0]
        if not 0.0 < dt <= MAX_GAP:
            self.r = [0.0] * self.n
            return self.r
        qdd = [(a - b) / dt for a, b in zip(qd, last[1])]
        tau = dynamics(qdd)
        previous = self.r if shift is None else [a + b for a, b in zip(self.r, shift)]
        if dt != self._blend[0]:          # states at a steady rate: worked out once
            self._blend = (dt, [1.0 - math.exp(-k * dt) for k in self.gain])
        r = [r_prev + blend * (model + f - u - r_prev) for r_prev, blend, model, f, u in
             zip(previous, self._blend[1], tau, friction, applied)]
        if not all(map(math.isfinite, r)):
            self.reset()
            return self.r
        self.r = r
        return r


class ContactDetector:
    """Two levels on the observer's ``r``: a threshold with debounce, a filtered level.

    Args:
        joints: (n,) names, chain order.
        threshold: (n,) ``h``, N·m (N) per joint, > 0; ``inf`` (or an empty list: all
            inf) turns a joint's detection off.
        debounce: states in a row over the threshold before a contact is reported, >= 1.
        band: (n,) the friction band ``b`` per joint, N·m (N) (the model's Coulomb
            friction), or None (0).
        sustained_time: ``tau`` of the second level's filter, s; 0: no second level.
        sustained_level: the second level's share of the margin ``h - b``, in [0, 1).
    """

    def __init__(self, joints: Sequence[str], threshold, debounce: int, band=None,
                 sustained_time: float = 0.0, sustained_level: float = SUSTAINED_LEVEL):
        self.joints = list(joints)
        self.band = [0.0] * len(self.joints) if band is None else [float(b) for b in band]
        self.clear()
        self.configure(threshold, debounce, sustained_time, sustained_level)

    def configure(self, threshold, debounce: int, sustained_time: float = 0.0,
                  sustained_level: float = SUSTAINED_LEVEL):
        """Set both levels (checked by the parameter table); clears the counts.

        A contact in force stays in force (new settings during a push do not make it a
        new contact: it ends by the release rule on the new levels), unless detection is
        now off.
        """
        held, filtered = self.contact, (self._rf, self._t)
        threshold = list(threshold) if len(threshold) else [math.inf] * len(self.joints)
        self.threshold = [float(v) for v in threshold]
        self.debounce = int(debounce)
        self.enabled = any(math.isfinite(v) for v in self.threshold)
        self.sustained_time = float(sustained_time)
        #: the second level per joint (:func:`sustained_levels`; inf: off)
        self.level = (sustained_levels(self.threshold, self.band, sustained_level)
                      if self.sustained_time > 0.0 else [math.inf] * len(self.joints))
        self.clear()
        if held is not None and self.enabled:
            self.contact = held
            self._rf, self._t = filtered

    def _filtered(self, t: float, r: Sequence[float], level) -> Optional[int]:
        """Advance the filter of ``r`` to ``t``; the joint most over ``level``, or None."""
        last, self._t = self._t, t
        if last is None or not 0.0 < t - last <= MAX_GAP:
            self._rf = [0.0] * len(self.joints)     # a new start: the filter charges again
            return None
        blend = 1.0 - math.exp(-(t - last) / self.sustained_time)
        self._rf = rf = [a + blend * (x - a) for a, x in zip(self._rf, r)]
        found = None
        for j, (x, h) in enumerate(zip(rf, level)):
            if abs(x) > h and (found is None or abs(x) / h > abs(rf[found]) / level[found]):
                found = j
        return found

    def update(self, t: float, r: Sequence[float], floor=None) -> Optional[Contact]:
        """Judge one state's ``r``; return a :class:`Contact` when one starts, else None.

        ``floor``: (n,) N·m (N) or None: for this state, neither level of a joint is
        below its floor (the stiction a joint pulled from rest may show:
        :meth:`~ne_dynamics_ros.control.sensing.contact.ContactSupervisor.observe`). The release
        keeps the levels as configured.
        """
        if not self.enabled:
            return None
        threshold, level = self.threshold, self.level
        if floor is not None:
            threshold = [max(h, f) for h, f in zip(threshold, floor)]
            level = [max(h, f) for h, f in zip(level, floor)]
        sustained = self._filtered(t, r, level) if self.sustained_time > 0.0 else None
        if self.contact is not None:
            under = all(abs(x) < RELEASE * h for x, h in zip(r, self.threshold)) and \
                all(abs(x) < RELEASE * h for x, h in zip(self._rf, self.level))
            self._under = self._under + 1 if under else 0
            if self._under >= self.debounce:
                self.contact, self._under = None, 0
            return None
        found = None
        for j, (x, h) in enumerate(zip(r, threshold)):
            self._over[j] = self._over[j] + 1 if abs(x) > h else 0
            if self._over[j] >= self.debounce and (
                    found is None or abs(x) / h > abs(r[found]) / threshold[found]):
                found = j
        if found is not None:
            self.contact = Contact(self.joints[found], float(r[found]), threshold[found], t)
        elif sustained is not None:
            self.contact = Contact(self.joints[sustained], float(self._rf[sustained]),
                                   level[sustained], t, True)
        else:
            return None
        self._over = [0] * len(self.joints)
        return self.contact

    def clear(self):
        """Forget the contact in force, the counts and the filter (a new run)."""
        self._over = [0] * len(self.joints)
        self._under = 0
        self._t = None
        self._rf = [0.0] * len(self.joints)
        self.contact = None


__all__ = ['AT_REST', 'Contact', 'ContactDetector', 'MAX_GAP', 'MomentumObserver', 'RELEASE',
           'STICTION_RANGE', 'SUSTAINED_LEVEL', 'sustained_levels', 'SUSTAINED_TIME']
