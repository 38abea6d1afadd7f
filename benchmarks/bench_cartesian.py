"""Benchmark: mode cartesian_impedance on MuJoCo's UR5e and a 7-joint arm, beside the goals.

Every run is the controller in process in lockstep with a plant at 500 Hz (the Panda at
1 kHz), the plant's forward dynamics never the controller's model:

1. **Compliance**: the UR5e holds a pose at stiffness [500, 500, 500, 50, 50, 50]; 20 N
   pushes the flange along x, y, z (``MujocoArm.push``) for 3 s, then lets go for 2 s.
   Printed per axis: the steady displacement along the force against F/K (goal within
   10 %), across it (goal < 5 mm), and the distance from the start 2 s after the release
   (goal < 6 mm). On the exact plant (the model's own), and on ``bench_mujoco.py``'s
   hidden plant (rotor inertia, damping, dry friction and 1.2 kg the nominal model lacks)
   with the model ``ne-dynamics-demo --identify`` identifies of it (``--identified``),
   also with the drives' dry friction halved and doubled (the steps and the pushes).
   ``--held-out``: the same on example-robot-data's UR5 (other lengths and inertias)
   moved by those drives, identified the same way (section 1b). ``--declared``: the
   nominal UR5e with a declared friction, nothing identified, on MuJoCo with that
   friction x0.35 to x2 at two poses: 5 cm steps along x, y, z, the pushes (1c).
2. **A picked load**: 2 kg picked at the flange while the arm holds in mode
   ``adaptive``; after 3 s the mode becomes ``cartesian_impedance``: the sag from the
   pose held (goal: none; a fixed model sags by m g / K = 39 mm) and the compliance
   along z, beside the same with the load declared instead, and with neither.
3. **A target step** of 5 cm along z: time to within 2 mm (goal < 1.5 s), overshoot
   (goal < 20 %); at [1000, 1000, 1000, 250, 250, 250] the tip speed 2 s after a 1 cm
   step (goal < 1 cm/s: no sustained oscillation).
4. **Hostile targets** (NaN, inf, a zero quaternion, another frame, then a 1 m jump):
   refused or approached at ``cartesian.max_speed``: the largest command over its limit
   (goal <= 1) and the tip's largest speed (goal <= 0.25 m/s, the bound).
5. **Seven joints** (example-robot-data's Panda, Pinocchio's plant): a posture 0.2 rad
   along the null space of J: the tip's largest motion (goal < 1 mm), the posture error
   left (goal: converges), the largest null-space effort (goal <= 5 N·m).
6. **Cost** per state in process, computed torque beside cartesian_impedance (the node's
   own figures: ``bench_node.py --modes``).

Figures are printed, never asserted. Usage: ``python benchmarks/bench_cartesian.py``
[--identified] (also the hidden plant identified first, ~1 min) [--held-out] (the UR5,
~2 min) [--declared] (~1 min) [--quick] (shorter runs).
"""
import argparse
import math
import pathlib
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / 'benchmarks'))

from ne_dynamics_ros import load_model, resources  # noqa: E402
from ne_dynamics_ros.control.laws import InertiaInput, PoseInput, WrenchInput  # noqa: E402
from ne_dynamics_ros.control import ComputedTorqueController  # noqa: E402
from ne_dynamics_ros.control.laws.gains import recommended_gains  # noqa: E402
from ne_dynamics_ros.control.laws.cartesian import TargetError  # noqa: E402
from ne_dynamics_ros.dynamics.kinematics import (jacobian, matrix_to_quaternion,  # noqa: E402
                                                 tip_pose)
from ne_dynamics_ros.simulation.mujoco_arm import MujocoArm  # noqa: E402
from ne_dynamics_ros.simulation.payload_schedule import PayloadSchedule  # noqa: E402
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm  # noqa: E402

RATE = 500.0
UR5E = REPO / 'config' / 'ur5e.urdf'
Q0 = np.array([0.2, -1.4, 1.4, -1.5, -1.5, 0.1])
STIFFNESS = [500.0, 500.0, 500.0, 50.0, 50.0, 50.0]
STIFF = [1000.0, 1000.0, 1000.0, 250.0, 250.0, 250.0]
FORCE, LOAD = 20.0, 2.0


class Loop:
    """The controller and a plant in lockstep at ``rate``: the tip pose after each step."""

    def __init__(self, controller, arm, rate=RATE):
        self.c, self.arm, self.rate = controller, arm, rate
        self.t, self.tips, self.worst = 0.0, [], 0.0
        self.costs = []

    def run(self, seconds, each=None):
        """Run ``seconds``; return the tip positions (N, 3) of the run."""
        names, start = self.c.model.joint_names, len(self.tips)
        for _ in range(int(round(seconds * self.rate))):
            if each is not None:
                each(self.t)
            ns = int(round(self.t * 1e9))
            begin = time.perf_counter()
            out = self.c.update(ns, names, self.arm.position, self.arm.velocity, steady_ns=ns)
            self.costs.append(time.perf_counter() - begin)
            effort = out.effort
            self.worst = max(self.worst, float(np.max(np.abs(effort) / self.c.effort_limits)),
                             0.0 if np.all(np.isfinite(effort)) else math.inf)
            self.arm.step(effort, 1.0 / self.rate)
            self.t += 1.0 / self.rate
            self.tips.append(tip_pose(self.c.model, self.arm.position)[:3, 3])
        return np.array(self.tips[start:])


def exact_controller(**settings):
    """Return the controller of the UR5e's own model (armature 0.1 kg·m², no friction).

    With the rule's joint gains (``ne-dynamics gains``: what mode adaptive uses).
    """
    model = load_model(str(UR5E), tip_link='tool0', armature=[0.1] * 6)
    gains = recommended_gains(model, RATE)
    return ComputedTorqueController.from_urdf(
        str(UR5E), tip_link='tool0', armature=[0.1] * 6,
        settings=dict({'mode': 'cartesian_impedance', 'cartesian.stiffness': STIFFNESS,
                       'state_timeout': 10.0, 'kp': gains.kp.tolist(),
                       'kd': gains.kd.tolist()}, **settings))


def exact_plant(**extra):
    return MujocoArm(str(UR5E), armature=[0.1] * 6, initial_positions=Q0, **extra)


def hidden_plant(schedule=None, friction_scale=1.0, urdf=UR5E):
    """Return ``bench_mujoco.py``'s hidden UR5e (its drive model, 1.2 kg at the flange).

    ``schedule``: loads picked on top of that 1.2 kg; ``friction_scale``: the drives'
    dry friction times this (the model identified at 1 then holds it only approximately);
    ``urdf``: the arm those drives move (``--held-out``: example-robot-data's UR5).
    """
    from bench_adaptive import hidden_plant as hidden
    values = hidden()
    values['friction'] = [friction_scale * f for f in values['friction']]
    if schedule is not None:
        hidden_mass = values['payload_mass']
        entries = [(t, hidden_mass + m, tuple(m * np.asarray(com) / (hidden_mass + m)))
                   for t, m, com in schedule.entries]
        return MujocoArm(str(urdf), initial_positions=Q0, payload_link='tool0',
                         payload_schedule=PayloadSchedule(entries), **values)
    return MujocoArm(str(urdf), initial_positions=Q0, payload_link='tool0', **values)


def compliance(make_controller, make_plant, seconds=(1.0, 3.0, 2.0), moved=False,
               make_loop=None, link='tool0'):
    """Per axis: (along mm, F/K mm, across mm, back mm) of a 20 N push and its release.

    ``moved``: the tip first stepped 5 cm up and back (1.5 s each): the drives have slid,
    as on an arm in use, so what the law learns while joints slide is learned.
    ``make_loop(controller, arm, axis)``: the loop (default :class:`Loop`); ``link``: the
    body pushed.
    """
    rows = []
    for axis in range(3):
        c, arm = make_controller(), make_plant()
        loop = Loop(c, arm) if make_loop is None else make_loop(c, arm, axis)
        start = loop.run(seconds[0])[-1]
        if moved:
            T = tip_pose(c.model, arm.position)
            for height in (0.05, 0.0):
                c.take_input('target_pose', PoseInput(T[:3, 3] + [0.0, 0.0, height],
                                                      matrix_to_quaternion(T[:3, :3])))
                loop.run(1.5)
            start = loop.run(seconds[0])[-1]
        force = np.zeros(3)
        force[axis] = FORCE
        arm.push(link, (0.0, 0.0, 0.0), force)
        pushed = loop.run(seconds[1])[-1] - start
        arm.push(None)
        back = loop.run(seconds[2])[-1] - start
        expected = FORCE / c.law.stiffness[axis]      # set, or sized for the arm (unset)
        rows.append((1e3 * pushed[axis], 1e3 * expected,
                     1e3 * np.linalg.norm(np.delete(pushed, axis)), 1e3 * np.linalg.norm(back)))
    return rows


def print_compliance(title, rows):
    print(f'  {title}')
    for name, (along, expected, across, back) in zip('xyz', rows):
        print(f'    {name}: along {along:7.2f} mm vs F/K {expected:5.1f} mm '
              f'({100 * (along / expected - 1):+6.1f} %, goal within 10 %); across '
              f'{across:5.2f} mm (< 5); back {back:5.2f} mm after 2 s (< 6)')


def picked_load(make_controller, make_plant, way, seconds=3.0):
    """2 kg picked while holding: sag (mm) from the pose held, then 20 N along z (mm).

    ``way``: 'fixed' (cartesian from the start, no load model: sags from the pose held
    before the pick), 'adaptive' (held in mode adaptive while picked, then
    cartesian_impedance: the sag from the pose measured at the switch, which the mode
    holds), 'declared' (cartesian, the load declared when picked).
    """
    c = make_controller(mode='adaptive' if way == 'adaptive' else 'cartesian_impedance')
    arm = make_plant(PayloadSchedule([(0.0, 0.0, (0.0, 0.0, 0.0)),
                                      (0.5, LOAD, (0.0, 0.0, 0.05))]))
    loop = Loop(c, arm)
    before = loop.run(0.5)[-1]
    if way == 'declared':
        c.take_input('declared_payload', InertiaInput(LOAD, (0.0, 0.0, 0.05)))
    loop.run(seconds)
    if way == 'adaptive':
        c.reconfigure(mode='cartesian_impedance')   # holds the pose measured now
        before = loop.run(1.0 / RATE)[-1]
    held = loop.run(1.0)[-1]
    sag = 1e3 * np.linalg.norm(held - before)
    arm.push('tool0', (0.0, 0.0, 0.0), (0.0, 0.0, -FORCE))
    pushed = loop.run(3.0)[-1]
    return sag, 1e3 * (held[2] - pushed[2])


def target_step(make_controller, make_plant, height, stiffness, seconds=2.5, axis=2):
    """Step the target ``height`` m along ``axis`` (2: z).

    Returns (time to within 2 mm s, overshoot %, speed at 2 s m/s, distance at 1.5 s mm,
    contacts the observer reported).
    """
    c = make_controller(**{'cartesian.stiffness': stiffness, 'cartesian.max_speed': [1.0, 1.0]})
    arm = make_plant()
    loop = Loop(c, arm)
    start = loop.run(0.5)[-1]
    T = tip_pose(c.model, arm.position)
    goal = T[:3, 3].copy()
    goal[axis] += height
    c.take_input('target_pose', PoseInput(goal, matrix_to_quaternion(T[:3, :3])))
    tips = loop.run(seconds)
    distance = np.linalg.norm(tips - goal, axis=1)
    outside = np.nonzero(distance > 2e-3)[0]
    settle = (outside[-1] + 1) / RATE if outside.size else 0.0
    overshoot = 100 * max(0.0, (tips[:, axis] - start[axis]).max() / height - 1)
    k = int(2.0 * RATE)
    speed = np.linalg.norm(tips[k:] - tips[k - 1:-1], axis=1).max() * RATE
    return (settle, overshoot, speed, 1e3 * distance[int(1.5 * RATE) - 1],
            c.data.contact_supervisor.contacts)


def hostile(make_controller, make_plant):
    """Bad targets then a 1 m jump: (refused count, worst |effort|/limit, top tip speed)."""
    c, arm = make_controller(), make_plant()
    loop = Loop(c, arm)
    loop.run(0.2)
    refused = 0
    unit = (0.0, 0.0, 0.0, 1.0)
    for position, orientation, frame in (((math.nan, 0, 0), unit, ''),
                                         ((0, 0, math.inf), unit, ''),
                                         ((0.3, 0, 0.3), (0.0, 0.0, 0.0, 0.0), ''),
                                         ((0.3, 0, 0.3), unit, 'camera_link')):
        try:
            c.take_input('target_pose', PoseInput(position, orientation, frame))
        except TargetError:
            refused += 1
    T = tip_pose(c.model, arm.position)
    c.take_input('target_pose', PoseInput(T[:3, 3] + [0.0, 1.0, 0.0],
                                          matrix_to_quaternion(T[:3, :3])))
    tips = loop.run(1.0)
    return refused, loop.worst, np.linalg.norm(np.diff(tips, axis=0), axis=1).max() * RATE


def seven_joints(seconds=3.0):
    """Move the Panda's posture in the null space.

    Returns (tip motion mm, posture error before and after rad, null-space effort N m).
    """
    from bench_real import panda_urdf
    urdf = str(panda_urdf())
    c = ComputedTorqueController.from_urdf(
        urdf, tip_link='panda_link8',
        settings={'mode': 'cartesian_impedance', 'nullspace.stiffness': 20.0,
                  'state_timeout': 10.0})
    q0 = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
    arm = SimulatedArm(urdf, joints=c.model.joint_names)
    arm.reset(q0)
    posture = q0 + 0.2 * np.linalg.svd(jacobian(c.model, q0))[2][-1]
    loop = Loop(c, arm, rate=1000.0)
    loop.run(0.2)
    c.reconfigure(**{'nullspace.posture': posture.tolist()})
    efforts = []
    tips = loop.run(seconds, each=lambda t: efforts.append(
        np.abs(c.law.nullspace_effort).max()
        if c.law.nullspace_effort is not None else 0.0))
    return (1e3 * np.abs(tips - tips[0]).max(), np.linalg.norm(q0 - posture),
            np.linalg.norm(arm.position - posture), max(efforts))


def cost():
    """Median µs per state in process: computed torque and cartesian_impedance (UR5e)."""
    figures = {}
    for mode in ('computed_torque', 'cartesian_impedance'):
        c = exact_controller(mode=mode)
        loop = Loop(c, exact_plant())
        loop.run(2.0)
        figures[mode] = 1e6 * float(np.median(loop.costs[100:]))
    return figures


def identified(scratch, urdf=None, tip_link=None):
    """Identify the hidden UR5e as ``bench_adaptive.py`` does; return a controller maker.

    ``urdf``: another arm driven by the same hidden drives and load, identified the same
    way (``ne-dynamics-demo --robot URDF ... --identify``).
    """
    from bench_adaptive import identified_controller, identify_ur5e
    if urdf is None:
        summary = identify_ur5e(pathlib.Path(scratch) / 'ur5e_identify')
    else:
        summary = identify_ur5e(pathlib.Path(scratch) / 'arm_identify', urdf)
    files = [REPO / 'config' / 'ur5e_sim.yaml', summary['identified']['identified_params']]
    urdf = summary['identified']['identified_urdf']

    def make(**settings):
        c = identified_controller(urdf, files, settings.pop('mode', 'cartesian_impedance'),
                                  tip_link=tip_link)
        c.reconfigure(**dict({'cartesian.stiffness': STIFFNESS}, **settings))
        return c
    return make


class SensedLoop(Loop):
    """:class:`Loop` with the flange sensor's reading given to the law before each state.

    As the node gives ``~/flange_wrench``, with the noise :data:`SENSOR_NOISE`.
    """

    def __init__(self, controller, arm, seed=0):
        super().__init__(controller, arm)
        self.rng = np.random.default_rng(seed)

    def run(self, seconds, each=None):
        def sensed(t):
            if t > 0.0:
                force, torque = self.arm.flange_wrench()
                self.c.take_input('flange_wrench', WrenchInput(
                    force + self.rng.normal(0.0, SENSOR_NOISE[0], 3),
                    torque + self.rng.normal(0.0, SENSOR_NOISE[1], 3), 'tool0'))
            if each is not None:
                each(t)
        return super().run(seconds, sensed)


#: ``--sensor``: the flange sensor's noise, standard deviation (N, N·m)
SENSOR_NOISE = (0.3, 0.02)


def sensed_compliance(make, scale, sensor, seconds=(1.0, 3.0, 2.0)):
    """Return rows as :func:`compliance`: 20 N pushes from rest on the tool at a sensor.

    The hidden plant (its drives' dry friction x ``scale``), the sensor at tool0, the law
    with or without ``cartesian.flange_sensor``.
    """
    from bench_adaptive import hidden_plant as hidden
    from ne_dynamics_ros.simulation.mujoco_arm import FT_BODY
    values = hidden()
    values['friction'] = [scale * f for f in values['friction']]
    return compliance(
        lambda: make(**{'cartesian.flange_sensor': sensor,
                        'ft_sensor.tool_mass': values['payload_mass']}),
        lambda: MujocoArm(str(UR5E), initial_positions=Q0, payload_link='tool0',
                          ft_sensor='tool0', **values),
        seconds, make_loop=lambda c, arm, axis: SensedLoop(c, arm, seed=axis), link=FT_BODY)


def sensor_pushes(make):
    """Print ``--sensor``: the pushes from rest with and without the flange sensor, x1, x2."""
    print('1d. a flange sensor at tool0 (the 1.2 kg tool beyond it, its mass declared): '
          '20 N pushes on the tool from rest, cartesian.flange_sensor off and on')
    for scale in (1.0, 2.0):
        for sensor in (False, True):
            print_compliance(f'  x{scale:g}, flange sensor {"on" if sensor else "off"}:',
                             sensed_compliance(make, scale, sensor))


def friction_scales(make, urdf=UR5E):
    """Run the identified model on its plant with the drives' dry friction x0.5, x1, x2.

    Printed: the 5 cm step (time to within 2 mm, its distance at 1.5 s, overshoot,
    contacts), then the pushes from rest (nothing slid yet) and after the step up and
    back (the friction learned), beside the goals; and with the learning off
    (``cartesian.friction_adaptation`` 0). ``urdf``: the arm the hidden drives move.
    """
    print('   friction the model holds approximately: the hidden plant\'s dry friction scaled, '
          'the model identified at x1')
    for scale in (0.5, 1.0, 2.0):
        plant = (lambda scale: lambda schedule=None: hidden_plant(schedule, scale, urdf))(
            scale)
        for adaptation in (10.0, 0.0):
            def maker(**settings):
                return make(**dict({'cartesian.friction_adaptation': adaptation}, **settings))
            settle, overshoot, _, at, contacts = target_step(maker, plant, 0.05, STIFFNESS)
            print(f'    x{scale:<4g} friction_adaptation {adaptation:4g}: 5 cm step within 2 mm '
                  f'at {settle:5.3f} s (< 1.5), {at:5.2f} mm off at 1.5 s, overshoot '
                  f'{overshoot:4.1f} % (< 20), contacts {contacts}', flush=True)
            if adaptation:
                print_compliance(f'  x{scale:g}, pushed from rest:', compliance(maker, plant))
                print_compliance(f'  x{scale:g}, pushed after the step up and back:',
                                 compliance(maker, plant, moved=True))
                if scale == 1.0:     # across the force: the rotational stiffness's share?
                    print_compliance('  x1, pushed from rest, rotational stiffness 250 '
                                     'N m/rad (5x):', compliance(
                                         lambda: maker(**{'cartesian.stiffness':
                                                          STIFFNESS[:3] + [250.0] * 3}),
                                         plant))


#: ``--declared``: the drives' friction the nominal model declares (N·m; N·m·s/rad), its
#: contact thresholds (N·m) and a second pose (rad)
DECLARED_COULOMB, DECLARED_DAMPING = [2.5, 2.5, 1.5, 0.4, 0.4, 0.4], [6.0, 6.0, 4.0, 1.0, 1.0, 1.0]
DECLARED_THRESHOLDS = [3.0, 3.0, 2.0, 0.5, 0.5, 0.5]
Q_OTHER = np.array([0.9, -1.0, 1.9, -2.3, -1.2, 0.6])


def declared_friction():
    """Run the nominal UR5e with a declared friction on MuJoCo with that friction scaled.

    Nothing identified: the model is ``config/ur5e.urdf`` with the friction above, the
    plant the same arm with its drives' dry friction x0.35, x0.5, x1, x2, at two poses.
    Printed per scale and pose: 5 cm steps along x, y, z (time to within 2 mm,
    contacts), then the 20 N pushes from rest and after the step up and back.
    """
    print('1c. the nominal UR5e with a declared friction (nothing identified) on MuJoCo '
          'with the drives\' dry friction scaled, two poses')

    def make(**settings):
        return ComputedTorqueController.from_urdf(
            str(UR5E), tip_link='tool0', armature=[0.1] * 6, damping=DECLARED_DAMPING,
            friction=DECLARED_COULOMB, settings=dict({
                'mode': 'cartesian_impedance', 'cartesian.stiffness': STIFFNESS,
                'friction_compensation': True, 'contact.threshold': DECLARED_THRESHOLDS,
                'state_timeout': 10.0}, **settings))
    for scale in (0.35, 0.5, 1.0, 2.0):
        for name, q0 in (('pose 1', Q0), ('pose 2', Q_OTHER)):
            def plant(schedule=None, scale=scale, q0=q0):
                return MujocoArm(str(UR5E), armature=[0.1] * 6, initial_positions=q0,
                                 damping=DECLARED_DAMPING,
                                 friction=[scale * f for f in DECLARED_COULOMB])
            steps = [target_step(make, plant, 0.05, STIFFNESS, axis=axis) for axis in range(3)]
            print(f'    x{scale:g} {name}: 5 cm steps along x, y, z within 2 mm at '
                  + ', '.join(f'{settle:.3f} s' for settle, *_ in steps)
                  + ' (< 1.5); contacts ' + ', '.join(str(step[4]) for step in steps),
                  flush=True)
            print_compliance(f'  x{scale:g} {name}, pushed from rest:', compliance(make, plant))
            print_compliance(f'  x{scale:g} {name}, pushed after the step up and back:',
                             compliance(make, plant, moved=True))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--identified', action='store_true',
                        help='also the hidden plant with its identified model (~1 min more)')
    parser.add_argument('--held-out', action='store_true',
                        help='also example-robot-data\'s UR5 (other lengths and inertias) '
                             'with the hidden drives, identified (~2 min more)')
    parser.add_argument('--declared', action='store_true',
                        help='also the nominal UR5e with a declared friction on MuJoCo with '
                             'that friction x0.35 to x2 (~1 min more)')
    parser.add_argument('--sensor', action='store_true',
                        help='instead: the identified hidden plant with a flange sensor at '
                        'tool0, the pushes with cartesian.flange_sensor off and on (~3 min)')
    parser.add_argument('--quick', action='store_true', help='shorter runs (a smoke test)')
    args = parser.parse_args(argv)
    if args.sensor:
        with tempfile.TemporaryDirectory() as scratch:
            sensor_pushes(identified(scratch, tip_link='tool0'))   # the sensor's link
        return 0
    seconds = (0.3, 1.0, 0.5) if args.quick else (1.0, 3.0, 2.0)
    print(f'mode cartesian_impedance, UR5e on MuJoCo at {RATE:g} Hz, stiffness {STIFFNESS}')
    print('1. compliance: 20 N at the flange for 3 s, then released')
    print_compliance('exact plant, its own model:',
                     compliance(exact_controller, exact_plant, seconds))
    sized = exact_controller(**{'cartesian.stiffness': []})
    sized.update(0, sized.model.joint_names, Q0, np.zeros(6), steady_ns=0)
    print_compliance('exact plant, its own model, cartesian.stiffness unset (sized for the '
                     f'arm: {np.round(sized.law.stiffness, 1).tolist()}):',
                     compliance(lambda: exact_controller(**{'cartesian.stiffness': []}),
                                exact_plant, seconds))
    with tempfile.TemporaryDirectory() as scratch:
        makers = [('exact plant', exact_controller, exact_plant)]
        if args.identified:
            make = identified(scratch)
            print_compliance('hidden plant (drives, 1.2 kg), identified model:',
                             compliance(make, hidden_plant, seconds))
            print_compliance('the same, cartesian.stiffness unset (sized for the arm):',
                             compliance(lambda: make(**{'cartesian.stiffness': []}),
                                        hidden_plant, seconds))
            makers.append(('hidden plant, identified', make, hidden_plant))
            friction_scales(make)
        if args.held_out:
            ur5 = resources.ur5_urdf()
            if ur5 is None:
                sys.exit('bench_cartesian: --held-out needs example-robot-data (pip install '
                         'example-robot-data)')
            print('1b. example-robot-data\'s UR5 (other lengths and inertias) with the hidden '
                  'drives and 1.2 kg, its identified model')
            ur5_make = identified(scratch, ur5)
            print_compliance('UR5, hidden drives, identified model:',
                             compliance(ur5_make, lambda schedule=None: hidden_plant(
                                 schedule, urdf=ur5), seconds))
            friction_scales(ur5_make, ur5)
        if args.declared:
            declared_friction()
        print(f'2. {LOAD:g} kg picked at the flange while holding, then 20 N down (F/K = '
              f'{1e3 * FORCE / STIFFNESS[2]:.0f} mm): sag from the pose held (a fixed model: '
              f'{1e3 * LOAD * 9.81 / STIFFNESS[2]:.0f} mm)')
        for title, make, _ in makers:
            plant = (lambda schedule: exact_plant(payload_link='tool0',
                                                  payload_schedule=schedule)) \
                if title == 'exact plant' else hidden_plant
            for way in ('fixed', 'adaptive', 'declared'):
                sag, along = picked_load(make, plant, way, 1.0 if args.quick else 3.0)
                print(f'    {title:<26} {way:<9} sag {sag:6.2f} mm, push along z {along:6.2f} '
                      f'mm')
        print('3. target step along z: time to within 2 mm (goal < 1.5 s), overshoot (< 20 %), '
              'tip speed from 2 s on (< 10 mm/s)')
        for title, make, plant in makers:
            for height, stiffness in ((0.05, STIFFNESS), (0.01, STIFF)):
                settle, overshoot, speed, _, _ = target_step(make, plant, height, stiffness)
                print(f'    {title:<26} {100 * height:3.0f} cm at {stiffness[:1] + stiffness[3:4]}'
                      f': {settle:5.3f} s, overshoot {overshoot:4.1f} %, speed '
                      f'{1e3 * speed:6.3f} mm/s')
        print('4. hostile targets (NaN, inf, zero quaternion, another frame), then 1 m away')
        for title, make, plant in makers:
            refused, worst, speed = hostile(make, plant)
            print(f'    {title:<26} refused {refused} of 4; largest |effort|/limit {worst:.3f} '
                  f'(<= 1); tip speed {speed:.3f} m/s (<= 0.25)')
    tip, before, after, effort = seven_joints(1.0 if args.quick else 3.0)
    print(f'5. Panda (7 joints, Pinocchio), posture 0.2 rad along the null space: tip moved '
          f'{tip:.4f} mm (< 1); posture error {before:.3f} -> {after:.4f} rad; null-space '
          f'effort {effort:.2f} N m (<= 5)')
    figures = cost()
    print(f'6. cost per state in process (UR5e): computed_torque '
          f'{figures["computed_torque"]:.1f} us, cartesian_impedance '
          f'{figures["cartesian_impedance"]:.1f} us; the node: bench_node.py --modes')


if __name__ == '__main__':
    main()
