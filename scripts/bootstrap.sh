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
echo "bootstrap: .venv ready ($(.venv/bin/python --version))"
