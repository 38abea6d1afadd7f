"""The plant: a simulated arm integrated by Pinocchio (not by our own dynamics code).

No ROS import. :mod:`.simulated_arm` holds :class:`SimulatedArm`; :mod:`.closed_loop`
runs a :class:`~ne_dynamics_ros.control.controller.ComputedTorqueController` against it
in-process, sample by sample, as the lockstep demo does over ROS 2 topics.
"""
