"""Identification of an arm's dynamic parameters from recorded motion (no ROS needed).

* :mod:`.excitation`: periodic excitation trajectories (finite Fourier series, Swevers et
  al. 1997) optimised for the condition number of the base regressor;
* :mod:`.recording`: joint states read from rosbag2 recordings (MCAP, sqlite3) with the
  ``rosbags`` library, or from CSV;
* :mod:`.estimation`: filtering, parallel decimation and (weighted) least squares of the
  base parameters and the drive parameters Ia, Fv, Fc;
* :mod:`.consistency`: a physically consistent full parameter set that reproduces the
  identified base parameters (a semidefinite programme, ``cvxpy``);
* :mod:`.urdf_writer`: the URDF with only its ``<inertial>`` and ``<dynamics>`` values
  changed, and the parameter YAML the nodes read;
* :mod:`.pipeline`: recording to identified URDF and YAML in named steps, shared by
  ``ne-dynamics identify`` and the demo.
"""
