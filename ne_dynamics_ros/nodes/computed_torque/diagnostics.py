"""``/diagnostics`` of the node, as ``diagnostic_updater`` publishes them, once a second.

One ``diagnostic_msgs/DiagnosticStatus`` named ``"<node name>: computed torque
controller"`` in a ``DiagnosticArray``, for ``rqt_robot_monitor`` and the aggregator.
Values (``KeyValue``), over the last period unless said otherwise: the lifecycle state;
the joint-state rate (Hz); the control latency, from taking a state's bytes to having
published its command, p50 and p99 (ms); the age of the states when taken (their stamps
against the node's clock, p50 and p99, ms) and the loop delay that makes (age + latency +
one state period for the command to be applied at the next cycle, ms) beside the delay
the gains in force tolerate (:func:`~ne_dynamics_ros.control.laws.gains.tolerated_delay`, 45°
of phase margin), warned about when it is exceeded; who drives the arm beside
ros2_control, and whether anybody takes the commands; states dropped by reason and
trajectories rejected or dropped unread (since start, and in the period); state timeouts
(since start); the joints whose command reached their effort limit; the largest
``|q_d - q|`` (rad); the dynamics backend and where the robot description came from.

**Events at once** (as ``diagnostic_updater.Updater.force_update``): a contact and its
end, state loss and the return of states, a goal aborted on a violation and a joint
reaching its effort limit wake the watchdog thread, which publishes within a control
period of the event (not at the next 1 Hz tick), at most one such message per
:data:`EVENT_INTERVAL`; the events are named in the message and under ``events``.

Levels: ERROR while the state timeout holds (or the node failed to configure); WARN for
drops, rejections or contacts in the period, a contact in force ("contact on <joint>:
external effort ..."), a joint at its effort limit, or a joint-state rate under two
states per ``state_timeout``; OK otherwise.

:class:`ControlStatistics` is fed from the control path (a few list operations per state)
and read by the watchdog thread, which publishes (off the control path).
"""
import threading

import numpy as np

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

OK, WARN, ERROR = (DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR)
#: Seconds between two /diagnostics messages (diagnostic_updater's default period).
PERIOD = 1.0
#: Least seconds between two /diagnostics messages forced by events: a chattering event
#: (a contact that comes and goes) cannot publish more than 50 a second.
EVENT_INTERVAL = 0.02


class ControlStatistics:
    """What happened on the control path since the last :meth:`take` (thread-safe)."""

    def __init__(self, n_joints=0):
        self._lock = threading.Lock()
        self.timeouts = 0
        self._reset(n_joints)

    def _reset(self, n_joints):
        self.states = 0
        self.latencies_ns = []
        self.ages_ns = []
        self.saturated = [False] * n_joints
        self.max_error = 0.0
        self._at_limit = [False] * n_joints

    def commanded(self, latency_ns, at_limit, position_error, age_ns=None):
        """Record one answered state: its latency, age, saturation and tracking error.

        ``at_limit``: n bools, the command at the joint's effort limit (the command's
        :attr:`~ne_dynamics_ros.control.run_state.Command.at_limit`); ``age_ns``: the
        node's clock less the state's stamp when it was taken (None: no stamp).

        Returns the indices of the joints whose command reached the effort limit with this
        state and was under it with the previous one (an event for ``/diagnostics``).
        """
        with self._lock:
            self.states += 1
            self.latencies_ns.append(latency_ns)
            if age_ns is not None:
                self.ages_ns.append(age_ns)
            if len(self.saturated) != len(at_limit):
                self.saturated = [False] * len(at_limit)
                self._at_limit = [False] * len(at_limit)
            reached = []
            for j, at in enumerate(at_limit):
                if at:
                    self.saturated[j] = True
                    if not self._at_limit[j]:
                        reached.append(j)
                self._at_limit[j] = at
            error = max(map(abs, position_error)) if position_error else 0.0
            if error > self.max_error:
                self.max_error = error
            return reached

    def seen(self):
        """Record a state that got no command (inactive, not ours, dropped)."""
        with self._lock:
            self.states += 1

    def timed_out(self):
        """Record the start of a state timeout."""
        with self._lock:
            self.timeouts += 1

    def take(self, n_joints):
        """Return (states, latencies ns, saturated flags, max error, ages ns); start anew."""
        with self._lock:
            out = (self.states, self.latencies_ns, self.saturated, self.max_error,
                   self.ages_ns)
            at_limit = self._at_limit
            self._reset(n_joints)
            if len(at_limit) == n_joints:
                self._at_limit = at_limit      # a joint still at its limit is no new event
            return out


class Events:
    """The events ``/diagnostics`` must say at once, and the rate limit of saying them.

    Fed by the control path (:meth:`note`, :meth:`add`; a list append under a lock),
    read by the watchdog thread (:meth:`due`, :meth:`take`).
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._texts = []
        self._published = 0.0          # monotonic s of the last message they forced
        self._contact_shown = False    # a contact was in force at the last state

    def add(self, text):
        """Queue one event's text."""
        with self._lock:
            self._texts.append(text)

    def note(self, joints, out, reached, logger):
        """Queue (and log) what the answered state ``out`` changed; return True if any.

        ``reached``: the joints that just reached their effort limit
        (:meth:`ControlStatistics.commanded`); ``joints``: the command order (names).
        Events: states again after a timeout, a contact and its end, an effort limit
        reached (a goal aborted: :meth:`goal_ended`, from the goal link).
        """
        in_force = out.contact_in_force
        if not (reached or out.resumed or out.contact is not None
                or in_force != self._contact_shown):
            return False
        if out.resumed:
            logger.info('valid joint_states again: resuming, holding the current position '
                        '(the previous trajectory is discarded)')
            self.add('joint_states again: resumed')
        if out.contact is not None:
            logger.warning(f'{out.contact.text()}: {out.contact_reaction}')
            self.add(out.contact.text())
        if self._contact_shown and not in_force:
            self.add('contact over')
        self._contact_shown = in_force
        if reached:
            self.add('effort limit reached: ' + ', '.join(joints[j] for j in reached))
        return True

    def goal_ended(self, end):
        """Queue a goal's end if it was aborted (the goal link's ``on_end``, its thread)."""
        if end.status.name == 'ABORTED':
            self.add(f'goal {end.goal_id} aborted: {end.error_string}')

    def due(self, now):
        """Return True (and start the interval) if events wait and may be published now."""
        with self._lock:
            if self._texts and now - self._published >= EVENT_INTERVAL:
                self._published = now
                return True
            return False

    def take(self):
        """Return the queued texts and forget them."""
        with self._lock:
            texts, self._texts = self._texts, []
            return texts


def counts(node):
    """Return {what: count since start} of what ``node`` dropped, rejected, detected."""
    c = node.controller
    return {'joint_states dropped': c.data.dropped_joint_states if c else 0,
            'trajectories rejected': c.rejected_trajectories if c else 0,
            'trajectory messages dropped unread': node.dropped_trajectories,
            'contacts detected': c.contacts if c else 0}


def drop_summary(node):
    """Return one line: what ``node`` refused since it started (logged on shutdown)."""
    c = node.controller
    return (f'{c.data.dropped_joint_states if c else 0} joint_states messages dropped, '
            f'{c.rejected_trajectories if c else 0} trajectories rejected, '
            f'{node.dropped_trajectories} trajectory messages dropped unread, '
            f'{node.accepted_trajectories} trajectories accepted'
            + ('' if node.goals is None else
               f', {node.goals.accepted_goals} goals accepted, '
               f'{node.goals.rejected_goals} goals rejected'))


def loop_delay(latencies_ns, ages_ns, rate):
    """Return (age p50, age p99, loop delay) in s, or None without stamped states.

    The loop delay: the state's age when taken plus the node's latency (p50 each) plus
    one state period (a command is applied at the hardware's next cycle at best).
    """
    if not ages_ns or not latencies_ns or rate <= 0:
        return None
    age50, age99 = np.percentile(np.asarray(ages_ns, dtype=float) * 1e-9, [50, 99])
    latency = float(np.percentile(np.asarray(latencies_ns, dtype=float) * 1e-9, 50))
    return age50, age99, age50 + latency + 1.0 / rate


def _timing(latencies, ages, rate, gains):
    """Return (the latency and loop-delay rows, the delay's problem or '') of a period.

    ``latencies``: ns from a state's receipt to its command; ``ages``: ns from a state's
    stamp to its receipt; ``rate``: states per second; ``gains``: (kp, kd) or None.
    """
    values, problem = [], ''
    if latencies:
        p50, p99 = np.percentile(np.asarray(latencies, dtype=float) * 1e-6, [50, 99])
        values += [KeyValue(key='control latency p50 [ms]', value=f'{p50:.3f}'),
                   KeyValue(key='control latency p99 [ms]', value=f'{p99:.3f}')]
    delay = loop_delay(latencies, ages, rate)
    if delay is None:
        return values, problem
    age50, age99, total = delay
    values += [KeyValue(key='state age p50 [ms]', value=f'{age50 * 1e3:.3f}'),
               KeyValue(key='state age p99 [ms]', value=f'{age99 * 1e3:.3f}'),
               KeyValue(key='loop delay [ms]', value=f'{total * 1e3:.3f}')]
    if gains is not None:
        from ne_dynamics_ros.control.laws.gains import tolerated_delay
        tolerated = float(np.min(tolerated_delay(gains[0], gains[1], rate)))
        values.append(KeyValue(key='loop delay the gains tolerate [ms]',
                               value=f'{tolerated * 1e3:.3f}'))
        if total > tolerated:
            problem = (f'loop delay {total * 1e3:.1f} ms over the {tolerated * 1e3:.1f}'
                       ' ms the gains tolerate (45 deg phase margin): lower kp, kd '
                       '(ne-dynamics gains --delay)')
    return values, problem


def status(name, hardware_id, facts, statistics, elapsed, previous, current, state_timeout,
           joints, timed_out, failed, events=(), gains=None):
    """Build the node's ``DiagnosticArray`` for one period.

    Args:
        name: the node's name; hardware_id: the chain (``base -> tip``) or ''.
        facts: {key: value} shown as they are (lifecycle state, backend, source...).
        statistics: :meth:`ControlStatistics.take`'s tuple for the period.
        elapsed: s the period lasted.
        previous, current: {counter name: count since start} at the start and end of the
            period (drops and rejections), to tell what happened in it.
        state_timeout: s (for the expected rate); joints: names in command order.
        timed_out: the state timeout holds now; failed: configuring failed (the reason).
        events: what happened since the last message that forced this one (texts: a
            contact and its end, state loss and resume, a goal aborted, an effort limit
            reached), listed first in the message and under ``events``.
        gains: (kp, kd) in force, (n,) each, to say what loop delay they tolerate.
    """
    states, latencies, saturated, max_error, ages = statistics
    rate = states / elapsed if elapsed > 0 else 0.0
    values = [KeyValue(key=k, value=str(v)) for k, v in facts.items()]
    values.append(KeyValue(key='joint_states rate [Hz]', value=f'{rate:.1f}'))
    timing, delay_problem = _timing(latencies, ages, rate, gains)
    values += timing
    new = {key: current[key] - previous.get(key, 0) for key in current}
    for key, count in current.items():
        values.append(KeyValue(key=key, value=f'{count} ({new[key]} in the last '
                                              f'{elapsed:.1f} s)'))
    at_limit = [j for j, s in zip(joints, saturated) if s]
    values.append(KeyValue(key='joints at their effort limit', value=', '.join(at_limit)))
    values.append(KeyValue(key='max |q_d - q| [rad]', value=f'{max_error:.3g}'))
    if events:
        values.append(KeyValue(key='events', value='; '.join(events)))
    level, message = OK, 'ok'
    problems = list(events)
    if any(new.values()):
        problems.append(', '.join(f'{k}: {v}' for k, v in new.items() if v))
    if at_limit:
        problems.append(f'at effort limit: {", ".join(at_limit)}')
    if states and rate < 2.0 / state_timeout:
        problems.append(f'joint_states at {rate:.1f} Hz, under 2 per state_timeout')
    if delay_problem:
        problems.append(delay_problem)
    for key in ('contact', 'singularity', 'stiffness', 'commands'):
        if facts.get(key) and facts[key] not in problems:
            problems.append(facts[key])
    if problems:
        level, message = WARN, '; '.join(problems)
    if timed_out:
        level, message = ERROR, ('state timeout: no valid joint_states, holding as '
                                 'state_loss_policy says, then zero effort'
                                 + ''.join(f'; {e}' for e in events))
    if failed:
        level, message = ERROR, f'configuring failed: {failed}'
    diagnostic = DiagnosticStatus(level=level, name=f'{name}: computed torque controller',
                                  message=message, hardware_id=hardware_id, values=values)
    return DiagnosticArray(status=[diagnostic])


def node_facts(node, c, description_source, action, last=None):
    """Return the node's facts for :func:`status`: {key: value} (``c`` its controller).

    ``last``: the last :class:`~ne_dynamics_ros.control.run_state.Command`, or None: its
    law's report gives the law's own facts (e.g. the Cartesian law's manipulability).
    """
    goals = node.goals
    contact = c.contact if c else None
    return {'lifecycle state': node.lifecycle_state,
            'dynamics backend': c.dynamics_backend if c else '',
            'robot description': description_source,
            'state timeouts': node.statistics.timeouts,
            # handled (sampled at their measurement's stamp), so no warning: through
            # controller_manager a hardware read without a new state repeats the last
            'joint_states repeating the last measurement': c.data.repeats.repeated if c else 0,
            'trajectories accepted': node.accepted_trajectories,
            'follow_joint_trajectory': action,
            'active goal': (c.goal_id or '') if c else '',
            'payload estimate': payload_text(c.payload_estimate if c else None),
            'goals accepted': goals.accepted_goals if goals else 0,
            'goals rejected': goals.rejected_goals if goals else 0,
            'contact': contact.text() if contact is not None else '',
            'commands': command_problem(node),
            'ros2_control': node.ros2_control.describe() if node.ros2_control else '',
            'external wrench': wrench_text(last),
            **law_facts(last)}


def wrench_text(out):
    """Say which directions ``~/external_wrench`` cannot be told along ('' if none)."""
    wrench = None if out is None else out.external_wrench
    if wrench is None or not wrench.flagged:
        return ''
    return (f'{wrench.flagged} of 6 directions near a singularity or not felt by the '
            'joints: damped, not amplified (the wrench along them is underestimated)')


def law_facts(out):
    """Return the facts of the law's report in the command ``out`` ({} without one).

    Each report the law gives says its own lines (e.g. :meth:`~ne_dynamics_ros.control.
    laws.cartesian.CartesianReport.facts`: the manipulability, a singularity, a stiffness
    above the sampling rule; the last two WARN when non-empty).
    """
    facts = {}
    report = None if out is None else out.report
    for value in (report or {}).values():
        facts.update(value.facts())
    return facts


def command_problem(node):
    """'' while someone takes the commands of an active node, else what is wrong."""
    if node.lifecycle_state != 'active':
        return ''
    link = node.ros2_control
    if link is not None and link.effort_active is False:
        return f'not commanding: {link.describe()}'
    if node.command_subscribers() == 0:
        return 'nobody subscribes to the effort command topic: commands go nowhere'
    return ''


def payload_text(estimate):
    """Return the adaptive law's load as text: mass and centre of mass ('' for none)."""
    if estimate is None:
        return ''
    mass, com, _ = estimate
    return f'{mass:.3f} kg at ({com[0]:.3f}, {com[1]:.3f}, {com[2]:.3f}) m'


__all__ = ['ControlStatistics', 'counts', 'drop_summary', 'ERROR', 'EVENT_INTERVAL',
           'Events', 'law_facts', 'node_facts', 'OK', 'payload_text', 'PERIOD', 'status',
           'WARN', 'wrench_text']
