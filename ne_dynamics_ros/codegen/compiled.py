"""A robot model whose inverse dynamics run its generated program (checked at start)."""
import collections
import math
import threading

import numpy as np

from ne_dynamics_ros.codegen.python_emitter import load_python, python_source
from ne_dynamics_ros.codegen.tracing import generate, GRAVITY
from ne_dynamics_ros.dynamics.model import finite_efforts
from ne_dynamics_ros.errors import ModelError


def program_key(model) -> tuple:
    """Everything :func:`~ne_dynamics_ros.codegen.tracing.generate` reads of ``model``.

    Two models with equal keys get the same program: the convention, the joint names and
    the tip link (argument order and title), each link's DH row and moments, the
    armature, and the base frame (gravity's direction in it).
    """
    return (model.convention.value, tuple(model.joint_names), model.tip_link, model.links,
            tuple(float(a) for a in model.armature),
            tuple(float(v) for v in model.base_transform.ravel()))


#: Generated programs by :func:`program_key`, least recently used first (at most 16).
_PROGRAMS = collections.OrderedDict()
_PROGRAMS_LOCK = threading.Lock()


def generated_program(model):
    """Return :func:`~ne_dynamics_ros.codegen.tracing.generate` of ``model``, once per key.

    A node reconfigured with the same description, or a test building the same arm
    again, reuses the program (generating it takes ~0.1 s for six joints); its source is
    written, loaded and checked against the recursion for every
    :class:`CompiledDynamics` all the same.
    """
    key = program_key(model)
    with _PROGRAMS_LOCK:
        program = _PROGRAMS.get(key)
        if program is not None:
            _PROGRAMS.move_to_end(key)
            return program
    program = generate(model)
    with _PROGRAMS_LOCK:
        _PROGRAMS[key] = program
        while len(_PROGRAMS) > 16:
            _PROGRAMS.popitem(last=False)
    return program


class CompiledDynamics:
    """A :class:`RobotModel` whose inverse dynamics run the generated program.

    ``rnea`` and ``gravity_torques`` use the generated code for the gravity it was
    generated for, (0, 0, -9.81) m/s², and no tip wrench; any other gravity or a tip
    wrench falls back to the recursion. Everything else (names, limits, friction,
    ``mass_matrix``...) is the wrapped model's. On construction the generated function is
    checked against the recursion on random states; a mismatch raises.

    Args:
        model: the :class:`~ne_dynamics_ros.dynamics.model.RobotModel`.
        states: how many random states to check (positions within the joint limits).
        tolerance: largest accepted difference, relative to the largest effort.

    Raises:
        ModelError: the generated function differs from the recursion (the message gives
            the difference and the state).
    """

    def __init__(self, model, states=50, tolerance=1e-9, seed=0):
        self.model = model
        #: the :class:`~ne_dynamics_ros.codegen.tracing.GeneratedDynamics` it runs
        self.program = generated_program(model)
        namespace = load_python(python_source(self.program, model.tip_link))
        self._single = namespace['rnea']
        self._batch = namespace['rnea_batch']
        self._checked_gravity = (None, False)
        self.operations = namespace['OPERATIONS']
        self.check(states, tolerance, seed)

    def __getattr__(self, name):
        return getattr(self.model, name)

    def check(self, states=50, tolerance=1e-9, seed=0):
        """Compare with the recursion on random states; raise ModelError on a mismatch."""
        model = self.model
        rng = np.random.default_rng(seed)
        lower = np.where(np.isfinite(model.lower_limits), model.lower_limits, -math.pi)
        upper = np.where(np.isfinite(model.upper_limits), model.upper_limits, math.pi)
        q = rng.uniform(lower, upper, (states, model.n))
        qd, qdd = rng.normal(0, 2, (2, states, model.n))
        expected = model.rnea(q, qd, qdd)
        got = self._batch(q, qd, qdd)
        scale = max(1.0, float(np.abs(expected).max()))
        error = np.abs(got - expected).max(axis=1) / scale
        worst = int(np.argmax(error))
        if not error[worst] <= tolerance:
            raise ModelError(
                f'the generated inverse dynamics differ from the recursion by '
                f'{error[worst]:.3g} (relative) at q={q[worst].tolist()}, '
                f'qd={qd[worst].tolist()}, qdd={qdd[worst].tolist()}')

    def _is_default_gravity(self, gravity):
        """Tell whether ``gravity`` is (0, 0, -9.81), the program's (last answer cached)."""
        if gravity is self._checked_gravity[0]:
            return self._checked_gravity[1]
        answer = tuple(float(g) for g in gravity) == GRAVITY
        if isinstance(gravity, np.ndarray) and not gravity.flags.writeable or \
                isinstance(gravity, tuple):
            self._checked_gravity = (gravity, answer)
        return answer

    def rnea_values(self, q, qd, qdd, gravity=GRAVITY):
        """Return the n efforts of one state as a list, or None if the program cannot run.

        ``q, qd, qdd``: lists of n floats (rad, rad/s, rad/s²; m for prismatic joints) in
        the model's joint order. The program runs once, without array checks or
        conversions (the control path's single call); the result is returned as it
        comes, NaN or inf included (NaN/inf inputs, an overflow): the caller checks it
        (:meth:`rnea` raises :class:`~ne_dynamics_ros.errors.StateError` then). None when
        ``gravity`` is not the program's (0, 0, -9.81) or the arguments are not n
        numbers each.
        """
        if not self._is_default_gravity(gravity):
            return None
        try:
            return self._single(q, qd, qdd)
        except (ValueError, OverflowError, TypeError):
            return None

    def rnea(self, q, qd, qdd, gravity=GRAVITY, f_tip=None):
        """Inverse dynamics as :meth:`RobotModel.rnea`, by the generated program.

        One state runs the program once; a state it cannot answer for finitely then
        raises the error the model's checks give (a NaN/inf input named, or the overflow).
        """
        if f_tip is not None or not self._is_default_gravity(gravity):
            return self.model.rnea(q, qd, qdd, gravity, f_tip)
        n = self.model.n
        if (type(q) is np.ndarray and type(qd) is np.ndarray and type(qdd) is np.ndarray
                and q.shape == qd.shape == qdd.shape == (n,)):
            # One state: no array validators unless the answer is not finite.
            tau = self.rnea_values(q.tolist(), qd.tolist(), qdd.tolist(), gravity)
            if tau is not None and math.isfinite(sum(tau)):
                return np.array(tau)
            self.model.checked_states(q=q, qd=qd, qdd=qdd)    # names a NaN/inf input
            return finite_efforts(np.array(tau, dtype=float) if tau is not None
                                  else np.full(n, math.nan), 'rnea')
        s = self.model.checked_states(q=q, qd=qd, qdd=qdd)
        if s['q'].ndim == 1:
            return finite_efforts(np.array(self._single(
                s['q'].tolist(), s['qd'].tolist(), s['qdd'].tolist())), 'rnea')
        return self._batch(s['q'], s['qd'], s['qdd'])

    def gravity_torques(self, q, gravity=GRAVITY):
        """Gravity efforts g(q) = rnea(q, 0, 0), by the generated program."""
        q = self.model.checked_vector(q, 'q')
        zero = np.zeros_like(q)
        return self.rnea(q, zero, zero, gravity)
