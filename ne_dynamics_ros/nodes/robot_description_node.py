"""``robot_description_publisher``: a URDF file on ``/robot_description``, as a driver would.

Jazzy's ``controller_manager`` reads the robot description from the
``/robot_description`` topic (``std_msgs/String``, reliable, transient local, depth 1),
which ``robot_state_publisher`` publishes on a ROS install. This node publishes a file's
text once with that QoS and stays up so that late subscribers get it (no TF: the arm's
frames are not its job). ``ros2_control.launch.py`` starts it.

    ros2 run ne_dynamics_ros robot_description_publisher --ros-args -p urdf_path:=arm.urdf
"""
import signal

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSDurabilityPolicy, QoSHistoryPolicy, QoSProfile, QoSReliabilityPolicy
from std_msgs.msg import String

#: robot_state_publisher's latched robot_description (as computed_torque_node takes it).
ROBOT_DESCRIPTION_QOS = QoSProfile(history=QoSHistoryPolicy.KEEP_LAST, depth=1,
                                   reliability=QoSReliabilityPolicy.RELIABLE,
                                   durability=QoSDurabilityPolicy.TRANSIENT_LOCAL)


def main(args=None):
    """Publish ``urdf_path``'s text on ``robot_description`` until a signal; 1 on error."""
    from rclpy.signals import SignalHandlerOptions
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
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
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        while not stop and rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except ExternalShutdownException:
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
