"""What the controller learns of the arm from its measured states (no ROS).

* :mod:`.measured_state`: joint states read, checked and given velocities
  (:mod:`.velocity_estimator`: filtered differences where a state has none);
* :mod:`.observer`: the generalized-momentum observer of the external efforts;
* :mod:`.contact`: the contact detector and what a contact does;
* :mod:`.friction_estimate`: the Coulomb friction learned from the observer's residual;
* :mod:`.wrench`: the external wrench at the tip from the observed efforts;
* :mod:`.activation`: what one activation of the controller keeps of all these.

Imports :mod:`ne_dynamics_ros.dynamics` and :mod:`ne_dynamics_ros.control.laws` (what a
contact's ``comply`` reaction commands).
"""
