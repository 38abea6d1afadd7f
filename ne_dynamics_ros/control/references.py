"""The controller's references and goals: trajectories in, a goal's end out (no ROS).

:class:`References` is what :class:`~ne_dynamics_ros.control.controller.
ComputedTorqueController` delegates every trajectory and goal to: preparing a trajectory
(checked, interpolated, fitted to the effort limits: the expensive part, off the control
path), installing it on the run in force (or keeping it for the run's first state),
judging the active goal on each state as joint_trajectory_controller does, and ending
goals. Every goal's end, whatever ends it (reached, a tolerance, a newer goal or a topic
trajectory, a cancel, a contact, a state timeout, a deactivation, a mode change), goes to
one queue: the next :class:`~ne_dynamics_ros.control.run_state.Command` carries what is
queued, and :meth:`References.take_ends` hands it over between states.

The run (:class:`~ne_dynamics_ros.control.run_state.RunState`: its reference, pending
trajectory and goal) is the one in force in the controller's
:class:`~ne_dynamics_ros.control.run_state.Runs`; the public methods take its lock, the
others (``end_goal``, ``judge``, ``install_pending``) are called with it held. Units:
times in s on the controller's clock (ns where an argument says so), q in rad (m).
"""
from typing import List, Optional, Sequence, Union

import numpy as np

from ne_dynamics_ros.control.reference.effort_check import fit_to_limits, stretched_waypoints
from ne_dynamics_ros.control.reference.goals import (GoalEnd, GoalMonitor, GoalStatus, ResultCode,
                                                     SegmentTolerances)
from ne_dynamics_ros.control.run_state import PreparedTrajectory
from ne_dynamics_ros.control.reference.trajectory import (DesiredState, prepared_waypoints,
                                                          Trajectory, trajectory_from_points,
                                                          TrajectoryError, TrajectoryPoint,
                                                          WaypointArrays)

#: What an end says of a goal a newer goal replaced, or a topic trajectory.
REPLACED_BY_GOAL = 'Aborted: replaced by a newer goal'
REPLACED_BY_TOPIC = 'Aborted: a trajectory on ~/joint_trajectory replaced the goal\'s'


def restarted(trajectory: Trajectory, time: float, state_before: DesiredState) -> Trajectory:
    """``trajectory``'s waypoints started at ``time`` (s) from ``state_before`` instead.

    For a trajectory that starts when it arrives (``header.stamp`` 0, built with
    ``start_time == time_before``): joint_trajectory_controller starts such a one at the
    first cycle that samples it, from the reference then; one built at its receipt and
    made the reference later is moved there, its waypoints shifted by
    ``time - time_before``. The segments' coefficients are reused (no refit).
    """
    return Trajectory(trajectory.start_time + (time - trajectory.time_before),
                      trajectory.times, trajectory.positions, trajectory.velocities,
                      trajectory.accelerations, time, state_before,
                      trajectory.has_velocities, trajectory.has_accelerations,
                      trajectory.coefficients)


def stretch_note(c: float) -> str:
    """Return what a goal's success says of a trajectory played ``c`` times slower."""
    return '' if c == 1.0 else (f' (played {c:.4g}x slower than sent, to stay within the '
                                'effort limits)')


class References:
    """Trajectories and goals of one controller (module docstring).

    Args:
        model: the controller's :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        effort_limits: (n,) chain order, N·m (N).
        runs: the controller's :class:`~ne_dynamics_ros.control.run_state.Runs`.
        with_gravity, with_friction: the effort check counts g(q), the drive friction
            (False where the hardware compensates them).
    """

    def __init__(self, model, effort_limits, runs, with_gravity=True, with_friction=True):
        self.model = model
        self.runs = runs
        #: the law class and settings in force (:meth:`apply`)
        self.law_class = self.settings = None
        self.chain = list(model.joint_names)
        self.effort_limits = effort_limits
        self._with = (with_gravity, with_friction)
        #: trajectories refused since the controller was built
        self.rejected = 0
        #: goals ended and not yet handed over: GoalEnd items, oldest first
        self.ends: List[GoalEnd] = []

    def apply(self, law_class, settings):
        """Take the law class and the settings in force (the controller's, on each change)."""
        self.law_class, self.settings = law_class, settings

    # ---- a goal's end: one queue --------------------------------------------------------

    def end_goal(self, run, status: GoalStatus, text: str, code=None):
        """End the run's active goal, if any: queue its :class:`GoalEnd`."""
        if run.goal is None:
            return
        if code is None:
            code = (ResultCode.SUCCESSFUL if status in (GoalStatus.CANCELED,
                                                        GoalStatus.SUCCEEDED)
                    else ResultCode.INVALID_GOAL)
        self.ends.append(GoalEnd(run.goal.goal_id, status, int(code), text))
        run.goal = None

    def take_ends(self) -> List[GoalEnd]:
        """Return and forget the queued ends (oldest first)."""
        ends, self.ends = self.ends, []
        return ends

    def judge(self, run, t, position_error, velocity_error) -> bool:
        """Judge the run's goal at the state of instant ``t``; True: hold (it aborted).

        As joint_trajectory_controller: a goal reached ends SUCCEEDED; a tolerance broken
        ends ABORTED, and the position measured now is to be held.
        """
        verdict = run.goal.check(t, position_error, velocity_error)
        if verdict is None:
            return False
        code, text = verdict
        succeeded = code == ResultCode.SUCCESSFUL
        self.end_goal(run, GoalStatus.SUCCEEDED if succeeded else GoalStatus.ABORTED, text,
                      code)
        return not succeeded

    # ---- trajectories -------------------------------------------------------------------

    def fit(self, trajectory, settings):
        """Check a trajectory against the effort limits: ``(trajectory, stretch)``.

        :func:`~ne_dynamics_ros.control.reference.effort_check.fit_to_limits` with ``settings``;
        raises its :class:`~ne_dynamics_ros.control.reference.effort_check.InfeasibleTrajectory`.
        """
        return fit_to_limits(self.model, trajectory, self.chain, self.effort_limits,
                             settings, with_gravity=self._with[0],
                             with_friction=self._with[1])

    def prepare(self, run, joint_names, points, start, now, state_before, settings):
        """Check and interpolate a trajectory against ``run`` (no lock needed).

        ``start``: its start on the controller's clock (None: at ``now``);
        ``state_before``: the run's reference at ``now``, or None before the run's first
        state (then it is kept for that state, :meth:`deferred`). Returns a
        :class:`~ne_dynamics_ros.control.run_state.PreparedTrajectory`.

        Raises:
            TrajectoryError: any reason of :func:`~ne_dynamics_ros.control.reference.trajectory.
                trajectory_from_points`, or the effort limits (not counted here).
        """
        if state_before is None:
            return self.deferred(run, joint_names, points, start, now, settings)
        trajectory, stretch = self.fit(trajectory_from_points(
            joint_names, points, self.chain, start, now, state_before), settings)
        return PreparedTrajectory(trajectory, run, stretch=stretch,
                                  receipt=now if start is None else None)

    def deferred(self, run, joint_names, points, start, now, settings):
        """Prepare a trajectory that arrived before the run's first state (kept for it).

        Checked now (every fault but one of the start, which the first state decides;
        the effort limits from its first waypoint at rest); built from the first valid
        state when it comes (:meth:`install_pending`).
        """
        chain, n = self.chain, len(self.chain)
        waypoints = prepared_waypoints(joint_names, points, chain)
        first = waypoints.waypoints.positions[0]
        provisional, stretch = self.fit(trajectory_from_points(
            chain, waypoints, chain, start, now,
            DesiredState(first, np.zeros(n), np.zeros(n))), settings)
        if stretch != 1.0:
            waypoints = stretched_waypoints(waypoints, chain, stretch)
        return PreparedTrajectory(provisional, run, (waypoints, start, now), stretch)

    def install_pending(self, run, pending, now):
        """Build and install a trajectory kept for the run's first state, from its hold."""
        (waypoints, start, _), goal_id, tolerances, stretch = pending
        chain = self.chain
        try:
            trajectory = trajectory_from_points(chain, waypoints, chain, start, now,
                                                run.trajectory.sample(now))
        except TrajectoryError as err:
            self.rejected += 1
            if goal_id is not None:
                self.ends.append(GoalEnd(goal_id, GoalStatus.ABORTED,
                                         int(ResultCode.INVALID_GOAL), f'Aborted: {err}'))
            return
        run.trajectory = trajectory
        if goal_id is not None:
            run.goal = GoalMonitor(goal_id, tolerances, trajectory.end_time, chain,
                                   stretch_note(stretch))

    def install(self, run, prepared, goal_id: Optional[str], tolerances, now=None,
                moved=None):
        """Make ``prepared`` the reference of ``run`` (the run in force); return it.

        A trajectory kept for the run's first state is pending until then; one prepared
        before the first state that came meanwhile is built from it. One that starts when
        it arrives starts at ``now`` (s, the controller's clock; None: at its receipt)
        from the reference then, as joint_trajectory_controller starts it at the first
        cycle that samples it: preparing it took 8-36 ms on the node's reception thread
        through controller_manager on 2 cores (2026-12-06), and a 0.3 rad quintic
        started at its receipt began up to 36 ms in, 3.6e-5 rad ahead of the arm. Any goal
        active before ends ABORTED (JTC's preemption). ``moved``: ``(reference, trajectory)``,
        ``prepared``'s trajectory already moved to ``now`` from ``reference`` (built outside
        the lock), used when ``reference`` is still the run's. Returns the trajectory, or
        raises.

        Raises:
            TrajectoryError: the reference restarted from a measured position since it was
                prepared (counted).
        """
        replaced = REPLACED_BY_GOAL if goal_id is not None else REPLACED_BY_TOPIC
        if prepared.deferred is not None and prepared.run is run and run.trajectory is None:
            self.end_goal(run, GoalStatus.ABORTED, replaced)
            run.pending = (prepared.deferred, goal_id, tolerances, prepared.stretch)
            return prepared.trajectory           # provisional: built on the first state
        if prepared.deferred is not None and prepared.run.trajectory is None \
                and run.active and not run.timed_out and run.trajectory is not None \
                and prepared.run.pending is None:
            # the first state came meanwhile: start from the position it holds
            waypoints, start, receipt = prepared.deferred
            try:
                prepared = PreparedTrajectory(trajectory_from_points(
                    self.chain, waypoints, self.chain, start, receipt,
                    run.trajectory.sample(receipt)), run, stretch=prepared.stretch)
            except TrajectoryError:
                self.rejected += 1
                raise
        if prepared.run is not run or run.trajectory is None:
            self.rejected += 1
            raise TrajectoryError(
                'the reference restarted from the measured position while the '
                'trajectory was prepared (state timeout or resume): send it again')
        if now is not None and prepared.receipt is not None and now > prepared.receipt:
            if moved is not None and moved[0] is run.trajectory:
                trajectory = moved[1]
            else:
                trajectory = restarted(prepared.trajectory, now, run.trajectory.sample(now))
            prepared = prepared._replace(trajectory=trajectory, receipt=None)
        self.end_goal(run, GoalStatus.ABORTED, replaced)
        run.trajectory = prepared.trajectory
        if goal_id is not None:
            run.goal = GoalMonitor(goal_id, tolerances, prepared.trajectory.end_time,
                                   self.chain, stretch_note(prepared.stretch))
        run.reset_integral()
        return prepared.trajectory

    # ---- the public side (the controller's methods of the same names) ----------------------

    @property
    def goal_id(self) -> Optional[str]:
        """The id of the action goal the reference follows, or None."""
        goal = self.runs.current.goal
        return None if goal is None else goal.goal_id

    def take_goal_ends(self) -> List[GoalEnd]:
        """Return and forget the goals' ends, oldest first: the one way they leave (any thread).

        A goal ends when reached, when a tolerance breaks, on a contact or a state
        timeout, on a cancel; the node's goal link takes the ends when woken (after a
        command, when :attr:`goal_ends_waiting`) and answers the action with them.
        """
        with self.runs.lock:
            return self.take_ends()

    def cancel_goal(self, goal_id: str) -> bool:
        """Cancel the action goal ``goal_id`` if it is the active one: hold, as JTC.

        The next state measured is held (the reference restarts from it). Returns True if
        it was active (its end, CANCELED, is queued).
        """
        with self.runs.lock:
            run = self.runs.current
            if run.goal is None or run.goal.goal_id != goal_id:
                return False
            self.end_goal(run, GoalStatus.CANCELED,
                          'Goal canceled by the client: holding the position measured')
            self.runs.restart('no joint_states since the goal was canceled')
            return True

    def reference_at(self, now_ns: int) -> Optional[DesiredState]:
        """Return the reference ``(q_d, qd_d, qdd_d)`` at ROS time ``now_ns`` (chain order).

        None while inactive, timed out, or before the first state (nothing is followed).
        """
        with self.runs.lock:
            trajectory, epoch = self.runs.current.trajectory, self.runs.epoch_ns
            if trajectory is None or epoch is None:
                return None
            return trajectory.sample((now_ns - epoch) * 1e-9)

    def _refusal(self, run) -> Optional[str]:
        """Why the run takes no trajectory now, or None."""
        if not run.active:
            return 'the controller is inactive: a trajectory is taken once it is activated'
        if run.timed_out:
            return f'{run.waiting}: the reference starts from the measured position'
        if not self.law_class.follows_trajectory:
            return self.law_class.refusal
        return None

    def prepare_trajectory(self, joint_names: Sequence[str],
                           points: Union[Sequence[TrajectoryPoint], WaypointArrays],
                           stamp_ns: int, now_ns: int) -> PreparedTrajectory:
        """Check and interpolate a new trajectory without replacing the reference yet.

        The expensive part of accepting a trajectory (linear in its size), off the lock
        but for reading the reference it starts from. Arguments as
        :meth:`set_trajectory`; pass the result to :meth:`install_trajectory`.

        Raises:
            TrajectoryError: as :meth:`set_trajectory` (counted in :attr:`rejected`).
        """
        runs = self.runs
        try:
            with runs.lock:
                now, run = runs.seconds(now_ns), runs.current
                refusal = self._refusal(run)
                if refusal is not None:
                    raise TrajectoryError(refusal)
                start = None if stamp_ns == 0 else (stamp_ns - runs.epoch_ns) * 1e-9
                state_before = None if run.trajectory is None else run.trajectory.sample(now)
                settings = self.settings
            return self.prepare(run, joint_names, points, start, now, state_before, settings)
        except TrajectoryError:
            with runs.lock:
                self.rejected += 1
            raise

    def install_trajectory(self, prepared: PreparedTrajectory, goal_id: Optional[str] = None,
                           tolerances: Optional[SegmentTolerances] = None,
                           now_ns: Optional[int] = None) -> Trajectory:
        """Make a trajectory from :meth:`prepare_trajectory` the reference.

        ``goal_id`` and ``tolerances`` (chain order): the trajectory of an action goal,
        judged on every state from now on (:class:`~ne_dynamics_ros.control.reference.goals.
        GoalMonitor`). Any goal active before ends ABORTED (JTC's preemption). A new
        reference ends a law that is no mode's (a contact's ``comply``). ``now_ns``: the
        controller's clock now, ns: a trajectory with ``header.stamp`` 0 starts then, from
        the reference then (joint_trajectory_controller: at its first sample), not at its
        receipt; None: at its receipt.

        Raises:
            TrajectoryError: the reference restarted from a measured position since it
                was prepared (a state timeout, a resume, leaving a mode that holds on
                exit): its start would no longer be where the arm is. The reference stays.
        """
        now = None if now_ns is None else self.runs.seconds(now_ns)
        moved = None
        if now is not None and prepared.receipt is not None and now > prepared.receipt \
                and prepared.deferred is None:
            # The trajectory moved to start now, built before the lock is taken (O(points):
            # 3.5 ms for 100 000 points, which the control path would wait for); installed
            # only if the reference it starts from is still the run's. Sampling it beside
            # the control thread is safe: its only state, the last segment's rows, is one
            # tuple replaced whole.
            reference = prepared.run.trajectory
            if reference is not None:
                moved = (reference, restarted(prepared.trajectory, now, reference.sample(now)))
        with self.runs.lock:
            run = self.runs.current
            trajectory = self.install(run, prepared, goal_id, tolerances, now, moved)
            if run.trajectory is trajectory and run.law is not None and run.law.name is None:
                run.law = None
            return trajectory

    def reject_trajectory(self, reason: str) -> TrajectoryError:
        """Count a trajectory refused before :meth:`prepare_trajectory` could see it.

        For a reader that found the message's points inconsistent (counted in
        :attr:`rejected`). Returns the :class:`TrajectoryError` of ``reason``.
        """
        with self.runs.lock:
            self.rejected += 1
        return TrajectoryError(reason)

    def set_trajectory(self, joint_names: Sequence[str],
                       points: Union[Sequence[TrajectoryPoint], WaypointArrays],
                       stamp_ns: int, now_ns: int) -> Trajectory:
        """Replace the reference with a new trajectory, or keep the old one and raise.

        :meth:`prepare_trajectory` then :meth:`install_trajectory`.

        Args:
            joint_names: the trajectory's joints, any order; every controlled joint once.
            points: waypoints (``time_from_start`` in s, values in ``joint_names`` order):
                :class:`~ne_dynamics_ros.control.reference.trajectory.TrajectoryPoint` items or one
                :class:`~ne_dynamics_ros.control.reference.trajectory.WaypointArrays`.
            stamp_ns: ``header.stamp`` in ns on the controller's clock; 0 = start now.
            now_ns: the controller's clock now, ns.

        Returns:
            The new :class:`~ne_dynamics_ros.control.reference.trajectory.Trajectory` (chain
            order), sampled from now on; it starts from the reference in force now. Before the
            first valid state of a run it is checked at once and kept: it becomes the
            reference on that state, starting from it.

        Raises:
            TrajectoryError: inactive, a state timeout, a law that follows no trajectory,
                or any reason of :func:`~ne_dynamics_ros.control.reference.trajectory.
                trajectory_from_points`. The previous trajectory stays in force.
        """
        return self.install_trajectory(self.prepare_trajectory(joint_names, points,
                                                               stamp_ns, now_ns), now_ns=now_ns)


class FollowsReferences:
    """The controller's methods for trajectories and goals: its :class:`References`'.

    A part of :class:`~ne_dynamics_ros.control.controller.ComputedTorqueController`; each
    method is the same method of the host's ``references``.
    """

    @property
    def goal_id(self) -> Optional[str]:
        """The id of the action goal the reference follows, or None."""
        return self.data.references.goal_id

    def take_goal_ends(self) -> list:
        """:meth:`take_goal_ends <References.take_goal_ends>`."""
        return self.data.references.take_goal_ends()

    @property
    def goal_ends_waiting(self) -> bool:
        """Goals ended and not taken yet (:meth:`take_goal_ends`): a read, no lock."""
        return bool(self.data.references.ends)

    def cancel_goal(self, goal_id: str) -> bool:
        """:meth:`cancel_goal <References.cancel_goal>`."""
        return self.data.references.cancel_goal(goal_id)

    def reference_at(self, now_ns: int) -> Optional[DesiredState]:
        """:meth:`reference_at <References.reference_at>`."""
        return self.data.references.reference_at(now_ns)

    def prepare_trajectory(self, joint_names, points, stamp_ns: int,
                           now_ns: int) -> PreparedTrajectory:
        """:meth:`prepare_trajectory <References.prepare_trajectory>`."""
        return self.data.references.prepare_trajectory(joint_names, points, stamp_ns, now_ns)

    def install_trajectory(self, prepared: PreparedTrajectory, goal_id: Optional[str] = None,
                           tolerances: Optional[SegmentTolerances] = None,
                           now_ns: Optional[int] = None) -> Trajectory:
        """:meth:`install_trajectory <References.install_trajectory>`."""
        return self.data.references.install_trajectory(prepared, goal_id, tolerances, now_ns)

    def reject_trajectory(self, reason: str) -> TrajectoryError:
        """:meth:`reject_trajectory <References.reject_trajectory>`."""
        return self.data.references.reject_trajectory(reason)

    def set_trajectory(self, joint_names, points, stamp_ns: int, now_ns: int) -> Trajectory:
        """:meth:`set_trajectory <References.set_trajectory>`."""
        return self.data.references.set_trajectory(joint_names, points, stamp_ns, now_ns)


__all__ = ['FollowsReferences', 'References', 'REPLACED_BY_GOAL', 'REPLACED_BY_TOPIC',
           'stretch_note']
