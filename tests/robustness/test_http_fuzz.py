"""Property-based fuzzing of POST `/mcp` bodies, in a handshake-era session and as 2026-07-28 requests.

One gateway process per test. Invariants for every POST: never a 5xx, the server lives,
whatever comes back is valid JSON, a well-formed request gets exactly one answer carrying
its id, a notification or response gets none, and malformed input earns at most one error.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import httpx2
import pytest
from hypothesis import HealthCheck, Phase, given, settings

from robustness.gateways import HttpGateway, write_config
from robustness.http_client import HandshakeSession, HttpAnswer, modern_meta, post_modern
from robustness.strategies import ABSENT, Draft, Renderer, exchanges
from robustness.wire import Sent, classify, judge_single

FUZZ_SETTINGS = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking against a server that may be dead
    suppress_health_check=list(HealthCheck),
)
LAST_SENT: list[str] = ["(nothing yet)"]


@dataclass
class Target:
    gateway: HttpGateway
    client: httpx2.Client
    session: HandshakeSession  # one handshake-era session for all examples of a test


@pytest.fixture
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    folder = tmp_path_factory.mktemp("http-fuzz")
    gateway = HttpGateway(write_config(folder), folder / "gateway.log").wait_ready()
    try:
        with httpx2.Client(timeout=10) as client:
            yield Target(gateway, client, HandshakeSession(client, gateway.mcp_url).open())
    finally:
        gateway.stop()


def judge_post(sent: Sent, answer: HttpAnswer) -> list[str]:
    problems = list(answer.problems)
    if answer.status >= 500:
        problems.append(f"HTTP {answer.status}")
    # Streamable HTTP lets a server refuse a notification with 400 and an id-less error.
    return problems + judge_single(sent, answer.answers, null_for_notifications=True)


def with_envelope(message: Any) -> Any:
    """What a 2026-07-28 client adds to every request: the `_meta` envelope (where params allow one)."""
    if isinstance(message, dict) and message.get("params", ABSENT) is ABSENT and "method" in message:
        return {**message, "params": {"_meta": modern_meta()}}
    if isinstance(message, dict) and isinstance(message.get("params"), dict):
        return {**message, "params": {**message["params"], "_meta": modern_meta()}}
    return message


def run_example(era: Literal["handshake", "2026-07-28"], target: Target, exchange: list[Draft]) -> None:
    gateway = target.gateway
    # Hypothesis replays a failing example to report it: by then the gateway may be dead.
    assert gateway.alive, (
        f"gateway exited; the example that killed it sent:\n{LAST_SENT[-1]}\n{gateway.log_tail()}"
    )
    renderer = Renderer(f"fz-{era}")
    for draft in exchange:
        if era == "2026-07-28" and draft.message is not None:
            draft = Draft(with_envelope(draft.message), None, draft.ascii_escapes)
        body = renderer.render(draft, newline_free=False)
        sent = classify(body)
        LAST_SENT.append(repr(body[:400]))
        try:
            if era == "handshake":
                answer = target.session.post(body, timeout=10)
            else:
                answer = post_modern(target.client, gateway.mcp_url, body, draft.message, timeout=10)
        except httpx2.HTTPError as exc:
            raise AssertionError(
                f"{type(exc).__name__}: {exc} for body {body[:400]!r}; alive={gateway.alive}\n{gateway.log_tail()}"
            ) from None
        problems = judge_post(sent, answer)
        assert not problems, f"{problems}\nbody: {body[:400]!r}\n{answer.describe()}"
    assert gateway.alive, gateway.log_tail()


@FUZZ_SETTINGS
@given(exchange=exchanges)
def test_handshake_era_posts_never_break_the_gateway(target: Target, exchange: list[Draft]) -> None:
    run_example("handshake", target, exchange)


@FUZZ_SETTINGS
@given(exchange=exchanges)
def test_2026_era_posts_never_break_the_gateway(target: Target, exchange: list[Draft]) -> None:
    run_example("2026-07-28", target, exchange)
