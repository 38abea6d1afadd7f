"""The experiment behind ``ne-dynamics-demo``: the node driving a simulated arm over DDS.

With no options it reproduces the PUMA experiment of Lee, Chung, Mudge & Turney (1982),
§5: PUMA 560, theta_initial = (90, 0, 90, 0, 0, 0)
deg, theta_final = (45, 30, 0, 45, 60, 90) deg, a 3 s quintic motion, joint states and
commands every 0.01 s, K_p = 100 and K_v = 20 on every joint, motor (armature) inertia in
both the plant and the controller's model. The paper reports every joint's position
error below 4.26e-4 rad, one count of a 12-bit A/D converter.

What runs (the nodes in this process on one executor, rclpy's C++ ``EventsExecutor``,
real rclpy over DDS; the node's trajectory receiver in a child process of its own):

* ``sim_arm_node`` (:mod:`ne_dynamics_ros.nodes.sim_arm_node`): the plant, Pinocchio ABA
  (or MuJoCo with ``--plant mujoco``) from
  the same URDF (+ armature, + an optional payload and friction the controller does not
  know about), in *lockstep*: it publishes the state at ``t_k``, applies the controller's
  answer to it over ``[t_k, t_k + 1/rate)`` and publishes ``t_(k+1)``. Simulated time is
  published on ``/clock`` and every other node runs with ``use_sim_time``. So the run is
  a sampled-data experiment with exactly one command per sample, like Lee et al.'s digital
  controller, and its result does not depend on the machine's speed or load.
* ``computed_torque_node`` (:mod:`ne_dynamics_ros.nodes.computed_torque_node`), configured from
  ``config/<robot>.yaml`` (armature) with ``kp``/``kd`` from the command line.
* ``trajectory_source`` (:mod:`ne_dynamics_ros.nodes.trajectory_source_node`): the motion,
  stamped to start at ``--start-time`` of simulated time.
* a recorder node subscribed to ``/joint_states`` (q), ``/effort_controller/commands``
  and ``/computed_torque_node/tracking_error`` (the controller's q_d - q and tau).

The arm is held at t = 0 until the controller answers and the trajectory is delivered,
then released for ``start-time + duration + settle`` seconds of simulated time.

The reported error is ``q_d(t_k) - q(t_k)`` at every sample, with ``q_d`` evaluated from
the profile's closed form at the state's time stamp (with ``--pick-and-place``, the
cycles': a load picked at rest, carried, released at rest, the arm moved back; the
plant's ``payload_schedule``) (independent of the controller's own
interpolation); the controller's reported error is kept beside it as a cross-check.

Its steps are functions a test (or a script) can call, one module each:
:mod:`~ne_dynamics_ros.tools.experiment.setup` (:class:`Setup`, from the demo's options),
:mod:`~ne_dynamics_ros.tools.experiment.run` (:class:`Run`: bring-up, the lockstep run
over DDS), :mod:`~ne_dynamics_ros.tools.experiment.report` (:func:`analyse`, the outputs
:func:`write_csv`, :func:`write_summary`, :func:`plot`, :func:`plot_pick_and_place`,
:func:`write_run_bag`) and
:mod:`~ne_dynamics_ros.tools.experiment.identify` (:func:`identify_and_rerun`).
``ne_dynamics_ros.tools.demo`` parses the options and prints.

Outputs in ``--output``: ``tracking_error.png`` (not with ``--no-plot``), ``log.csv``,
``summary.json``.
Exit status: 0 when the run completed; 1 bad arguments or files (e.g. a missing URDF);
2 a node could not be started, or another process publishes on the demo's topics in
the same ROS domain; 3 no joint states from the arm (or they stopped);
4 no commands from the controller; 5 a node raised an exception while running.
"""
# the experiment's public names, from the modules that define them (documented there)
from ne_dynamics_ros.tools.experiment.identify import identify_and_rerun  # noqa: F401
from ne_dynamics_ros.tools.experiment.report import (  # noqa: F401
    analyse, plot, plot_comparison, plot_pick_and_place, print_drive_table, write_csv,
    write_run_bag, write_summary)
from ne_dynamics_ros.tools.experiment.run import Run  # noqa: F401
from ne_dynamics_ros.tools.experiment.setup import (  # noqa: F401
    DemoError, EXIT_CRASH, EXIT_NO_COMMANDS, EXIT_NO_STATES, EXIT_OK, EXIT_START, EXIT_USAGE,
    is_lee_default, LEE_BOUND_RAD, log, Setup)
