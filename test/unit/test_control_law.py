"""The control laws (ne_dynamics_ros.control.laws) against Pinocchio on the same URDFs.

Expected efforts come from ``pinocchio.rnea`` / ``crba`` / ``aba`` on a Pinocchio model
built from the same URDF file with the same armature, never from our own RNEA. Effort
limits and friction coefficients are read from the URDF with ElementTree, not from our
model.
"""
import math
import pathlib

import numpy as np
import pytest

from ne_dynamics_ros import load_model
from ne_dynamics_ros.control.laws import (
    clamp, compute_effort, ControlMode, ControlParameterError, JointGains,
    NonFiniteEffortError, parse_mode)
from ne_dynamics_ros.control.config.parameter_checks import (check_effort_limits, check_gravity,
                                                             expand_gain)
from ne_dynamics_ros.control.sensing.velocity_estimator import VelocityEstimator
from ne_dynamics_ros.errors import StateError
from references import PinocchioArm, urdf_joint_values

CONFIG_DIR = pathlib.Path(__file__).resolve().parents[2] / 'config'
PUMA560_URDF = CONFIG_DIR / 'puma560.urdf'
UR5E_URDF = CONFIG_DIR / 'ur5e.urdf'
#: Lee et al. (1982), section 5: Kp = 100, Kv = 2 sqrt(Kp) = 20 on each joint.
PAPER_KP, PAPER_KD = 100.0, 20.0
GRAVITY = np.array([0.0, 0.0, -9.81])


def armature_for(n, seed=3):
    return np.random.default_rng(seed).uniform(0.0, 0.5, n)


@pytest.fixture(scope='module', params=[
    (PUMA560_URDF, 'mdh'), (PUMA560_URDF, 'dh'), (UR5E_URDF, 'mdh'), (UR5E_URDF, 'dh')],
    ids=['puma560-mdh', 'puma560-dh', 'ur5e-mdh', 'ur5e-dh'])
def arm(request):
    urdf, convention = request.param
    model = load_model(str(urdf), convention=convention, armature=armature_for(6))
    return model, PinocchioArm(urdf, model.joint_names, model.armature), urdf


def random_states(n, count=5, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield tuple(rng.uniform(-1.5, 1.5, n) for _ in range(5))


def config(mode, n, kp=PAPER_KP, kd=PAPER_KD, limits=None, friction=False, gravity=GRAVITY):
    return JointGains(
        mode=ControlMode(mode), kp=expand_gain(kp, n, 'kp'), kd=expand_gain(kd, n, 'kd'),
        gravity=np.asarray(gravity, dtype=float),
        effort_limits=np.full(n, np.inf) if limits is None else np.asarray(limits),
        friction_compensation=friction)


def test_computed_torque_matches_pinocchio_rnea(arm):
    model, ref, _ = arm
    kp = np.linspace(50.0, 150.0, model.n)     # per-joint gains
    kd = 2.0 * np.sqrt(kp)
    for q, qd, q_d, qd_d, qdd_d in random_states(model.n):
        tau = compute_effort(model, config('computed_torque', model.n, kp, kd),
                             q, qd, q_d, qd_d, qdd_d)
        qdd_cmd = qdd_d + kd * (qd_d - qd) + kp * (q_d - q)          # Lee et al. (1982), eq. 4.4
        np.testing.assert_allclose(tau, ref.rnea(q, qd, qdd_cmd), rtol=1e-9, atol=1e-9)
        # Lee et al. (1982), eq. 4.1: D(q)[...] + H(q, qd) + G(q)
        np.testing.assert_allclose(tau, ref.mass_matrix(q) @ qdd_cmd + ref.bias(q, qd),
                                   rtol=1e-9, atol=1e-9)


def test_computed_torque_linearises_the_exact_model(arm):
    """With the exact model the arm accelerates by qdd_d + Kd e' + Kp e.

    Lee et al. (1982), eqs 4.2, 4.3.
    """
    model, ref, _ = arm
    for q, qd, q_d, qd_d, qdd_d in random_states(model.n, seed=1):
        tau = compute_effort(model, config('computed_torque', model.n), q, qd, q_d, qd_d,
                             qdd_d)
        qdd = ref.aba(q, qd, tau)
        np.testing.assert_allclose(
            qdd, qdd_d + PAPER_KD * (qd_d - qd) + PAPER_KP * (q_d - q), rtol=1e-7, atol=1e-7)


def test_feedforward_matches_pinocchio_rnea_of_the_reference(arm):
    model, ref, _ = arm
    for q, qd, q_d, qd_d, qdd_d in random_states(model.n, seed=2):
        tau = compute_effort(model, config('feedforward', model.n, 30.0, 3.0), q, qd, q_d, qd_d,
                             qdd_d)
        want = ref.rnea(q_d, qd_d, qdd_d) + 30.0 * (q_d - q) + 3.0 * (qd_d - qd)
        np.testing.assert_allclose(tau, want, rtol=1e-9, atol=1e-9)
        # zero gains: pure feedforward
        tau = compute_effort(model, config('feedforward', model.n, 0.0, 0.0), q, qd, q_d, qd_d,
                             qdd_d)
        np.testing.assert_allclose(tau, ref.rnea(q_d, qd_d, qdd_d), rtol=1e-9, atol=1e-9)


def test_gravity_compensation_matches_pinocchio(arm):
    model, ref, _ = arm
    tilted = np.array([1.0, -2.0, -9.0])
    for q, qd, q_d, qd_d, qdd_d in random_states(model.n, seed=4):
        for g in (GRAVITY, tilted):
            tau = compute_effort(model, config('gravity_compensation', model.n, gravity=g),
                                 q, qd, q_d, qd_d, qdd_d)
            want = ref.rnea(q, np.zeros(model.n), np.zeros(model.n), gravity=g)
            np.testing.assert_allclose(tau, want, rtol=1e-9, atol=1e-9)


def test_effort_is_clamped_to_urdf_limits(arm):
    model, ref, urdf = arm
    limits = urdf_joint_values(urdf, model.joint_names, 'limit', 'effort', np.inf)
    rng = np.random.default_rng(5)
    clamped_any = False
    for _ in range(10):
        q, qd, q_d = (rng.uniform(-3, 3, model.n) for _ in range(3))
        tau = compute_effort(model, config('computed_torque', model.n, 1e4, 1e2, limits),
                             q, qd, q_d, np.zeros(model.n), np.zeros(model.n))
        raw = ref.rnea(q, qd, 1e2 * (0.0 - qd) + 1e4 * (q_d - q))
        np.testing.assert_allclose(tau, np.clip(raw, -limits, limits), rtol=1e-9, atol=1e-9)
        assert np.all(np.abs(tau) <= limits)
        clamped_any |= bool(np.any(np.abs(raw) > limits))
    assert clamped_any


def test_friction_compensation_adds_urdf_damping_and_friction():
    model = load_model(str(PUMA560_URDF), armature=armature_for(6))
    ref = PinocchioArm(PUMA560_URDF, model.joint_names, model.armature)
    damping = urdf_joint_values(PUMA560_URDF, model.joint_names, 'dynamics', 'damping', 0.0)
    coulomb = urdf_joint_values(PUMA560_URDF, model.joint_names, 'dynamics', 'friction', 0.0)
    assert np.all(damping > 0) and np.all(coulomb > 0)

    def friction(v, scale=model.coulomb_velocity):
        return damping * v + coulomb * np.tanh(v / scale)

    # the reference's sign is sharper (its own v_s, 0.003 rad/s by default): slow desired
    # velocities, where the two scales differ, among the random ones
    reference = JointGains.__dataclass_fields__['coulomb_velocity'].default
    assert reference == 0.003 and np.all(model.coulomb_velocity == 0.01)
    for k, (q, qd, q_d, qd_d, qdd_d) in enumerate(random_states(model.n, seed=6)):
        if k % 2:
            qd_d = qd_d * 1e-3
        tau = compute_effort(model, config('computed_torque', model.n, friction=True),
                             q, qd, q_d, qd_d, qdd_d)
        qdd_cmd = qdd_d + PAPER_KD * (qd_d - qd) + PAPER_KP * (q_d - q)
        # at the desired velocity: compensated from the moment the reference moves
        np.testing.assert_allclose(tau, ref.rnea(q, qd, qdd_cmd) + friction(qd_d, reference),
                                   rtol=1e-9, atol=1e-9)
        tau = compute_effort(model, config('feedforward', model.n, 0.0, 0.0, friction=True),
                             q, qd, q_d, qd_d, qdd_d)
        np.testing.assert_allclose(tau, ref.rnea(q_d, qd_d, qdd_d) + friction(qd_d, reference),
                                   rtol=1e-9, atol=1e-9)
        tau = compute_effort(model, config('gravity_compensation', model.n, friction=True),
                             q, qd, q_d, qd_d, qdd_d)
        zero = np.zeros(model.n)
        np.testing.assert_allclose(tau, ref.rnea(q, zero, zero) + friction(qd), rtol=1e-9,
                                   atol=1e-9)


def test_identified_friction_shape_is_used_at_measured_velocities_and_offsets_everywhere():
    # an identified v_s per joint and an offset (ne-dynamics identify's friction_velocity,
    # friction_offset): the v_s at measured velocities (gravity_compensation, the observer),
    # the offsets at desired ones too, where the sharper coulomb_velocity stays
    scales = np.array([0.003, 0.01, 0.03, 0.1, 0.05, 0.02])
    offsets = np.array([0.5, -0.3, 0.0, 0.1, -0.05, 0.02])
    model = load_model(str(PUMA560_URDF), armature=armature_for(6),
                       friction_velocity=scales, friction_offset=offsets)
    ref = PinocchioArm(PUMA560_URDF, model.joint_names, model.armature)
    damping = urdf_joint_values(PUMA560_URDF, model.joint_names, 'dynamics', 'damping', 0.0)
    coulomb = urdf_joint_values(PUMA560_URDF, model.joint_names, 'dynamics', 'friction', 0.0)

    def friction(v, scale):
        return damping * v + coulomb * np.tanh(v / scale) + offsets

    reference = JointGains.__dataclass_fields__['coulomb_velocity'].default
    for q, qd, q_d, qd_d, qdd_d in random_states(model.n, seed=7):
        qd, qd_d = qd * 0.05, qd_d * 0.05          # slow: where the scales matter
        tau = compute_effort(model, config('feedforward', model.n, 0.0, 0.0, friction=True),
                             q, qd, q_d, qd_d, qdd_d)
        np.testing.assert_allclose(tau, ref.rnea(q_d, qd_d, qdd_d)
                                   + friction(qd_d, reference), rtol=1e-9, atol=1e-9)
        tau = compute_effort(model, config('gravity_compensation', model.n, friction=True),
                             q, qd, q_d, qd_d, qdd_d)
        zero = np.zeros(model.n)
        np.testing.assert_allclose(tau, ref.rnea(q, zero, zero) + friction(qd, scales),
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(model.friction_torques(qd), friction(qd, scales),
                                   atol=1e-12)
    with pytest.raises(ValueError, match='friction_velocity'):
        load_model(str(PUMA560_URDF), friction_velocity=[0.01] * 5 + [0.0])
    with pytest.raises(ValueError, match='friction_offset'):
        load_model(str(PUMA560_URDF), friction_offset=[0.0] * 5 + [math.nan])


def test_overflowing_gains_never_return_a_non_finite_effort():
    model = load_model(str(PUMA560_URDF))
    q = np.zeros(6)
    with pytest.raises(ValueError):
        compute_effort(model, config('computed_torque', 6, kp=1e308, kd=0.0), q, q, q + 10.0, q,
                       q)


def test_clamp_guards_against_nan_and_inf():
    limits = np.array([1.0, 2.0])
    np.testing.assert_array_equal(clamp([5.0, -5.0], limits), [1.0, -2.0])
    np.testing.assert_array_equal(clamp([0.5, -1.5], np.full(2, np.inf)), [0.5, -1.5])
    for bad in ([np.nan, 0.0], [0.0, np.inf], [-np.inf, 0.0]):
        with pytest.raises(NonFiniteEffortError):
            clamp(bad, limits)


@pytest.mark.parametrize('value, expected', [
    (100, [100.0] * 3), (2.5, [2.5] * 3), ([1, 2, 3], [1.0, 2.0, 3.0]), ([4.0], [4.0] * 3)])
def test_expand_gain(value, expected):
    np.testing.assert_array_equal(expand_gain(value, 3, 'kp'), expected)


@pytest.mark.parametrize('value, match', [
    ([1.0, 2.0], 'one value or 3'), (-1.0, '>= 0'), ([1.0, math.nan, 1.0], 'NaN'),
    (math.inf, 'NaN or inf'), ([[1.0, 2.0, 3.0]], 'one value or 3')])
def test_expand_gain_refuses(value, match):
    with pytest.raises(ControlParameterError, match=match):
        expand_gain(value, 3, 'kp')


def test_parse_mode():
    assert parse_mode('feedforward') is ControlMode.FEEDFORWARD
    with pytest.raises(ControlParameterError, match='computed_torque'):
        parse_mode('torque')


def test_check_effort_limits_and_gravity():
    np.testing.assert_array_equal(check_effort_limits([1, 2, math.inf], 3), [1.0, 2.0, math.inf])
    for bad in ([1.0, 2.0], [1.0, 0.0, 1.0], [1.0, -1.0, 1.0], [1.0, math.nan, 1.0]):
        with pytest.raises(ControlParameterError):
            check_effort_limits(bad, 3)
    np.testing.assert_array_equal(check_gravity([0, 0, -9.81]), [0.0, 0.0, -9.81])
    for bad in ([0.0, -9.81], [0.0, 0.0, math.nan]):
        with pytest.raises(ControlParameterError):
            check_gravity(bad)


def test_parameter_errors_are_value_errors():
    assert issubclass(ControlParameterError, ValueError)
    assert issubclass(NonFiniteEffortError, ValueError)
    assert issubclass(StateError, ValueError)


def test_velocity_estimator_raw_differences():
    est = VelocityEstimator(2, cutoff_hz=math.inf)
    np.testing.assert_array_equal(est.update([0.0, 1.0], 0.0), [0.0, 0.0])
    np.testing.assert_allclose(est.update([0.1, 0.8], 0.1), [1.0, -2.0])
    # time not advancing: estimate unchanged
    np.testing.assert_allclose(est.update([5.0, 5.0], 0.1), [1.0, -2.0])
    # time going back: restart
    np.testing.assert_array_equal(est.update([0.0, 0.0], 0.0), [0.0, 0.0])


def test_velocity_estimator_low_pass_converges_on_a_ramp():
    cutoff, dt, v = 20.0, 0.002, np.array([0.5, -1.0, 2.0])
    est = VelocityEstimator(3, cutoff_hz=cutoff)
    alpha = dt / (dt + 1.0 / (2.0 * math.pi * cutoff))
    for k in range(200):
        qd = est.update(v * k * dt, k * dt)
        if k == 1:
            np.testing.assert_allclose(qd, alpha * v)      # first-order filter step
    np.testing.assert_allclose(qd, v, rtol=1e-6)
    with pytest.raises(ControlParameterError):
        VelocityEstimator(3, cutoff_hz=0.0)


def test_generated_program_takes_the_plain_float_path_with_the_same_results(arm):
    """With a generated program (CompiledDynamics) the computed-torque law runs on plain
    floats; it must match Pinocchio, clamp like clamp, and refuse what the
    checked path refuses."""
    from ne_dynamics_ros.codegen import CompiledDynamics
    model, ref, _ = arm
    compiled = CompiledDynamics(model)
    limits = np.linspace(5.0, 60.0, model.n)
    kp = np.linspace(50.0, 150.0, model.n)
    kd = 2.0 * np.sqrt(kp)
    cfg = config('computed_torque', model.n, kp, kd, limits=limits)
    calls = []
    original = compiled.rnea_values
    compiled.rnea_values = lambda *a: calls.append(1) or original(*a)
    clamped = 0
    for q, qd, q_d, qd_d, qdd_d in random_states(model.n, count=20, seed=5):
        tau = compute_effort(compiled, cfg, q, qd, q_d, qd_d, qdd_d)
        qdd_cmd = qdd_d + kd * (qd_d - qd) + kp * (q_d - q)
        expected = np.clip(ref.rnea(q, qd, qdd_cmd), -limits, limits)
        np.testing.assert_allclose(tau, expected, rtol=1e-9, atol=1e-9)
        clamped += int(np.sum(np.abs(tau) == limits))
    assert len(calls) == 20 and clamped > 0
    q = np.zeros(model.n)
    with pytest.raises(ValueError):          # overflow: the checked path raises
        compute_effort(compiled, config('computed_torque', model.n, kp=1e308, kd=0.0),
                       q, q, q + 10.0, q, q)
    with pytest.raises(ValueError):          # NaN state: the checked path raises
        compute_effort(compiled, cfg, q + np.nan, q, q, q, q)


def test_the_generated_program_runs_once_per_state(arm):
    """compute_effort and compute_effort_values share one path, and CompiledDynamics does
    not retry: one run of the program for a usual state, an overflowing one and a NaN one
    (each of the last two refused with the checked path's error)."""
    from ne_dynamics_ros.codegen import CompiledDynamics
    from ne_dynamics_ros.control.laws import compute_effort_values
    from ne_dynamics_ros.errors import StateError
    model, _, _ = arm
    compiled = CompiledDynamics(model)
    runs = []
    program = compiled._single
    compiled._single = lambda *a: runs.append(1) or program(*a)
    q = np.zeros(model.n)
    usual = config('computed_torque', model.n, kp=100.0, kd=20.0)
    absurd = config('computed_torque', model.n, kp=1e308, kd=0.0)
    # (config, measured q, desired q_d, the error expected)
    cases = [(usual, q, q, None), (absurd, q, q + 10.0, 'qdd contains NaN or inf'),
             (usual, q + np.nan, q, 'q contains NaN or inf')]
    for cfg, q_measured, q_d, error in cases:
        for law in (compute_effort, compute_effort_values):
            runs.clear()
            state = [v if law is compute_effort else v.tolist()
                     for v in (q_measured, q, q_d, q, q)]
            if error is None:
                law(compiled, cfg, *state)
            else:
                with pytest.raises(StateError, match=error):
                    law(compiled, cfg, *state)
            assert len(runs) == 1, (law.__name__, error, len(runs))
    runs.clear()
    with pytest.raises(StateError, match='not finite'):      # finite inputs, overflow
        compiled.rnea(q, q, np.full(model.n, 1e308))
    assert len(runs) == 1
