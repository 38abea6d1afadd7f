"""A load picked and released at given times, for the simulated arms (pick-and-place).

Pure module (no ROS). :class:`PayloadSchedule` holds ``(time s, mass kg, centre of mass
(3,) m)`` entries, the centre of mass in the payload link's frame; from each entry's time
on, that load is fixed to the link (mass 0: nothing is). Both plants
(:class:`~ne_dynamics_ros.simulation.simulated_arm.SimulatedArm`,
:class:`~ne_dynamics_ros.simulation.mujoco_arm.MujocoArm`) apply the entry in force at
the start of each of their ``step`` calls (the load changes on a sample boundary, as a gripper's
state reaches a controller once per sample). ``sim_arm_node`` takes it as the flat
``payload_schedule`` parameter: five numbers per entry.
"""
import math
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ne_dynamics_ros.errors import ModelError

Entry = Tuple[float, float, Tuple[float, float, float]]


class PayloadSchedule:
    """Loads by time: ``entries`` of ``(time s, mass kg, com (3,) m)``, times increasing.

    Raises:
        ModelError: times not finite, >= 0 and strictly increasing; a mass not finite
            and >= 0; a centre of mass not 3 finite numbers (the entry is named).
    """

    def __init__(self, entries: Sequence[Entry]):
        checked: List[Entry] = []
        for k, entry in enumerate(entries):
            try:
                time, mass, com = entry
                com = tuple(float(c) for c in com)
                time, mass = float(time), float(mass)
            except (TypeError, ValueError):
                raise ModelError(f'payload_schedule entry {k} is not (time, mass, (x, y, z)): '
                                 f'{entry!r}') from None
            if not (math.isfinite(time) and time >= 0):
                raise ModelError(f'payload_schedule entry {k}: time {time} is not >= 0 s')
            if checked and time <= checked[-1][0]:
                raise ModelError(f'payload_schedule entry {k}: time {time} s is not after '
                                 f'{checked[-1][0]} s')
            if not (math.isfinite(mass) and mass >= 0):
                raise ModelError(f'payload_schedule entry {k}: mass {mass} is not >= 0 kg')
            if len(com) != 3 or not all(math.isfinite(c) for c in com):
                raise ModelError(f'payload_schedule entry {k}: centre of mass {com} is not 3 '
                                 'finite numbers (m)')
            checked.append((time, mass, com))
        self.entries = checked

    @classmethod
    def from_flat(cls, values: Sequence[float]) -> 'PayloadSchedule':
        """Read ``[t0, m0, x0, y0, z0, t1, ...]`` (five numbers an entry), as the node does.

        Raises:
            ModelError: not a multiple of five numbers, or as the constructor.
        """
        values = [float(v) for v in values]
        if len(values) % 5:
            raise ModelError(f'payload_schedule needs 5 numbers per entry (time s, mass kg, '
                             f'com x, y, z m), got {len(values)}')
        return cls([(values[i], values[i + 1], values[i + 2:i + 5])
                    for i in range(0, len(values), 5)])

    @classmethod
    def pick_and_place(cls, cycles: int, move: float, rest: float, load: float,
                       com: Sequence[float], hidden: float = 0.0) -> 'PayloadSchedule':
        """Return the loads of ``cycles`` pick-and-place cycles (move ``move`` s, rest ``rest``).

        A cycle lasts ``2 (move + rest)`` s from 0: ``load`` kg at ``com`` (m, the link's
        frame) picked as each rest at the start pose starts, released as each rest at the
        goal starts (``rest + move`` later). ``hidden``: a load the plant always carries at
        the link origin; the two as one point mass at their common centre of mass.

        Raises:
            ModelError: as the constructor.
        """
        period, total = 2.0 * (move + rest), hidden + load
        carried = tuple(load * float(c) / total for c in com) if total > 0 else (0.0,) * 3
        entries = []
        for c in range(cycles):
            entries += [(c * period, total, carried),
                        (c * period + rest + move, hidden, (0.0, 0.0, 0.0))]
        return cls(entries)

    def flat(self) -> list:
        """Return the entries as ``from_flat`` reads them (``sim_arm_node``'s parameter)."""
        return [float(v) for t, mass, com in self.entries for v in (t, mass, *com)]

    def at(self, time: float) -> Optional[Tuple[float, np.ndarray]]:
        """Return ``(mass, com (3,))`` in force at ``time`` (s), None before the first."""
        current = None
        for t, mass, com in self.entries:
            if t > time + 1e-12:
                break
            current = (mass, np.array(com))
        return current

    def __bool__(self):
        return bool(self.entries)


__all__ = ['PayloadSchedule']
