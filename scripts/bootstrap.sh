#!/usr/bin/env bash
# Set up everything on a fresh machine: a virtual environment in .venv with the ROS 2
# Jazzy wheels from PyPI (rclpy over Fast DDS, sensor/std/trajectory msgs), the
# independent references (Pinocchio, Robotics Toolbox), the test tools, and this package.
# Idempotent: re-running only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -r requirements/ros-jazzy.txt -r requirements/test.txt
.venv/bin/python -m pip install --quiet -e .
# ROS 2 launch tooling (launch, launch_ros, the ros2 CLI) is not on PyPI. When the wheels
# built from their jazzy sources sit beside the repository (../shared, as on CI), install
# them, and install this package into the ament prefix .venv/ament (share/ files and
# lib/ne_dynamics_ros/ executables), so that `ros2 launch ne_dynamics_ros ...` works with
# AMENT_PREFIX_PATH=$PWD/.venv/ament. Without them the launch tests skip and say why.
LAUNCH_WHEELS=../shared/wheels/ros2-jazzy-launch
if [ -d "$LAUNCH_WHEELS" ]; then
  .venv/bin/python -m pip install --quiet --no-deps "$LAUNCH_WHEELS"/*.whl
  .venv/bin/python -m pip install --quiet ros-jazzy-ament-index-python osrf-pycommon lark \
    pyyaml psutil packaging netifaces
  rm -rf .venv/ament
  # A --prefix install replaces the editable one in .venv: reinstall that afterwards.
  .venv/bin/python -m pip install --quiet --no-deps --prefix "$PWD/.venv/ament" .
  .venv/bin/python -m pip install --quiet --no-deps -e .
  mkdir -p .venv/ament/lib/ne_dynamics_ros
  for script in .venv/ament/bin/*; do
    ln -sfn "../../bin/$(basename "$script")" ".venv/ament/lib/ne_dynamics_ros/$(basename "$script")"
  done
  echo "bootstrap: ROS 2 launch tooling from $LAUNCH_WHEELS; package in the ament prefix .venv/ament"
fi
# control_msgs (FollowJointTrajectory, JointTrajectoryControllerState, QueryTrajectoryState)
# is not on PyPI either: a wheel built unchanged from its jazzy sources sits in ../shared on
# CI. Without it the node runs without its action and says so; the action tests skip.
CONTROL_MSGS_WHEELS=../shared/wheels/ros2-jazzy-control-msgs
if [ -d "$CONTROL_MSGS_WHEELS" ]; then
  .venv/bin/python -m pip install --quiet ros-jazzy-geometry-msgs ros-jazzy-action-msgs \
    "$CONTROL_MSGS_WHEELS"/*.whl
  echo "bootstrap: control_msgs from $CONTROL_MSGS_WHEELS"
fi
echo "bootstrap: .venv ready ($(.venv/bin/python --version))"
