"""``/diagnostics`` of the node, as ``diagnostic_updater`` publishes them, once a second.

One ``diagnostic_msgs/DiagnosticStatus`` named ``"<node name>: computed torque
controller"`` in a ``DiagnosticArray``, for ``rqt_robot_monitor`` and the aggregator.
Values (``KeyValue``), over the last period unless said otherwise: the lifecycle state;
the joint-state rate (Hz); the control latency, from taking a state's bytes to having
published its command, p50 and p99 (ms); states dropped by reason and trajectories
rejected or dropped unread (since start, and in the period); state timeouts (since
start); the joints whose command reached their effort limit; the largest ``|q_d - q|``
(rad); the dynamics backend and where the robot description came from.

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


class ControlStatistics:
    """What happened on the control path since the last :meth:`take` (thread-safe)."""

    def __init__(self, n_joints=0):
        self._lock = threading.Lock()
        self.timeouts = 0
        self._reset(n_joints)

    def _reset(self, n_joints):
        self.states = 0
        self.latencies_ns = []
        self.saturated = [False] * n_joints
        self.max_error = 0.0

    def commanded(self, latency_ns, effort, limits, position_error):
        """Record one answered state: its latency, saturation and tracking error."""
        with self._lock:
            self.states += 1
            self.latencies_ns.append(latency_ns)
            if len(self.saturated) != len(effort):
                self.saturated = [False] * len(effort)
            for j, (t, limit) in enumerate(zip(effort, limits)):
                if t >= limit or t <= -limit:
                    self.saturated[j] = True
            error = max(map(abs, position_error)) if position_error else 0.0
            if error > self.max_error:
                self.max_error = error

    def seen(self):
        """Record a state that got no command (inactive, not ours, dropped)."""
        with self._lock:
            self.states += 1

    def timed_out(self):
        """Record the start of a state timeout."""
        with self._lock:
            self.timeouts += 1

    def take(self, n_joints):
        """Return (states, latencies ns, saturated flags, max error) and start a new period."""
        with self._lock:
            out = (self.states, self.latencies_ns, self.saturated, self.max_error)
            self._reset(n_joints)
            return out


def status(name, hardware_id, facts, statistics, elapsed, previous, current, state_timeout,
           joints, timed_out, failed):
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
    """
    states, latencies, saturated, max_error = statistics
    rate = states / elapsed if elapsed > 0 else 0.0
    values = [KeyValue(key=k, value=str(v)) for k, v in facts.items()]
    values.append(KeyValue(key='joint_states rate [Hz]', value=f'{rate:.1f}'))
    if latencies:
        p50, p99 = np.percentile(np.asarray(latencies, dtype=float) * 1e-6, [50, 99])
        values += [KeyValue(key='control latency p50 [ms]', value=f'{p50:.3f}'),
                   KeyValue(key='control latency p99 [ms]', value=f'{p99:.3f}')]
    new = {key: current[key] - previous.get(key, 0) for key in current}
    for key, count in current.items():
        values.append(KeyValue(key=key, value=f'{count} ({new[key]} in the last '
                                              f'{elapsed:.1f} s)'))
    at_limit = [j for j, s in zip(joints, saturated) if s]
    values.append(KeyValue(key='joints at their effort limit', value=', '.join(at_limit)))
    values.append(KeyValue(key='max |q_d - q| [rad]', value=f'{max_error:.3g}'))
    level, message = OK, 'ok'
    problems = []
    if any(new.values()):
        problems.append(', '.join(f'{k}: {v}' for k, v in new.items() if v))
    if at_limit:
        problems.append(f'at effort limit: {", ".join(at_limit)}')
    if states and rate < 2.0 / state_timeout:
        problems.append(f'joint_states at {rate:.1f} Hz, under 2 per state_timeout')
    if facts.get('contact'):
        problems.append(facts['contact'])
    if problems:
        level, message = WARN, '; '.join(problems)
    if timed_out:
        level, message = ERROR, ('state timeout: no valid joint_states, holding as '
                                 'state_loss_policy says, then zero effort')
    if failed:
        level, message = ERROR, f'configuring failed: {failed}'
    diagnostic = DiagnosticStatus(level=level, name=f'{name}: computed torque controller',
                                  message=message, hardware_id=hardware_id, values=values)
    return DiagnosticArray(status=[diagnostic])


def node_facts(node, c, description_source, action):
    """Return the node's facts for :func:`status`: {key: value} (``c`` its controller)."""
    goals = node.goals
    contact = c.contact if c else None
    return {'lifecycle state': node.lifecycle_state,
            'dynamics backend': c.dynamics_backend if c else '',
            'robot description': description_source,
            'state timeouts': node.statistics.timeouts,
            'trajectories accepted': node.accepted_trajectories,
            'follow_joint_trajectory': action,
            'active goal': (c.goal_id or '') if c else '',
            'payload estimate': payload_text(c.payload_estimate if c else None),
            'goals accepted': goals.accepted_goals if goals else 0,
            'goals rejected': goals.rejected_goals if goals else 0,
            'contact': contact.text() if contact is not None else ''}


def payload_text(estimate):
    """Return the adaptive law's load as text: mass and centre of mass ('' for none)."""
    if estimate is None:
        return ''
    mass, com, _ = estimate
    return f'{mass:.3f} kg at ({com[0]:.3f}, {com[1]:.3f}, {com[2]:.3f}) m'


__all__ = ['node_facts', 'payload_text', 'ControlStatistics', 'ERROR', 'OK', 'PERIOD',
           'status', 'WARN']
