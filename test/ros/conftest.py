"""Fixtures of the DDS tests: the computed-torque node's harness."""
import pytest

from node_harness import Harness, puma_params, SETTLE
from references import PUMA_LIMITS


@pytest.fixture
def make_harness(ros_context):
    """Return ``make(params=None, limits=PUMA_LIMITS)``: a :class:`Harness` on the context.

    Every harness made is checked (every effort it received finite and within its limits)
    and closed when the test ends.
    """
    made = []

    def make(params=None, limits=PUMA_LIMITS):
        if params is None:
            params = puma_params()
        elif not any(p.name == SETTLE.name for p in params):
            # these tests do not test a late discovery: not the 3.5 s default wait
            params = [*params, SETTLE]
        h = Harness(ros_context, params, limits)
        made.append(h)
        return h
    yield make
    for h in made:
        h.check_everything_published()
        h.close()
