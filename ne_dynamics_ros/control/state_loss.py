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
  carries.

Units: q in rad (m for prismatic joints), efforts in N*m (N), times in s.
"""
from typing import Callable, Optional, Sequence

from ne_dynamics_ros.control.laws import clamp_effort, NonFiniteEffortError


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
        return clamp_effort(gravity_at(last_q), effort_limits).tolist()
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


__all__ = ['loss_effort', 'loss_text', 'timeout_text']
