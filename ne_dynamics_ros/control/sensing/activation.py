"""What one activation of the controller learns from the measured states.

Pure module (no ROS). A :class:`Sensing` holds what describes the arm rather than the
reference: the velocity estimator's history, the momentum observer's state, the contact
detector's counts and the contact in force, and the effort that acts until the next
state. The run state (:class:`~ne_dynamics_ros.control.run_state.RunState`) owns one. A
restart within an activation (a new reference, the hold after a contact, a canceled
goal, a resume after a state timeout) hands the same one on: the arm did not change, and
an observer started afresh there would forget the contact that caused the hold.
Configure, activate and deactivate start a new one (:meth:`Sensing.new`).
"""
from dataclasses import dataclass
from typing import Optional, Sequence

from ne_dynamics_ros.control.sensing.observer import ContactDetector, MomentumObserver
from ne_dynamics_ros.control.sensing.velocity_estimator import VelocityEstimator


@dataclass(eq=False)
class Sensing:
    """The measured side of one activation (chain order throughout).

    Attributes:
        estimator: the :class:`~ne_dynamics_ros.control.sensing.velocity_estimator.
            VelocityEstimator` of states without velocities (its history).
        observer: the :class:`~ne_dynamics_ros.control.sensing.observer.MomentumObserver`
            (De Luca & Mattone 2005): its r and the previous state.
        detector: the :class:`~ne_dynamics_ros.control.sensing.observer.ContactDetector`: its
            debounce counts and the contact in force.
        applied: (n,) list, the last command (clamped), the effort acting until the
            next state, N·m (N); None: no command known to have acted (the observer
            restarts from the next state).
        estimate: the adaptive law's estimate at the previous state (the observer's
            model then), or None.
        skipped: the observer was skipped at the last state (nobody read r); it starts
            afresh when wanted again.
        coulomb: (n,) the Coulomb friction the observer's model held at the previous
            state (the learned one: :class:`~ne_dynamics_ros.control.sensing.friction_estimate.
            CoulombEstimate`), N·m (N), or None.
    """

    estimator: VelocityEstimator
    observer: MomentumObserver
    detector: ContactDetector
    applied: Optional[list] = None
    estimate: Optional[list] = None
    skipped: bool = False
    coulomb: Optional[list] = None

    @classmethod
    def new(cls, joint_names: Sequence[str], settings, band=None) -> 'Sensing':
        """Return a fresh one for ``joint_names`` (chain order) under ``settings``.

        ``settings``: the controller's settings (``velocity_filter_cutoff``,
        ``contact.observer_gain``, ``contact.threshold``, ``contact.debounce``,
        ``contact.sustained_time``, ``contact.sustained_level``); ``band``: (n,) the
        friction band of the detector's second level (the model's Coulomb friction,
        N·m or N), or None.
        """
        n = len(joint_names)
        threshold = settings.contact_threshold
        return cls(VelocityEstimator(n, settings.velocity_filter_cutoff),
                   MomentumObserver(n, settings.contact_observer_gain),
                   ContactDetector(joint_names, [] if threshold is None
                                   else threshold.tolist(), settings.contact_debounce, band,
                                   settings.contact_sustained_time,
                                   settings.contact_sustained_level))

    def configure(self, settings):
        """Take new run-time settings.

        The observer's gain, the detector's thresholds and debounce (which clears its
        counts; a contact in force stays, unless detection is now off), and a new
        estimator if
        ``velocity_filter_cutoff`` changed.
        """
        self.observer.set_gain(settings.contact_observer_gain)
        threshold = settings.contact_threshold
        self.detector.configure([] if threshold is None else threshold.tolist(),
                                settings.contact_debounce, settings.contact_sustained_time,
                                settings.contact_sustained_level)
        if self.estimator.cutoff_hz != settings.velocity_filter_cutoff:
            self.estimator = VelocityEstimator(self.estimator.n,
                                               settings.velocity_filter_cutoff)

    def restart_observer(self):
        """Forget the observer's past: it starts again from r = 0 at the next state."""
        self.observer.reset()
        self.applied = None
        self.estimate = None
        self.coulomb = None


__all__ = ['Sensing']
