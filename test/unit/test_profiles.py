"""Joint profiles (quintic; Sasaki's trapezoid, Sasaki 1990, §4) and the trajectory message."""
import numpy as np
import pytest

from ne_dynamics_ros.control.reference.profiles import evaluate, PROFILES, quintic, trapezoidal

START = np.array([np.pi / 2, 0.0, np.pi / 2, 0.0, 0.0, 0.0])
GOAL = np.radians([45.0, 30.0, 0.0, 45.0, 60.0, 90.0])
T = 3.0


@pytest.mark.parametrize('profile', sorted(PROFILES))
def test_boundary_conditions_and_rest_outside(profile):
    times = np.array([-1.0, 0.0, T, T + 2.0])
    q, qd, qdd = evaluate(profile, times, START, GOAL, T)
    np.testing.assert_allclose(q[0], START, atol=0)
    np.testing.assert_allclose(q[1], START, atol=1e-15)
    np.testing.assert_allclose(q[2], GOAL, atol=1e-15)
    np.testing.assert_allclose(q[3], GOAL, atol=0)
    for k in range(4):
        np.testing.assert_allclose(qd[k], 0.0, atol=1e-15)
    for k in range(4):   # Sasaki's +a starts just after t = 0
        np.testing.assert_allclose(qdd[k], 0.0, atol=0)


def test_quintic_has_zero_acceleration_at_both_ends():
    q, qd, qdd = quintic(np.array([0.0, 1e-9, T - 1e-9, T]), START, GOAL, T)
    np.testing.assert_allclose(qdd, 0.0, atol=1e-7)


def test_quintic_closed_form_midpoint_and_peaks():
    delta = GOAL - START
    q, qd, qdd = quintic(T / 2, START, GOAL, T)
    np.testing.assert_allclose(q, START + delta / 2, atol=1e-15)
    np.testing.assert_allclose(qd, 1.875 * delta / T, rtol=1e-14)   # 30/16 dq/T
    np.testing.assert_allclose(qdd, 0.0, atol=1e-15)
    # Peak acceleration 10 sqrt(3)/3 dq/T^2 at tau = 1/2 - sqrt(3)/6.
    tau = 0.5 - np.sqrt(3) / 6
    _, _, qdd = quintic(tau * T, START, GOAL, T)
    np.testing.assert_allclose(qdd, 10 * np.sqrt(3) / 3 * delta / T ** 2, rtol=1e-12)


@pytest.mark.parametrize('profile', sorted(PROFILES))
def test_derivatives_agree_with_finite_differences(profile):
    h = 1e-6
    # Avoid Sasaki's acceleration jumps at T/3 and 2T/3 for the second derivative.
    times = np.linspace(0.01, T - 0.01, 97)
    times = times[np.min(np.abs(times[:, None] - np.array([T / 3, 2 * T / 3])), axis=1) > 1e-3]
    q_plus, qd_plus, _ = evaluate(profile, times + h, START, GOAL, T)
    q_minus, qd_minus, _ = evaluate(profile, times - h, START, GOAL, T)
    _, qd, qdd = evaluate(profile, times, START, GOAL, T)
    np.testing.assert_allclose((q_plus - q_minus) / (2 * h), qd, atol=1e-8)
    np.testing.assert_allclose((qd_plus - qd_minus) / (2 * h), qdd, atol=1e-7)


def test_trapezoidal_is_sasakis_thirds():
    """Sasaki (1990), §4: qdd = +a, 0, -a on the thirds of T, a = 9 dq / (2 T^2)."""
    delta = GOAL - START
    a = 9 * delta / (2 * T ** 2)
    thirds = {(0.0, T / 3): a, (T / 3, 2 * T / 3): 0 * a, (2 * T / 3, T): -a}
    for (lo, hi), expected in thirds.items():
        times = np.linspace(lo, hi, 11)[1:-1]
        _, _, qdd = trapezoidal(times, START, GOAL, T)
        np.testing.assert_allclose(qdd, np.tile(expected, (len(times), 1)), atol=1e-15)
    # Sasaki's region formulas (offsets from the start).
    for t in np.linspace(0.0, T, 31):
        if t <= T / 3:
            expected = a * t ** 2 / 2
        elif t <= 2 * T / 3:
            expected = a * T * (6 * t - T) / 18
        else:
            expected = -a * (t - T) ** 2 / 2 + 2 * a * T ** 2 / 9
        q, _, _ = trapezoidal(t, START, GOAL, T)
        np.testing.assert_allclose(q - START, expected, atol=1e-14)
    # The velocity is the trapezoid: continuous, flat at a T / 3 = 3 dq / (2 T).
    for t in (T / 3, T / 2, 2 * T / 3):
        _, qd, _ = trapezoidal(t, START, GOAL, T)
        np.testing.assert_allclose(qd, 1.5 * delta / T, rtol=1e-13)
    _, qd_left, _ = trapezoidal(T / 3 - 1e-12, START, GOAL, T)
    np.testing.assert_allclose(qd_left, 1.5 * delta / T, rtol=1e-9)


def test_shapes_scalar_and_vector():
    q, qd, qdd = quintic(1.0, START, GOAL, T)
    assert q.shape == qd.shape == qdd.shape == (6,)
    q, qd, qdd = trapezoidal(np.linspace(0, T, 5), START, GOAL, T)
    assert q.shape == qd.shape == qdd.shape == (5, 6)
    q, _, _ = quintic([0.5], [0.0], [1.0], 1.0)
    assert q.shape == (1, 1)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match='duration'):
        quintic(0.0, START, GOAL, 0.0)
    with pytest.raises(ValueError, match='equally long'):
        quintic(0.0, START, GOAL[:3], T)
    with pytest.raises(ValueError, match='unknown profile'):
        evaluate('cubic', 0.0, START, GOAL, T)


def test_trajectory_message_carries_the_profile():
    from ne_dynamics_ros.control.reference.profiles import sample_times
    from ne_dynamics_ros.nodes.trajectory_source_node import build_trajectory
    names = [f'joint_{i}' for i in range(1, 7)]
    msg = build_trajectory(names, START, GOAL, T, 'quintic', 0.01, start_time=0.5)
    assert msg.joint_names == names
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (0, 500_000_000)
    assert len(msg.points) == 301
    times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                      for p in msg.points])
    np.testing.assert_allclose(times, np.arange(301) * 0.01, atol=1e-9)
    q, qd, qdd = quintic(times, START, GOAL, T)
    np.testing.assert_allclose([p.positions for p in msg.points], q, atol=0)
    np.testing.assert_allclose([p.velocities for p in msg.points], qd, atol=0)
    np.testing.assert_allclose([p.accelerations for p in msg.points], qdd, atol=0)
    # A duration that is not a multiple of the period still ends exactly at T.
    np.testing.assert_allclose(sample_times(0.025, 0.01), [0.0, 0.01, 0.02, 0.025])
    with pytest.raises(ValueError, match='must match'):
        build_trajectory(names[:2], START, GOAL, T)


def test_cycles_go_to_the_goal_and_back_and_rest_between():
    """The controller's interpolation of a cycle trajectory is the closed-form quintic on
    each move and holds still through each dwell (no waypoints there)."""
    from ne_dynamics_ros.control.reference.profiles import evaluate_cycles, sample_cycles
    from ne_dynamics_ros.control.reference.trajectory import (DesiredState, trajectory_from_points,
                                                              TrajectoryPoint)
    names = [f'joint_{i}' for i in range(1, 7)]
    move, dwell, cycles = 2.0, 0.5, 3
    times, q, qd, qdd = sample_cycles('quintic', START, GOAL, move, cycles, dwell, 0.01)
    points = [TrajectoryPoint(t, q[k], qd[k], qdd[k]) for k, t in enumerate(times)]
    rest = DesiredState(START, np.zeros(6), np.zeros(6))
    trajectory = trajectory_from_points(names, points, names, 1.0, 1.0, rest)
    period = 2 * (move + dwell)
    assert trajectory.end_time == pytest.approx(1.0 + cycles * period - dwell)
    for t in np.linspace(0.0, cycles * period - dwell, 1237):
        phase = t % period
        if phase <= move:
            expected = quintic(phase, START, GOAL, move)
        elif phase <= move + dwell:
            expected = GOAL, np.zeros(6), np.zeros(6)
        elif phase <= 2 * move + dwell:
            expected = quintic(phase - move - dwell, GOAL, START, move)
        else:
            expected = START, np.zeros(6), np.zeros(6)
        got = trajectory.sample(1.0 + t)
        closed_form = [v[0] for v in evaluate_cycles('quintic', t, START, GOAL, move,
                                                     cycles, dwell)]
        for value, want, other in zip((got.q, got.qd, got.qdd), expected, closed_form):
            np.testing.assert_allclose(value, want, atol=1e-9)
            np.testing.assert_allclose(other, want, atol=1e-12)
    for bad, match in (((0, 0.5), 'cycles'), ((1.5, 0.5), 'cycles'),
                       ((2, -1.0), 'dwell'), ((2, np.nan), 'dwell')):
        with pytest.raises(ValueError, match=match):
            sample_cycles('quintic', START, GOAL, move, *bad)
