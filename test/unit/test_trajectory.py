"""Trajectory interpolation and validation (ne_dynamics_ros.control.reference.trajectory).

References are independent of our formulas: ``numpy.interp`` for linear segments,
``scipy.interpolate.CubicHermiteSpline`` for cubic and ``scipy.interpolate.BPoly``
(``from_derivatives``, a Bernstein-basis Hermite interpolant) for quintic segments, which
is what joint_trajectory_controller's spline interpolation computes for each case.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.interpolate import BPoly, CubicHermiteSpline

from ne_dynamics_ros.control.reference.trajectory import (
    DesiredState, interpolate_segment, Trajectory, trajectory_from_points, TrajectoryError,
    TrajectoryPoint, waypoint_arrays)

CHAIN = ['j1', 'j2', 'j3']
N = len(CHAIN)
ZERO = np.zeros(N)


def at_rest(q):
    return DesiredState(np.asarray(q, dtype=float), ZERO.copy(), ZERO.copy())


def scipy_reference(t, t_a, a, t_b, b, degree):
    """(q, qd, qdd) at t from scipy for one segment; a, b are (q, qd, qdd) triples."""
    x = [t_a, t_b]
    if degree == 1:
        q = np.array([np.interp(t, x, [a[0][i], b[0][i]]) for i in range(len(a[0]))])
        return q, (b[0] - a[0]) / (t_b - t_a), np.zeros_like(q)
    if degree == 3:
        spline = CubicHermiteSpline(x, np.stack([a[0], b[0]]), np.stack([a[1], b[1]]))
        return spline(t), spline(t, 1), spline(t, 2)
    poly = BPoly.from_derivatives(
        x, np.stack([np.stack([a[0], a[1], a[2]]), np.stack([b[0], b[1], b[2]])]))
    return poly(t), poly.derivative(1)(t), poly.derivative(2)(t)


finite = st.floats(-3.0, 3.0, allow_nan=False)
vectors = st.lists(finite, min_size=N, max_size=N).map(np.array)


@settings(max_examples=60, deadline=None)
@given(q_a=vectors, qd_a=vectors, qdd_a=vectors, q_b=vectors, qd_b=vectors, qdd_b=vectors,
       t_a=st.floats(-2.0, 2.0), duration=st.floats(0.05, 5.0), frac=st.floats(0.0, 1.0),
       degree=st.sampled_from([1, 3, 5]))
def test_segment_matches_scipy_hermite(q_a, qd_a, qdd_a, q_b, qd_b, qdd_b, t_a, duration,
                                       frac, degree):
    a = (q_a, qd_a if degree > 1 else None, qdd_a if degree > 3 else None)
    b = (q_b, qd_b if degree > 1 else None, qdd_b if degree > 3 else None)
    t_b = t_a + duration
    t = t_a + frac * duration
    got = interpolate_segment(t, t_a, a, t_b, b)
    want = scipy_reference(t, t_a, (q_a, qd_a, qdd_a), t_b, (q_b, qd_b, qdd_b), degree)
    scale = 1.0 + 1.0 / duration ** 2
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-7 * scale * 10.0)


def test_segment_degree_uses_fields_of_both_points():
    a = (np.zeros(N), np.ones(N), np.ones(N))
    b = (np.ones(N), None, None)
    # b has positions only -> linear, whatever a carries.
    got = interpolate_segment(0.5, 0.0, a, 1.0, b)
    np.testing.assert_allclose(got.q, 0.5)
    np.testing.assert_allclose(got.qd, 1.0)
    np.testing.assert_allclose(got.qdd, 0.0)


def test_segment_outside_its_interval_clamps_to_ends():
    a, b = (np.zeros(N), ZERO, ZERO), (np.ones(N), ZERO, ZERO)
    np.testing.assert_allclose(interpolate_segment(-1.0, 0.0, a, 1.0, b).q, 0.0)
    np.testing.assert_allclose(interpolate_segment(3.0, 0.0, a, 1.0, b).q, 1.0)


def build(points, joint_names=CHAIN, start=None, receipt=10.0, before=None):
    return trajectory_from_points(joint_names, points, CHAIN, start, receipt,
                                  at_rest(ZERO) if before is None else before)


def test_multi_point_trajectory_in_shuffled_joint_order():
    names = ['j3', 'j1', 'j2']
    perm = [CHAIN.index(n) for n in names]    # column k of the message is chain joint perm[k]
    q1, v1, a1 = np.array([0.1, 0.2, 0.3]), np.array([0.5, -0.5, 0.0]), np.array([1., 2., 3.])
    q2, v2, a2 = np.array([1.0, -1.0, 0.5]), np.zeros(N), np.zeros(N)
    points = [TrajectoryPoint(1.0, q1[perm], v1[perm], a1[perm]),
              TrajectoryPoint(3.0, q2[perm], v2[perm], a2[perm])]
    traj = build(points, joint_names=names, receipt=10.0)
    # start = receipt (zero stamp): first point at 11 s, second at 13 s.
    for t in (11.0, 11.7, 12.5, 12.999):
        got = traj.sample(t)
        want = scipy_reference(t, 11.0, (q1, v1, a1), 13.0, (q2, v2, a2), 5)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, atol=1e-9)


def test_before_first_point_interpolates_from_state_before():
    before = DesiredState(np.array([0.0, 0.1, 0.2]), np.array([0.3, 0.0, -0.3]),
                          np.array([0.0, 1.0, 0.0]))
    q1 = np.array([1.0, 1.0, 1.0])
    # first point with positions only -> linear from the state before (as JTC)
    traj = build([TrajectoryPoint(2.0, q1)], receipt=5.0, before=before)
    got = traj.sample(6.0)
    np.testing.assert_allclose(got.q, before.q + 0.5 * (q1 - before.q))
    np.testing.assert_allclose(got.qd, (q1 - before.q) / 2.0)
    # first point with velocities -> cubic from (q, qd) of the state before
    traj = build([TrajectoryPoint(2.0, q1, ZERO)], receipt=5.0, before=before)
    want = scipy_reference(6.5, 5.0, before, 7.0, (q1, ZERO, ZERO), 3)
    for g, w in zip(traj.sample(6.5), want):
        np.testing.assert_allclose(g, w, atol=1e-12)
    # quintic with accelerations
    traj = build([TrajectoryPoint(2.0, q1, ZERO, ZERO)], receipt=5.0, before=before)
    want = scipy_reference(5.3, 5.0, before, 7.0, (q1, ZERO, ZERO), 5)
    for g, w in zip(traj.sample(5.3), want):
        np.testing.assert_allclose(g, w, atol=1e-12)
    # before the receipt time: the state before itself
    np.testing.assert_allclose(traj.sample(4.0).q, before.q)


def test_hold_last_point_after_the_end():
    q_end = np.array([0.4, 0.5, 0.6])
    traj = build([TrajectoryPoint(0.5, ZERO + 0.1), TrajectoryPoint(1.0, q_end)], receipt=0.0)
    for t in (1.0, 1.5, 100.0):
        got = traj.sample(t)
        np.testing.assert_allclose(got.q, q_end)
        np.testing.assert_allclose(got.qd, 0.0)
        np.testing.assert_allclose(got.qdd, 0.0)
    assert traj.end_time == pytest.approx(1.0)
    # velocities/accelerations of the last point are passed on (joint_trajectory_controller)
    v = np.array([0.1, 0.0, -0.1])
    traj = build([TrajectoryPoint(1.0, q_end, v, ZERO)], receipt=0.0)
    np.testing.assert_allclose(traj.sample(2.0).qd, v)


def test_one_point_at_time_zero_is_a_streaming_set_point():
    q_set, v_set = np.array([0.3, -0.2, 0.1]), np.array([0.01, 0.02, 0.03])
    traj = build([TrajectoryPoint(0.0, q_set, v_set)], receipt=7.0,
                 before=at_rest([1.0, 1.0, 1.0]))
    for t in (7.0, 7.001, 8.0):
        got = traj.sample(t)
        np.testing.assert_allclose(got.q, q_set)
        np.testing.assert_allclose(got.qd, v_set)


def test_stamped_start_in_the_future():
    before = at_rest(ZERO)
    q1 = np.ones(N)
    traj = build([TrajectoryPoint(0.0, ZERO), TrajectoryPoint(1.0, q1)], start=12.0,
                 receipt=10.0, before=before)
    np.testing.assert_allclose(traj.sample(11.0).q, 0.0)   # still moving to point 0 (=0)
    np.testing.assert_allclose(traj.sample(12.5).q, 0.5)
    np.testing.assert_allclose(traj.sample(13.5).q, 1.0)


def test_hold():
    traj = Trajectory.hold([0.1, 0.2, 0.3], 4.0)
    for t in (0.0, 4.0, 50.0):
        got = traj.sample(t)
        np.testing.assert_allclose(got.q, [0.1, 0.2, 0.3])
        np.testing.assert_allclose(got.qd, 0.0)
        np.testing.assert_allclose(got.qdd, 0.0)


GOOD = TrajectoryPoint(1.0, [0.0, 0.0, 0.0])


@pytest.mark.parametrize('names, points, start, match', [
    ([], [GOOD], None, 'no joint_names'),
    (CHAIN, [], None, 'no points'),
    (['j1', 'j1', 'j2'], [GOOD], None, 'duplicate'),
    (['j1', 'j2', 'elbow'], [GOOD], None, 'unknown joints'),
    (['j1', 'j2'], [TrajectoryPoint(1.0, [0.0, 0.0])], None, 'missing'),
    (CHAIN, [TrajectoryPoint(1.0, [0.0, 0.0])], None, 'positions has 2 values'),
    (CHAIN, [TrajectoryPoint(1.0, [0.0] * 3, [0.0] * 2)], None, 'velocities has 2'),
    (CHAIN, [TrajectoryPoint(1.0, [0.0] * 3, [0.0] * 3, [0.0])], None, 'accelerations has 1'),
    (CHAIN, [TrajectoryPoint(1.0, [0.0] * 3, [], [0.0] * 3)], None, 'without velocities'),
    (CHAIN, [TrajectoryPoint(1.0, [0.0, np.nan, 0.0])], None, 'NaN'),
    (CHAIN, [TrajectoryPoint(1.0, [0.0] * 3, [np.inf, 0.0, 0.0])], None, 'NaN or inf'),
    (CHAIN, [GOOD, TrajectoryPoint(1.0, [1.0] * 3)], None, 'strictly increasing'),
    (CHAIN, [GOOD, TrajectoryPoint(0.5, [1.0] * 3)], None, 'strictly increasing'),
    (CHAIN, [TrajectoryPoint(-0.1, [1.0] * 3)], None, 'negative'),
    (CHAIN, [GOOD], 3.0, 'in the past'),
])
def test_invalid_trajectories_are_rejected(names, points, start, match):
    with pytest.raises(TrajectoryError, match=match):
        build(points, joint_names=names, start=start, receipt=10.0)


def test_trajectory_error_is_a_value_error():
    assert issubclass(TrajectoryError, ValueError)


def test_state_before_shape_checked():
    with pytest.raises(TrajectoryError, match='state_before'):
        build([GOOD], before=at_rest([0.0, 0.0]))


def _point_strategy():
    value = st.one_of(finite, st.sampled_from([np.nan, np.inf, -np.inf]))
    row = st.one_of(st.lists(finite, min_size=N, max_size=N), st.just([]),
                    st.lists(value, min_size=0, max_size=4))
    time = st.one_of(st.floats(0.01, 3.0), st.sampled_from([0.0, -0.5, np.nan, np.inf]))
    return st.builds(TrajectoryPoint, time, row, row, row)


def point_by_point(points, n, order):
    """The reference check: each point in turn, each field in turn (no arrays).

    Returns (times, positions, velocities or None per point, accelerations or None per
    point) in chain order, or raises TrajectoryError naming the first fault met.
    """
    times, positions, velocities, accelerations = [], [], [], []

    def vector(values, what):
        if len(values) != n:
            raise TrajectoryError(f'{what} has {len(values)} values, expected {n}')
        if not all(np.isfinite(v) for v in values):
            raise TrajectoryError(f'{what} contains NaN or inf')
        return np.array([float(values[i]) for i in order])

    for k, point in enumerate(points):
        t = float(point.time_from_start)
        if not np.isfinite(t) or t < 0.0:
            raise TrajectoryError(f'point {k}: time_from_start {t} s is negative or not finite')
        if k > 0 and t <= times[-1]:
            raise TrajectoryError(
                f'point {k}: time_from_start {t} s is not after point {k - 1}\'s '
                f'{times[-1]} s (must be strictly increasing)')
        times.append(t)
        positions.append(vector(point.positions, f'point {k} positions'))
        if len(point.accelerations) and not len(point.velocities):
            raise TrajectoryError(f'point {k}: accelerations given without velocities')
        velocities.append(vector(point.velocities, f'point {k} velocities')
                          if len(point.velocities) else None)
        accelerations.append(vector(point.accelerations, f'point {k} accelerations')
                             if len(point.accelerations) else None)
    return times, positions, velocities, accelerations


@settings(max_examples=400, deadline=None)
@given(st.lists(_point_strategy(), min_size=1, max_size=6),
       st.permutations(range(N)), st.booleans())
def test_array_check_agrees_with_the_point_by_point_check(points, order, increasing):
    """Waypoints are checked in a fixed number of array operations whatever their count;
    they must accept what a point-by-point check accepts, name the fault it names first,
    and give the same waypoints in chain order (given as points or as WaypointArrays)."""
    if increasing:          # times as running sums: mostly valid trajectories
        points = [p._replace(time_from_start=sum(abs(x.time_from_start) for x in points[:k + 1]))
                  for k, p in enumerate(points)]
    names = [CHAIN[i] for i in np.argsort(order)]    # chain joint i is column order[i]
    order = list(order)
    try:
        expected = point_by_point(points, N, order)
    except TrajectoryError as err:
        with pytest.raises(TrajectoryError) as raised:
            build(points, joint_names=names, receipt=0.0)
        assert str(raised.value) == str(err)
        return
    for given_as in (points, waypoint_arrays(points, N)):
        traj = build(given_as, joint_names=names, receipt=0.0)
        np.testing.assert_array_equal(traj.times, expected[0])
        np.testing.assert_array_equal(traj.positions, np.array(expected[1]))
        for got, mask, want in ((traj.velocities, traj.has_velocities, expected[2]),
                                (traj.accelerations, traj.has_accelerations, expected[3])):
            assert mask.tolist() == [w is not None for w in want]
            for row, w in zip(got, want):
                np.testing.assert_array_equal(row, ZERO if w is None else w)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0.05, 2.0), st.lists(finite, min_size=N, max_size=N),
                          st.booleans(), st.booleans()), min_size=2, max_size=6),
       st.floats(0.0, 0.999), st.integers(0, 2**32 - 1))
def test_sampling_uses_each_segments_polynomial(waypoints, fraction, seed):
    """Trajectory.sample evaluates coefficients worked out once per segment; they must
    give what SciPy's Hermite interpolants give for the same two waypoints, for every mix
    of waypoints with and without velocities/accelerations, and on the way in from the
    state at receipt."""
    rng = np.random.default_rng(seed)
    points, t = [], 0.0
    for step, q, with_vel, with_acc in waypoints:
        t += step
        qd = rng.uniform(-2, 2, N).tolist() if with_vel else []
        qdd = rng.uniform(-5, 5, N).tolist() if with_vel and with_acc else []
        points.append(TrajectoryPoint(t, q, qd, qdd))
    traj = build(points, receipt=0.0)

    def triple(p):
        return tuple(np.array(v) if len(v) else np.zeros(N)
                     for v in (p.positions, p.velocities, p.accelerations))

    def degree(a, b):
        if len(a.velocities) and len(b.velocities):
            return 5 if len(a.accelerations) and len(b.accelerations) else 3
        return 1

    k = min(int(fraction * (len(points) - 1)), len(points) - 2)
    segments = [(0.0, TrajectoryPoint(0.0, ZERO, ZERO, ZERO), points[0]),  # the way in
                (points[k].time_from_start, points[k], points[k + 1])]
    for t_a, a, b in segments:
        t_b = b.time_from_start
        t = t_a + fraction * (t_b - t_a)
        want = scipy_reference(t, t_a, triple(a), t_b, triple(b), degree(a, b))
        scale = 1.0 + 1.0 / (t_b - t_a) ** 2
        for g, w in zip(traj.sample(t), want):
            np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-7 * scale * 10.0)


def test_prepared_waypoints_give_the_same_trajectory():
    """prepare_waypoints ahead (as the node's receiving process does), then the stamp and
    the way in: the same reference as from the points; and only for the chain's joints."""
    from ne_dynamics_ros.control.reference.trajectory import prepare_waypoints
    rng = np.random.default_rng(4)
    names = CHAIN[::-1]
    points = [TrajectoryPoint(0.2 * (k + 1), rng.normal(size=N),
                              rng.normal(size=N) if k % 3 else [],
                              rng.normal(size=N) if k % 3 == 1 else []) for k in range(12)]
    direct = build(points, joint_names=names, receipt=1.0, before=at_rest(ZERO + 0.1))
    prepared = prepare_waypoints(names, points, CHAIN)
    ahead = build(prepared, joint_names=CHAIN, receipt=1.0, before=at_rest(ZERO + 0.1))
    for t in np.linspace(0.5, 4.0, 57):
        for got, want in zip(ahead.sample(t), direct.sample(t)):
            np.testing.assert_array_equal(got, want)
    with pytest.raises(TrajectoryError, match='not of this chain'):
        build(prepared, joint_names=names)
