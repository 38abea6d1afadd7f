"""Which of the package's modules one joint state crosses in the node, bytes to effort.

The node (PUMA 560, ``test/node_harness.py``'s parameters, computed_torque, holding)
answers 20 serialized ``/joint_states`` messages, then one more under ``sys.setprofile``:
the modules whose functions ran for it are printed. Usage::

    python benchmarks/modules_per_state.py
"""
import os
import sys
import time
os.environ['ROS_DOMAIN_ID'] = '151'
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'test'))
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from node_harness import puma_params  # noqa: E402
from ne_dynamics_ros.nodes.computed_torque_node import ComputedTorqueNode  # noqa: E402

ctx = Context()
rclpy.init(context=ctx)
node = ComputedTorqueNode(context=ctx, parameter_overrides=puma_params())
deadline = time.monotonic() + 20
while node.controller is None or not node.controller.active:
    assert time.monotonic() < deadline, 'not active'
    time.sleep(0.05)
names = [f'joint_{i}' for i in range(1, 7)]
q = np.radians([90, 0, -90, 0, 0, 0.0])


def state(k):
    msg = JointState(name=names, position=(q + 1e-4 * k).tolist(), velocity=[0.01] * 6,
                     effort=[0.0] * 6)
    now = node.get_clock().now().to_msg()
    msg.header.stamp = now
    return serialize_message(msg)


for k in range(20):
    node._on_joint_state_bytes(state(k))
modules = set()


def prof(frame, event, arg):
    if event == 'call':
        modules.add(frame.f_globals.get('__name__'))


data = state(21)
sys.setprofile(prof)
node._on_joint_state_bytes(data)
sys.setprofile(None)
found = sorted(m for m in modules if m and m.startswith('ne_dynamics_ros'))
print(len(found), found)
node.destroy_node()
rclpy.shutdown(context=ctx)
os._exit(0)
