"""The arm's side of SimArmSystem: datagrams, the cycle, the arm on the hardware's clock.

The clock is checked against a closed form: a unit double integrator under piecewise
constant efforts (position and velocity exact for any step), so the intervals the clock
steps over are what is tested. The datagrams round-trip and every malformed one raises.
"""
import uuid

import numpy as np
import pytest

from ne_dynamics_ros.simulation import hardware_link as link

NAMES = ('shoulder_pan_joint', 'elbow_joint', 'wrist_1_joint')


class DoubleIntegrator:
    """q'' = effort per joint (unit inertia); ``step`` is exact for a constant effort."""

    def __init__(self, n):
        self.n = n
        self.position = np.zeros(n)
        self.velocity = np.zeros(n)
        self.steps = []

    def step(self, effort, dt):
        effort = np.asarray(effort, dtype=float)
        self.position = self.position + self.velocity * dt + 0.5 * effort * dt ** 2
        self.velocity = self.velocity + effort * dt
        self.steps.append((effort.copy(), dt))


def closed_form(segments, n):
    """Position and velocity after (effort, duration) segments from rest at 0."""
    q, qd = np.zeros(n), np.zeros(n)
    for effort, dt in segments:
        q = q + qd * dt + 0.5 * np.asarray(effort) * dt ** 2
        qd = qd + np.asarray(effort) * dt
    return q, qd


def test_a_command_round_trips_and_its_names_are_reused_when_the_bytes_are_the_same():
    data = link.pack_command(7, 1_000, 1_300, [1.5, -2.0, 0.25], NAMES)
    command = link.parse_command(data)
    assert (command.seq, command.read_ns, command.write_ns) == (7, 1_000, 1_300)
    np.testing.assert_array_equal(command.effort, [1.5, -2.0, 0.25])
    assert command.names == NAMES
    again = link.parse_command(link.pack_command(8, 3_000, 3_300, [0, 0, 0], NAMES), command)
    assert again.names is command.names
    renamed = link.parse_command(link.pack_command(9, 0, 0, [0, 0, 0], ('a', 'b', 'c')),
                                 command)
    assert renamed.names == ('a', 'b', 'c')


INVERSE = [[2.0, -0.5], [-0.5, 3.0]]


def test_a_state_round_trips():
    data = link.pack_state(3, 123_456_789, [0.1, 0.2], [1.0, -1.0], [0.5, 2.5], [5.0, 6.0],
                           INVERSE)
    seq, stamp, q, qd, qdd, tau, inverse = link.parse_state(data)
    assert (seq, stamp) == (3, 123_456_789)
    np.testing.assert_array_equal(q, [0.1, 0.2])
    np.testing.assert_array_equal(qd, [1.0, -1.0])
    np.testing.assert_array_equal(qdd, [0.5, 2.5])
    np.testing.assert_array_equal(tau, [5.0, 6.0])
    np.testing.assert_array_equal(inverse, INVERSE)
    assert len(data) == link.STATE_HEADER.size + 8 * 2 * (4 + 2)    # the plugin's check


def test_an_inverse_inertia_of_another_shape_is_refused():
    with pytest.raises(link.HardwareLinkError, match='shape'):
        link.pack_state(1, 0, [0.0, 0.0], [0.0] * 2, [0.0] * 2, [0.0] * 2, np.eye(3))


def test_the_inverse_inertia_is_the_plants_response_to_a_unit_effort():
    # an affine plant q'' = A tau + b(q, qd): the columns are A's, exactly
    rng = np.random.default_rng(4)
    a_matrix = rng.normal(size=(3, 3))

    def acceleration(q, qd, tau):
        return a_matrix @ tau + np.sin(q) * qd - 9.81

    np.testing.assert_allclose(link.inverse_inertia(acceleration, rng.normal(size=3),
                                                    rng.normal(size=3)), a_matrix,
                               atol=1e-12)


GOOD = link.pack_command(1, 0, 0, [1.0, 2.0, 3.0], NAMES)


@pytest.mark.parametrize('data, match', [
    (b'', 'no command'),
    (GOOD[:20], 'no command'),
    (b'XXXX' + GOOD[4:], 'not'),
    (GOOD[:link.COMMAND_HEADER.size + 10], 'too short'),
    (GOOD[:-1], 'NUL-terminated'),
    (GOOD + b'extra\0', 'NUL-terminated'),
    (GOOD.replace(b'elbow_joint\0', b'\0'), 'NUL-terminated'),
    (GOOD.replace(b'elbow_joint', b'elbow\xffjoint'), 'UTF-8'),
    (link.pack_command(1, 0, 0, [1.0, np.nan, 3.0], NAMES), 'NaN or inf'),
    (link.pack_command(1, 0, 0, [1.0, np.inf, 3.0], NAMES), 'NaN or inf'),
])
def test_malformed_commands_are_refused_with_the_reason(data, match):
    with pytest.raises(link.HardwareLinkError, match=match):
        link.parse_command(data)


ONE_JOINT = link.pack_state(1, 0, [0.0], [0.0], [0.0], [0.0], [[1.0]])


@pytest.mark.parametrize('data', [b'', b'NEST', ONE_JOINT[:-8], ONE_JOINT + bytes(8),
                                  b'NECM' + ONE_JOINT[4:]])
def test_malformed_states_are_refused(data):
    with pytest.raises(link.HardwareLinkError):
        link.parse_state(data)


def test_efforts_and_names_must_match_and_a_channel_must_be_named():
    with pytest.raises(link.HardwareLinkError, match='2 efforts for 3 names'):
        link.pack_command(1, 0, 0, [1.0, 2.0], NAMES)
    with pytest.raises(link.HardwareLinkError, match='empty'):
        link.abstract_address('', 'arm')


def test_the_cycle_period_is_the_median_of_the_reads_intervals():
    cycle = link.CyclePeriod(window=5)
    assert cycle.update(0) is None
    for k, t in enumerate([2_000_000, 4_000_000, 9_000_000, 11_000_000, 13_000_000]):
        period = cycle.update(t)
    assert period == 2_000_000                   # one late cycle (5 ms) does not move it
    assert cycle.update(12_000_000) == 2_000_000   # a read out of order is not an interval


def test_the_arm_waits_for_its_brakes_then_each_write_steps_to_the_next_read():
    arm = DoubleIntegrator(2)
    clock = link.HardwareClock(arm, max_step=0.1, brakes=True)
    period, lag = 2_000_000, 300_000           # reads every 2 ms, each write 0.3 ms after
    efforts = [np.zeros(2)] * 3 + [np.array([1.0 + k, -2.0 * k]) for k in range(8)]
    stamps = []
    for k, effort in enumerate(efforts):
        stamps.append(clock.write(effort, k * period, k * period + lag))
    assert arm.steps[0][1] == pytest.approx(1.7e-3)     # nothing moved before: brakes on
    first = 3
    # the first non-zero command acts from its write to the next read, each one after it
    # first over the rest of its predecessor's hold (read to write), then to its next read
    segments = [(efforts[first], (period - lag) * 1e-9)]
    for k in range(first + 1, len(efforts)):
        segments += [(efforts[k - 1], lag * 1e-9), (efforts[k], (period - lag) * 1e-9)]
    q, qd = closed_form(segments, 2)
    np.testing.assert_allclose(arm.position, q, rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(arm.velocity, qd, rtol=1e-12, atol=1e-18)
    # before the brakes open the state is of its write; afterwards, of the next read
    assert stamps[:first] == [k * period + lag for k in range(first)]
    assert stamps[first:] == [(k + 1) * period for k in range(first, len(efforts))]
    np.testing.assert_array_equal(clock.command, efforts[-1])
    assert clock.late_writes == 0


def test_a_late_write_leaves_the_command_acting_up_to_max_step():
    arm = DoubleIntegrator(1)
    clock = link.HardwareClock(arm, max_step=0.01, brakes=False)
    clock.write([1.0], 0, 0)
    clock.write([1.0], 2_000_000, 2_000_000)
    clock.write([0.0], 50_000_000, 50_000_000)    # 48 ms of silence, 10 ms simulated
    assert clock.late_writes == 1
    assert sum(dt for effort, dt in arm.steps if effort[0] == 1.0) == pytest.approx(
        0.002 + 0.002 + 0.01)


def test_the_link_answers_its_sender_and_refuses_a_second_arm_on_its_channel():
    import socket
    channel = f'test/{uuid.uuid4().hex}'
    arm = link.HardwareLink(channel)
    hardware = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        with pytest.raises(link.HardwareLinkError, match='another arm'):
            link.HardwareLink(channel)
        hardware.bind(link.abstract_address(channel, 'hardware'))
        assert arm.receive(0.01) is None
        hardware.sendto(GOOD, link.abstract_address(channel, 'arm'))
        data, sender = arm.receive(1.0)
        assert link.parse_command(data).names == NAMES
        assert arm.send(link.pack_state(1, 5, [1.0], [2.0], [4.0], [3.0], [[0.5]]), sender)
        hardware.settimeout(1.0)
        assert link.parse_state(hardware.recv(4096))[:2] == (1, 5)
        assert not arm.send(b'x', link.abstract_address(channel, 'nobody'))
    finally:
        hardware.close()
        arm.close()
    link.HardwareLink(channel).close()           # the channel is free again
