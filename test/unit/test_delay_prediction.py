"""Prediction across the loop's delay with the model, against Pinocchio.

Through controller_manager a command computed from the state read at cycle k is written
at cycle k + 1 and acts until cycle k + 2. ``delay_prediction: model`` carries the state
across ``delay_compensation`` by the model's forward dynamics under the command in force
and samples the reference there (:func:`~ne_dynamics_ros.control.prediction.
predict_with_model`). Here: the prediction equals Pinocchio's ABA under that command
(the URDF's friction included), and on a delayed loop integrated with Pinocchio (the
command of each state applied from the next cycle's write to the one after) the
prediction takes out most of the error the delay causes.
"""
from collections import deque

import numpy as np
import pytest
from references import (KP, KD, PinocchioArm, PUMA_ARMATURE, PUMA_JOINTS, PUMA_URDF, Q0,
                        UR5E_URDF, urdf_joint_values)

from ne_dynamics_ros.control import ComputedTorqueController
from ne_dynamics_ros.control.laws import ControlParameterError
from ne_dynamics_ros.control.prediction import predict_with_model
from ne_dynamics_ros.control.reference.trajectory import TrajectoryPoint

MS = 1_000_000
S = 1_000_000_000
#: v_s of the model's Coulomb friction, tanh(qd / v_s) (friction_velocity's default).
FRICTION_VELOCITY = 0.01
UR5E = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
        'wrist_2_joint', 'wrist_3_joint']


def puma(**settings):
    values = dict({'kp': KP, 'kd': KD, 'state_timeout': 5.0}, **settings)
    return ComputedTorqueController.from_urdf(str(PUMA_URDF), armature=PUMA_ARMATURE,
                                              settings=values)


def puma_friction(qd):
    damping = urdf_joint_values(PUMA_URDF, PUMA_JOINTS, 'dynamics', 'damping', 0.0)
    coulomb = urdf_joint_values(PUMA_URDF, PUMA_JOINTS, 'dynamics', 'friction', 0.0)
    assert np.all(damping > 0) and np.all(coulomb > 0)      # friction is part of it
    return damping * qd + coulomb * np.tanh(qd / FRICTION_VELOCITY)


@pytest.mark.parametrize('settings, friction', [
    ({'friction_compensation': True}, True),
    ({}, False),                                   # Lee et al.'s law: friction left out
    ({'friction_compensation': True, 'hardware_compensates_friction': True}, False)])
def test_the_models_forward_dynamics_are_pinocchios_with_the_friction_the_law_commands(
        settings, friction):
    ref = PinocchioArm(PUMA_URDF, PUMA_JOINTS, PUMA_ARMATURE)
    hardware = settings.pop('hardware_compensates_friction', False)
    c = ComputedTorqueController.from_urdf(
        str(PUMA_URDF), armature=PUMA_ARMATURE, hardware_compensates_friction=hardware,
        settings=dict({'kp': KP, 'kd': KD, 'state_timeout': 5.0}, **settings))
    rng = np.random.default_rng(5)
    for _ in range(5):
        q, qd, u = rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6), rng.uniform(-20, 20, 6)
        accelerations = c.data.sent.accelerations(c.context)
        drag = puma_friction(qd) if friction else 0.0
        np.testing.assert_allclose(accelerations(q.tolist(), qd.tolist(), u.tolist()),
                                   ref.aba(q, qd, u - drag), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize('dynamics', ['pinocchio', 'the law\'s model'])
def test_the_prediction_integrates_the_commands_in_flight_as_pinocchio_does(dynamics):
    ref = PinocchioArm(PUMA_URDF, PUMA_JOINTS, PUMA_ARMATURE)
    period, delay, t = 0.002, 0.0052, 1.0

    def pinocchio(q, qd, u):
        return ref.aba(np.asarray(q), np.asarray(qd), np.asarray(u)).tolist()
    accelerations = pinocchio
    if dynamics != 'pinocchio':
        # the node's: M(q) held at the measured state over the delay, no friction
        # (Lee et al.'s law leaves it out, so its model does)
        controller = puma()
        accelerations = controller.data.sent.accelerations(controller.context)

    def reference(_):
        return [0.0] * 6, [0.0] * 6, [0.0] * 6
    rng = np.random.default_rng(7)
    sent = [(t - 2 * period + k * period, rng.uniform(-30, 30, 6).tolist()) for k in range(3)]
    q0, qd0 = Q0 + 0.1, np.full(6, 0.2)
    q_hat, qd_hat, _ = predict_with_model(reference, t, delay, period, q0, qd0, sent,
                                          accelerations)
    # the same commands, each from t_j + T - P/2, integrated finely by RK4 to t + T - P/2;
    # the last half period with the reference (at rest here): the velocity carried on
    q, qd = q0.copy(), qd0.copy()
    starts = [t_j + delay - period / 2 for t_j, _ in sent]
    edges = [t] + [b for b in starts if t < b < t + delay - period / 2] + \
        [t + delay - period / 2]
    for a, b in zip(edges, edges[1:]):
        acting = max(j for j, begin in enumerate(starts) if begin <= a + 1e-12) \
            if any(begin <= a + 1e-12 for begin in starts) else 0
        q, qd = rk4(ref, q, qd, np.asarray(sent[acting][1]), b - a, 1e-5)
    q = q + period / 2 * qd
    np.testing.assert_allclose(q_hat, q, atol=2e-6)
    np.testing.assert_allclose(qd_hat, qd, atol=2e-3)
    assert np.max(np.abs(np.asarray(q_hat) - (q0 + delay * qd0))) > 1e-4   # it matters


@pytest.mark.parametrize('value', ['smith', '', 3])
def test_an_unknown_delay_prediction_is_refused_by_name(value):
    with pytest.raises(ControlParameterError, match='delay_prediction'):
        puma(delay_prediction=value)


def rk4(ref, q, qd, u, span, h):
    """Integrate Pinocchio's ABA under the constant effort ``u`` over ``span`` s."""
    steps = max(1, int(round(span / h)))
    dt = span / steps
    for _ in range(steps):
        k1v, k1a = qd, ref.aba(q, qd, u)
        k2v = qd + 0.5 * dt * k1a
        k2a = ref.aba(q + 0.5 * dt * k1v, k2v, u)
        k3v = qd + 0.5 * dt * k2a
        k3a = ref.aba(q + 0.5 * dt * k2v, k3v, u)
        k4v = qd + dt * k3a
        k4a = ref.aba(q + dt * k3v, k4v, u)
        q = q + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        qd = qd + dt / 6 * (k1a + 2 * k2a + 2 * k3a + k4a)
    return q, qd


def delayed_loop(prediction, delay, rate=500.0, duration=1.2, write_offset=2e-4, lag=1):
    """Worst |q_d - q| of a 0.3 rad quintic through a one-cycle-late effort loop.

    The UR5e integrated by Pinocchio (RK4 at 0.25 ms); the state read at cycle k
    (instant k P) is answered, and the answer acts from the write of cycle k + 1
    (``(k + 1) P + write_offset``) to the next write, as through controller_manager.
    """
    ref = PinocchioArm(UR5E_URDF, UR5E, np.zeros(6))
    settings = {'kp': 2500.0, 'kd': 100.0, 'state_timeout': 5.0}
    if prediction:
        settings.update(delay_compensation=delay, delay_prediction=prediction)
    c = ComputedTorqueController.from_urdf(str(UR5E_URDF), settings=settings)
    q0 = np.array([0.0, -1.5708, 1.5708, -1.5708, -1.5708, 0.0])
    goal = q0 + np.array([0.3, -0.3, 0.3, 0.3, 0.3, 0.3])
    move = 0.8
    times = np.linspace(0.0, move, 41)
    s = times / move
    shape = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5
    speed = (30 * s ** 2 - 60 * s ** 3 + 30 * s ** 4) / move
    accel = (60 * s - 180 * s ** 2 + 120 * s ** 3) / move ** 2
    points = [TrajectoryPoint(float(t), q0 + a * (goal - q0), b * (goal - q0),
                              g * (goal - q0))
              for t, a, b, g in zip(times, shape, speed, accel)]
    period = 1.0 / rate
    q, qd = q0.copy(), np.zeros(6)
    u_now = ref.rnea(q0, np.zeros(6), np.zeros(6))     # the arm held before the move
    c.update(0, UR5E, q, qd, stamp_ns=0)
    c.set_trajectory(UR5E, points, 0, 0)
    pending, worst, h = deque(), 0.0, period / 8
    for k in range(int(duration / period)):
        t_ns = round(k * period * S)
        out = c.update(t_ns, UR5E, q, qd, stamp_ns=t_ns)
        assert hasattr(out, 'effort'), f'no command at {k * period:.3f} s: {out}'
        worst = max(worst, float(np.max(np.abs(out.position_error))))
        # this cycle: the command in force until the write, then the answer to the
        # state before
        q, qd = rk4(ref, q, qd, u_now, write_offset, h)
        if len(pending) == lag:
            u_now = pending.popleft()
        q, qd = rk4(ref, q, qd, u_now, period - write_offset, h)
        pending.append(np.asarray(out.effort))
    return worst


def test_one_cycle_late_the_prediction_takes_out_most_of_the_delays_error():
    delay = 1.5 / 500.0 + 2e-4          # the write one cycle on, the middle of its hold
    none = delayed_loop(None, 0.0)
    model = delayed_loop('model', delay)
    rate = delayed_loop('error_rate', delay)
    print(f'worst error: no prediction {none:.3e}, model {model:.3e}, error rate {rate:.3e}')
    assert model < 0.05 * none and rate < 0.05 * none


def test_six_cycles_late_only_the_models_prediction_keeps_the_loop_tracking():
    delay = 6.5 / 500.0 + 2e-4          # 13.2 ms: past what kp 2500 / kd 100 tolerate
    none = delayed_loop(None, 0.0, lag=6, duration=1.6)
    model = delayed_loop('model', delay, lag=6, duration=1.6)
    print(f'worst error: no prediction {none:.3e}, model {model:.3e}')
    assert model < 0.05 * none
    assert model < 1e-4
    with pytest.raises(AssertionError, match='no command'):
        delayed_loop('error_rate', delay, lag=6, duration=1.6)
