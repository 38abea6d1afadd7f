"""The gain rule (ne_dynamics_ros.control.laws.gains) against closed forms and its documentation.

Computed torque leaves ``ë + kd ė + kp e = 0``; the rule picks a critically damped
bandwidth ω = min(rate / 10, the effort limit's bound, the noise's bound). The sampled
error dynamics (zero-order hold, with and without a sample of delay) are checked against
the characteristic polynomial worked out by hand, and their poles inside the unit circle
for the shipped arms at their rates.
"""
import math

import numpy as np
import pytest
import yaml
from references import CONFIG_DIR, PUMA560_URDF, UR5E_URDF

from ne_dynamics_ros import load_model
from ne_dynamics_ros.control.laws.gains import (ERROR_AT_HALF_LIMIT, INTEGRAL_SHARE, NOISE_SHARE,
                                                recommended_gains, sampled_error_poles)
from ne_dynamics_ros.errors import ModelError

PUMA_PARAMS = yaml.safe_load((CONFIG_DIR / 'puma560.yaml').read_text())[
    'computed_torque_node']['ros__parameters']


def puma():
    return load_model(str(PUMA560_URDF), armature=PUMA_PARAMS['armature'])


def test_lees_gains_are_the_rule_at_their_100_hz():
    gains = recommended_gains(puma(), 100.0)
    np.testing.assert_allclose(gains.kp, 100.0)      # Lee et al. (1982), §5: Kp = 100, Kv = 20
    np.testing.assert_allclose(gains.kd, 20.0)
    assert gains.limited_by == ['sampling'] * 6
    assert PUMA_PARAMS['kp'] == 100.0 and PUMA_PARAMS['kd'] == 20.0


@pytest.mark.parametrize('config, urdf, rate', [('puma560', PUMA560_URDF, 100.0),
                                                ('ur5e', UR5E_URDF, 500.0),
                                                ('ur5e_sim', UR5E_URDF, 500.0)])
def test_the_shipped_gains_are_the_rules_and_stable_when_sampled(config, urdf, rate):
    params = yaml.safe_load((CONFIG_DIR / f'{config}.yaml').read_text())[
        'computed_torque_node']['ros__parameters']
    model = load_model(str(urdf), armature=params.get('armature'))
    gains = recommended_gains(model, rate)
    kp = np.broadcast_to(params['kp'], (6,))
    kd = np.broadcast_to(params['kd'], (6,))
    np.testing.assert_allclose(kp, gains.kp, rtol=1e-3)
    np.testing.assert_allclose(kd, gains.kd, rtol=1e-3)
    for p, d in zip(kp, kd):
        for delay in (0, 1):
            assert np.abs(sampled_error_poles(p, d, rate, delay)).max() < 0.95


def test_sampled_poles_match_the_characteristic_polynomial():
    """Zero-order hold: A + B K = [[1 - kp T²/2, T - kd T²/2], [-kp T, 1 - kd T]], so
    z² - (2 - kd T - kp T²/2) z + (1 - kd T + kp T²/2); a sample of delay multiplies the
    loop by 1/z: z³ - 2 z² + z + (kp T²/2 + kd T) z - (kd T - kp T²/2)."""
    kp, kd, rate = 2500.0, 100.0, 500.0
    T = 1.0 / rate
    direct = np.roots([1.0, -(2.0 - kd * T - kp * T * T / 2), 1.0 - kd * T + kp * T * T / 2])
    delayed = np.roots([1.0, -2.0, 1.0 + kp * T * T / 2 + kd * T, -(kd * T - kp * T * T / 2)])
    np.testing.assert_allclose(np.sort_complex(sampled_error_poles(kp, kd, rate, 0)),
                               np.sort_complex(direct), atol=1e-12)
    np.testing.assert_allclose(np.sort_complex(sampled_error_poles(kp, kd, rate, 1)),
                               np.sort_complex(delayed), atol=1e-12)
    # far too fast for the rate: the delayed loop goes unstable
    assert np.abs(sampled_error_poles(250_000.0, 1000.0, rate, 1)).max() > 1.0


def test_rate_effort_limits_and_noise_change_the_gains_as_documented():
    model = load_model(str(UR5E_URDF))
    fast = recommended_gains(model, 500.0)
    # the effort limit binds the shoulders at 500 Hz: M_max kp e = limit / 2
    for j in (0, 1):
        assert fast.limited_by[j] == 'effort limit'
        assert fast.inertia_max[j] * fast.kp[j] * ERROR_AT_HALF_LIMIT == pytest.approx(
            0.5 * model.effort_limits[j], rel=1e-12)
    assert fast.limited_by[2:] == ['sampling'] * 4
    np.testing.assert_allclose(fast.bandwidth[2:], 50.0)
    # at 100 Hz the sampling binds every joint: omega = 10 rad/s
    slow = recommended_gains(model, 100.0)
    np.testing.assert_allclose(slow.kp, 100.0)
    np.testing.assert_allclose(slow.kd, 20.0)
    # half the shoulder's limit: its bandwidth falls by sqrt(2)
    limits = model.effort_limits.copy()
    limits[0] /= 2
    halved = recommended_gains(model, 500.0, effort_limits=limits)
    assert halved.bandwidth[0] == pytest.approx(fast.bandwidth[0] / math.sqrt(2), rel=1e-12)
    np.testing.assert_allclose(halved.integral_limit, INTEGRAL_SHARE * limits)
    # noise: kd sqrt(2) sigma rate M_max = 5 % of the limit where it binds
    noisy = recommended_gains(model, 500.0, position_noise=1e-3)
    for j, why in enumerate(noisy.limited_by):
        if why == 'noise':
            assert noisy.inertia_max[j] * noisy.kd[j] * math.sqrt(2) * 1e-3 * 500.0 == \
                pytest.approx(NOISE_SHARE * model.effort_limits[j], rel=1e-12)
    assert 'noise' in noisy.limited_by
    assert np.all(noisy.kp <= fast.kp * (1 + 1e-12))
    # critically damped everywhere, the integral's pole ten times slower
    np.testing.assert_allclose(noisy.kd ** 2, 4 * noisy.kp)
    np.testing.assert_allclose(fast.ki, fast.inertia_mean * fast.kp * fast.bandwidth / 10)


def test_the_inertia_is_the_mass_matrix_over_the_workspace():
    model = puma()
    gains = recommended_gains(model, 100.0, configurations=64, seed=3)
    rng = np.random.default_rng(3)
    q = rng.uniform(np.where(np.isfinite(model.lower_limits), model.lower_limits, -np.pi),
                    np.where(np.isfinite(model.upper_limits), model.upper_limits, np.pi),
                    size=(64, 6))
    import pinocchio as pin
    pin_model = pin.buildModelFromUrdf(str(PUMA560_URDF))
    pin_model.armature[:] = PUMA_PARAMS['armature']
    data = pin_model.createData()
    diagonal = np.array([np.diag(pin.crba(pin_model, data, qi)) for qi in q])
    np.testing.assert_allclose(gains.inertia_max, diagonal.max(axis=0), rtol=1e-9)


@pytest.mark.parametrize('kwargs, match', [
    ({'rate': 0.0}, 'rate'), ({'rate': math.nan}, 'rate'), ({'rate': 'fast'}, 'rate'),
    ({'rate': 500.0, 'position_noise': -1.0}, 'position_noise'),
    ({'rate': 500.0, 'position_noise': math.nan}, 'position_noise'),
    ({'rate': 500.0, 'effort_limits': [math.inf] * 6}, 'effort limit'),
    ({'rate': 500.0, 'effort_limits': [1.0] * 5}, 'effort_limits')])
def test_bad_arguments_are_refused_naming_them(kwargs, match):
    with pytest.raises(ModelError, match=match):
        recommended_gains(puma(), **kwargs)


def test_identify_measures_the_position_noise_the_rule_takes():
    """White noise on a smooth motion, and a glitch: the noise is found within 5 %."""
    from ne_dynamics_ros.identification.signals import position_noise
    rate = 500.0
    t = np.arange(0.0, 20.0, 1.0 / rate)
    motion = np.stack([0.8 * np.sin(2 * np.pi * 0.3 * t), 0.2 * np.sin(2 * np.pi * 2.0 * t)],
                      axis=1)
    sigma = np.array([1e-4, 3e-6])
    q = motion + np.random.default_rng(1).normal(size=motion.shape) * sigma
    q[5000, 0] += 0.5                                     # one glitch
    np.testing.assert_allclose(position_noise(q, 10.0, rate), sigma, rtol=0.05)
