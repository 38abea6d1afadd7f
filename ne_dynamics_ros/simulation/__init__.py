"""The plants: simulated arms integrated by Pinocchio or MuJoCo (not by our own dynamics).

No ROS import.

* :mod:`.simulated_arm`: :class:`~ne_dynamics_ros.simulation.simulated_arm.SimulatedArm`,
  Pinocchio's ABA + RK4;
* :mod:`.mujoco_arm`: :class:`~ne_dynamics_ros.simulation.mujoco_arm.MujocoArm`, MuJoCo's
  import of the URDF, with dry friction, damping, armature and a payload the controller
  is not told;
* :mod:`.closed_loop`: a :class:`~ne_dynamics_ros.control.controller.
  ComputedTorqueController` against a plant in-process, sample by sample, as the lockstep
  demo does over ROS 2 topics;
* :mod:`.recorder`: joint states recorded.
"""
