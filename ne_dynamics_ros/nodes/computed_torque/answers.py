"""What the node answers besides joint states: ``~/query_state``.

:func:`query_state` answers control_msgs' ``QueryTrajectoryState`` as
joint_trajectory_controller does, on the executor, off the control path.
"""


def query_state(controller, request, response):
    """``~/query_state``: the reference at ``request.time`` (JTC's QueryTrajectoryState)."""
    t = request.time.sec * 1_000_000_000 + request.time.nanosec
    reference = None if controller is None else controller.reference_at(t)
    if reference is None:
        response.success = False
        response.message = ('the controller is not active or follows no reference yet '
                            '(no joint_states since activation, or a state timeout)')
        return response
    response.success = True
    response.name = list(controller.model.joint_names)
    response.position, response.velocity, response.acceleration = (
        a.tolist() for a in reference)
    return response


__all__ = ['query_state']
