"""The identification tests' recordings, shared by the unit and the DDS tests (a plugin).

Session fixtures (registered by ``pytest_plugins`` in ``test/conftest.py``): ``setup``,
the simulated PUMA 560 (Pinocchio's dynamics, not ours) with a hidden 2 kg payload, 30 %
more rotor inertia than the nominal model and viscous friction, driven along an
excitation and recorded with noise into a real rosbag2 (MCAP); ``identified``, what
``ne-dynamics identify`` writes from it.
"""
import contextlib
import io

import pytest

from references import PUMA560_URDF
from ne_dynamics_ros import load_model
from ne_dynamics_ros.identification.excitation import design_excitation
from ne_dynamics_ros.identification.recording import write_bag
from ne_dynamics_ros.simulation.recorder import record_tracking
from ne_dynamics_ros.simulation.simulated_arm import SimulatedArm
from ne_dynamics_ros.tools.cli import main
from references import PUMA_ARMATURE      # the motors' G^2 Jm, config/puma560.yaml

ARMATURE = [1.3 * a for a in PUMA_ARMATURE]  # the plant's rotors: 30 % more than nominal
FRICTION = [3.0, 3.0, 2.0, 0.5, 0.5, 0.5]


def follow(trajectory):
    return lambda t: tuple(a[0] for a in trajectory.evaluate(t))


@pytest.fixture(scope='session')
def setup(tmp_path_factory):
    model = load_model(str(PUMA560_URDF), tip_link='flange', armature=PUMA_ARMATURE)
    arm = SimulatedArm(str(PUMA560_URDF), joints=model.joint_names, armature=ARMATURE,
                       payload_mass=2.0, joint_friction=FRICTION)
    excitation, condition = design_excitation(model, 10.0, harmonics=5, starts=1,
                                              iterations=60)
    record = record_tracking(arm, model, follow(excitation), 20.0, position_noise=1e-5,
                             effort_noise=0.01)
    folder = tmp_path_factory.mktemp('identify')
    bag = write_bag(folder / 'excitation_bag', model.joint_names, record.t, record.q,
                    record.qd, record.effort)
    other, _ = design_excitation(model, 6.0, harmonics=3, starts=1, iterations=10, seed=3)
    validation = record_tracking(arm, model, follow(other), 6.0)
    return {'model': model, 'arm': arm, 'bag': bag, 'folder': folder, 'record': record,
            'validation': validation, 'excitation': excitation, 'condition': condition}


@pytest.fixture(scope='session')
def identified(setup):
    urdf, params = setup['folder'] / 'identified.urdf', setup['folder'] / 'identified.yaml'
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(['identify', '--urdf', str(PUMA560_URDF), '--bag', str(setup['bag']),
                     '--tip-link', 'flange', '--output-urdf', str(urdf),
                     '--output-params', str(params), '--armature',
                     *(str(a) for a in PUMA_ARMATURE)])
    return code, out.getvalue(), urdf, params
