"""What a parameter is and the checks its values pass: the bottom of ``control``.

* :mod:`.spec`: :class:`~.spec.ParameterSpec`, one row of the node's parameter table
  (the node's own rows are in :mod:`ne_dynamics_ros.control.parameters`, each law's in
  its module);
* :mod:`.parameter_checks`: the checks those values pass.

Imports only :mod:`ne_dynamics_ros.errors` and NumPy.
"""
