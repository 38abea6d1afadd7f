"""Identification of an arm's dynamic parameters from recorded motion (no ROS needed).

* :mod:`.excitation`: periodic excitation trajectories (finite Fourier series, Swevers et
  al. 1997) optimised for the condition number of the base regressor;
* :mod:`.recording`: joint states read from rosbag2 recordings (MCAP, sqlite3) with the
  ``rosbags`` library, or from CSV;
* :mod:`.estimation`: filtering, parallel decimation and (weighted) least squares of the
  base parameters and the drive parameters Ia, Fv, Fc;
* :mod:`.physical_fit`: the physically plausible standard parameters, fitted with a
  prior toward the nominal model (a convex programme, ``cvxpy``), drive terms and prior
  weight chosen by cross-validation; :mod:`.validation`: both models on held-out motion;
* :mod:`.urdf_writer`: the URDF with only its ``<inertial>`` and ``<dynamics>`` values
  changed, and the parameter YAML the nodes read;
* :mod:`.pipeline`: recording to identified URDF and YAML in named steps, shared by
  ``ne-dynamics identify`` and the demo.
"""
from typing import TYPE_CHECKING

from .._facade import lazy_exports

if TYPE_CHECKING:       # the names below, imported on first use (see ne_dynamics_ros._facade)
    from .excitation import design_excitation, FourierTrajectory, sample_excitation
    from .pipeline import drive_errors, identify_model, IdentifiedModel
    from .recording import JointRecording, read_bag, read_csv, read_recording, write_bag
    from .urdf_writer import identified_urdf, parameters_yaml
    from .validation import split, validate, ValidationReport

__getattr__, __dir__ = lazy_exports(__name__, {
    **dict.fromkeys(('design_excitation', 'FourierTrajectory', 'sample_excitation'),
                    '.excitation'),
    **dict.fromkeys(('drive_errors', 'identify_model', 'IdentifiedModel'), '.pipeline'),
    **dict.fromkeys(('JointRecording', 'read_bag', 'read_csv', 'read_recording',
                     'write_bag'), '.recording'),
    **dict.fromkeys(('identified_urdf', 'parameters_yaml'), '.urdf_writer'),
    **dict.fromkeys(('split', 'validate', 'ValidationReport'), '.validation')})

__all__ = ['design_excitation', 'drive_errors', 'FourierTrajectory', 'identified_urdf',
           'identify_model', 'IdentifiedModel', 'JointRecording', 'parameters_yaml',
           'read_bag', 'read_csv', 'read_recording', 'sample_excitation', 'split',
           'validate', 'ValidationReport', 'write_bag']
