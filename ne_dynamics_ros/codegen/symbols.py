"""Symbols that run the Newton–Euler recursion to write its straight-line program.

A :class:`Symbol` is a named quantity or an exact constant; ``+ - *`` between them fold
constants, drop ``0 +``, ``0 *``, ``1 *`` and ``-1 *`` (a sign is carried, not computed),
and ask the :class:`Emitter` for every operation, which names each new one once, so a
quantity that occurs twice is computed once (Renaud 1987: "analytical" and "iterative"
computation). Also the small text helpers the emitters
share.
"""
import functools
import math

from ne_dynamics_ros.dynamics.standard_parameters import parameter_names, PER_JOINT

#: Values within this of 0 or ±1 (relative to 1) are taken as exact: the round-off of
#: the URDF -> DH conversion (a few ulps), not a length anyone would write (1e-12 m is).
SNAP = 1e-14


class Emitter:
    """Collects the straight-line program: one assignment per new operation."""

    def __init__(self):
        self.lines = []          # (name, left, operator, right)
        self._known = {}
        self._sums = {}          # name of an emitted sum -> {operand: +-1}
        self._count = 0

    def emit(self, operator, left, right):
        """Return the symbol of ``left operator right`` (both names), emitting it once."""
        key = (operator, *((left, right) if operator == '-' else sorted((left, right))))
        name = self._known.get(key)
        if name is None:
            self._count += 1
            name = f'x{self._count}'
            self._known[key] = name
            self.lines.append((name, key[1], operator, key[2]))
            if operator != '*':
                self._sums[name] = {key[1]: 1.0, key[2]: 1.0 if operator == '+' else -1.0}
        return name

    def cancelled(self, sa, a, sb, b):
        """``(sign, name)`` if ``sa a + sb b`` reduces to one term, a sum cancelling out.

        E.g. ``(u + v) - u = v`` (Renaud's b for a link whose incoming ω has no z
        component: ω_x ω_z + ω̇_y holds ω_x q̇ twice, once with each sign). Else None.
        """
        terms = {}
        for sign, name in ((sa, a), (sb, b)):
            for operand, coefficient in self._sums.get(name, {name: 1.0}).items():
                terms[operand] = terms.get(operand, 0.0) + sign * coefficient
        left = [(c, operand) for operand, c in terms.items() if c != 0.0]
        if len(left) == 1 and abs(left[0][0]) == 1.0 and not left[0][1][0].isdigit():
            return left[0]
        return None

    def operations(self):
        """Count multiplications and additions/subtractions in the emitted lines."""
        mul = sum(1 for line in self.lines if line[2] == '*')
        return {'mul': mul, 'add': len(self.lines) - mul}


def snap(value):
    """Return ``value`` as exactly 0, 1 or -1 when within SNAP of one, else tidied.

    Tidied: the shortest decimal within ``SNAP`` (relative) of it, so that a constant
    met twice with different round-off (``0.4318`` and ``0.4318000000000001``, a few ulps
    apart) is one constant of the program, written as people write it.
    """
    return _snapped(float(value))


@functools.lru_cache(maxsize=65536)
def _snapped(value):
    """Return :func:`snap` of a float, kept (an LRU cache).

    Tracing one arm meets a few hundred constants, each tens of thousands of times, and
    the search for the shortest decimal is most of it.
    """
    for exact in (0.0, 1.0, -1.0):
        if abs(value - exact) < SNAP:
            return exact
    if not math.isfinite(value):
        return value
    for digits in range(1, 18):
        shorter = float(f'{value:.{digits}g}')
        if abs(shorter - value) <= SNAP * abs(value):
            return shorter
    return value


def literal(value):
    """Return a float as program text (its repr: exact round trip)."""
    return repr(float(value))


class Symbol:
    """A quantity of the generated program: ``sign * name``, or an exact constant."""

    __slots__ = ('emitter', 'name', 'sign', 'value')

    def __init__(self, emitter, name=None, sign=1.0, value=None):
        self.emitter, self.name, self.sign, self.value = emitter, name, sign, value

    # -- helpers ------------------------------------------------------------------------
    def _lift(self, other):
        if isinstance(other, Symbol):
            return other
        return Symbol(self.emitter, value=snap(other))

    def _const(self, value):
        return Symbol(self.emitter, value=snap(value))

    def _named(self, name, sign):
        return Symbol(self.emitter, name=name, sign=sign)

    def _term(self):
        """(sign, operand text) for an emission: a name, or a positive literal."""
        if self.value is not None:
            return (1.0 if self.value >= 0 else -1.0), literal(abs(self.value))
        return self.sign, self.name

    # -- arithmetic ---------------------------------------------------------------------
    def __neg__(self):
        if self.value is not None:
            return self._const(-self.value)
        return self._named(self.name, -self.sign)

    def __add__(self, other):
        other = self._lift(other)
        if self.value is not None and other.value is not None:
            return self._const(self.value + other.value)
        if self.value == 0.0:
            return other
        if other.value == 0.0:
            return self
        sa, a = self._term()
        sb, b = other._term()
        single = self.emitter.cancelled(sa, a, sb, b)
        if single is not None:
            return self._named(single[1], single[0])
        if sa == sb:
            return self._named(self.emitter.emit('+', a, b), sa)
        if a == b:
            return self._const(0.0)
        # sa * (a - b), written with the operands in one order so that b - a reuses it
        if a > b:
            return self._named(self.emitter.emit('-', b, a), -sa)
        return self._named(self.emitter.emit('-', a, b), sa)

    __radd__ = __add__

    def __sub__(self, other):
        return self + (-self._lift(other))

    def __rsub__(self, other):
        return self._lift(other) + (-self)

    def __mul__(self, other):
        other = self._lift(other)
        if self.value is not None and other.value is not None:
            return self._const(self.value * other.value)
        for x, y in ((self, other), (other, self)):
            if x.value == 0.0:
                return self._const(0.0)
            if x.value in (1.0, -1.0):
                return y if x.value == 1.0 else -y
        sa, a = self._term()
        sb, b = other._term()
        return self._named(self.emitter.emit('*', a, b), sa * sb)

    __rmul__ = __mul__

    def text(self):
        """Return the symbol as an expression: ``x12``, ``-x12`` or a literal."""
        if self.value is not None:
            return literal(self.value)
        return self.name if self.sign > 0 else f'-{self.name}'


def unpack_lines(n, indent):
    """Return the lines unpacking ``q, qd, qdd`` into ``q1 ... qn`` etc."""
    comma = ',' if n == 1 else ''
    return [f'{indent}' + ', '.join(f'{v}{i + 1}' for i in range(n)) + f'{comma} = {v}'
            for v in ('q', 'qd', 'qdd')]


def trig_argument(argument, offset):
    """Return the text of a sin/cos argument: the angle, plus its constant offset if any."""
    return argument if offset == 0.0 else f'{argument} + {literal(offset)}'


def parameter_lines(parameters, prefix=''):
    """Return the standard parameters as lines ``XX1 = value`` (Khalil's names), one each.

    ``parameters``: (13 n,) XX XY XZ YY YZ ZZ MX MY MZ M Ia Fv Fc per joint (kg·m², kg·m,
    kg, kg·m² or kg, N·m·s/rad or N·s/m, N·m or N), as the program was generated from.
    """
    names = parameter_names(len(parameters) // PER_JOINT)
    return [f'{prefix}{name} = {value:.17g}' for name, value in zip(names, parameters)]
