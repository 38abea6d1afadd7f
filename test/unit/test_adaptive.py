"""Slotine & Li's adaptive computed torque (ne_dynamics_ros.control.laws.slotine_li).

The load's frame map against Pinocchio with the load added to its model; the law with
Γ = 0 against M q̈_r + C q̇_r + g + K_D s from Pinocchio; a 2 kg load the model does not
know learned in closed loop on the Pinocchio plant; estimates that stay physical when
the data push them towards a negative mass; bad settings and NaN states refused.
"""
import math

import numpy as np
import pinocchio as pin
import pytest
import yaml
from references import CONFIG_DIR, PUMA560_URDF, UR5E_URDF

from ne_dynamics_ros import load_model
from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
from random_urdf import PinocchioReference, random_chains

from ne_dynamics_ros.codegen.payload_step import PayloadStep
from ne_dynamics_ros.control.laws.slotine_li import adaptation_gains, link_frame, PayloadAdaptation
from ne_dynamics_ros.control.laws.physical_load import (is_physical, parameters_of,
                                                        project_physical, pseudo_inertia)
from ne_dynamics_ros.control.reference.profiles import evaluate
from ne_dynamics_ros.dynamics.standard_parameters import model_with_parameters, PER_JOINT
from ne_dynamics_ros.errors import ModelError, StateError
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm

PUMA_ARMATURE = yaml.safe_load((CONFIG_DIR / 'puma560.yaml').read_text())[
    'computed_torque_node']['ros__parameters']['armature']
LEE_BOUND = 4.26e-4
START = np.radians([90, 0, 90, 0, 0, 0.0])          # the PUMA motion of Lee et al. (1982)
GOAL = np.radians([45, 30, 0, 45, 60, 90.0])


def load(mass=2.0, com=(0.05, -0.02, 0.1), inertia=(0.01, 0.02, 0.015)):
    """The 10 parameters at the link origin of a body (kg, m, kg m² about its centre)."""
    c = np.asarray(com, dtype=float)
    J = np.diag(inertia) + mass * ((c @ c) * np.eye(3) - np.outer(c, c))
    return np.array([J[0, 0], J[0, 1], J[0, 2], J[1, 1], J[1, 2], J[2, 2], *(mass * c),
                     mass]), c, np.diag(inertia)


@pytest.mark.parametrize('convention', ['mdh', 'dh'])
@pytest.mark.parametrize('urdf, tip, link', [(UR5E_URDF, 'tool0', 'tool0'),
                                             (PUMA560_URDF, 'flange', 'flange'),
                                             (UR5E_URDF, 'tool0', 'wrist_2_link')])
def test_a_load_on_a_link_is_pinocchios_load_there(urdf, tip, link, convention):
    model = load_model(str(urdf), tip_link=tip, convention=convention)
    body, T = link_frame(model, link)
    parameters, c, inertia_at_com = load()
    pi = model.standard_parameters().copy()
    pi[PER_JOINT * body:PER_JOINT * body + 10] += T @ parameters
    loaded = model_with_parameters(model, pi)
    reference = pin.buildModelFromUrdf(str(urdf))
    frame = reference.frames[reference.getFrameId(link)]
    reference.inertias[frame.parentJoint] = reference.inertias[frame.parentJoint] + \
        frame.placement.act(pin.Inertia(2.0, c, inertia_at_com))
    data = reference.createData()
    rng = np.random.default_rng(2)
    for _ in range(3):
        q, qd, qdd = rng.normal(size=(3, 6))
        expected = pin.rnea(reference, data, q, qd, qdd)
        np.testing.assert_allclose(loaded.rnea(q, qd, qdd), expected, atol=1e-10)


def test_with_gamma_zero_the_law_is_slotine_li_with_a_fixed_model():
    model = load_model(str(PUMA560_URDF), tip_link='flange', armature=PUMA_ARMATURE,
                       damping=np.zeros(6), friction=np.zeros(6))
    law = PayloadAdaptation(model, lam=[30, 30, 40, 40, 50, 50], k=25.0, gamma=np.zeros(10))
    reference = pin.buildModelFromUrdf(str(PUMA560_URDF))
    reference.armature[:] = PUMA_ARMATURE
    data = reference.createData()
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, qd, q_d, qd_d, qdd_d = rng.normal(size=(5, 6))
        tau, s = law.step(q, qd, q_d, qd_d, qdd_d, dt=0.002)
        lam = np.array([30, 30, 40, 40, 50, 50.0])
        qd_r, qdd_r = qd_d + lam * (q_d - q), qdd_d + lam * (qd_d - qd)
        M = pin.crba(reference, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        expected = (M @ qdd_r + pin.computeCoriolisMatrix(reference, data, q, qd) @ qd_r
                    + pin.computeGeneralizedGravity(reference, data, q) + M @ (25.0 * s))
        np.testing.assert_allclose(s, qd_r - qd, atol=1e-12)
        np.testing.assert_allclose(tau, expected, atol=1e-9)
        assert not np.any(law.estimate)


def check_generated_step(model, reference, link, rng, prismatic=None):
    """The generated step (τ, Y_loadᵀ s) against Pinocchio's law with the load added to
    its model (τ = M̂ (q̈_r + K s) + Ĉ q̇_r + ĝ), and against the NumPy regressor (g)."""
    parameters, c, inertia_at_com = load(mass=rng.uniform(0.1, 3), com=rng.normal(0, 0.1, 3))
    pin_model = reference.model
    frame = pin_model.frames[pin_model.getFrameId(link)]
    pin_model.inertias[frame.parentJoint] = pin_model.inertias[frame.parentJoint] + \
        frame.placement.act(pin.Inertia(parameters[9], c, inertia_at_com))
    reference.data = pin_model.createData()
    n = model.n
    lam, k = rng.uniform(1, 50, (2, n))
    generated = PayloadAdaptation(model, lam, k, link=link, generated=True)
    numeric = PayloadAdaptation(model, lam, k, link=link, generated=False)
    for law in (generated, numeric):
        law.estimate = parameters.copy()
    for _ in range(3):
        q, qd, q_d, qd_d, qdd_d = rng.normal(0, 1, (5, n))
        if prismatic is not None:
            q, q_d = (np.where(prismatic, 0.1 * v, v) for v in (q, q_d))
        tau, g = generated.values(*(v.tolist() for v in (q, qd, q_d, qd_d, qdd_d)))
        qd_r = qd_d + lam * (q_d - q)
        s = qd_r - qd
        a = qdd_d + lam * (qd_d - qd) + k * s
        expected = (reference.mass_matrix(q) @ a + reference.coriolis_matrix(q, qd) @ qd_r
                    + reference.gravity_torques(q))
        scale = max(1.0, np.abs(expected).max())
        np.testing.assert_allclose(tau, expected, atol=1e-9 * scale)
        tau_numeric, s_numeric, Y_load = numeric.effort(q, qd, q_d, qd_d, qdd_d)
        np.testing.assert_allclose(tau_numeric, expected, atol=1e-9 * scale)
        np.testing.assert_allclose(g, Y_load.T @ s_numeric,
                                   atol=1e-9 * max(1.0, np.abs(Y_load.T @ s).max()))


@pytest.mark.parametrize('convention', ['mdh', 'dh'])
@pytest.mark.parametrize('urdf, tip, link', [(UR5E_URDF, 'tool0', 'tool0'),
                                             (PUMA560_URDF, 'flange', 'flange'),
                                             (UR5E_URDF, 'tool0', 'forearm_link')])
def test_the_generated_step_is_pinocchios_law_with_the_load(urdf, tip, link, convention):
    armature = np.random.default_rng(3).uniform(0, 1, 6)
    model = load_model(str(urdf), tip_link=tip, convention=convention, armature=armature,
                       damping=np.zeros(6), friction=np.zeros(6))
    reference = PinocchioReference(urdf.read_text(), model.joint_names, tip,
                                   armature=armature)
    check_generated_step(model, reference, link, np.random.default_rng(7))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(robot=random_chains(max_joints=6), seed=st.integers(0, 2**32 - 1),
       convention=st.sampled_from(['mdh', 'dh']))
def test_the_generated_step_on_random_chains(robot, seed, convention):
    rng = np.random.default_rng(seed)
    prismatic = np.array([t == 'prismatic' for t in robot['types']])
    model = load_model(robot['xml'], tip_link=robot['tip'], convention=convention,
                       damping=np.zeros(len(prismatic)), friction=np.zeros(len(prismatic)))
    reference = PinocchioReference(robot['xml'], robot['joints'], robot['tip'],
                                   locked=robot['locked'])
    links = [joint.child_link for joint in model.chain.joints] + [robot['tip']]
    check_generated_step(model, reference, links[rng.integers(len(links))], rng, prismatic)


def test_a_generated_step_that_differs_from_the_regressor_is_refused(monkeypatch):
    from ne_dynamics_ros.codegen import payload_step
    model = load_model(str(PUMA560_URDF), tip_link='flange')
    body, T = link_frame(model)
    first = PayloadStep(model, body, T)
    assert PayloadStep(model, body, T).step is first.step       # checked once, then reused
    assert PayloadStep(model, body, 2 * T).step is not first.step
    source = payload_step.payload_step_source
    monkeypatch.setattr(payload_step, '_STEPS', type(payload_step._STEPS)())   # generated anew
    monkeypatch.setattr(payload_step, 'payload_step_source', lambda *args: source(
        *args).replace('    return [', '    return [1.000001 * ', 1))   # the first effort off
    with pytest.raises(ModelError, match='differs from the regressor'):
        PayloadStep(model, body, T)


def test_is_physical_agrees_with_the_pseudo_inertias_eigenvalues():
    rng = np.random.default_rng(9)
    physical, other = 0, 0
    for _ in range(2000):
        p = load(mass=rng.uniform(0, 3), com=rng.normal(0, 0.2, 3),
                 inertia=rng.uniform(0, 0.05, 3))[0] + rng.normal(0, 0.01, 10) * (
            rng.uniform() < 0.7)
        eigen = p[9] >= 0 and p[9] <= 2.5 and np.linalg.eigvalsh(pseudo_inertia(p)).min() >= 0
        if p[9] == 0 or abs(np.linalg.eigvalsh(pseudo_inertia(p)).min()) < 1e-9:
            continue                                   # on the boundary: either answer
        assert is_physical(p.tolist(), 2.5) == eigen
        physical, other = physical + eigen, other + (not eigen)
    assert physical > 200 and other > 200
    assert is_physical([0.0] * 10, 1.0) and not is_physical([0.0] * 9 + [-1e-3], 1.0)
    assert not is_physical([1e-3] + [0.0] * 9, 1.0)       # inertia without mass


def run_cycles(law, arm, cycles, rate=500.0, move=2.0, rest=0.5):
    """Lee et al.'s PUMA move there and back, resting at each end; per cycle the worst
    joint error during the moves (rad), and the times (s) the estimate was within 5 % of
    2 kg."""
    dt = 1.0 / rate
    worst, settled, t_all = [], [], 0.0
    for _ in range(cycles):
        error = 0.0
        for k in range(int(round(2 * (move + rest) * rate))):
            t = k * dt
            a, b, t0 = (START, GOAL, rest) if t < move + rest else (GOAL, START,
                                                                    2 * rest + move)
            if t < t0:
                reference = (a, 0 * a, 0 * a)
            else:
                reference = tuple(v[0] for v in evaluate('quintic', np.array([t - t0]), a,
                                                         b, move))
            q, qd = arm.position, arm.velocity
            tau, _ = law.step(q, qd, *reference, dt)
            arm.step(tau, dt)
            if t >= t0:
                error = max(error, float(np.abs(reference[0] - q).max()))
            if abs(law.mass - 2.0) <= 0.1:
                settled.append(t_all + t)
        worst.append(error)
        t_all += 2 * (move + rest)
    return worst, settled


def test_an_unknown_2_kg_load_is_learned_in_closed_loop():
    model = load_model(str(PUMA560_URDF), tip_link='flange', armature=PUMA_ARMATURE,
                       damping=np.zeros(6), friction=np.zeros(6))
    adaptive, fixed = (PayloadAdaptation(model, 40.0, 40.0, gamma=gamma)
                       for gamma in (None, np.zeros(10)))
    results = []
    for law in (adaptive, fixed):
        arm = SimulatedArm(str(PUMA560_URDF), armature=PUMA_ARMATURE, payload_mass=2.0,
                           payload_link='flange', integration_rate=2000.0)
        arm.reset(START)
        results.append(run_cycles(law, arm, 1))
    (learned, settled), (unlearned, _) = results
    assert settled and settled[0] < 1.0                  # within 5 % of the load in 1 s
    assert abs(adaptive.mass - 2.0) < 0.05 * 2.0
    np.testing.assert_allclose(adaptive.center_of_mass, 0.0, atol=0.01)   # at the flange
    assert learned[0] < LEE_BOUND < unlearned[0]
    assert fixed.mass == 0.0


def test_a_load_pushed_towards_negative_mass_stays_physical():
    """The model carries 3 kg the arm does not: the data push the load's mass below 0."""
    model = load_model(str(PUMA560_URDF), tip_link='flange', armature=PUMA_ARMATURE,
                       damping=np.zeros(6), friction=np.zeros(6))
    body, T = link_frame(model, 'flange')
    pi = model.standard_parameters().copy()
    pi[PER_JOINT * body:PER_JOINT * body + 10] += T @ load(3.0, (0.0, 0.0, 0.05))[0]
    law = PayloadAdaptation(model_with_parameters(model, pi), 40.0, 40.0, mass_max=5.0)
    arm = SimulatedArm(str(PUMA560_URDF), armature=PUMA_ARMATURE, integration_rate=2000.0)
    arm.reset(START)
    for _ in range(500):
        tau, _ = law.step(arm.position, arm.velocity, START, 0 * START, 0 * START, 0.002)
        arm.step(tau, 0.002)
        assert 0.0 <= law.mass <= 5.0
        assert np.linalg.eigvalsh(pseudo_inertia(law.estimate)).min() > -1e-12
    assert law.mass < 0.01                  # it wants -3 kg: it stays at the bound


def test_the_projection_keeps_physical_loads_and_mends_the_others():
    physical = load()[0]
    np.testing.assert_allclose(parameters_of(pseudo_inertia(physical)), physical, atol=1e-15)
    np.testing.assert_allclose(project_physical(physical, 10.0), physical, atol=1e-12)
    heavy = project_physical(load(30.0, (0.1, 0.0, 0.0))[0], 10.0)
    assert heavy[9] == pytest.approx(10.0)
    np.testing.assert_allclose(heavy[6:9] / heavy[9], (0.1, 0.0, 0.0), atol=1e-12)
    negative = project_physical(-physical, 10.0)
    assert negative[9] == 0.0 and not np.any(negative)
    strange = physical.copy()
    strange[0] = -1.0                                   # XX < 0: no body has it
    mended = project_physical(strange, 10.0)
    assert np.linalg.eigvalsh(pseudo_inertia(mended)).min() > -1e-12


def test_the_radius_bounds_the_load_by_its_mass():
    """A load whose every point lies within the radius passes; a point mass beyond it does
    not; the projection brings any estimate inside and keeps a load that is inside."""
    rng = np.random.default_rng(4)
    for _ in range(300):
        points = rng.normal(0, 1, (5, 3))
        points *= (rng.uniform(0, 0.2, 5) / np.linalg.norm(points, axis=1))[:, None]
        masses = rng.uniform(0.01, 1.0, 5)
        p = sum(load(m, x, (0.0, 0.0, 0.0))[0] for m, x in zip(masses, points))
        assert is_physical(p.tolist(), 10.0, 1e-12, radius=0.2)
        np.testing.assert_allclose(project_physical(p, 10.0, 0.2), p, atol=1e-12)
        beyond = load(1.0, points[0] / np.linalg.norm(points[0]) * rng.uniform(0.21, 1.0),
                      (0.0, 0.0, 0.0))[0]
        assert is_physical(beyond.tolist(), 10.0) and not is_physical(beyond.tolist(), 10.0,
                                                                      radius=0.2)
        for estimate in (beyond, p + rng.normal(0, 0.5, 10)):
            inside = project_physical(estimate, 10.0, 0.2)
            assert is_physical(inside.tolist(), 10.0, 1e-9, radius=0.2), inside
            assert np.linalg.eigvalsh(pseudo_inertia(inside)).min() > -1e-12
            assert 0.5 * (inside[0] + inside[3] + inside[5]) <= inside[9] * 0.04 + 1e-9


def test_the_projection_takes_the_nearest_psd_second_moments():
    """Σ about the centre of mass made PSD is numpy's eigenvalue clipping, whatever the
    signs of Σ's eigenvalues (one, two, three negative; near-zero loads; multiples of E)."""
    rng = np.random.default_rng(12)
    for trial in range(3000):
        m, c = rng.uniform(0.1, 3.0), rng.normal(0, 0.05, 3)
        sigma = rng.normal(0, 1, (3, 3))
        sigma = (sigma + sigma.T) * (1e-6 if trial % 4 == 1 else 1e-3)
        if trial % 4 == 2:
            sigma = -abs(rng.normal()) * 1e-3 * np.eye(3) + 1e-12 * sigma
        S = m * (sigma + np.outer(c, c))
        J = np.trace(S) * np.eye(3) - S
        p = np.array([J[0, 0], J[0, 1], J[0, 2], J[1, 1], J[1, 2], J[2, 2], *(m * c), m])
        w, V = np.linalg.eigh(sigma)
        S = m * ((V * np.maximum(w, 0.0)) @ V.T + np.outer(c, c))
        J = np.trace(S) * np.eye(3) - S
        expected = [J[0, 0], J[0, 1], J[0, 2], J[1, 1], J[1, 2], J[2, 2], *(m * c), m]
        if is_physical(p.tolist(), 10.0):     # within is_physical's tolerance: kept
            expected = p
        np.testing.assert_allclose(project_physical(p, 10.0), expected, rtol=0,
                                   atol=1e-12 * max(1.0, np.abs(expected).max()))


@pytest.mark.parametrize('urdf, tip, link, armature', [
    (UR5E_URDF, 'tool0', 'tool0', 0.0), (UR5E_URDF, 'tool0', 'wrist_2_link', 0.0),
    (PUMA560_URDF, 'flange', 'flange', 0.05)])
def test_the_load_inertia_bound_holds_for_loads_within_the_radius(urdf, tip, link, armature):
    """Pinocchio with a point mass anywhere within the radius of the link's origin: the
    inertia it adds to each joint's mass-matrix diagonal over the joint's own stays
    within load_inertia_ratio, and the worst point of the sphere comes close to it."""
    from ne_dynamics_ros.control.laws.slotine_li import load_inertia_ratio
    from ne_dynamics_ros.control.laws.gains import workspace_configurations
    model = load_model(str(urdf), tip_link=tip, armature=[armature] * 6)
    mass, radius = 3.0, 0.2
    ratio = load_inertia_ratio(model, link, mass, radius, configurations=5)
    plain = pin.buildModelFromUrdf(str(urdf))
    frame = plain.frames[plain.getFrameId(link)]
    rng = np.random.default_rng(5)
    closest = np.zeros(6)
    for q in workspace_configurations(model, 5):
        own = np.diag(pin.crba(plain, plain.createData(), q)) + armature
        for _ in range(40):
            point = rng.normal(size=3)
            shrink = 1.0 if rng.uniform() < 0.5 else rng.uniform()
            point *= radius / np.linalg.norm(point) * shrink
            loaded = pin.buildModelFromUrdf(str(urdf))
            loaded.inertias[frame.parentJoint] = loaded.inertias[frame.parentJoint] + \
                frame.placement.act(pin.Inertia(mass, point, np.zeros((3, 3))))
            added = np.diag(pin.crba(loaded, loaded.createData(), q)) + armature - own
            assert np.all(added / own <= ratio * (1 + 1e-9) + 1e-12), (added / own, ratio)
            closest = np.maximum(closest, added / own)
    carried = ratio > 0
    assert np.all(closest[carried] > 0.5 * ratio[carried]), (closest, ratio)
    if link == 'wrist_2_link':
        assert ratio[-1] == 0.0                           # wrist 3 carries none of it


def test_adaptive_mode_warns_of_a_joint_a_load_could_swamp():
    """The UR5e URDF has no rotor inertia: wrist 3's own 1e-4 kg·m² is thousands of times
    below what 10 kg within 0.2 m may add, and adaptive mode says so naming the joint;
    with 0.1 kg·m² of armature, or in another mode, it says nothing."""
    from ne_dynamics_ros.control import ComputedTorqueController
    settings = {'mode': 'adaptive', 'payload_mass_max': 10.0, 'payload_radius': 0.2}
    bare = ComputedTorqueController.from_urdf(str(UR5E_URDF), settings=settings)
    caveats = bare.adaptive_caveats
    assert len(caveats) == 1 and 'wrist_3_joint' in caveats[0] and 'armature' in caveats[0]
    driven = ComputedTorqueController.from_urdf(str(UR5E_URDF), armature=[0.1] * 6,
                                                settings=settings)
    assert driven.adaptive_caveats == []
    bare.reconfigure(mode='computed_torque')
    assert bare.adaptive_caveats == []


def test_picked_and_released_loads_leave_no_drift_behind():
    """Four pick-and-place cycles of 1 s moves on the PUMA: with the load bounded to its
    radius the worst error per cycle stays flat under Lee's bound; unbounded (only a PSD
    pseudo-inertia), the second moments each release leaves behind keep it above the bound
    (as first shipped, with the pseudo-inertia's eigen projection, they grew to ~1.6 kg·m²
    for a 2 kg load 5 cm off and the error with them until the loop diverged)."""
    from ne_dynamics_ros.simulation.payload_schedule import PayloadSchedule
    model = load_model(str(PUMA560_URDF), tip_link='flange', armature=PUMA_ARMATURE,
                       damping=np.zeros(6), friction=np.zeros(6))
    move, rest, cycles = 1.0, 0.5, 4
    period = 2 * (move + rest)
    schedule = PayloadSchedule([entry for c in range(cycles) for entry in (
        (c * period, 2.0, (0.0, 0.0, 0.05)), (c * period + rest + move, 0.0, (0.0, 0.0, 0.0)))])

    def worst_per_cycle(radius):
        law = PayloadAdaptation(model, 50.0, 50.0, radius=radius)
        arm = SimulatedArm(str(PUMA560_URDF), armature=PUMA_ARMATURE, payload_link='flange',
                           integration_rate=2000.0, payload_schedule=schedule)
        arm.reset(START)
        return run_cycles(law, arm, cycles, move=move, rest=rest)[0]

    bounded = worst_per_cycle(0.2)
    assert max(bounded) < LEE_BOUND / 4 and max(bounded[2:]) < 1.2 * bounded[1], bounded
    unbounded = worst_per_cycle(1e3)
    assert min(unbounded[1:]) > max(LEE_BOUND, 10 * max(bounded[1:])), (unbounded, bounded)


@pytest.mark.parametrize('kwargs, match', [
    ({'lam': 0.0, 'k': 1.0}, 'lambda'), ({'lam': math.nan, 'k': 1.0}, 'lambda'),
    ({'lam': 1.0, 'k': -1.0}, 'K'), ({'lam': 1.0, 'k': 1.0, 'gamma': np.ones(9)}, 'gamma'),
    ({'lam': 1.0, 'k': 1.0, 'gamma': -np.ones(10)}, 'gamma'),
    ({'lam': 1.0, 'k': 1.0, 'link': 'moon'}, 'adaptation_link'),
    ({'lam': 1.0, 'k': 1.0, 'mass_max': -1.0}, 'payload_mass_max')])
def test_bad_settings_are_refused(kwargs, match):
    model = load_model(str(UR5E_URDF))
    with pytest.raises(ModelError, match=match):
        PayloadAdaptation(model, **kwargs)
    with pytest.raises(ModelError, match='adaptation'):
        adaptation_gains(-1.0)
    with pytest.raises(ModelError, match='length'):
        adaptation_gains(1.0, 0.0)


def test_a_nan_state_never_reaches_the_estimate():
    model = load_model(str(UR5E_URDF))
    law = PayloadAdaptation(model, 40.0, 40.0)
    q = np.zeros(6)
    law.step(q, q + 0.1, q + 0.01, q, q, 0.002)
    before = law.estimate.copy()
    for bad in (np.full(6, math.nan), np.full(6, math.inf)):
        with pytest.raises(StateError):
            law.step(bad, q, q, q, q, 0.002)
    np.testing.assert_array_equal(law.estimate, before)
    law.reset()
    assert not np.any(law.estimate)


# ---- in the controller: mode adaptive ----------------------------------------------------

def test_the_controller_in_adaptive_mode_learns_the_load_of_lees_run():
    """Lee et al.'s PUMA run at 500 Hz with 2 kg at the flange that the model lacks:
    computed torque misses the 4.26e-4 rad bound, adaptive mode with the same kp, kd
    (Λ = K = kd / 2) meets it and reports the load."""
    from references import lee_run
    gains = {'kp': 1600.0, 'kd': 80.0, 'rate': 500.0, 'payload': 2.0}
    _, fixed = lee_run(mode='computed_torque', **gains)
    run, learned = lee_run(mode='adaptive', **gains)
    moving = run.t >= 0.5                 # the motion starts after 0.5 s at rest
    assert np.abs(learned[moving]).max() < LEE_BOUND < np.abs(fixed[moving]).max()
    assert np.abs(learned[moving]).max() < np.abs(fixed[moving]).max() / 100
    # before: the arm sags while the load is learned, less than without learning
    assert np.abs(learned[~moving]).max() < np.abs(fixed).max()


def test_adaptive_settings_are_checked_all_or_nothing_and_the_estimate_reported():
    from ne_dynamics_ros.control import ComputedTorqueController
    from ne_dynamics_ros.control.laws import ControlParameterError
    c = ComputedTorqueController.from_urdf(str(PUMA560_URDF), tip_link='flange',
                                           armature=PUMA_ARMATURE)
    assert c.payload_estimate is None                       # never adaptive yet
    with pytest.raises(ControlParameterError, match='kd > 0'):
        c.reconfigure(mode='adaptive', kd=0.0)
    assert c.settings.mode.value == 'computed_torque'
    for bad in ({'adaptation_gain': -1.0}, {'adaptation_length': 0.0},
                {'payload_mass_max': math.nan}, {'adaptation_lambda': [1.0, 2.0]},
                {'adaptation': 'everything'}, {'composite_weight': -1.0},
                {'composite_cutoff': 0.0}, {'composite_adaptation': 'yes'}):
        with pytest.raises(ControlParameterError):
            c.reconfigure(mode='adaptive', **bad)
    c.reconfigure(mode='adaptive', kp=1600.0, kd=80.0)
    mass, com, inertia = c.payload_estimate
    assert mass == 0.0 and not np.any(com) and not np.any(inertia)
    with pytest.raises(ControlParameterError, match='adaptation_link'):
        ComputedTorqueController.from_urdf(str(PUMA560_URDF), tip_link='flange',
                                           adaptation_link='moon')


def test_the_adaptive_step_follows_a_changed_gravity():
    """At rest on the reference, with no load learned, the adaptive effort is g(q) for
    the gravity set now (the generated step is written for one gravity)."""
    from ne_dynamics_ros.control import ComputedTorqueController
    c = ComputedTorqueController.from_urdf(str(PUMA560_URDF), tip_link='flange',
                                           settings={'mode': 'adaptive', 'kd': 80.0})
    c.configure()
    q = np.radians([10, 20, 30, 40, 50, 60])
    c.activate(q, now_ns=0)
    for k, gravity in enumerate(([0, 0, -9.81], [0, 0, -1.62], [1.0, 0, -9.81])):
        c.reconfigure(gravity=gravity)
        command = c.update(k, c.model.joint_names, q.tolist(), [0.0] * 6, stamp_ns=k)
        np.testing.assert_allclose(command.effort, c.model.gravity_torques(q, gravity=gravity),
                                   atol=1e-9)


# ---- loads picked and released by the simulated arms ---------------------------------------

def test_a_payload_schedule_picks_and_releases_the_load_on_both_plants():
    """Before the pick and after the release each plant is the one built without a load;
    loaded, Pinocchio's and MuJoCo's plants agree with each other (two engines)."""
    from ne_dynamics_ros.simulation.mujoco_arm import MujocoArm
    from ne_dynamics_ros.simulation.payload_schedule import PayloadSchedule
    schedule = PayloadSchedule.from_flat([0.0, 0.0, 0, 0, 0, 0.01, 2.0, 0.0, 0.02, 0.05,
                                          0.03, 0.0, 0, 0, 0])
    state = np.random.default_rng(8).normal(size=(3, 6))
    arms = [SimulatedArm(str(UR5E_URDF), armature=[0.1] * 6, payload_schedule=schedule),
            MujocoArm(str(UR5E_URDF), armature=[0.1] * 6, payload_schedule=schedule)]
    bare = [SimulatedArm(str(UR5E_URDF), armature=[0.1] * 6),
            MujocoArm(str(UR5E_URDF), armature=[0.1] * 6)]
    twins = [SimulatedArm(str(UR5E_URDF), armature=[0.1] * 6),
             MujocoArm(str(UR5E_URDF), armature=[0.1] * 6)]
    for arm in arms + twins:                   # away from the model's zero configuration
        arm.reset(state[0], state[1])
    for when, loaded in ((0.005, False), (0.015, True), (0.035, False)):
        for arm, twin in zip(arms, twins):
            while arm.time < when - 1e-9:
                arm.step(np.zeros(6), 0.005)
                if twin.time < 0.01 - 1e-9:    # before the pick the arm moves as its twin
                    twin.step(np.zeros(6), 0.005)
                    np.testing.assert_allclose(arm.position, twin.position, atol=1e-9)
        got = [arm.acceleration(*state) for arm in arms]
        if loaded:
            np.testing.assert_allclose(got[0], got[1], rtol=1e-6, atol=1e-6)
            assert np.abs(got[0] - bare[0].acceleration(*state)).max() > 0.1
        else:
            for arm, reference in zip(arms, bare):
                np.testing.assert_allclose(arm.acceleration(*state),
                                           reference.acceleration(*state), rtol=1e-6,
                                           atol=1e-6)
    assert [arm.payload_mass for arm in arms] == [0.0, 0.0]


def test_pick_and_place_cycles_compose_the_loads_and_read_back_flat():
    """1.2 kg always at the origin, 2 kg at 5 cm picked for rest + move of each cycle: the
    first moment and mass in force are the two loads' sums; the flat list reads back."""
    from ne_dynamics_ros.simulation.payload_schedule import PayloadSchedule
    schedule = PayloadSchedule.pick_and_place(2, 2.0, 0.5, 2.0, (0.0, 0.0, 0.05), 1.2)
    for t, mass, first_moment in ((0.0, 3.2, 0.1), (2.4, 3.2, 0.1), (2.5, 1.2, 0.0),
                                  (5.0, 3.2, 0.1), (7.5, 1.2, 0.0), (99.0, 1.2, 0.0)):
        m, com = schedule.at(t)
        assert m == pytest.approx(mass) and m * com[2] == pytest.approx(first_moment)
    again = PayloadSchedule.from_flat(schedule.flat())
    assert again.entries == schedule.entries and len(schedule.flat()) == 4 * 5


@pytest.mark.parametrize('values, match', [
    ([0.0, 1.0, 0, 0], '5 numbers'), ([1.0, 1.0, 0, 0, 0, 0.5, 1.0, 0, 0, 0], 'not after'),
    ([0.0, -1.0, 0, 0, 0], 'mass'), ([-1.0, 1.0, 0, 0, 0], 'time'),
    ([0.0, 1.0, math.nan, 0, 0], 'centre of mass')])
def test_a_bad_payload_schedule_is_refused_naming_the_entry(values, match):
    from ne_dynamics_ros.simulation.payload_schedule import PayloadSchedule
    with pytest.raises(ModelError, match=match):
        PayloadSchedule.from_flat(values)


# ---- adaptation: base, and the composite update ---------------------------------------------

@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(robot=random_chains(max_joints=6), seed=st.integers(0, 2**32 - 1),
       convention=st.sampled_from(['mdh', 'dh']))
def test_base_adaptation_starts_from_the_models_dynamics(robot, seed, convention):
    """At its initial estimate the base law is Pinocchio's M a + C q̇_r + g, on random
    chains; its measured-state rows give the regressor's prediction."""
    from ne_dynamics_ros.control.laws.slotine_li import BaseAdaptation
    rng = np.random.default_rng(seed)
    n = len(robot['joints'])
    armature = rng.uniform(0, 1, n)
    model = load_model(robot['xml'], tip_link=robot['tip'], convention=convention,
                       armature=armature, damping=np.zeros(n), friction=np.zeros(n))
    reference = PinocchioReference(robot['xml'], robot['joints'], robot['tip'],
                                   armature=armature, locked=robot['locked'])
    lam, k = rng.uniform(1, 50, (2, n))
    law = BaseAdaptation(model, lam, k)
    q, qd, q_d, qd_d, qdd_d = rng.normal(0, 1, (5, n))
    prismatic = np.array([t == 'prismatic' for t in robot['types']])
    q, q_d = (np.where(prismatic, 0.1 * v, v) for v in (q, q_d))
    tau, g = law.values(*(v.tolist() for v in (q, qd, q_d, qd_d, qdd_d)))
    qd_r = qd_d + lam * (q_d - q)
    a = qdd_d + lam * (qd_d - qd) + k * (qd_r - qd)
    expected = (reference.mass_matrix(q) @ a + reference.coriolis_matrix(q, qd) @ qd_r
                + reference.gravity_torques(q))
    scale = max(1.0, np.abs(expected).max())
    np.testing.assert_allclose(tau, expected, atol=1e-9 * scale)
    tau_fixed, W = law.rows(q.tolist(), qd.tolist(), qdd_d.tolist())
    np.testing.assert_allclose(np.array(tau_fixed) + np.array(W) @ law.estimate,
                               reference.rnea(q, qd, qdd_d), atol=1e-9 * scale)


def adaptive_run(**settings):
    """Lee et al.'s PUMA move at 500 Hz with 2 kg at the flange the model lacks (a model
    without drive friction, as the plant); returns (run, mass estimates per sample)."""
    from ne_dynamics_ros.control import ComputedTorqueController
    from ne_dynamics_ros.simulation.closed_loop import profile_trajectory, run_lockstep
    report = settings.pop('report_effort', False)
    arm = SimulatedArm(str(PUMA560_URDF), armature=PUMA_ARMATURE, payload_mass=2.0,
                       payload_link='flange')
    arm.reset(START)
    controller = ComputedTorqueController.from_urdf(
        str(PUMA560_URDF), tip_link='flange', armature=PUMA_ARMATURE, damping=np.zeros(6),
        friction=np.zeros(6), settings=dict({
            'mode': 'adaptive', 'kp': 1600.0, 'kd': 80.0, 'state_timeout': 10.0,
            'position_limit_margin': math.inf}, **settings))
    masses = []
    trajectory = profile_trajectory(controller.joints, 'quintic', START, GOAL, 3.0, 0.002, 0.5)
    run = run_lockstep(controller, arm, 4.0, 500.0, trajectory, report_effort=report,
                       observe=lambda t: masses.append((controller.payload_estimate or
                                                        (math.nan,))[0]))
    return run, np.array(masses)


def test_base_adaptation_learns_an_unmodelled_load():
    fixed, _ = adaptive_run(mode='computed_torque')
    run, masses = adaptive_run(adaptation='base', adaptation_length=0.5)
    moving = run.t > 0.5
    worst = np.abs(run.position_error[moving]).max()
    assert worst < LEE_BOUND and worst < np.abs(fixed.position_error[moving]).max() / 20
    assert np.all(np.isnan(masses))                 # no payload estimate in base mode


def test_the_composite_update_learns_from_the_measured_efforts():
    """With the efforts the plant applies, the prediction error teaches the load within
    0.1 s and the tracking error drops tenfold; without efforts in the states, the
    composite setting changes nothing."""
    gradient, gradient_mass = adaptive_run(adaptation_gain=30.0)
    composite, composite_mass = adaptive_run(adaptation_gain=30.0, composite_adaptation=True,
                                             composite_weight=0.1, report_effort=True)
    unmeasured, unmeasured_mass = adaptive_run(adaptation_gain=30.0, composite_weight=0.1,
                                               composite_adaptation=True)
    moving = gradient.t > 0.5
    assert abs(composite_mass[50] - 2.0) < 0.05 * 2.0 < abs(gradient_mass[50] - 2.0)
    assert (np.abs(composite.position_error[moving]).max()
            < np.abs(gradient.position_error[moving]).max() / 10)
    np.testing.assert_array_equal(unmeasured_mass, gradient_mass)
    np.testing.assert_array_equal(unmeasured.position_error, gradient.position_error)


def test_a_state_timeout_holds_the_learned_load_up_too():
    """hold_gravity in adaptive mode: g(q) of the arm and of the load learned, at the last
    position: the 2 kg at the flange held, as Pinocchio's model with the load has it."""
    from ne_dynamics_ros.control import ComputedTorqueController
    from ne_dynamics_ros.simulation.closed_loop import run_lockstep
    arm = SimulatedArm(str(PUMA560_URDF), armature=PUMA_ARMATURE, payload_mass=2.0,
                       payload_link='flange')
    arm.reset(START)
    controller = ComputedTorqueController.from_urdf(
        str(PUMA560_URDF), tip_link='flange', armature=PUMA_ARMATURE, damping=np.zeros(6),
        friction=np.zeros(6), settings={'mode': 'adaptive', 'kp': 1600.0, 'kd': 80.0,
                                        'state_timeout': 0.1, 'position_limit_margin': math.inf})
    run = run_lockstep(controller, arm, 1.0, 500.0)
    assert abs(controller.payload_estimate[0] - 2.0) < 0.05 * 2.0
    timeout = controller.check_timeout(round(1.2e9))
    assert timeout.holding
    reference = pin.buildModelFromUrdf(str(PUMA560_URDF))
    unloaded = pin.computeGeneralizedGravity(reference, reference.createData(), run.q[-1])
    frame = reference.frames[reference.getFrameId('flange')]
    reference.inertias[frame.parentJoint] = reference.inertias[frame.parentJoint] + \
        frame.placement.act(pin.Inertia(2.0, np.zeros(3), np.zeros((3, 3))))
    loaded = pin.computeGeneralizedGravity(reference, reference.createData(), run.q[-1])
    assert np.abs(timeout.effort - loaded).max() < 0.05 * np.abs(loaded - unloaded).max()
