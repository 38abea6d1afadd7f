#!/usr/bin/env bash
# Build the SimArmSystem hardware plugin (hardware/) into an ament prefix, without ROS 2:
#
#   bash scripts/build_hardware.sh PREFIX [ROS2_CONTROL_PREFIX]
#
# compiles hardware/src/sim_arm_system.cpp with g++ against ROS2_CONTROL_PREFIX (default
# .venv/ros2_control/install, the from-source ros2_control the bootstrap unpacks) and the
# headers of the ROS 2 wheels in .venv, and installs what pluginlib looks for: the library
# in PREFIX/lib, its plugin description and package.xml in
# PREFIX/share/ne_dynamics_ros_hardware, and the ament index entries. On a ROS 2 install
# build hardware/ with colcon instead (its CMakeLists.txt). The library is written beside
# its destination first, so a failed build leaves the previous one in place.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${1:?usage: build_hardware.sh PREFIX [ROS2_CONTROL_PREFIX]}
R2C=${2:-.venv/ros2_control/install}
VENV=.venv
NAME=ne_dynamics_ros_hardware
for tool in g++; do
  command -v "$tool" >/dev/null || { echo "build_hardware: no $tool here" >&2; exit 1; }
done
[ -f "$R2C/include/hardware_interface/hardware_interface/system_interface.hpp" ] || {
  echo "build_hardware: no hardware_interface headers in $R2C" >&2; exit 1; }
includes=(-isystem "$R2C/include")
for dir in "$R2C"/include/* "$VENV"/include/*; do
  [ -d "$dir" ] && includes+=(-isystem "$dir")
done
mkdir -p "$PREFIX/lib" "$PREFIX/share/$NAME" \
  "$PREFIX/share/ament_index/resource_index/packages" \
  "$PREFIX/share/ament_index/resource_index/hardware_interface__pluginlib__plugin"
library="$PREFIX/lib/lib$NAME.so"
g++ -std=c++17 -O2 -fPIC -shared -Wall -Wextra "${includes[@]}" \
  hardware/src/sim_arm_system.cpp -o "$library.partial" \
  -L"$R2C/lib" -L"$VENV/lib" -Wl,--as-needed \
  -lhardware_interface -lrclcpp_lifecycle -lrclcpp -lclass_loader -lrcutils
mv "$library.partial" "$library"
cp hardware/sim_arm_system_plugin.xml hardware/package.xml "$PREFIX/share/$NAME/"
: > "$PREFIX/share/ament_index/resource_index/packages/$NAME"
printf 'share/%s/sim_arm_system_plugin.xml' "$NAME" \
  > "$PREFIX/share/ament_index/resource_index/hardware_interface__pluginlib__plugin/$NAME"
echo "build_hardware: $NAME/SimArmSystem in $library"
