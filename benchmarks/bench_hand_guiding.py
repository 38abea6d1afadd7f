"""Benchmark: mode hand_guiding on MuJoCo's UR5e with a flange force-torque sensor.

The controller in process in lockstep at 500 Hz with ``bench_mujoco.py``'s hidden UR5e
(rotor inertia, damping, dry friction and a 1.2 kg tool the nominal model lacks; the tool
beyond a force-torque sensor at ``tool0``: ``MujocoArm(ft_sensor='tool0')``), driven by
the model ``ne-dynamics-demo --identify`` identifies of it, with the drives' dry friction
as identified (x1) and doubled (x2). Each state the sensor's reading (with Gaussian noise,
:data:`NOISE`) is given to the law as the node gives ``~/flange_wrench``; the tool's mass
(1.2 kg) is declared to the law, its bias tared at the start.

Per friction and wrench source (the sensor; the observer's estimate, printed beside):

* a 10 N push on the tool along x, y and z for 1 s: the tip's speed along the push over
  the last 0.5 s against ``F / D`` (goal within 10 %), and across it;
* let go: how far the tip goes on (goal < 2 mm);
* no push for 10 s: the tip's drift (goal < 0.5 mm/s);

with the law's defaults: D and Md sized for the arm
(:func:`~ne_dynamics_ros.control.laws.hand_guiding.sized_admittance`, printed).

Figures are printed, never asserted. Usage: ``python benchmarks/bench_hand_guiding.py``
(~2 min: the hidden plant is identified first) [--quick] (shorter runs, the exact plant
and its own model, nothing identified).
"""
import argparse
import pathlib
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / 'benchmarks'))

from ne_dynamics_ros.control.laws import WrenchInput  # noqa: E402
from ne_dynamics_ros.dynamics.kinematics import tip_pose  # noqa: E402
from ne_dynamics_ros.simulation.mujoco_arm import FT_BODY, MujocoArm  # noqa: E402

RATE = 500.0
UR5E = REPO / 'config' / 'ur5e.urdf'
Q0 = np.array([0.2, -1.4, 1.4, -1.5, -1.5, 0.1])
#: the sensor's noise, standard deviation: N (force), N·m (torque)
NOISE = (0.3, 0.02)
FORCE = 10.0
TOOL = 1.2


class Loop:
    """Controller, plant and sensor in lockstep at ``RATE``; the tip's positions."""

    def __init__(self, controller, arm, source, seed=0):
        self.c, self.arm, self.source = controller, arm, source
        self.t, self.tips = 0.0, []
        self.rng = np.random.default_rng(seed)

    def run(self, seconds):
        """Run ``seconds``; return the tip positions (N, 3) of the run."""
        names, start = self.c.model.joint_names, len(self.tips)
        for _ in range(int(round(seconds * RATE))):
            if self.source == 'sensor' and self.t > 0.0:
                force, torque = self.arm.flange_wrench()
                force = force + self.rng.normal(0.0, NOISE[0], 3)
                torque = torque + self.rng.normal(0.0, NOISE[1], 3)
                self.c.take_input('flange_wrench', WrenchInput(force, torque, 'tool0'))
            ns = int(round(self.t * 1e9))
            out = self.c.update(ns, names, self.arm.position, self.arm.velocity,
                                stamp_ns=ns, steady_ns=ns)
            self.arm.step(out.effort, 1.0 / RATE)
            self.t += 1.0 / RATE
            self.tips.append(tip_pose(self.c.model, self.arm.position)[:3, 3])
        return np.array(self.tips[start:])


def plant(friction_scale=1.0, exact=False):
    """Return the hidden UR5e (drives' friction x ``friction_scale``), a tool beyond a sensor."""
    if exact:
        return MujocoArm(str(UR5E), armature=[0.1] * 6, initial_positions=Q0,
                         payload_link='tool0', payload_mass=TOOL, ft_sensor='tool0')
    from bench_adaptive import hidden_plant
    values = hidden_plant()
    values['friction'] = [friction_scale * f for f in values['friction']]
    values['payload_mass'] = TOOL
    return MujocoArm(str(UR5E), initial_positions=Q0, payload_link='tool0',
                     ft_sensor='tool0', **values)


def settings(source):
    """Return the law's settings: the wrench's source, the tool declared to it."""
    return {'mode': 'hand_guiding', 'hand_guiding.wrench': source,
            'ft_sensor.tool_mass': TOOL, 'state_timeout': 10.0}


def guided(make_controller, make_plant, source, seconds=(1.0, 1.0, 1.0, 10.0)):
    """Return the rows per axis and the drift (mm/s) with no push.

    A row: speed along m/s, across m/s, on after the release mm, the law's D and Md
    along the axis.
    """
    settle, push, release, still = seconds
    rows = []
    for axis in range(3):
        loop = Loop(make_controller(source), make_plant(), source, seed=axis)
        loop.run(settle)
        force = np.zeros(3)
        force[axis] = FORCE
        loop.arm.push(FT_BODY, (0.0, 0.0, 0.0), force)
        tips = loop.run(push)
        half = int(0.5 * RATE)
        velocity = (tips[-1] - tips[-half]) / ((half - 1) / RATE)
        loop.arm.push(None)
        after = loop.run(release)
        rows.append((velocity[axis], float(np.linalg.norm(np.delete(velocity, axis))),
                     1e3 * float(np.linalg.norm(after[-1] - tips[-1])),
                     float(loop.c.law.damping[axis]), float(loop.c.law.mass[axis])))
    loop = Loop(make_controller(source), make_plant(), source, seed=7)
    loop.run(settle)
    tips = loop.run(still)
    drift = 1e3 * float(np.linalg.norm(tips[-1] - tips[0])) / still
    return rows, drift


def report(title, make_controller, make_plant, seconds):
    print(f'  {title}')
    for source in ('sensor', 'estimate'):
        begin = time.perf_counter()
        rows, drift = guided(make_controller, make_plant, source, seconds)
        for axis, (along, across, on, damping, mass) in zip('xyz', rows):
            ratio = along / (FORCE / damping)
            print(f'    {source:<8} push along {axis}: {along:.4f} m/s ({ratio:5.3f} F/D, goal '
                  f'0.9-1.1), across {1e3 * across:.2f} mm/s; let go: on {on:.2f} mm '
                  f'(goal < 2; |v| Md/D {1e3 * along * mass / damping:.2f}); D {damping:.1f} '
                  f'N*s/m, Md {mass:.2f} kg')
        print(f'    {source:<8} no push for {seconds[3]:g} s: drift {drift:.3f} mm/s (goal < 0.5)'
              f'   [{time.perf_counter() - begin:.1f} s]')


def exact_maker():
    from ne_dynamics_ros.control import ComputedTorqueController
    from ne_dynamics_ros.control.laws.gains import recommended_gains
    from ne_dynamics_ros import load_model
    model = load_model(str(UR5E), tip_link='tool0', armature=[0.1] * 6)
    gains = recommended_gains(model, RATE)

    def make(source):
        c = ComputedTorqueController.from_urdf(
            str(UR5E), tip_link='tool0', armature=[0.1] * 6,
            settings=dict(settings(source), kp=gains.kp.tolist(), kd=gains.kd.tolist()))
        c.take_input('declared_payload', _tool())
        return c
    return make


def _tool():
    from ne_dynamics_ros.control.laws import InertiaInput
    return InertiaInput(TOOL)


def identified_maker(scratch):
    """Identify the hidden UR5e as ``bench_adaptive.py`` does; return a controller maker."""
    from bench_adaptive import identified_controller, identify_ur5e
    summary = identify_ur5e(pathlib.Path(scratch) / 'ur5e_identify')
    files = [REPO / 'config' / 'ur5e_sim.yaml', summary['identified']['identified_params']]
    urdf = summary['identified']['identified_urdf']

    def make(source):
        # the sensor sits at tool0: the chain's tip there, as a UR user sets tip_link
        c = identified_controller(urdf, files, 'hand_guiding', tip_link='tool0')
        c.reconfigure(**{k: v for k, v in settings(source).items() if k != 'mode'})
        return c
    return make


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true',
                        help='the exact plant and its own model only, shorter runs')
    args = parser.parse_args(argv)
    print(f'mode hand_guiding, UR5e on MuJoCo at {RATE:g} Hz, a {FORCE:g} N push on the tool '
          f'(D and Md the law\'s defaults, sized for the arm), sensor noise {NOISE[0]:g} N / '
          f'{NOISE[1]:g} N*m')
    if args.quick:
        report('exact plant, its own model (1.2 kg tool declared):', exact_maker(),
               lambda: plant(exact=True), (0.5, 1.0, 0.5, 2.0))
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        make = identified_maker(scratch)
        for scale in (1.0, 2.0):
            report(f'hidden plant, drives\' dry friction x{scale:g}, identified model:', make,
                   lambda scale=scale: plant(scale), (1.0, 1.0, 1.0, 10.0))
    return 0


if __name__ == '__main__':
    sys.exit(main())
