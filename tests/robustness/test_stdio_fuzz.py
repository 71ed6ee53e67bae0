"""Property-based fuzzing of `nexus serve --stdio` (issue 12 item 1: "a 180 s fuzz found 41 exits").

One gateway process for the whole test; every example sends a few drawn lines, then a ping.
Invariants: the process never exits, stdout carries only valid JSON-RPC lines, every
well-formed request gets exactly one answer with its id, notifications get none, and
malformed input earns at most one error (see wire.judge_stream).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from robustness.gateways import write_config
from robustness.stdio_checks import FuzzRun
from robustness.stdio_client import StdioGateway
from robustness.strategies import Draft, exchanges

FUZZ_SETTINGS = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,  # the same examples on every run and every machine
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: after a crash every example "fails"
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def fuzz_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzRun]:
    folder: Path = tmp_path_factory.mktemp("stdio-fuzz")
    gateway = StdioGateway(write_config(folder), folder / "stderr.log")
    try:
        gateway.handshake()
        yield FuzzRun(gateway)
    finally:
        gateway.stop()


@FUZZ_SETTINGS
@given(exchange=exchanges)
def test_stdio_never_dies_and_answers_every_request_once(fuzz_run: FuzzRun, exchange: list[Draft]) -> None:
    fuzz_run.example(exchange)
