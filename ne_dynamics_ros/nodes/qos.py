"""QoS of the topics the package's nodes share with controller_manager.

:data:`ACTIVITY_QOS`: what the node's ros2_control link, ``effort_guard`` and
``jtc_feedforward`` subscribe ``<controller_manager>/activity`` with.
"""
from rclpy.qos import QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy

#: controller_manager's ``~/activity`` (one message per switch; its publisher reliable,
#: transient local, depth 1, so a late subscriber gets the last). A queue of 10, not 1: a
#: switch away and straight back is two messages 12 ms apart, and with one slot a
#: subscriber whose executor was busy (500 Hz ``/joint_states``) saw only the second and
#: never learnt the controller had gone and come back (``jtc_feedforward`` then left the
#: returned controller holding without gravity: the UR5e sagged 1 rad in a test run).
ACTIVITY_QOS = QoSProfile(depth=10, reliability=QoSReliabilityPolicy.RELIABLE,
                          durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)

__all__ = ['ACTIVITY_QOS']
