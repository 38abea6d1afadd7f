"""What the node answers besides joint states: ``~/query_state`` and declared payloads.

:func:`query_state` answers control_msgs' ``QueryTrajectoryState`` as
joint_trajectory_controller does. :func:`declared_payload_subscription` subscribes
``~/declared_payload`` (``geometry_msgs/Inertia``: mass kg, centre of mass m, inertia
about it kg·m², in ``adaptation_link``'s frame): a gripper driver that closed on a load
(or opened) says so, and in adaptive mode the load estimate becomes it at once, so that
the motion and the momentum observer carry it without the law's learning transient
(:meth:`~ne_dynamics_ros.control.law_inputs.LawInputs.declare_payload`).
Both run on the executor, off the control path.
"""
from ne_dynamics_ros.errors import ControlParameterError


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


def declared_payload_subscription(node):
    """Subscribe ``~/declared_payload`` on ``node``; None without geometry_msgs."""
    try:
        from geometry_msgs.msg import Inertia
    except ImportError:          # geometry_msgs comes with control_msgs' wheel
        return None

    def declared(msg):
        controller = node.controller
        if controller is None:
            return
        com = (msg.com.x, msg.com.y, msg.com.z)
        inertia = (msg.ixx, msg.ixy, msg.ixz, msg.iyy, msg.iyz, msg.izz)
        try:
            controller.declare_payload(msg.m, com, inertia)
        except ControlParameterError as err:
            node.warn_throttled('declared_payload', f'declared payload not taken: {err}')
            return
        node.get_logger().info(f'declared payload taken: {msg.m:g} kg at {com} m')

    return node.create_subscription(Inertia, '~/declared_payload', declared, 10)


__all__ = ['declared_payload_subscription', 'query_state']
