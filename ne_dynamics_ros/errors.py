"""Exceptions raised by ne_dynamics_ros.

Every error about bad input is a subclass of :class:`ValueError`, so callers that only
care about "the input was wrong" can catch ``ValueError``; the message always names the
offending element (URDF link/joint) or argument.
"""


class ModelError(ValueError):
    """Base class: the robot description or an argument given to the model is invalid."""


class URDFError(ModelError):
    """The URDF cannot be parsed or is not a valid robot description.

    Raised for malformed XML, XML with entity declarations (entity-expansion attacks),
    unknown ``base_link``/``tip_link``, a branching tree without a given tip, and
    unsupported joints (``floating``, ``planar``, ``mimic``) inside the chain.
    """


class InertiaError(URDFError):
    """A link's ``<inertial>`` is not physical.

    Negative or non-finite mass, or an inertia tensor (about the centre of mass) that is
    not positive semi-definite or violates the triangle inequality
    ``Ixx + Iyy >= Izz`` (and permutations) of its principal moments.
    """


class StateError(ModelError):
    """An array argument has the wrong shape or contains NaN/inf.

    Arguments: ``q``, ``qd``, ``qdd``, ``tau``, ``gravity``, ``f_tip``, ``armature``.
    """


class RecordingError(ValueError):
    """A recording (rosbag2 directory or CSV) cannot be used for identification.

    Raised for a missing file or topic, messages without efforts, joints missing from the
    messages, too few samples, and stamps that do not increase; the message names the
    file, topic or joint.
    """


class IdentificationError(ValueError):
    """Identification cannot produce a model.

    E.g. the data do not excite the parameters, or no physically consistent model is found.
    """


class ControlParameterError(ValueError):
    """A control parameter (mode, gains, limits, gravity, ...) has an invalid value."""


class NonFiniteEffortError(ValueError):
    """The control law produced NaN or inf (e.g. overflow); nothing may be commanded."""


def shorten(text, limit=80, one_line=False):
    """Return ``text`` (anything ``str`` takes) cut to ``limit`` characters for a message.

    A cut text ends with ``... (N characters)``; ``one_line``: newlines become spaces (a
    library's multi-line exception text inside one line of ours).
    """
    text = str(text)
    if one_line:
        text = text.replace('\n', ' ')
    return text if len(text) <= limit else f'{text[:limit]}... ({len(text)} characters)'


class MissingDependencyError(ImportError):
    """An optional Python package a feature needs is not installed.

    The message is one line naming the package and the ``pip install`` extra that brings
    it (``ne_dynamics_ros[identify]``, ``[sim]``, ``[mujoco]``).
    """


#: Which pip extra of ne_dynamics_ros brings each optional package.
EXTRAS = {'cvxpy': 'identify', 'rosbags': 'identify', 'scipy': 'identify', 'tqdm': 'identify',
          'yaml': 'identify', 'pinocchio': 'sim', 'matplotlib': 'sim', 'mujoco': 'mujoco'}


def require(module, feature):
    """Import and return the optional package ``module`` needed by ``feature``.

    Raises:
        MissingDependencyError: it is not installed; the message names the pip extra.
    """
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split('.')[0]
        if getattr(exc, 'name', None) not in (None, top, module):
            raise                      # installed but broken: not a missing package
        extra = EXTRAS.get(top, 'identify')
        package = {'yaml': 'pyyaml', 'pinocchio': 'pin'}.get(top, top)
        raise MissingDependencyError(
            f'{feature} needs the Python package {package!r}, which is not installed: '
            f"pip install 'ne_dynamics_ros[{extra}]'") from None
