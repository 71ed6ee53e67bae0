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
from robustness.stdio_client import StdioGateway
from robustness.strategies import Draft, Renderer, exchanges
from robustness.wire import classify, judge_stream

ANSWER_TIMEOUT = 5.0
LAST_SENT: list[str] = ["(nothing yet)"]
FUZZ_SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,  # the same examples on every run and every machine
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: after a crash every example "fails"
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def fuzz_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioGateway]:
    folder: Path = tmp_path_factory.mktemp("stdio-fuzz")
    gateway = StdioGateway(write_config(folder), folder / "stderr.log")
    try:
        gateway.handshake()
        yield gateway
    finally:
        gateway.stop()


@FUZZ_SETTINGS
@given(exchange=exchanges)
def test_stdio_never_dies_and_answers_every_request_once(
    fuzz_gateway: StdioGateway, exchange: list[Draft]
) -> None:
    gateway = fuzz_gateway
    renderer = Renderer("fz")
    # Hypothesis replays a failing example to report it: by then the gateway may be dead.
    assert gateway.alive, f"{gateway.death_note()}\nthe example that killed it sent:\n{LAST_SENT[-1]}"
    mark = gateway.mark()
    lines = [renderer.render(draft) for draft in exchange]
    sent = [classify(line) for line in lines]
    shown = "\n".join(repr(line[:300]) for line in lines)
    LAST_SENT.append(shown)
    for line in lines:
        gateway.send_line(line)
    for message in sent:
        if message.kind == "request":
            gateway.wait_for(message.id, mark=mark, timeout=ANSWER_TIMEOUT)
    sentinel = gateway.sentinel(timeout=ANSWER_TIMEOUT)
    assert gateway.alive, f"{gateway.death_note()}\nafter sending:\n{shown}"
    problems = gateway.problems_since(mark)
    assert not problems, f"invalid output {problems}\nafter sending:\n{shown}"
    answers = [a for a in gateway.answers_since(mark) if a.get("id") != sentinel]
    verdict = judge_stream(sent, answers)
    assert not verdict.problems, f"{verdict.problems}\nanswers: {answers}\nafter sending:\n{shown}"
