"""An audit line's time: formatted once per second, yet the very string `datetime` makes for every instant."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime

import pytest

from mcp_nexus.audit.record import _when


def by_datetime(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


EDGES = [
    0.0,
    1.9999995,  # rounds up into the next second
    1.9999994,
    1e9 + 0.9999996,
    1767225599.9995,  # the last moment of a year
    1767225599.99949,
    -0.5,  # before 1970: the fraction borrows from the second
    -1.0000004,
    -1.9999996,
]


@pytest.mark.parametrize("epoch", EDGES)
def test_edges_of_a_second_match_datetime(epoch: float) -> None:
    assert _when(epoch) == by_datetime(epoch)


def test_instants_in_and_out_of_order_match_datetime() -> None:
    # Out of order too: the remembered second must never be reused for another second.
    rng = random.Random(20261127)
    now = time.time()
    instants = [now + n * 0.0004999 for n in range(20_000)]  # a busy second after another
    instants += [rng.uniform(-1e9, 4e9) for _ in range(20_000)]
    instants += [now + rng.uniform(-2.0, 2.0) for _ in range(20_000)]
    wrong = [
        (epoch, _when(epoch), by_datetime(epoch)) for epoch in instants if _when(epoch) != by_datetime(epoch)
    ]
    assert not wrong, wrong[:5]
