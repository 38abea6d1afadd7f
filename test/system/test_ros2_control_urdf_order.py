"""The node beside the real ros2_control with every joint order the user's own: a move.

test_ros2_control.py runs its stack with the ``<ros2_control>`` block reversed and the
effort controller's joints in a third order; here the block, the controller and the
node all take the URDF's chain order (the launch's defaults), and a move of every joint
tracks through controller_manager with fresh states. A module of its own, so that its
stack never runs beside the other module's.
"""
import os
import sys
import time

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
import ros2_control_stack as stack  # noqa: E402

pytestmark = pytest.mark.ros2_control

WHY = stack.missing()
if WHY:
    pytest.skip(f'no ros2_control stack here: {WHY}', allow_module_level=True)

CHAIN = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
         'wrist_2_joint', 'wrist_3_joint']


def test_a_move_tracks_with_the_joints_in_the_urdfs_order():
    s = stack.Stack(CHAIN)
    try:
        s.wait_commanding()
        # as in test_ros2_control.py, the move comes once the stack has run a while, and
        # stamped ahead of its publication (stack.move: a trajectory stamped zero was seen
        # installed 0.3-0.4 s after its receipt in CI)
        time.sleep(1.0)
        goal, errors, marks = stack.move(s, CHAIN, offset=(-0.3, 0.3, -0.3, -0.3, 0.3, -0.3))
        with s.probe.lock:
            final = s.probe.truth[-1][2]
        np.testing.assert_allclose(final, goal, atol=2e-3)
        assert np.max(np.abs(errors)) < 5e-3, np.max(np.abs(errors), axis=0)
        ages, repeated = stack.broadcast_ages(s.probe, marks, CHAIN)
        stack.assert_reads_find_their_instant(ages, repeated)
    finally:
        output = s.close()
    assert 'Traceback' not in output, output[-4000:]
