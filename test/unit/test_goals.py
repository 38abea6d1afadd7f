"""Goals as joint_trajectory_controller judges them, without ROS (control/reference/goals.py).

The tolerance cases are those of ros2_controllers' ``test/test_tolerances.cpp`` (jazzy):
defaults from the parameters, values from the goal, ``-1`` erasing, illegal values and
unknown joints falling back to the defaults whole. The goal checks are the rejections the
action must give before accepting; the monitor, JTC's ``update`` verdicts. The controller
tests drive :class:`ComputedTorqueController` with goals on the in-process plant.
"""
import math
import re

import numpy as np
import pytest

from references import PUMA560_URDF
from ne_dynamics_ros.control import ComputedTorqueController
from ne_dynamics_ros.control.controller import JointStateSample
from ne_dynamics_ros.control.reference.goals import (
    check_goal, default_tolerances, fill_partial, GoalMonitor, GoalOptions, GoalStatus,
    goal_tolerances, resolve_tolerance, ResultCode, tolerance_violation)
from ne_dynamics_ros.control.reference.trajectory import TrajectoryPoint, waypoint_arrays

JOINTS = ['joint1', 'joint2', 'joint3']
PUMA_JOINTS = [f'joint_{i}' for i in range(1, 7)]


def jtc_defaults():
    """test_tolerances.cpp's fixture: 0.1 path and goal position, 0.1 stopped velocity."""
    return default_tolerances([0.1] * 3, [0.1] * 3, 0.1, 0.0)


def test_defaults_come_from_the_constraints_parameters():
    tol = default_tolerances([0.05, 0.0, 0.2], [0.01, 0.02, 0.0], 0.01, 1.5)
    np.testing.assert_array_equal(tol.state, [[0.05, 0, 0], [0, 0, 0], [0.2, 0, 0]])
    np.testing.assert_array_equal(tol.goal, [[0.01, 0.01, 0], [0.02, 0.01, 0],
                                             [0.0, 0.01, 0]])
    assert tol.goal_time == 1.5
    with pytest.raises(ValueError, match='goal_time'):
        default_tolerances([0.1], [0.1], 0.01, -1.0)
    with pytest.raises(ValueError, match='trajectory'):
        default_tolerances([math.nan], [0.1], 0.01, 0.0)


def test_get_segment_tolerances_from_the_goal():
    path = [(j, 0.2, 0.3, 0.4) for j in JOINTS]
    goal = [('joint1', 1.1, 2.1, 3.1), ('joint2', 1.2, 2.2, 3.2), ('joint3', 1.3, 2.3, 3.3)]
    tol, problem = goal_tolerances(jtc_defaults(), JOINTS, path, goal, 2.0)
    assert problem == ''
    assert tol.goal_time == 2.0
    np.testing.assert_array_equal(tol.state, [[0.2, 0.3, 0.4]] * 3)
    np.testing.assert_array_equal(tol.goal, [[1.1, 2.1, 3.1], [1.2, 2.2, 3.2],
                                             [1.3, 2.3, 3.3]])


def test_deactivate_tolerances_with_minus_one():
    erase = [(j, -1.0, -1.0, -1.0) for j in JOINTS]
    tol, problem = goal_tolerances(jtc_defaults(), JOINTS, erase, erase, -1.0)
    assert problem == ''
    assert tol.goal_time == 0.0
    assert not tol.state.any() and not tol.goal.any()


def test_zero_keeps_the_default_and_a_goal_may_name_some_joints():
    defaults = jtc_defaults()
    tol, problem = goal_tolerances(defaults, JOINTS, [('joint2', 0.0, 0.5, 0.0)], [], 0.0)
    assert problem == ''
    np.testing.assert_array_equal(tol.state, [[0.1, 0, 0], [0.1, 0.5, 0], [0.1, 0, 0]])
    np.testing.assert_array_equal(tol.goal, defaults.goal)
    assert tol.goal_time == defaults.goal_time


@pytest.mark.parametrize('which', ['path', 'goal'])
@pytest.mark.parametrize('quantity', [0, 1, 2])
def test_invalid_tolerances_fall_back_to_the_defaults(which, quantity):
    values = [0.0, 0.0, 0.0]
    values[quantity] = -123.0
    given = [('joint1', *values)]
    defaults = jtc_defaults()
    tol, problem = goal_tolerances(defaults, JOINTS, given if which == 'path' else [],
                                   given if which == 'goal' else [], 0.0)
    assert tol is defaults
    assert 'joint1' in problem and 'negative' in problem


def test_an_unknown_joint_or_an_illegal_goal_time_fall_back_to_the_defaults():
    defaults = jtc_defaults()
    tol, problem = goal_tolerances(defaults, JOINTS, [('elbow', 0.5, 0, 0)], [], 0.0)
    assert tol is defaults and "'elbow'" in problem
    tol, problem = goal_tolerances(defaults, JOINTS, [], [], -2.0)
    assert tol is defaults and 'goal_time_tolerance' in problem
    tol, problem = goal_tolerances(defaults, JOINTS, [('joint1', math.nan, 0, 0)], [], 0.0)
    assert tol is defaults and 'not finite' in problem


def test_resolve_tolerance_is_jointtolerance_semantics():
    assert resolve_tolerance(0.3, 0.5) == 0.5
    assert resolve_tolerance(0.3, 0.0) == 0.3
    assert resolve_tolerance(0.3, -1.0) == 0.0
    with pytest.raises(ValueError):
        resolve_tolerance(0.3, -0.5)


def test_state_tolerance_checks_each_quantity_only_when_positive():
    tol = np.array([[0.1, 0.2, 0.3], [0.0, 0.0, 0.0]])
    assert tolerance_violation(tol, [0.1, 5.0], [0.2, 5.0], [0.3, 5.0]) is None
    assert 'joint 0 position' in tolerance_violation(tol, [0.11, 0], [0, 0])
    assert 'B velocity' in tolerance_violation(np.array([[0, 0, 0], [0, 0.2, 0]]),
                                               [0, 0], [0, -0.21], joints=['A', 'B'])
    assert 'acceleration' in tolerance_violation(tol, [0, 0], [0, 0], [0.31, 0])
    # without a measured acceleration, as joint_states gives none, it is not checked
    assert tolerance_violation(tol, [0, 0], [0, 0]) is None
    assert tolerance_violation(tol, [math.nan, 0], [0, 0]) is not None


def test_the_monitor_gives_jtc_verdicts():
    tol = default_tolerances([0.1, 0.1], [0.01, 0.01], 0.01, 0.5)
    monitor = GoalMonitor('g', tol, end_time=2.0, joints=['a', 'b'])
    assert monitor.check(0.0, [0.05, 0.0], [0.3, 0.0]) is None          # path: position only
    code, text = monitor.check(1.0, [0.0, 0.2], [0.0, 0.0])
    assert code == ResultCode.PATH_TOLERANCE_VIOLATED and "b position error 0.2" in text
    # after the last point: goal tolerances; within goal_time it waits
    monitor = GoalMonitor('g', tol, end_time=2.0, joints=['a', 'b'])
    assert monitor.check(0.0, [0, 0], [0, 0]) is None
    assert monitor.check(2.1, [0.02, 0.0], [0.0, 0.0]) is None
    code, text = monitor.check(2.6, [0.02, 0.0], [0.0, 0.0])
    assert code == ResultCode.GOAL_TOLERANCE_VIOLATED and 'exceeding by 0.6' in text
    monitor = GoalMonitor('g', tol, end_time=2.0, joints=['a', 'b'])
    assert monitor.check(2.3, [0.005, 0.0], [0.005, 0.0])[0] == ResultCode.SUCCESSFUL
    # a velocity above stopped_velocity_tolerance is not "reached"
    monitor = GoalMonitor('g', tol, end_time=2.0, joints=['a', 'b'])
    assert monitor.check(2.1, [0.0, 0.0], [0.02, 0.0]) is None
    # goal_time 0: wait indefinitely
    forever = GoalMonitor('g', default_tolerances([0, 0], [0.01, 0.01], 0.01, 0.0), 1.0,
                          ['a', 'b'])
    assert forever.check(1000.0, [0.5, 0.0], [0.0, 0.0]) is None


def test_the_first_sample_checks_the_path_even_after_the_last_point():
    tol = default_tolerances([0.1], [0.0], 0.0, 0.0)
    monitor = GoalMonitor('g', tol, end_time=0.0, joints=['a'])
    assert monitor.check(0.5, [0.2], [0.0])[0] == ResultCode.PATH_TOLERANCE_VIOLATED


def arrays(points, k=3):
    return waypoint_arrays([TrajectoryPoint(t, *fields) for t, *fields in points], k)


LIMITS = ([-1.0] * 3, [1.0] * 3)


@pytest.mark.parametrize('names, points, code, match', [
    ([], [(1.0, [])], ResultCode.INVALID_JOINTS, 'no joint_names'),
    (['joint1', 'joint2', 'elbow'], [(1.0, [0, 0, 0])], ResultCode.INVALID_JOINTS,
     "unknown joints, e.g. 'elbow'"),
    (['joint1', 'joint1', 'joint3'], [(1.0, [0, 0, 0])], ResultCode.INVALID_JOINTS,
     'appears twice'),
    (['joint1', 'joint2'], [(1.0, [0, 0])], ResultCode.INVALID_JOINTS,
     "joints \\['joint3'\\] missing"),
    (JOINTS, [], ResultCode.INVALID_GOAL, 'no points'),
    (JOINTS, [(1.0, [0, 0, 0]), (1.0, [0, 0, 0])], ResultCode.INVALID_GOAL,
     'strictly increasing'),
    (JOINTS, [(1.0, [0, 0, 0]), (0.5, [0, 0, 0])], ResultCode.INVALID_GOAL,
     'strictly increasing'),
    (JOINTS, [(1.0, [0, math.nan, 0])], ResultCode.INVALID_GOAL, 'NaN or inf'),
    (JOINTS, [(1.0, [0, 0, 0], [0, math.inf, 0])], ResultCode.INVALID_GOAL, 'NaN or inf'),
    (JOINTS, [(1.0, [0, 0, 1.5])], ResultCode.INVALID_GOAL,
     'joint3 position 1.5 is beyond its limits'),
    (JOINTS, [(1.0, [0, 0, 0], [0, 0.1, 0])], ResultCode.INVALID_GOAL,
     'joint2 velocity 0.1, not zero'),
])
def test_goals_are_rejected_with_a_reason(names, points, code, match):
    waypoints = arrays(points, len(names))
    got, reason, checked = check_goal(names, waypoints, JOINTS, *LIMITS)
    assert got == code and checked is None
    assert re.search(match, reason), reason


def test_sizes_that_disagree_are_refused_when_read():
    from ne_dynamics_ros.control.reference.trajectory import TrajectoryError
    with pytest.raises(TrajectoryError, match='positions has 2 values, expected 3'):
        arrays([(1.0, [0, 0])])


def test_multi_dof_and_old_stamps_are_rejected():
    waypoints = arrays([(1.0, [0, 0, 0])])
    code, reason, _ = check_goal(JOINTS, waypoints, JOINTS, *LIMITS, multi_dof_points=1)
    assert code == ResultCode.INVALID_GOAL and 'multi_dof' in reason
    code, reason, _ = check_goal(JOINTS, waypoints, JOINTS, *LIMITS, stamp=100.0, now=102.0)
    assert code == ResultCode.OLD_HEADER_TIMESTAMP and '1.000 s in the past' in reason
    assert check_goal(JOINTS, waypoints, JOINTS, *LIMITS, stamp=100.0, now=100.5)[0] is None


def test_options_allow_partial_goals_and_a_moving_end():
    options = GoalOptions(allow_partial_joints_goal=True,
                          allow_nonzero_velocity_at_trajectory_end=True)
    waypoints = arrays([(1.0, [0.5, 0.25], [0.1, 0.0])], 2)
    code, _, checked = check_goal(['joint3', 'joint1'], waypoints, JOINTS, *LIMITS, options)
    assert code is None
    # chain order of the given joints: joint1, joint3
    np.testing.assert_array_equal(checked.positions, [[0.25, 0.5]])
    full = fill_partial(checked, ['joint1', 'joint3'], JOINTS, [0.7, -0.3, 0.9])
    np.testing.assert_array_equal(full.positions, [[0.25, -0.3, 0.5]])
    np.testing.assert_array_equal(full.velocities, [[0.0, 0.0, 0.1]])


def hold_controller(**settings):
    values = {'kp': 100.0, 'kd': 20.0, 'position_limit_margin': math.inf,
              'state_timeout': 0.1}
    values.update(settings)
    return ComputedTorqueController.from_urdf(str(PUMA560_URDF), joints=PUMA_JOINTS,
                                              settings=values)


def state(q, qd, t_ns):
    return JointStateSample(PUMA_JOINTS, list(q), list(qd), [], t_ns, t_ns)


def goal_points(q_goal, seconds):
    return arrays([(seconds, list(q_goal))], 6)


def test_the_controller_judges_a_goal_and_holds_on_a_path_violation():
    c = hold_controller()
    q0 = np.zeros(6)
    c.update(0, state(q0, q0, 0))                      # the first state is held
    tol, _ = goal_tolerances(default_tolerances([0.01] * 6, [0.0] * 6, 0.01, 0.0),
                             PUMA_JOINTS, [], [], 0.0)
    target = np.full(6, 0.5)
    c.install_trajectory(c.prepare_trajectory(PUMA_JOINTS, goal_points(target, 1.0), 0,
                                              1_000_000), 'g1', tol)
    assert c.goal_id == 'g1'
    c.update(500_000_000, state(q0, q0, 500_000_000))   # arm stuck: 0.25 rad behind
    assert c.goal_ends_waiting
    (end,) = c.take_goal_ends()                        # the one way a goal's end leaves
    assert end.status is GoalStatus.ABORTED
    assert end.error_code == ResultCode.PATH_TOLERANCE_VIOLATED
    assert not c.goal_ends_waiting and c.take_goal_ends() == []
    assert c.goal_id is None
    # it holds the position measured then
    out = c.update(600_000_000, state(q0 + 0.001, q0, 600_000_000))
    np.testing.assert_allclose(out.desired_values[0], q0, atol=1e-12)


def test_the_controller_succeeds_at_the_end_and_reports_goals_ended_elsewhere():
    c = hold_controller()
    q0 = np.zeros(6)
    c.update(0, state(q0, q0, 0))
    tol = default_tolerances([0.0] * 6, [0.01] * 6, 0.01, 0.0)
    target = np.full(6, 0.1)
    c.install_trajectory(c.prepare_trajectory(PUMA_JOINTS, goal_points(target, 0.5), 0,
                                              0), 'g1', tol)
    c.update(200_000_000, state(q0, q0, 200_000_000))
    assert c.take_goal_ends() == []
    c.update(600_000_000, state(target + 0.005, q0, 600_000_000))
    (end,) = c.take_goal_ends()
    assert end.status is GoalStatus.SUCCEEDED and end.error_code == 0
    # preemption: a newer goal aborts the active one, a topic trajectory too
    for goal_id in ('g2', 'g3', None):
        c.install_trajectory(c.prepare_trajectory(PUMA_JOINTS, goal_points(q0, 0.5), 0,
                                                  700_000_000), goal_id, tol)
    ends = c.take_goal_ends()
    assert [(e.goal_id, e.status) for e in ends] == [('g2', GoalStatus.ABORTED),
                                                     ('g3', GoalStatus.ABORTED)]
    assert 'newer goal' in ends[0].error_string
    assert '~/joint_trajectory' in ends[1].error_string
    # cancel holds; deactivate and a state timeout abort with the reason
    c.install_trajectory(c.prepare_trajectory(PUMA_JOINTS, goal_points(target, 0.5), 0,
                                              700_000_000), 'g4', tol)
    assert not c.cancel_goal('other') and c.cancel_goal('g4')
    assert c.take_goal_ends()[0].status is GoalStatus.CANCELED
    out = c.update(800_000_000, state(q0 + 0.02, q0, 800_000_000))
    np.testing.assert_allclose(out.desired_values[0], q0 + 0.02, atol=1e-12)
    c.install_trajectory(c.prepare_trajectory(PUMA_JOINTS, goal_points(target, 0.5), 0,
                                              800_000_000), 'g5', tol)
    assert c.check_timeout(2_000_000_000) is not None
    (end,) = c.take_goal_ends()
    assert end.goal_id == 'g5' and 'state_timeout' in end.error_string
    assert 'gravity compensation at the last measured position' in end.error_string
    c.update(2_100_000_000, state(q0, q0, 2_100_000_000))        # resumes, holding
    c.install_trajectory(c.prepare_trajectory(PUMA_JOINTS, goal_points(target, 0.5), 0,
                                              2_100_000_000), 'g6', tol)
    c.deactivate()
    (end,) = c.take_goal_ends()
    assert end.goal_id == 'g6' and 'deactivated' in end.error_string


def test_query_reference_at_a_time():
    c = hold_controller()
    assert c.reference_at(0) is None                  # nothing followed before a state
    q0 = np.zeros(6)
    c.update(0, state(q0, q0, 0))
    target = np.full(6, 0.2)
    c.install_trajectory(c.prepare_trajectory(PUMA_JOINTS, goal_points(target, 1.0), 0, 0))
    np.testing.assert_allclose(c.reference_at(2_000_000_000).q, target)
    middle = c.reference_at(500_000_000)
    assert np.all(middle.q > 0) and np.all(middle.q < target) and np.all(middle.qd > 0)
    c.deactivate()
    assert c.reference_at(500_000_000) is None


def test_a_command_reports_the_state_it_answered():
    c = hold_controller()
    q, qd = np.full(6, 0.1), np.full(6, -0.2)
    c.update(0, state(np.zeros(6), np.zeros(6), 0))
    out = c.update(10_000_000, state(q, qd, 10_000_000))
    measured_q, measured_qd = out.measured_values
    np.testing.assert_allclose(measured_q, q, atol=1e-15)
    np.testing.assert_allclose(measured_qd, qd, atol=1e-15)


def test_a_goal_sent_before_the_first_state_is_judged_from_it():
    """Right after activation (no fresh state held yet) a goal is kept, becomes the
    reference on the first state and ends SUCCEEDED when reached; a goal prepared before
    the first state but installed after it starts from the held position."""
    c = hold_controller()
    c.deactivate()
    c.activate(now_ns=0, steady_ns=0)                  # nothing read while inactive
    q0 = np.zeros(6)
    target = q0 + 0.01
    tol = default_tolerances([0.5] * 6, [0.02] * 6, 0.05, 1.0)
    c.install_trajectory(c.prepare_trajectory(PUMA_JOINTS, goal_points(target, 0.2), 0, 0),
                         'early', tol)
    assert c.goal_id is None and c.trajectory is None       # kept for the first state
    c.update(1_000_000, state(q0, q0, 1_000_000))
    assert c.goal_id == 'early'
    c.update(600_000_000, state(target, q0, 600_000_000))
    (end,) = c.take_goal_ends()
    assert end.goal_id == 'early' and end.status is GoalStatus.SUCCEEDED
    # prepared while waiting, installed after the first state: from the held position
    c.deactivate()
    c.activate(now_ns=700_000_000, steady_ns=0)
    prepared = c.prepare_trajectory(PUMA_JOINTS, goal_points(target, 0.2), 0, 700_000_000)
    c.update(701_000_000, state(q0, q0, 701_000_000))
    c.install_trajectory(prepared, 'late', tol)
    assert c.goal_id == 'late'
    np.testing.assert_allclose(c.reference_at(700_000_000).q, q0, atol=1e-12)   # at receipt


def test_while_the_commands_are_not_applied_the_run_follows_the_arm_and_ends_its_goal():
    # ros2_control's effort controller switched away (the node's input): each state is
    # still answered (the effort controller finds a command when it returns), and the run
    # then holds the position that state measured: the reference follows the arm, a goal
    # in force ends (the run restarts), and nothing of the old reference is left
    c = hold_controller()
    q0 = np.zeros(6)
    c.update(0, state(q0, q0, 0))
    tol = default_tolerances([0.0] * 6, [0.01] * 6, 0.01, 0.0)
    c.install_trajectory(c.prepare_trajectory(PUMA_JOINTS, goal_points(np.full(6, 0.3), 1.0),
                                              0, 0), 'g1', tol)
    moved = q0 + 0.05
    out = c.update(100_000_000, state(moved, q0, 100_000_000), commands_applied=False)
    assert out.__class__.__name__ == 'Command'
    assert c.goal_id is None and [e.goal_id for e in c.take_goal_ends()] == ['g1']
    out = c.update(200_000_000, state(moved + 0.01, q0, 200_000_000), commands_applied=False)
    np.testing.assert_allclose(out.desired_values[0], moved, atol=1e-12)   # held, as measured
    # back (commands_applied True, the default): the position measured last held
    out = c.update(300_000_000, state(moved + 0.02, q0, 300_000_000))
    np.testing.assert_allclose(out.desired_values[0], moved + 0.01, atol=1e-12)


def test_the_receivers_judge_takes_goals_read_as_bytes_and_refuses_too_many_points():
    """nodes/follow_joint_trajectory.goal_frame on the fields a goal read as bytes gives
    (nodes/raw_goals.py): the same frame as from rclpy's message of the same goal, and a
    goal of MAX_POINTS + 1 points (read as bytes up to READ_POINTS) refused with the
    count, not read on."""
    from rclpy.serialization import serialize_message
    from control_msgs.action import FollowJointTrajectory
    from trajectory_msgs.msg import JointTrajectoryPoint
    from ne_dynamics_ros.control.reference.trajectory import MAX_POINTS, WaypointArrays
    from ne_dynamics_ros.nodes.cdr import (GoalRequestFields, JointTrajectoryFields,
                                           read_follow_joint_trajectory_goal)
    from ne_dynamics_ros.nodes.follow_joint_trajectory import goal_frame
    request = FollowJointTrajectory.Impl.SendGoalService.Request()
    goal = request.goal
    goal.trajectory.joint_names = JOINTS[::-1]
    for k in range(1, 4):
        point = JointTrajectoryPoint(positions=[0.1 * k, 0.2, -0.1 * k],
                                     velocities=[0.0, 0.01 * (3 - k), 0.0])
        point.time_from_start.sec = k
        goal.trajectory.points.append(point)
    goal.goal_time_tolerance.nanosec = 500_000_000
    read = read_follow_joint_trajectory_goal(serialize_message(request), 10, 10)
    frames = [goal_frame('id', g, JOINTS, None, None, GoalOptions(), True, 0.0)
              for g in (read, goal)]
    for (code, reason, frame) in frames:
        assert code is None, reason
    (header, arrays), (header_msg, arrays_msg) = frames[0][2], frames[1][2]
    assert header == header_msg and header['goal_time_tolerance'] == 0.5
    assert len(arrays) == len(arrays_msg) and all(
        np.array_equal(a, b) for a, b in zip(arrays, arrays_msg))
    m = MAX_POINTS + 1
    many = WaypointArrays(np.arange(1, m + 1) * 1e-3, np.zeros((m, 3)), np.zeros((m, 3)),
                          np.zeros((m, 3)), np.zeros(m, bool), np.zeros(m, bool))
    too_many = GoalRequestFields(b'\0' * 16, JointTrajectoryFields(0, 0, b'', tuple(JOINTS),
                                                                   many),
                                 (), 0, (), (), (0, 0))
    code, reason, frame = goal_frame('id', too_many, JOINTS, None, None, GoalOptions(), True,
                                     0.0)
    assert code == ResultCode.INVALID_GOAL and frame is None
    assert reason == (f'3 joint names and {m} points: more than 100000 names or '
                      f'{MAX_POINTS} points')
