"""The controller's configuration: the parameter table, its checks and the settings.

* :mod:`.parameters`: the one table of the node's parameters;
* :mod:`.parameter_checks`: the checks those values pass;
* :mod:`.settings`: the controller's run-time settings, generated from that table.

Imports :mod:`ne_dynamics_ros.control.laws` (the modes) and
:mod:`ne_dynamics_ros.control.sensing` (the velocity estimator's bounds).
"""
