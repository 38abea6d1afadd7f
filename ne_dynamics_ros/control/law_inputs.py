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
from ne_dynamics_ros.control.laws.base import JointGains, LawInputError
from ne_dynamics_ros.control.reference.goals import GoalStatus
from ne_dynamics_ros.control.laws.registry import INPUTS, LAW_CLASSES


#: Why a goal ends while the commands are not applied.
UNAPPLIED = ('Aborted: the commands are not applied (the effort controller is not active); '
             'holding the position measured')


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
        return self.data.runs.current.law

    @property
    def payload_estimate(self):
        """The learned load in ``adaptation_link``'s frame, or None.

        ``(mass kg, centre of mass (3,) m, inertia (6,) kg·m² about the centre of mass:
        ixx, ixy, ixz, iyy, iyz, izz)``; None before an adaptive law was first set, or
        with ``adaptation: base``.
        """
        with self.data.runs.lock:
            return self.data.load.payload_estimate

    @property
    def contact(self):
        """The contact in force (a :class:`~.observer.Contact`), or None."""
        return self.data.runs.current.sensing.detector.contact

    @property
    def external_effort_wanted(self) -> bool:
        """Compute the observer's r on every state while contact detection is off too.

        True (the default): each :class:`~ne_dynamics_ros.control.run_state.Command`
        carries ``external_effort_values``. False: while ``contact.threshold`` is unset
        the observer is skipped (None there), and restarts from the state it is wanted
        again on. The node gives it with each state (:meth:`read_externals`).
        """
        return self.data.contact_supervisor.reading

    @external_effort_wanted.setter
    def external_effort_wanted(self, wanted: bool):
        self.data.contact_supervisor.reading = bool(wanted)

    @property
    def external_wrench_wanted(self) -> bool:
        """Map the observer's r to the tip's wrench on every state (default False).

        True: each :class:`~ne_dynamics_ros.control.run_state.Command` whose observer ran
        carries ``external_wrench`` (:mod:`~ne_dynamics_ros.control.sensing.wrench`); the node
        gives it with each state (:meth:`read_externals`).
        """
        return self.data.contact_supervisor.wrench_wanted

    @external_wrench_wanted.setter
    def external_wrench_wanted(self, wanted: bool):
        self.data.contact_supervisor.wrench_wanted = bool(wanted)

    def read_externals(self, effort: bool, wrench: bool):
        """Say which of the observer's outputs are read: an input of each update.

        ``effort``: the external effort (:attr:`external_effort_wanted`), ``wrench``: the
        tip's wrench made from it (:attr:`external_wrench_wanted`, which needs the
        effort: True also runs the observer). The node gives them with each state, from
        ``~/external_effort``'s and ``~/external_wrench``'s subscribers.
        """
        supervisor = self.data.contact_supervisor
        supervisor.reading, supervisor.wrench_wanted = bool(effort or wrench), bool(wrench)

    @property
    def contacts(self) -> int:
        """How many contacts were detected since the controller was built."""
        return self.data.contact_supervisor.contacts

    @property
    def adaptive_caveats(self):
        """Warnings (strings) about the law's settings on this arm (e.g. adaptive), maybe [].

        :meth:`~ne_dynamics_ros.control.laws.base.Law.caveats` of the mode's law.
        """
        with self.data.runs.lock:
            return self.context.law_class.caveats(self.context)

    # ---- whether the commands reach the arm -----------------------------------------------

    def held_unapplied(self, out, now_ns):
        """Restart the run holding the position ``out`` (a Command) measured; return ``out``.

        :meth:`~.controller.ComputedTorqueController.update`'s step for a state answered
        while the hardware does not apply the commands (its input ``commands_applied``
        False: ros2_control's effort controller switched away, a hold controller in
        charge): the reference follows the arm, and the command the effort controller
        finds when it returns is a hold. ``NoCommand`` passes through.
        """
        if out.__class__.__name__ != 'Command':
            return out
        q = [d - e for d, e in zip(out.desired_values[0], out.position_error_values)]
        joints = self.joints
        with self.data.runs.lock:                  # (re-entrant) a goal in force ends, with why
            self.data.references.end_goal(self.data.runs.current, GoalStatus.ABORTED, UNAPPLIED)
            self.activate(q=[q[joints.index(j)] for j in self.model.joint_names],
                          now_ns=now_ns)
        return out

    # ---- the laws' own input topics ----------------------------------------------------

    def modes_that(self, what) -> str:
        """Name the modes whose law has the class attribute ``what`` set (for messages)."""
        return modes_that(what)

    def take_input(self, key: str, value) -> None:
        """Give a law the value of its input topic ``key`` (:attr:`~.laws.base.Law.topics`).

        An ``every_mode`` input goes to its law's :meth:`~.laws.base.Law.take_shared`
        whatever the mode; any other to the run's law (:meth:`~.laws.base.Law.take`) while
        its mode is in force and the controller active.

        Args:
            key: the topic's key; ``value``: the value of its kind (e.g. a
                :class:`~.laws.base.PoseInput`), as the node converted the message.

        Raises:
            LawInputError: no law takes ``key``, its mode is not in force or the
                controller is inactive, or the law refused the value (the message says
                why; nothing changed).
        """
        owner = INPUTS.get(key)
        if owner is None:
            raise LawInputError(f'no law takes an input {key!r}')
        law_classes, topic = owner
        with self.data.runs.lock:
            if topic.every_mode:
                law_classes[0].take_shared(self, key, value)
                return
            run, law_class = self.data.runs.current, self.context.law_class
            if law_class not in law_classes or not run.active or run.timed_out:
                raise LawInputError(
                    f'{topic.name} is taken in mode {", ".join(c.name for c in law_classes)} '
                    f'while active (mode {self.settings.mode.value}'
                    f'{", inactive" if not run.active else ""})')
            if type(run.law) is not law_class:
                run.law = law_class(self.context)
            run.law.take(key, value)


__all__ = ['LawInputs', 'modes_that', 'UNAPPLIED']
