"""What the controller commands when the joint states stop: ``state_loss_policy``.

Pure module (no ROS). The controller's
:meth:`~ne_dynamics_ros.control.controller.ComputedTorqueController.check_timeout` decides
*when* a state timeout starts and ends (under its lock, on its run state); this module says
*what* is commanded meanwhile and how it is told:

* :func:`loss_effort`: ``hold_gravity`` (the default) holds g(q) of the law's model at the
  last measured position for ``state_loss_hold`` s, ``hold_last`` the last command,
  ``zero`` nothing; then zero effort until states return (an effort controller keeps
  applying its last command forever; zero effort adds no energy: ``docs/safety.md``).
* :func:`loss_text`, :func:`timeout_text`: the words the node logs and an aborted goal
  carries;
* :func:`check_timeout`: the check itself, on the controller's run.

Units: q in rad (m for prismatic joints), efforts in N*m (N), times in s.
"""
from typing import Callable, Optional, Sequence

import numpy as np

from ne_dynamics_ros.control.reference.goals import GoalStatus
from ne_dynamics_ros.control.laws.base import clamp
from ne_dynamics_ros.control.run_state import RunState, Timeout
from ne_dynamics_ros.errors import NonFiniteEffortError


def loss_effort(settings, last_q: Optional[list], last_effort: Optional[list],
                gravity_at: Callable[[list], Sequence[float]],
                effort_limits) -> Optional[list]:
    """Return what ``settings.state_loss_policy`` commands after the last state, or None.

    Args:
        settings: the controller's :class:`~ne_dynamics_ros.control.settings.
            ControllerSettings` (``state_loss_policy``, ``state_loss_hold``).
        last_q: (n,) the last valid state's positions, chain order, or None (none yet).
        last_effort: (n,) the last command, chain order, N*m (N).
        gravity_at: ``q -> g(q)`` of the model the law uses ((n,), N*m (N): the learned
            load's included in adaptive mode, zero where the hardware compensates
            gravity), no friction, no PD, no motion.
        effort_limits: (n,) symmetric limits, chain order, N*m (N).

    Returns:
        ``hold_gravity``: g(last_q); ``hold_last``: ``last_effort``; chain order, within
        the limits (n floats). None for ``zero``, no state yet, ``state_loss_hold`` 0 or a
        non-finite g (then zeros are commanded).
    """
    policy = settings.state_loss_policy
    if policy == 'zero' or last_q is None or settings.state_loss_hold <= 0:
        return None
    if policy == 'hold_last':
        return list(last_effort)
    try:
        return clamp(np.asarray(gravity_at(last_q), dtype=float).tolist(), list(effort_limits))
    except NonFiniteEffortError:
        return None


def loss_text(settings, holding: bool) -> str:
    """Say what a state timeout commands now (for logs and the aborted goal)."""
    if not holding:
        return 'zero effort until states return'
    what = ('the last command' if settings.state_loss_policy == 'hold_last' else
            'gravity compensation at the last measured position')
    return (f'{what} for state_loss_hold {settings.state_loss_hold:g} s, then zero '
            'effort until states return')


def timeout_text(settings, silence: float, holding: bool) -> str:
    """Say what a state timeout that just started (``silence`` s of it) commands."""
    return (f'no valid joint_states for {silence:.3f} s (state_timeout '
            f'{settings.state_timeout} s): stopped following, commanding '
            f'{loss_text(settings, holding)}')


def check_timeout(runs, references, settings, steady_ns: int, gravity_at, effort_limits,
                  order=None) -> Optional[Timeout]:
    """Check the silence since the last valid state; a :class:`Timeout` or None (all well).

    Nothing is reported before the first valid state. From ``state_timeout`` of silence
    on, the goal is aborted (its end queued on ``references``), the reference dropped and
    a timed-out run starts; the effort is what ``state_loss_policy`` holds
    (:func:`loss_effort`) until ``state_timeout + state_loss_hold``, then zeros.

    Args:
        runs: the controller's :class:`~ne_dynamics_ros.control.run_state.Runs` (its lock
            held by the caller). references: its :class:`~ne_dynamics_ros.control.
            references.References`. settings: the settings in force.
        steady_ns: the steady clock now, ns.
        gravity_at, effort_limits: as :func:`loss_effort` (chain order).
        order: the command order as indices into the chain, or None (the chain's).
    """
    run = runs.current
    if run.last_valid_steady_ns is None:
        return None
    silence = (steady_ns - run.last_valid_steady_ns) * 1e-9
    if silence <= settings.state_timeout:
        return None
    started = not run.timed_out
    if started:
        hold = loss_effort(settings, run.last_q, run.last_effort, gravity_at, effort_limits)
        references.end_goal(run, GoalStatus.ABORTED, f'Aborted: no valid joint_states for '
                            f'{silence:.3f} s (state_timeout {settings.state_timeout} s): '
                            f'{loss_text(settings, hold is not None)}')
        runs.current = run = RunState(
            runs.n, waiting='no valid joint_states (state timeout)', timed_out=True,
            last_valid_steady_ns=run.last_valid_steady_ns, loss_effort=hold,
            sensing=run.sensing)
    if run.loss_effort is None or silence > settings.state_timeout + settings.state_loss_hold:
        ended, run.loss_effort = run.loss_effort is not None, None
        return Timeout(np.zeros(runs.n), silence, started, False, ended)
    effort = run.loss_effort if order is None else [run.loss_effort[i] for i in order]
    return Timeout(np.array(effort), silence, started, True)


__all__ = ['check_timeout', 'loss_effort', 'loss_text', 'timeout_text']
