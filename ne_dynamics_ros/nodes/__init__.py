"""The ROS 2 nodes: adapters between messages and the pure layers, nothing else.

* :mod:`.computed_torque_node`: ``/joint_states`` + trajectories -> effort commands,
  around :class:`~ne_dynamics_ros.control.controller.ComputedTorqueController`;
* :mod:`.sim_arm_node`: :class:`~ne_dynamics_ros.simulation.simulated_arm.SimulatedArm`
  behind a ros2_control-like effort interface;
* :mod:`.trajectory_source_node`: publishes one joint profile as a trajectory.

These (and :mod:`ne_dynamics_ros.tools`) are the only modules that import rclpy or
message packages.
"""
