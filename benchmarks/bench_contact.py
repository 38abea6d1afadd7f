#!/usr/bin/env python3
"""Benchmark: a push on the MuJoCo UR5e reaches ``/diagnostics`` as "contact" at once.

``computed_torque_node`` runs in its own process as deployed (``main()``, its default
``realtime_priority``), with the UR5e's own drive model (rotor inertia 0.1 kg·m², damping
6, 6, 4, 1, 1, 1 N·m·s/rad, dry friction 2.5, 2.5, 1.5, 0.4, 0.4, 0.4 N·m: the first push
case of ``bench_safety.py``), gains 400 / 40, ``contact.reaction`` ignore and thresholds
6, 6, 4, 1.5, 1.5, 1.5 N·m. This process steps the MuJoCo plant in real time at 500 Hz,
publishes ``/joint_states`` and applies each effort command as it arrives, holding the arm
still until the first one. After the node holds the pose, ``--pushes`` times: 40 N
horizontally at the forearm_link origin (``mj_applyFT``) for 1 s, 2 s apart. Per push:
the time from its start to the first ``/diagnostics`` status naming the contact (goal
<= 50 ms; before issue 39 a status changed only at the next 1 Hz tick), and to the
status saying it is over after the push ends.

``--held``: instead, the pushes below the threshold that only the second contact level
flags (``bench_safety.py``'s held pushes): a frictionless UR5e (no drive damping or
friction in the plant or the model), thresholds 3, 3, 2, 0.5, 0.5, 0.5 N·m, and 0.9 of
shoulder_lift_joint's threshold (2.7 N·m) applied to that joint for 1 s. The same pushes
run first in process, the controller in lockstep with the plant, which gives the instant
the contact is found (the filtered level takes ~0.2 ln 3 s); ``/diagnostics`` must say it
within 50 ms of that instant.

Usage: python benchmarks/bench_contact.py [--pushes 3] [--held]
"""
import argparse
import os
import pathlib
import random
import subprocess
import sys
import threading
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
UR5E = ROOT / 'config' / 'ur5e.urdf'
RATE = 500.0
ARMATURE = [0.1] * 6
DAMPING = [6.0, 6.0, 4.0, 1.0, 1.0, 1.0]
FRICTION = [2.5, 2.5, 1.5, 0.4, 0.4, 0.4]
THRESHOLDS = [6.0, 6.0, 4.0, 1.5, 1.5, 1.5]
POSE = np.radians([0.0, -60.0, 70.0, -90.0, -90.0, 0.0])
PUSH = ('forearm_link', (0.0, 0.0, 0.0), (40.0, 0.0, 0.0))
GOAL_MS = 50.0
#: --held: the plant and model without drive friction, these thresholds, and 0.9 of the
#: threshold of HELD_JOINT applied to it
HELD_THRESHOLDS = [3.0, 3.0, 2.0, 0.5, 0.5, 0.5]
HELD_JOINT = 1


class Case:
    """The plant, the node's settings and the push of one run of the benchmark."""

    def __init__(self, held):
        self.held = held
        zeros = [0.0] * 6
        self.damping, self.friction = (zeros, zeros) if held else (DAMPING, FRICTION)
        self.thresholds = HELD_THRESHOLDS if held else THRESHOLDS
        self.torque = np.zeros(6)
        self.pushing = False
        if held:
            self.torque[HELD_JOINT] = 0.9 * HELD_THRESHOLDS[HELD_JOINT]

    def settings(self):
        """Return the node's parameters (the in-process controller's runtime settings)."""
        return {'kp': 400.0, 'kd': 40.0, 'contact.reaction': 'ignore',
                'contact.threshold': list(self.thresholds)}

    def plant(self):
        from ne_dynamics_ros.simulation.mujoco_arm import MujocoArm
        arm = MujocoArm(str(UR5E), armature=ARMATURE, damping=self.damping,
                        friction=self.friction)
        arm.reset(POSE)
        return arm

    def push(self, arm, on):
        """Start (``on``) or end the push on ``arm``."""
        if not self.held:
            if on:
                arm.push(*PUSH)
            else:
                arm.push(None)
        self.pushing = on

    def effort(self, command):
        """Return the effort the plant takes: the command, plus the held push's torque."""
        return command + self.torque if self.held and self.pushing else command

    def describe(self):
        if self.held:
            return (f'{self.torque[HELD_JOINT]:g} N*m on shoulder_lift_joint (0.9 of its '
                    f'threshold {HELD_THRESHOLDS[HELD_JOINT]:g}), no drive friction')
        return '40 N at the forearm'


def in_process(case, pushes):
    """Return the seconds from each push's start to the contact found, in lockstep."""
    from ne_dynamics_ros.control import ComputedTorqueController
    c = ComputedTorqueController.from_urdf(str(UR5E), armature=ARMATURE,
                                           damping=case.damping, friction=case.friction,
                                           settings=case.settings())
    arm = case.plant()
    names = list(arm.joint_names)
    case.push(arm, False)
    found, started = [], None
    for k in range(int((3.0 + 3.0 * pushes) * RATE)):
        t = k / RATE
        on = t >= 3.0 and (t - 3.0) % 3.0 < 1.0        # 1 s pushes, 3 s apart, from 3 s
        if on and not case.pushing:
            started = t
        if on != case.pushing:
            case.push(arm, on)
        ns = round(t * 1e9)
        out = c.update(ns, names, arm.position, arm.velocity, steady_ns=ns)
        if c.contact is not None and started is not None:
            found.append(t - started)
            started = None                               # one per push
        arm.step(case.effort(np.asarray(out.effort)), 1.0 / RATE)
    return found


def node_command(case):
    """Return the node's command line (its own process, as ros2 run starts it)."""
    def array(values):
        return '[' + ', '.join(repr(float(v)) for v in values) + ']'
    params = {'urdf_path': str(UR5E), 'armature': array(ARMATURE),
              'damping': array(case.damping), 'friction': array(case.friction)}
    params.update({k: array(v) if isinstance(v, list) else str(v)
                   for k, v in case.settings().items()})
    return ([sys.executable, '-m', 'ne_dynamics_ros.nodes.computed_torque_node', '--ros-args']
            + [a for k, v in params.items() for a in ('-p', f'{k}:={v}')])


def main():
    """Run the pushes; print each one's delay to /diagnostics."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--pushes', type=int, default=3)
    parser.add_argument('--held', action='store_true',
                        help='pushes below the threshold, held 1 s (module docstring)')
    args = parser.parse_args()
    case = Case(args.held)
    found = in_process(case, args.pushes)
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from ne_dynamics_ros.nodes.computed_torque_node import JOINT_STATE_QOS

    domain = random.randint(150, 229)
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), PYTHONUNBUFFERED='1',
               ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    os.environ.update(ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    node_proc = subprocess.Popen(node_command(case), env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
    said = []
    threading.Thread(target=lambda: said.extend(node_proc.stdout), daemon=True).start()
    context = rclpy.context.Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node('bench_contact', context=context)
    effort, diagnostics = [None], []
    node.create_subscription(Float64MultiArray, '/effort_controller/commands',
                             lambda m: effort.__setitem__(0, np.array(m.data)), 10)
    node.create_subscription(
        DiagnosticArray, '/diagnostics',
        lambda m: diagnostics.append((time.monotonic(), m.status[0])), 100)
    states = node.create_publisher(JointState, '/joint_states', JOINT_STATE_QOS)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [executor.spin_once(timeout_sec=0.01)
                                               for _ in iter(stop.is_set, True)], daemon=True)
    spinner.start()
    arm = case.plant()
    case.push(arm, False)
    names = list(arm.joint_names)
    dt = 1.0 / RATE
    pushes, releases = [], []
    try:
        start = time.monotonic()
        held_since = None
        k = 0
        plan = None
        while True:
            now = time.monotonic()
            if node_proc.poll() is not None:
                raise RuntimeError('the node exited:\n' + ''.join(said[-20:]))
            if effort[0] is None:
                arm.reset(POSE)              # held still until the node commands
                if now - start > 60.0:
                    raise RuntimeError('no command from the node:\n' + ''.join(said[-20:]))
            else:
                if held_since is None:
                    held_since = now
                    plan = [(held_since + 3.0 + 3.0 * p, held_since + 4.0 + 3.0 * p)
                            for p in range(args.pushes)]
                pushing = any(a <= now < b for a, b in plan)
                if pushing and len(pushes) == len(releases):
                    case.push(arm, True)
                    pushes.append(now)
                elif not pushing and len(pushes) > len(releases):
                    case.push(arm, False)
                    releases.append(now)
                arm.step(case.effort(effort[0]), dt)
                if now > plan[-1][1] + 2.0:
                    break
            msg = JointState(name=names, position=arm.position.tolist(),
                             velocity=arm.velocity.tolist())
            msg.header.stamp = node.get_clock().now().to_msg()
            states.publish(msg)
            k += 1
            time.sleep(max(0.0, start + k * dt - time.monotonic()))
    finally:
        stop.set()
        spinner.join(2.0)
        node_proc.send_signal(2)
        try:
            node_proc.wait(15)
        except subprocess.TimeoutExpired:
            node_proc.kill()
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.shutdown(context=context)
    priority = next((line.split('control path priority: ', 1)[1].strip() for line in said
                     if 'control path priority: ' in line), 'not logged')
    print(f'computed_torque_node in its own process (control path: {priority}); the UR5e '
          f'on MuJoCo stepped here in real time at {RATE:g} Hz; {case.describe()} for 1 s, '
          f'{args.pushes} times')
    print(f'{"push":>4} {"found in process":>17} {"contact on /diagnostics after":>30} '
          f'{"after found":>11} {"over after release":>19}')
    delays, after_push = [], []
    for p, (a, b) in enumerate(zip(pushes, releases)):
        seen = [t for t, s in diagnostics if t >= a and 'contact on' in s.message]
        over = [t for t, s in diagnostics if t >= b and any(
            v.key == 'events' and 'contact over' in v.value for v in s.values)]
        delay = 1e3 * (seen[0] - a) if seen else float('inf')
        ended = 1e3 * (over[0] - b) if over else float('inf')
        detected = 1e3 * found[p] if p < len(found) else float('inf')
        delays.append(delay - detected)
        after_push.append(delay)
        print(f'{p + 1:>4} {detected:>14.1f} ms {delay:>27.1f} ms {delay - detected:>8.1f} ms '
              f'{ended:>16.1f} ms')
    worst = max(delays) if delays else float('inf')
    print(f'worst on /diagnostics: {max(after_push, default=float("inf")):.1f} ms after the '
          f'push began, {worst:.1f} ms after the contact was found (goal <= {GOAL_MS:g} ms): '
          + ('met' if worst <= GOAL_MS else 'not met'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
