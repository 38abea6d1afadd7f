"""Identification of an arm's dynamic parameters from recorded motion (no ROS needed).

* :mod:`.excitation`: periodic excitation trajectories (finite Fourier series, Swevers et
  al. 1997) optimised for the condition number of the base regressor;
* :mod:`.recording`: joint states read from rosbag2 recordings (MCAP, sqlite3) with the
  ``rosbags`` library, or from CSV;
* :mod:`.estimation`: filtering, parallel decimation and (weighted) least squares of the
  base parameters and the drive parameters Ia, Fv, Fc;
* :mod:`.physical_fit`: the physically plausible standard parameters, fitted with a
  prior toward the nominal model (a convex programme, ``cvxpy``), drive terms and prior
  weight chosen by cross-validation; :mod:`.validation`: both models on held-out motion;
* :mod:`.urdf_writer`: the URDF with only its ``<inertial>`` and ``<dynamics>`` values
  changed, and the parameter YAML the nodes read;
* :mod:`.pipeline`: recording to identified URDF and YAML in named steps, shared by
  ``ne-dynamics identify`` and the demo.
"""
