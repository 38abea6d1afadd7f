"""The Coulomb friction learned from the observer's residual (sensing/friction_estimate.py).

The reference is the friction formula itself: an arm whose drives show ``k Fc`` gives, on
a joint sliding at ``qd`` with no contact, the residual ``r = f_s(qd) - f_arm(qd)`` of an
observer whose friction is the one learned so far, ``s Fc`` (De Luca & Mattone 2005), and
the factor learned must be ``k``; a push, a joint at rest,
a rate of 0 teach nothing; while a contact is held the factor only falls, for a joint that
keeps turning back (a limit cycle), never for one a push moves one way; a joint that never
slid takes the median of the factors learned over at least one time constant.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ne_dynamics_ros.control.sensing.friction_estimate import (CoulombEstimate, REVERSAL_FACTOR,
                                                               REVERSALS, SCALE_RANGE)
from ne_dynamics_ros.dynamics.friction import drive_friction

FC = np.array([2.5, 2.5, 1.5, 0.4, 0.4, 0.0])
FV = np.array([6.0, 6.0, 4.0, 1.0, 1.0, 1.0])
VS = np.full(6, 0.003)


def residual(qd, factor, scale=1.0):
    """r of an arm whose Coulomb friction is ``factor`` times the model's, no contact.

    ``scale``: (n,) or a float, the factor the observer's friction holds (``s``).
    """
    zeros = np.zeros(6)
    return (drive_friction(qd, FV, scale * FC, VS, zeros)
            - drive_friction(qd, FV, factor * FC, VS, zeros))


@settings(max_examples=30, deadline=None)
@given(st.floats(0.3, 3.5), st.lists(st.floats(0.05, 2.0), min_size=6, max_size=6),
       st.lists(st.booleans(), min_size=6, max_size=6))
def test_a_sliding_joint_learns_the_factor_its_drive_shows(factor, speed, negative):
    estimate = CoulombEstimate(FC, VS)
    qd = np.where(negative, -1.0, 1.0) * np.array(speed)
    for _ in range(500):                        # 1 s at 500 Hz, rate 10/s
        assert estimate.update(qd, residual(qd, factor, estimate.scale), 0.002, 10.0, False)
    learns = FC > 0
    assert estimate.scale[learns] == pytest.approx(factor, rel=1e-3)
    assert estimate.scale[~learns] == 1.0      # no Coulomb friction: nothing to scale
    assert estimate.coulomb == pytest.approx((estimate.scale * FC).tolist())


def test_a_push_a_joint_at_rest_and_a_rate_of_zero_teach_nothing():
    estimate = CoulombEstimate(FC, VS)
    assert estimate.sliding_velocity.tolist() == [0.015] * 6       # 5 v_s, over 0.01
    assert CoulombEstimate(FC, np.full(6, 1e-4)).sliding_velocity.tolist() == [0.01] * 6
    qd = np.full(6, 0.5)
    r = residual(qd, 2.0)
    assert not estimate.update(qd, r, 0.002, 10.0, True)            # a contact held
    assert not estimate.update(np.full(6, 0.004), r, 0.002, 10.0, False)   # below 5 v_s
    assert not estimate.update(qd, r, 0.002, 0.0, False)            # adaptation off
    assert not estimate.update(qd, None, 0.002, 10.0, False)        # no observer
    assert not estimate.update(qd, r, 0.0, 10.0, False)             # a repeated state
    assert estimate.scale.tolist() == [1.0] * 6
    assert estimate.coulomb == FC.tolist()


def test_the_factor_stays_within_its_range_and_a_reset_forgets_it():
    estimate = CoulombEstimate(FC, VS)
    qd = np.full(6, 1.0)
    for factor, bound in ((10.0, SCALE_RANGE[1]), (-5.0, SCALE_RANGE[0])):
        for _ in range(200):
            estimate.update(qd, residual(qd, factor, estimate.scale), 0.002, 50.0, False)
        assert estimate.scale[:5] == pytest.approx(bound)
    estimate.reset()
    assert estimate.scale.tolist() == [1.0] * 6 and estimate.coulomb == FC.tolist()


def test_joints_that_never_slid_take_the_median_factor_of_those_learned():
    """Joints 0-2 slide on drives at 2.4, 1.6 and 2.0 times the model's friction: once
    they have slid one time constant (1 / rate) joints 3 and 4, at rest, hold the median
    2.0 (joint 5 has no Coulomb friction: 1); joint 3 then slides on a drive at 1.0 and
    learns its own factor, and joint 4 the median of the four (1.8)."""
    estimate = CoulombEstimate(FC, VS)
    factors = np.array([2.4, 1.6, 2.0, 1.0, 1.0, 1.0])
    moving = np.array([0.5, -0.5, 0.5, 0.0, 0.0, 0.0])

    def slide(qd, states):
        for _ in range(states):
            r = residual(qd, factors, estimate.scale)
            estimate.update(qd, np.where(qd != 0.0, r, 0.0), 0.002, 10.0, False)

    slide(moving, 45)                                  # 0.09 s: under one time constant
    assert estimate.scale[3:].tolist() == [1.0] * 3
    slide(moving, 455)                                 # 1 s in all
    assert estimate.scale[:3] == pytest.approx([2.4, 1.6, 2.0], rel=1e-3)
    assert estimate.scale[3:5] == pytest.approx([2.0, 2.0], rel=1e-3)
    assert estimate.scale[5] == 1.0
    assert estimate.coulomb == pytest.approx((estimate.scale * FC).tolist())
    slide(np.array([0.0, 0.0, 0.0, 0.5, 0.0, 0.0]), 500)
    assert estimate.scale[3] == pytest.approx(1.0, rel=1e-3)
    assert estimate.scale[4] == pytest.approx(1.8, rel=1e-3)    # median of 2.4, 1.6, 2, 1
    estimate.reset()
    slide(np.array([0.5, 0.0, 0.0, 0.0, 0.0, 0.0]), 500)        # forgotten: only joint 0
    assert estimate.scale[1:5] == pytest.approx([2.4] * 4, rel=1e-3)


def test_in_a_contact_only_a_joint_that_keeps_turning_back_loses_compensation():
    """Joint 0 swings (its velocity reverses every 50 states), joint 1 is pushed one way,
    joint 2 turns back once: from the REVERSALS-th reversal on each one of joint 0 halves
    its factor, down to the range's bound; the others keep theirs. A new contact counts
    from zero, and out of contact learning is as before."""
    estimate = CoulombEstimate(FC, VS)
    halvings = 0
    for k in range(600):
        swing = 0.2 if (k // 50) % 2 == 0 else -0.2
        qd = np.array([swing, 0.3, 0.2 if k < 300 else -0.2, 0.0, 0.0, 0.0])
        changed = estimate.update(qd, residual(qd, 3.0), 0.002, 10.0, True)
        reversals = k // 50                      # joint 0's reversals so far
        halvings += changed
        expected = max(REVERSAL_FACTOR ** max(0, reversals - REVERSALS + 1), SCALE_RANGE[0])
        assert estimate.scale[0] == pytest.approx(expected), k
        assert estimate.scale[1:].tolist() == [1.0] * 5
    assert halvings == 2                         # 1 -> 0.5 -> 0.25, then held at the bound
    estimate.update(np.full(6, 0.3), residual(np.full(6, 0.3), 1.0, estimate.scale), 0.002,
                    10.0, False)
    assert estimate.scale[0] > SCALE_RANGE[0]     # learning, out of contact, as before
    estimate.reset()
    for k in range(2 * 50 + 1):                  # two reversals in a new contact: nothing
        swing = 0.2 if (k // 50) % 2 == 0 else -0.2
        estimate.update(np.array([swing, 0, 0, 0, 0, 0.0]), np.zeros(6), 0.002, 10.0, True)
    assert estimate.scale.tolist() == [1.0] * 6
