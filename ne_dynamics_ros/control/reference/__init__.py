"""What the arm should do: trajectories, goals and the efforts they need (no ROS).

* :mod:`.trajectory`: trajectories validated and interpolated like
  joint_trajectory_controller (:mod:`.splines`: its spline segments);
* :mod:`.profiles`: quintic and trapezoidal point-to-point profiles (Sasaki 1990, §4);
* :mod:`.goals`: FollowJointTrajectory goals as joint_trajectory_controller judges them;
* :mod:`.effort_check`: whether a trajectory needs more than the effort limits, and the
  slowest stretch that does not (Hollerbach 1984);
* :mod:`.trajectory_efforts`: a goal's points with the model's efforts, for
  joint_trajectory_controller.

Imports only :mod:`ne_dynamics_ros.dynamics` and :mod:`ne_dynamics_ros.errors`; the
package itself imports none of its modules (the trajectory receiver loads
:mod:`.trajectory` alone).
"""
