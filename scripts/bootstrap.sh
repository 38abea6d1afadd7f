#!/usr/bin/env bash
# Set up everything on a fresh machine: a virtual environment in .venv with the ROS 2
# Jazzy wheels from PyPI (rclpy over Fast DDS, sensor/std/trajectory msgs), the
# independent references (Pinocchio, Robotics Toolbox), the test tools, and this package.
# Idempotent: re-running only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv --without-pip .venv      # pip comes below (0.1 s instead of 4.4 s)
fi
# Installs go through uv (PyPI's `uv`, installed into .venv by the system's pip) where it
# installs: the same releases as pip resolves, fetched in parallel (the requirements took
# 10 s with uv and 44 s with pip on a fresh machine, 2026-12-06). Where uv cannot be had
# (no PyPI, a pip older than 22.3, an unsupported platform), pip does the same steps.
if [ -x .venv/bin/uv ] || "$PYTHON" -m pip --python .venv/bin/python install --quiet uv \
    2> /dev/null; then
  # No --compile-bytecode: it compiled all ~9 000 modules of site-packages (PyOpenGL's
  # 2 900 among them, which nothing here imports): 18 s of the requirements' 24 s, 34 s of
  # CPU (2026-12-07). What the package's processes import is compiled at the end instead.
  pip_install() {
    .venv/bin/uv pip install --quiet --python .venv/bin/python "$@"
  }
else
  .venv/bin/python -m ensurepip --upgrade > /dev/null
  .venv/bin/python -m pip install --quiet --upgrade pip
  pip_install() { .venv/bin/python -m pip install --quiet "$@"; }
fi
# pip too, for the user's own installs into .venv
pip_install -r requirements/ros-jazzy.txt -r requirements/test.txt -e . pip
# ROS 2 launch tooling (launch, launch_ros, the ros2 CLI) is not on PyPI. When the wheels
# built from their jazzy sources sit beside the repository (../shared, as on CI), install
# them, and install this package into the ament prefix .venv/ament (share/ files and
# lib/ne_dynamics_ros/ executables), so that `ros2 launch ne_dynamics_ros ...` works with
# AMENT_PREFIX_PATH=$PWD/.venv/ament. Without them the launch tests skip and say why.
LAUNCH_WHEELS=../shared/wheels/ros2-jazzy-launch
if [ -d "$LAUNCH_WHEELS" ]; then
  pip_install --no-deps "$LAUNCH_WHEELS"/*.whl
  pip_install ros-jazzy-ament-index-python osrf-pycommon lark pyyaml psutil packaging netifaces
  rm -rf .venv/ament
  pip_install --no-deps --prefix "$PWD/.venv/ament" .
  rm -f .venv/ament/.lock                  # uv's, of the install just done
  # pip's --prefix install replaces the editable one in .venv (uv's does not): back to it
  [ -x .venv/bin/uv ] || pip_install --no-deps -e .
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
  pip_install ros-jazzy-geometry-msgs ros-jazzy-action-msgs "$CONTROL_MSGS_WHEELS"/*.whl
  echo "bootstrap: control_msgs from $CONTROL_MSGS_WHEELS"
fi
# ros2_control (controller_manager, joint_state_broadcaster, effort and trajectory
# controllers, topic_based_ros2_control) built from its Jazzy sources against the same
# wheels: unpacked into .venv/ros2_control/install, where the launch file and the tests
# find it (ne_dynamics_ros.tools.ros2_control). A ROS 2 install's ros2_control, on
# AMENT_PREFIX_PATH, is used instead when there is one. Without either the ros2_control
# tests skip and say why.
R2C_TARBALL=../shared/ros2_control/ros2_control-jazzy-py311-x86_64.tar.gz
if [ -f "$R2C_TARBALL" ] && [ ! -x .venv/ros2_control/install/lib/controller_manager/ros2_control_node ]; then
  rm -rf .venv/ros2_control.partial && mkdir -p .venv/ros2_control.partial
  tar -xzf "$R2C_TARBALL" -C .venv/ros2_control.partial
  rm -rf .venv/ros2_control && mv .venv/ros2_control.partial .venv/ros2_control
  echo "bootstrap: ros2_control from $R2C_TARBALL in .venv/ros2_control/install"
fi
# The simulated arm's own hardware plugin (hardware/: ne_dynamics_ros_hardware/SimArmSystem,
# the ros2_control launch's default), compiled against that prefix into .venv/ament: in
# the background (11 s on one core, 2026-12-07) while the bytecode below is written.
hardware=
if [ -d .venv/ament ] && [ -x .venv/ros2_control/install/lib/controller_manager/ros2_control_node ]; then
  bash scripts/build_hardware.sh .venv/ament &
  hardware=$!
fi
# Bytecode for what runs: the package is installed editable (its modules are imported from
# the sources), so compile them; and import each of its modules, the launch tooling and
# ros2_control's Python once with bytecode writing on, which compiles the third-party
# modules they load. Where PYTHONDONTWRITEBYTECODE is set (as on this project's machines)
# Python never writes bytecode itself, and every process compiled the modules it imports
# (0.15 s of CPU for the node's own, 2026-12-06), over the hundreds of processes the
# tests start.
.venv/bin/python -m compileall -q -j 0 ne_dynamics_ros benchmarks > /dev/null
PYTHONDONTWRITEBYTECODE= MPLBACKEND=Agg .venv/bin/python scripts/import_everything.py
if [ -n "$hardware" ]; then
  wait "$hardware" || { echo "bootstrap: the hardware plugin did not build" >&2; exit 1; }
fi
echo "bootstrap: .venv ready ($(.venv/bin/python --version))"
