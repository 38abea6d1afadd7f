"""``computed_torque_node``: see :mod:`ne_dynamics_ros.nodes.computed_torque`.

This module keeps the node's import path and console entry point; the node itself is the
package :mod:`ne_dynamics_ros.nodes.computed_torque`.
"""
from ne_dynamics_ros.nodes.computed_torque import (  # noqa: F401 - the public names
    ComputedTorqueNode, EXECUTORS, JOINT_STATE_QOS, main, make_executor, MAX_TRAJECTORY_BYTES,
    NODE_NAME, NodeConfigurationError, PARAMETERS, ROBOT_DESCRIPTION_QOS, RUNTIME_PARAMETERS,
    SWITCH_INTERVAL)

if __name__ == '__main__':
    raise SystemExit(main())
