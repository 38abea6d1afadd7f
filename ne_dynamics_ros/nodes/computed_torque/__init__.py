"""ROS 2 node ``computed_torque_node``: joint states + reference trajectory -> effort commands.

A managed (lifecycle) node; its modules, one concern each:

* :mod:`.ros_parameters`: descriptors and validation, built from the one parameter table
  (:mod:`ne_dynamics_ros.control.parameters`);
* :mod:`.node`: the lifecycle adapter (configure, activate, deactivate, cleanup,
  shutdown; the control path);
* :mod:`.threads`: the state-timeout watchdog and the trajectory reception;
* :mod:`.diagnostics`: ``/diagnostics`` once a second;
* :mod:`.readers`: joint-state bytes to the controller's sample;
* :mod:`.support`: throttled warnings, NumPy errors, logging;
* :mod:`.program`: ``main`` and the executor.

The node is an adapter: it declares and validates parameters, converts messages to arrays
and back, publishes, logs (throttled) and shuts down cleanly. Every decision (the law,
Lee et al. 1982, eqs 4.1, 4.4; trajectory replacement and sampling; holding;
velocity estimation; the state timeout; clamping and the NaN/inf guard) is made by
:class:`ne_dynamics_ros.control.controller.ComputedTorqueController`, which imports no ROS.

Topics (names relative to the node's namespace, so ``/joint_states`` etc. in the root
namespace; remap as usual):

==============================  ==================================  ===========================
topic                           type                                meaning
==============================  ==================================  ===========================
``joint_states`` (sub)          sensor_msgs/JointState              measured q (and qd); QoS as
                                                                    joint_state_broadcaster:
                                                                    reliable, volatile, depth 10
``~/joint_trajectory`` (sub)    trajectory_msgs/JointTrajectory     reference; replaces the
                                                                    previous one
``robot_description`` (sub)     std_msgs/String                     URDF, transient local; only
                                                                    when no parameter gives it
``effort_controller/commands``  std_msgs/Float64MultiArray          tau in ``joints`` order,
(pub)                                                               N*m or N
``~/tracking_error`` (pub)      sensor_msgs/JointState              position = q_d - q,
                                                                    velocity = qd_d - qd,
                                                                    effort = commanded tau
``~/desired`` (pub)             trajectory_msgs/JointTrajectory     one point: q_d, qd_d, qdd_d
                                                                    in positions/velocities/
                                                                    accelerations
``/diagnostics`` (pub)          diagnostic_msgs/DiagnosticArray     once a second: state, rates,
                                                                    latency, drops, saturation
==============================  ==================================  ===========================

Lifecycle: see :mod:`.node` (``autostart`` true configures and activates at start-up; the
effort command is a lifecycle publisher, silent unless active).

Effort commands and both ``~/`` outputs are computed on every valid ``joint_states``
message. The ``~/`` outputs are stamped with the ``header.stamp`` of the joint state they
answer, list the joints in ``joints`` order, and are only published while someone
subscribes to them (each costs a DDS write); a new subscriber is noticed within the
watchdog period (state_timeout / 4, between 5 ms and 0.1 s).

Threads and processes: ``joint_states`` are answered on the executor's thread (the
control path; :func:`main` spins on rclpy's C++ ``EventsExecutor`` unless ``executor``
says ``single_threaded``). The state-timeout watchdog runs on a thread of its own, so no
Python callback, however long, can keep it from publishing. Trajectories never enter this
process as messages: a child process (:mod:`ne_dynamics_ros.nodes.trajectory_receiver`,
node ``<name>_trajectory_receiver`` in the same namespace, which ``ros2 topic info``
lists as the subscriber of ``~/joint_trajectory``) takes them, drops those over
``max_trajectory_bytes`` unread, reads the others with NumPy, checks their joints
against the chain, and passes columns of numbers over a socket to a third thread here,
which checks and interpolates them with a fixed number of NumPy operations whatever
their length and swaps the reference. Why: rclpy takes a message whole on the executor's
thread, holding the GIL, before any callback can look at its size, and Fast DDS
reassembles it on the process's own threads; measured with ``benchmarks/bench_node.py
--stall`` (issue 25), an rclpy node that only took trajectory bytes went 7-18 ms without
answering a state for a 4.4 MB trajectory and 95-134 ms for a 40 MB message (69-143 ms
with the subscription on a second executor thread), against 4 and 6 ms with the
subscription in a child process. The child lives as long as the node and exits when it
closes the socket (or dies). Trajectories are read and installed in the order they
arrive; should more than 10 wait to be read (the subscription's depth), the oldest is
dropped unread and counted.

Messages as bytes: ``joint_states`` is taken as serialized CDR bytes and read by
:mod:`ne_dynamics_ros.nodes.cdr` in Python, cheaper than rclpy's conversion into Python
objects (about 7 against 40 us), which cost more than the control law. An encoding other
than little-endian CDR goes to rclpy's deserializer; bytes neither can read are dropped
with a warning. The effort command and ``~/tracking_error`` are published as bytes
written there too. NumPy floating-point warnings raised while handling a message become
the node's own throttled warnings.

State timeout: once commanding, if no valid ``joint_states`` message arrives for
``state_timeout`` seconds (steady clock), the node aborts the goal, logs an error and
publishes what ``state_loss_policy`` holds for ``state_loss_hold`` seconds (by default
the model's gravity at the last measured position: a short pause does not drop the arm;
``hold_last``: the last command; ``zero``), then an all-zero effort command, each repeated
every watchdog tick (at most 0.1 s) while the timeout lasts. Why zeros in the end:
``effort_controllers/JointGroupEffortController`` (and ``forward_command_controller``)
keep applying the last command they received forever; a stale computed-torque command,
with its PD part frozen, keeps pushing the arm open loop. Zero effort injects no energy;
the arm then sags under gravity onto its brakes or hardware limits, which the hardware's
own safety must handle (no controller can hold an arm it no longer measures for long).
Repeating it makes sure a controller that is (re)activated during the outage also
receives it. When valid states return, the node resumes by holding the position measured
then (the old trajectory is discarded, since the arm may have moved). A zero command is
published on a clean shutdown (Ctrl-C, SIGTERM).
"""
from ne_dynamics_ros.nodes.computed_torque.node import (
    ComputedTorqueNode, JOINT_STATE_QOS, NODE_NAME, ROBOT_DESCRIPTION_QOS)
from ne_dynamics_ros.nodes.computed_torque.ros_parameters import (
    NodeConfigurationError, PARAMETERS, RUNTIME_PARAMETERS)
from ne_dynamics_ros.nodes.computed_torque.program import (
    EXECUTORS, main, make_executor, MAX_TRAJECTORY_BYTES, SWITCH_INTERVAL)

__all__ = ['ComputedTorqueNode', 'EXECUTORS', 'JOINT_STATE_QOS', 'main', 'make_executor',
           'MAX_TRAJECTORY_BYTES', 'NODE_NAME', 'NodeConfigurationError', 'PARAMETERS',
           'ROBOT_DESCRIPTION_QOS', 'RUNTIME_PARAMETERS', 'SWITCH_INTERVAL']
