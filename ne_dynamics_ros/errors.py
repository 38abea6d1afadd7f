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
