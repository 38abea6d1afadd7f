"""``ne-dynamics-demo --mode cartesian_impedance``: the Cartesian law on a simulated arm.

The controller (:class:`~ne_dynamics_ros.control.controller.ComputedTorqueController` in
mode ``cartesian_impedance``: the law ``computed_torque_node`` runs) and the plant
(MuJoCo's or Pinocchio's forward dynamics of the same URDF) in one process, in lockstep
at ``--rate``: the plant's state at ``t_k``, the controller's effort held over the sample.
In process rather than over DDS because the pushes are the plant's (``MujocoArm.push``
on MuJoCo; on Pinocchio's plant the joint efforts ``J_p(q)^T F`` of a force at the tip
link origin); the node's own topics (``~/target_pose``, ``~/current_pose``) are tested
over DDS in ``test/ros``. Three phases, each with its figure in ``cartesian.png``:

1. **Compliance**: the tip held at ``cartesian.stiffness``; a force along x rising in
   steps of 5 N to 20 N (1 s each), then released: the steady displacement of each step
   against F / K (Hooke's law).
2. **A circle**: targets on a 5 cm circle in the base frame's y-z plane, one period in
   4 s, streamed to the law's target input at every sample: the tip's path beside it. An
   impedance pulls, it does not track: the damping acts on the tip's velocity, so a
   moving target is followed about ``D v / K`` behind (as in franka_ros'
   Cartesian impedance example, which also damps the velocity alone).
3. **The null space** (arms with more than 6 joints): the posture moved 0.2 rad along the
   null space of J at ``nullspace.stiffness`` 20 N·m/rad: the posture error and the tip's
   motion over time.

Outputs in ``--output``: ``cartesian.png``, ``summary.json``.
"""
import io
import json
import math

import numpy as np

from ne_dynamics_ros.control.laws import PoseInput
from ne_dynamics_ros.control.laws.cartesian import CartesianImpedanceLaw
from ne_dynamics_ros.tools.experiment.setup import DemoError, EXIT_USAGE

#: The start posture of each arm the demo knows, rad.
START = {'ur5e': [0.2, -1.4, 1.4, -1.5, -1.5, 0.1],
         'panda': [0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8]}
STIFFNESS = [500.0, 500.0, 500.0, 50.0, 50.0, 50.0]
FORCE_STEPS = (5.0, 10.0, 15.0, 20.0)
RADIUS, PERIOD = 0.05, 4.0
#: The law's input a target pose is given on (its topic's key)
TARGET = next(topic.key for topic in CartesianImpedanceLaw.topics
              if topic.kind == 'pose' and not topic.output)


def _urdf(robot):
    """Return ``(urdf path, tip link, armature)`` of ``robot`` (ur5e or panda)."""
    from ne_dynamics_ros.resources import find_resource, panda_urdf
    if robot == 'ur5e':
        return str(find_resource('config/ur5e.urdf')), 'tool0', [0.1] * 6
    if robot == 'panda':
        path = panda_urdf()
        if path is None:
            raise DemoError('--robot panda needs example-robot-data (pip install '
                            'example-robot-data)', EXIT_USAGE)
        return str(path), 'panda_link8', [0.0] * 7
    raise DemoError(f'--mode cartesian_impedance runs on --robot ur5e or panda, not '
                    f'{robot!r}', EXIT_USAGE)


class _Loop:
    """Controller and plant in lockstep; a push at the tip link origin (N, base frame)."""

    def __init__(self, controller, arm, rate, mujoco):
        self.c, self.arm, self.rate, self.mujoco = controller, arm, rate, mujoco
        self.t, self.force = 0.0, np.zeros(3)
        self.log = []                  # (t, tip position (3,), target (3,), q (n,))

    def push(self, force):
        self.force = np.asarray(force, dtype=float)
        if self.mujoco:
            self.arm.push(self.c.model.tip_link if self.force.any() else None,
                          (0.0, 0.0, 0.0), self.force)

    def run(self, seconds, each=None):
        from ne_dynamics_ros.dynamics.kinematics import jacobian, tip_pose
        names = self.c.model.joint_names
        for _ in range(int(round(seconds * self.rate))):
            if each is not None:
                each(self.t)
            q, ns = self.arm.position, int(round(self.t * 1e9))
            out = self.c.update(ns, names, q, self.arm.velocity, steady_ns=ns)
            effort = out.effort
            if not self.mujoco and self.force.any():
                effort = effort + jacobian(self.c.model, q)[:3].T @ self.force
            self.arm.step(effort, 1.0 / self.rate)
            self.t += 1.0 / self.rate
            law = self.c.law
            self.log.append((self.t, tip_pose(self.c.model, self.arm.position)[:3, 3],
                             law.target[:3, 3].copy(), self.arm.position))
        return np.array([row[1] for row in self.log[-int(round(seconds * self.rate)):]])


def _setup(args, robot):
    from ne_dynamics_ros.control import ComputedTorqueController
    from ne_dynamics_ros.simulation.mujoco_arm import MujocoArm
    from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm
    urdf, tip, armature = _urdf(robot)
    controller = ComputedTorqueController.from_urdf(
        urdf, tip_link=tip, armature=armature,
        settings={'mode': CartesianImpedanceLaw.name, 'cartesian.stiffness': STIFFNESS,
                  'nullspace.stiffness': 20.0, 'state_timeout': 10.0})
    names = controller.model.joint_names
    if args.plant == 'mujoco':
        arm = MujocoArm(urdf, joints=names, armature=armature, initial_positions=START[robot])
    else:
        arm = SimulatedArm(urdf, joints=names, armature=armature)
        arm.reset(START[robot])
    return controller, _Loop(controller, arm, args.rate, args.plant == 'mujoco')


def _compliance(loop):
    """Force steps along x: rows (F N, displacement mm, F/K mm); back mm after release."""
    start = loop.run(1.0)[-1]
    rows = []
    for force in FORCE_STEPS:
        loop.push((force, 0.0, 0.0))
        rows.append((force, 1e3 * (loop.run(1.0)[-1][0] - start[0]),
                     1e3 * force / STIFFNESS[0]))
    loop.push((0.0, 0.0, 0.0))
    back = 1e3 * float(np.linalg.norm(loop.run(2.0)[-1] - start))
    return rows, back


def _circle(loop):
    """One period of the circle after a quarter period to reach it: (path, targets, mm)."""
    from ne_dynamics_ros.dynamics.kinematics import matrix_to_quaternion, tip_pose
    c = loop.c
    T = tip_pose(c.model, loop.arm.position)
    centre, orientation = T[:3, 3] - [0.0, RADIUS, 0.0], matrix_to_quaternion(T[:3, :3])
    t0 = loop.t

    def point(t):
        a = 2 * math.pi * (t - t0) / PERIOD
        return centre + RADIUS * np.array([0.0, math.cos(a), math.sin(a)])

    def each(t):
        c.take_input(TARGET, PoseInput(point(t), orientation))
    loop.run(PERIOD / 4, each)
    first = len(loop.log)
    tips = loop.run(PERIOD, each)
    targets = np.array([point(row[0] - 1.0 / loop.rate) for row in loop.log[first:]])
    return tips, targets, 1e3 * float(np.max(np.linalg.norm(tips - targets, axis=1)))


def _nullspace(loop):
    """Posture 0.2 rad along the null space: (t, posture error rad, tip motion mm)."""
    from ne_dynamics_ros.dynamics.kinematics import jacobian
    loop.run(1.5)                          # the tip settles at the circle's last target
    c, q0 = loop.c, loop.arm.position
    posture = q0 + 0.2 * np.linalg.svd(jacobian(c.model, q0))[2][-1]
    c.reconfigure(**{'nullspace.posture': posture.tolist()})
    first = len(loop.log)
    tips = loop.run(3.0)
    t = np.array([row[0] for row in loop.log[first:]]) - loop.log[first][0]
    error = np.array([np.linalg.norm(row[3] - posture) for row in loop.log[first:]])
    return t, error, 1e3 * np.linalg.norm(tips - tips[0], axis=1)


def run_cartesian(args, output):
    """Run the three phases on ``args.robot``; write the outputs; return the summary."""
    robot = args.robot
    controller, loop = _setup(args, robot)
    rows, back = _compliance(loop)
    tips, targets, circle_error = _circle(loop)
    null = _nullspace(loop) if controller.n > 6 else None
    summary = {'robot': robot, 'plant': args.plant, 'rate_hz': args.rate,
               'mode': CartesianImpedanceLaw.name, 'stiffness': STIFFNESS,
               'compliance': [{'force_n': f, 'displacement_mm': d, 'f_over_k_mm': e}
                              for f, d, e in rows],
               'back_after_release_mm': back, 'circle_max_error_mm': circle_error}
    if null is not None:
        summary['nullspace'] = {'posture_error_rad': [float(null[1][0]), float(null[1][-1])],
                                'tip_motion_max_mm': float(null[2].max())}
    if not args.no_plot:
        _plot(output / 'cartesian.png', robot, rows, (tips, targets), null)
    (output / 'summary.json').write_text(json.dumps(summary, indent=2))
    return summary


def _plot(path, robot, rows, circle, null):
    """Write ``cartesian.png``: Hooke's law, the circle, the null-space posture."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from ne_dynamics_ros.tools.files import write_outputs
    panels = 3 if null is not None else 2
    fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 4.2))
    force, shown, expected = (np.array(v) for v in zip(*rows))
    axes[0].plot(force, expected, 'k--', label='F / K')
    axes[0].plot(force, shown, 'o', label='tip, steady')
    axes[0].set(xlabel='force along x [N]', ylabel='displacement along x [mm]',
                title=f'{robot}: compliance at K = {STIFFNESS[0]:g} N/m')
    axes[0].legend()
    tips, targets = circle
    axes[1].plot(1e3 * targets[:, 1], 1e3 * targets[:, 2], 'k--', label='target')
    axes[1].plot(1e3 * tips[:, 1], 1e3 * tips[:, 2], label='tip')
    axes[1].set(xlabel='y [mm]', ylabel='z [mm]', title=f'a {100 * RADIUS:g} cm circle in '
                f'{PERIOD:g} s', aspect='equal')
    axes[1].legend()
    if null is not None:
        t, error, motion = null
        axes[2].plot(t, error, label='posture error [rad]')
        axes[2].plot(t, motion, label='tip motion [mm]')
        axes[2].set(xlabel='t [s]', title='posture moved in the null space')
        axes[2].legend()
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format='png', dpi=110)
    plt.close(fig)
    write_outputs([(path, buffer.getvalue())], [])


__all__ = ['run_cartesian']
