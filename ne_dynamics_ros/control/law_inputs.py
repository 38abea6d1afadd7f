"""What the node gives the laws between states, and what they hold (no ROS).

:class:`LawInputs` is a part of :class:`~ne_dynamics_ros.control.controller.
ComputedTorqueController`: the inputs a law takes besides the joint states (a target
pose, a declared load), what the laws hold that the node reads off the control path (the
learned load, the contact in force, the caveats of the settings), and the observer's
switch. It works on the controller's public parts only: ``runs`` (the run in force and
its lock), ``context`` (the :class:`~ne_dynamics_ros.control.laws.base.LawContext` in
force), ``load`` (the :class:`~ne_dynamics_ros.control.laws.adaptive.LoadEstimate`),
``contact_supervisor`` (the :class:`~ne_dynamics_ros.control.sensing.contact.ContactSupervisor`),
``model`` and ``settings``. What a state's command says is in the
:class:`~ne_dynamics_ros.control.run_state.Command` itself.
"""
from ne_dynamics_ros.control.laws.base import JointGains
from ne_dynamics_ros.control.laws.cartesian import target_pose, TargetError
from ne_dynamics_ros.control.laws.registry import LAW_CLASSES


def modes_that(what) -> str:
    """Name the modes whose law has the class attribute ``what`` set (for messages)."""
    return ', '.join(law.name for law in LAW_CLASSES if getattr(law, what))


class LawInputs:
    """The laws' inputs and holdings, a part of the controller (module docstring)."""

    @property
    def gains(self) -> JointGains:
        """The :class:`~.laws.base.JointGains` in force (gains, gravity, limits, flags)."""
        return self.context.gains

    @property
    def delay_checked_gains(self):
        """``(kp, kd)`` lists where they set the error dynamics (1/s², 1/s), else None.

        What the delay rule of :mod:`~ne_dynamics_ros.control.laws.gains` is about
        (:attr:`~.laws.base.Law.acceleration_gains`).
        """
        gains = self.context.gains
        return gains.gain_values[:2] if self.context.law_class.acceleration_gains else None

    @property
    def law(self):
        """The run's law object (:class:`~.laws.base.Law`), or None before its first state."""
        return self.runs.current.law

    @property
    def payload_estimate(self):
        """The learned load in ``adaptation_link``'s frame, or None.

        ``(mass kg, centre of mass (3,) m, inertia (6,) kg·m² about the centre of mass:
        ixx, ixy, ixz, iyy, iyz, izz)``; None before an adaptive law was first set, or
        with ``adaptation: base``.
        """
        with self.runs.lock:
            return self.load.payload_estimate

    def declare_payload(self, mass: float, com=(0.0, 0.0, 0.0),
                        inertia=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)):
        """Take a load declared by the caller (a gripper closed on it, or let it go).

        In a law that adapts the estimate becomes it at once (adaptation goes on from
        it); in the other laws that carry a load their model carries it (e.g. Cartesian
        impedance: the stiffness stays true). ``mass`` kg, ``com`` (3,) m in
        ``adaptation_link``'s frame, ``inertia`` (6,) ixx, ixy, ixz, iyy, iyz, izz about
        the centre of mass, kg·m².

        Raises:
            ControlParameterError: as :meth:`~.laws.adaptive.LoadEstimate.declare`.
        """
        with self.runs.lock:
            self.load.declare(self.context, mass, com, inertia, modes_that('carries_load'))
            self.contact_supervisor.declared(self.runs.current.sensing, self.load.law)

    @property
    def contact(self):
        """The contact in force (a :class:`~.observer.Contact`), or None."""
        return self.runs.current.sensing.detector.contact

    @property
    def external_effort_wanted(self) -> bool:
        """Compute the observer's r on every state while contact detection is off too.

        True (the default): each :class:`~ne_dynamics_ros.control.run_state.Command`
        carries ``external_effort_values``. False: while ``contact.threshold`` is unset
        the observer is skipped (None there), and restarts from the state it is wanted
        again on. The node sets it from ``~/external_effort``'s subscribers.
        """
        return self.contact_supervisor.reading

    @external_effort_wanted.setter
    def external_effort_wanted(self, wanted: bool):
        self.contact_supervisor.reading = bool(wanted)

    @property
    def external_wrench_wanted(self) -> bool:
        """Map the observer's r to the tip's wrench on every state (default False).

        True: each :class:`~ne_dynamics_ros.control.run_state.Command` whose observer ran
        carries ``external_wrench`` (:mod:`~ne_dynamics_ros.control.sensing.wrench`); the node sets
        it from ``~/external_wrench``'s subscribers, with :attr:`external_effort_wanted`.
        """
        return self.contact_supervisor.wrench_wanted

    @external_wrench_wanted.setter
    def external_wrench_wanted(self, wanted: bool):
        self.contact_supervisor.wrench_wanted = bool(wanted)

    @property
    def contacts(self) -> int:
        """How many contacts were detected since the controller was built."""
        return self.contact_supervisor.contacts

    @property
    def adaptive_caveats(self):
        """Warnings (strings) about the law's settings on this arm (e.g. adaptive), maybe [].

        :meth:`~ne_dynamics_ros.control.laws.base.Law.caveats` of the mode's law.
        """
        with self.runs.lock:
            return self.context.law_class.caveats(self.context)

    # ---- a target pose (laws that take one) ------------------------------------------------

    def set_target_pose(self, position, orientation, frame_id: str = '') -> None:
        """Take a new target of the tip (a law that takes one): approached, not jumped.

        Args:
            position: (3,) m; orientation: quaternion ``(x, y, z, w)``; ``frame_id``:
                empty or the base link's name (:func:`~.laws.cartesian.target_pose`).

        Raises:
            ne_dynamics_ros.control.laws.cartesian.TargetError: a bad target, or the
                mode's law takes none, or the controller is inactive (the last good
                target stays).
        """
        pose = target_pose(position, orientation, frame_id, self.model.base_link)
        with self.runs.lock:
            run, law_class = self.runs.current, self.context.law_class
            if not law_class.takes_target or not run.active or run.timed_out:
                raise TargetError(f'a target pose is followed in mode '
                                  f'{modes_that("takes_target")} while active (mode '
                                  f'{self.settings.mode.value}'
                                  f'{", inactive" if not run.active else ""})')
            if type(run.law) is not law_class:
                run.law = self.context.law_class(self.context)
            run.law.set_goal(pose)

    @property
    def cartesian_state(self):
        """The run's law if it follows a target pose, else None.

        E.g. the :class:`~.laws.cartesian.CartesianImpedanceLaw`: its ``pose``,
        ``target``, ``goal``, ``manipulability``, ``near_singularity``.
        """
        law = self.runs.current.law
        return law if law is not None and law.takes_target else None


__all__ = ['LawInputs', 'modes_that']
