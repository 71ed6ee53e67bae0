"""The suite's own expectations, checked against a minimal strict JSON-RPC peer (reference_server.py).

If a fixed case or a fuzz invariant demanded something no correct peer can do, it would fail
here too, and the gateway's failures elsewhere would mean nothing. This also keeps the
oracle honest when the strategies or the expectation table change.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from robustness.expectations import MALFORMED_CASES, Case
from robustness.stdio_checks import FuzzRun, exchange
from robustness.stdio_client import StdioGateway
from robustness.strategies import Draft, Renderer, exchanges
from robustness.wire import classify


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioGateway]:
    folder: Path = tmp_path_factory.mktemp("reference")
    peer = StdioGateway(
        folder / "unused.json",
        folder / "stderr.log",
        command=[sys.executable, "-m", "robustness.reference_server"],
    )
    try:
        peer.handshake()
        yield peer
    finally:
        peer.stop()


@pytest.mark.parametrize("case", MALFORMED_CASES, ids=[case.name for case in MALFORMED_CASES])
def test_a_strict_peer_meets_every_fixed_expectation(reference: StdioGateway, case: Case) -> None:
    case.expect.check(
        exchange(reference, case.raw, wait_for=case.expect.required_ids, one_of=case.expect.due_ids)
    )


@pytest.fixture(scope="module")
def reference_run(reference: StdioGateway) -> FuzzRun:
    return FuzzRun(reference)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(drafts=exchanges)
def test_a_strict_peer_meets_every_fuzz_invariant(reference_run: FuzzRun, drafts: list[Draft]) -> None:
    reference_run.example(drafts)


def test_the_fuzz_draws_enough_of_each_kind() -> None:
    """The strategies must mostly produce requests and notifications, not only junk."""
    kinds: dict[str, int] = {}

    @settings(max_examples=300, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(drafts=exchanges)
    def count(drafts: list[Draft]) -> None:
        renderer = Renderer("count")
        for draft in drafts:
            kind = classify(renderer.render(draft)).kind
            kinds[kind] = kinds.get(kind, 0) + 1

    count()
    total = sum(kinds.values())
    assert kinds.get("request", 0) > total / 5, kinds
    assert kinds.get("notification", 0) > total / 20, kinds
    assert kinds.get("invalid", 0) + kinds.get("maybe", 0) > total / 5, kinds
