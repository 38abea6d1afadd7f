"""The NumPy batch body of a generated program: ufuncs writing into reused buffer rows.

Each quantity of :func:`~ne_dynamics_ros.codegen.tracing.generate`'s program goes into a
row of one buffer, given back once its last use has read it; sin and cos are found the
way that is cheaper for arrays (angle addition for a summed angle, the tangent of the half
angle for a sin-cos pair). :mod:`ne_dynamics_ros.codegen.python_emitter` wraps it into
``rnea_batch``.
"""
import math

from ne_dynamics_ros.codegen.symbols import literal, SNAP, unpack_lines

_UFUNC = {'*': 'mul', '+': 'add', '-': 'sub'}

# Angle addition through a quarter turn k: (cos, sin) of L + R + k pi/2, each as
# s1 * x1 * y1 + s2 * x2 * y2 over the names cL, sL, cR, sR.
QUARTER_SUMS = [
    (((1, 'cL', 'cR'), (-1, 'sL', 'sR')), ((1, 'sL', 'cR'), (1, 'cL', 'sR'))),
    (((-1, 'sL', 'cR'), (-1, 'cL', 'sR')), ((1, 'cL', 'cR'), (-1, 'sL', 'sR'))),
    (((-1, 'cL', 'cR'), (1, 'sL', 'sR')), ((-1, 'sL', 'cR'), (-1, 'cL', 'sR'))),
    (((1, 'sL', 'cR'), (1, 'cL', 'sR')), ((-1, 'cL', 'cR'), (1, 'sL', 'sR'))),
]


def _trig_groups(program):
    """Group the sin/cos the program reads by angle: {argument: (offset, {'cos': name})}."""
    groups = {}
    for name, function, argument, offset, _ in program.trig:
        groups.setdefault(argument, (offset, {}))[1][function] = name
    return groups


def _trig_steps(program):
    """Return the steps computing the program's sin and cos for a NumPy block.

    A summed angle (``q2_3``) whose two parts' sin and cos are both computed is turned by
    angle addition (4 multiplications, 2 additions instead of two libm calls, which cost
    14-25 ns per value in NumPy against under 1 ns for an addition); an angle whose sin and
    cos are both read goes through the tangent of its half, one libm call:
    ``t = tan(x/2)``, ``cos x = 2/(1 + t^2) - 1``, ``sin x = t * 2/(1 + t^2)`` (finite
    for every finite x: x/2 is never an odd multiple of pi/2 in floating point); a lone
    sin or cos is called directly. Returns (outputs, operands, kind, data) tuples.
    """
    groups = _trig_groups(program)
    sums = {name: (left, right) for name, left, right in program.angles}
    steps, summed = [], set()

    def need_angle(argument):
        if argument in sums and argument not in summed:
            left, right = sums[argument]
            need_angle(left)
            summed.add(argument)
            steps.append(((argument,), (left, right), 'sum', None))

    for argument, (offset, names) in groups.items():
        outputs = tuple(names[f] for f in ('cos', 'sin') if f in names)
        parts = [groups.get(part) for part in sums.get(argument, ())]
        if parts and all(part and len(part[1]) == 2 for part in parts):
            quarter = (offset - parts[0][0] - parts[1][0]) / (math.pi / 2)
            if abs(quarter - round(quarter)) < SNAP:
                operands = {f'{f[0]}{side}': part[1][f]
                            for side, part in zip('LR', parts) for f in ('cos', 'sin')}
                sums_of = dict(zip(('cos', 'sin'), QUARTER_SUMS[int(round(quarter)) % 4]))
                steps.append((outputs, tuple(operands.values()), 'turn',
                              [(names[f], sums_of[f], operands) for f in names]))
                continue
        need_angle(argument)
        kind = 'half' if len(outputs) == 2 else next(iter(names))
        steps.append((outputs, (argument,), kind, offset))
    return steps


class _Rows:
    """Rows of the batch block's buffer.

    A row is taken at a quantity's first write and given back after its last read (last
    in, first out, so recent rows stay in cache).
    """

    def __init__(self, last, keep):
        self.row, self.free, self.count = {}, [], 0
        self.last, self.keep = last, keep
        self.constants = {}

    def ref(self, name):
        """Return the row of a quantity, an input's own name, or a constant's 0-d array.

        A ufunc takes a 0-d float64 array about 0.4 µs faster than a Python float (NumPy 2
        resolves the float's type on every call), so each constant is made an array once.
        """
        if name in self.row:
            return f'b{self.row[name]}'
        if not _is_number(name):
            return name
        return self.constants.setdefault(literal(float(name)), f'k{len(self.constants)}')

    def take(self, name):
        if self.free:
            self.row[name] = self.free.pop()
        else:
            self.row[name], self.count = self.count, self.count + 1
        return f'b{self.row[name]}'

    def release(self, operands, index):
        for operand in dict.fromkeys(operands):
            if operand in self.row and self.last[operand] == index and operand not in self.keep:
                self.free.append(self.row[operand])

    def drop(self, name):
        """Give the row of a step's own temporary back at once."""
        self.free.append(self.row.pop(name))


_SCRATCH = ' scratch'     # not a name the program can have


def _trig_code(rows, outputs, operands, kind, data, indent):
    """Lines of one trig step (its operands' rows are still held)."""
    args = [rows.ref(operand) for operand in operands]
    targets = [rows.take(name) for name in outputs]
    body = []
    if kind == 'sum':
        body.append(f'{indent}add({args[0]}, {args[1]}, {targets[0]})')
    elif kind == 'turn':
        scratch = rows.take(_SCRATCH)
        for name, ((s1, x1, y1), (s2, x2, y2)), names in data:
            target = rows.ref(name)
            ref = {key: rows.ref(value) for key, value in names.items()}
            first, second = ((x1, y1), (x2, y2)) if s1 > 0 or s2 < 0 else ((x2, y2), (x1, y1))
            body.append(f'{indent}mul({ref[first[0]]}, {ref[first[1]]}, {target})')
            body.append(f'{indent}mul({ref[second[0]]}, {ref[second[1]]}, {scratch})')
            body.append(f'{indent}{"add" if s1 == s2 else "sub"}({target}, {scratch}, {target})')
            if s1 < 0 and s2 < 0:
                body.append(f'{indent}neg({target}, {target})')
        rows.drop(_SCRATCH)
    elif kind == 'half':
        tangent, cosine, sine = targets[1], targets[0], targets[1]
        half, one, two = (rows.ref(literal(value)) for value in (0.5, 1.0, 2.0))
        body.append(f'{indent}mul({args[0]}, {half}, {tangent})')
        if data != 0.0:
            body.append(f'{indent}add({tangent}, {rows.ref(literal(data / 2))}, {tangent})')
        body += [f'{indent}tan({tangent}, {tangent})',
                 f'{indent}mul({tangent}, {tangent}, {cosine})',
                 f'{indent}add({cosine}, {one}, {cosine})',
                 f'{indent}div({two}, {cosine}, {cosine})',
                 f'{indent}mul({tangent}, {cosine}, {sine})',
                 f'{indent}sub({cosine}, {one}, {cosine})']
    else:
        source = args[0]
        if data != 0.0:
            body.append(f'{indent}add({source}, {rows.ref(literal(data))}, {targets[0]})')
            source = targets[0]
        body.append(f'{indent}{kind}({source}, {targets[0]})')
    return body


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def batch_lines(program, indent='    '):
    """Write the block body of ``rnea_batch``: NumPy ufuncs writing into reused buffer rows.

    Each quantity goes into a row of ``buf`` (bound once per block as ``b0, b1, ...``)
    that is given back once its last use has read it (an elementwise ufunc may write over
    its own operand), so a block needs only as many rows as quantities alive at once. The
    sin and cos come from :func:`_trig_steps`. Returns (unpacking lines, body, rows,
    lines making the constants 0-d arrays).
    """
    steps = _trig_steps(program)
    steps += [((name,), (left, right), _UFUNC[operator], None)
              for name, left, operator, right in program.lines]
    last = {}
    for index, (_, operands, _, _) in enumerate(steps):
        for operand in operands:
            last[operand] = index
    rows = _Rows(last, {text.lstrip('-') for text in program.outputs})
    body = []
    for index, (outputs, operands, kind, data) in enumerate(steps):
        if kind in _UFUNC.values():
            args = [rows.ref(operand) for operand in operands]
            rows.release(operands, index)
            body.append(f'{indent}{kind}({args[0]}, {args[1]}, {rows.take(outputs[0])})')
        else:
            body += _trig_code(rows, outputs, operands, kind, data, indent)
            rows.release(operands, index)
    for i, text in enumerate(program.outputs):
        source = rows.ref(text.lstrip('-'))
        if text.startswith('-'):
            body.append(f'{indent}neg({source}, tau[{i}])')
        else:
            body.append(f'{indent}tau[{i}] = {source}')
    count = max(rows.count, 1)
    unpack = unpack_lines(len(program.joint_names), indent)
    unpack.append(f'{indent}' + ', '.join(f'b{k}' for k in range(count))
                  + (',' if count == 1 else '') + ' = buf')
    constants = [f'    {name} = np.array({value})' for value, name in rows.constants.items()]
    return unpack, body, count, constants
