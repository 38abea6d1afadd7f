"""``robot_description_publisher``: a URDF file on ``/robot_description``, as a driver would.

Jazzy's ``controller_manager`` reads the robot description from the
``/robot_description`` topic (``std_msgs/String``, reliable, transient local, depth 1),
which ``robot_state_publisher`` publishes on a ROS install. This node publishes a file's
text once with that QoS and stays up so that late subscribers get it (no TF: the arm's
frames are not its job). ``ros2_control.launch.py`` starts it.

    ros2 run ne_dynamics_ros robot_description_publisher --ros-args -p urdf_path:=arm.urdf
"""
import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.qos import QoSDurabilityPolicy, QoSHistoryPolicy, QoSProfile, QoSReliabilityPolicy
from std_msgs.msg import String

from ne_dynamics_ros.nodes.spin import init_until_signalled, spin_until_signalled

#: robot_state_publisher's latched robot_description (as computed_torque_node takes it).
ROBOT_DESCRIPTION_QOS = QoSProfile(history=QoSHistoryPolicy.KEEP_LAST, depth=1,
                                   reliability=QoSReliabilityPolicy.RELIABLE,
                                   durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)


def main(args=None):
    """Publish ``urdf_path``'s text on ``robot_description`` until a signal; 1 on error."""
    stop = init_until_signalled(args)
    node = Node('robot_description_publisher')
    path = node.declare_parameter('urdf_path', '', ParameterDescriptor(
        description='URDF file to publish', read_only=True)).value
    try:
        with open(path, encoding='utf-8') as stream:
            text = stream.read()
    except OSError as exc:
        node.get_logger().fatal(f'cannot read urdf_path {path!r}: {exc.strerror or exc}')
        node.destroy_node()
        rclpy.try_shutdown()
        return 1
    publisher = node.create_publisher(String, 'robot_description', ROBOT_DESCRIPTION_QOS)
    publisher.publish(String(data=text))
    node.get_logger().info(f'published {path} ({len(text)} characters) on '
                           f'{publisher.topic_name}')
    return spin_until_signalled(node, stop)


if __name__ == '__main__':
    raise SystemExit(main())
