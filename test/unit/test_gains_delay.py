"""The gain rule's delay bound, against a time simulation of the delayed loop.

Computed torque leaves ``ë = -kp e(t - T) - kd ė(t - T)`` when the command acts a dead
time ``T`` late. :func:`tolerated_delay` says, from the phase margin, the ``T`` at which
gains in force oscillate (margin 0) and the ``T`` they tolerate (45°); here the delayed
differential equation is integrated (Euler, 10 µs, a history buffer) and must decay just
below the critical delay, grow just above it, and oscillate there at the crossover
frequency. The UR5e gains of config/ur5e_sim.yaml (kp 2500, kd 100) oscillate at ~16 Hz
beyond ~12.9 ms: the 13-17 Hz oscillation seen through topic-based ros2_control with
5-10 cycles of delay at 500 Hz.
"""
import math

import numpy as np
import pytest
from references import UR5E_URDF

from ne_dynamics_ros import load_model
from ne_dynamics_ros.control.laws.gains import (delay_bandwidth, recommended_gains,
                                                tolerated_delay)
from ne_dynamics_ros.errors import ModelError

STEP = 1e-5


def simulate(kp, kd, delay, duration=1.5):
    """Return e(t) of the delayed loop from e = 1 at rest (continuous time, Euler)."""
    lag = int(round(delay / STEP))
    steps = int(duration / STEP)
    # floats in lists, not NumPy scalars in arrays: the same double arithmetic, faster
    kp, kd = float(kp), float(kd)
    e, v = [1.0], [0.0]
    for k in range(steps - 1):
        j = max(0, k - lag)
        a = -kp * e[j] - kd * v[j]
        v.append(v[k] + STEP * a)
        e.append(e[k] + STEP * v[k])
    return np.array(e, dtype=float)


def envelope_growth(e):
    """Ratio of the late to the middle peak |e| (> 1: growing)."""
    n = len(e)
    return np.max(np.abs(e[2 * n // 3:])) / np.max(np.abs(e[n // 3: 2 * n // 3]))


@pytest.mark.parametrize('kp, kd', [(2500.0, 100.0), (100.0, 20.0), (900.0, 30.0)])
def test_the_critical_delay_separates_decay_from_growth(kp, kd):
    # margin 0 at an infinite rate: the dead time alone
    critical = float(tolerated_delay(kp, kd, math.inf, margin=0.0))
    assert envelope_growth(simulate(kp, kd, 0.9 * critical)) < 1.0
    assert envelope_growth(simulate(kp, kd, 1.1 * critical)) > 1.0


def test_the_ur5e_gains_oscillate_at_16_hz_beyond_13_ms():
    critical = float(tolerated_delay(2500.0, 100.0, math.inf, margin=0.0))
    assert critical == pytest.approx(0.01295, abs=2e-4)
    e = simulate(2500.0, 100.0, 1.05 * critical, duration=1.0)
    crossings = np.flatnonzero(np.diff(np.sign(e[len(e) // 2:])) != 0)
    frequency = (len(crossings) - 1) / 2.0 / ((crossings[-1] - crossings[0]) * STEP)
    assert frequency == pytest.approx(102.9 / (2 * math.pi), rel=0.05)   # ω_c = 102.9 rad/s


def test_gains_sized_for_a_delay_keep_45_degrees_there():
    model = load_model(str(UR5E_URDF))
    for delay in (0.006, 0.010, 0.020):
        gains = recommended_gains(model, 500.0, delay=delay)
        assert 'delay' in gains.limited_by
        tolerated = tolerated_delay(gains.kp, gains.kd, 500.0)
        assert np.all(tolerated >= delay - 1e-9)
        assert np.min(tolerated) == pytest.approx(delay, rel=1e-9)
        # and the delayed loop is well damped: the envelope shrinks by half a period
        assert envelope_growth(simulate(gains.kp[0], gains.kd[0], delay + 1e-3)) < 0.5


def test_no_delay_leaves_the_rule_as_it_was():
    model = load_model(str(UR5E_URDF))
    assert np.array_equal(recommended_gains(model, 500.0).kp,
                          recommended_gains(model, 500.0, delay=0.0).kp)
    assert delay_bandwidth(0.0, 500.0) > 500.0 / 10.0       # never the limit without delay


@pytest.mark.parametrize('delay', [-0.001, float('nan'), float('inf'), '0.01'])
def test_a_bad_delay_is_refused(delay):
    with pytest.raises(ModelError, match='delay'):
        recommended_gains(load_model(str(UR5E_URDF)), 500.0, delay=delay)
