"""Answering a 2026-07-28 InputRequiredResult for a caller that cannot take it back (SEP-2322)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from mcp_nexus.upstream.input_required import MAX_ROUNDS, drive_input_required

ASK_NAME = types.ElicitRequest(
    params=types.ElicitRequestFormParams(
        message="Your name?", requested_schema={"type": "object", "properties": {"name": {"type": "string"}}}
    )
)


def asking(*keys: str, state: str | None = None) -> types.InputRequiredResult:
    return types.InputRequiredResult(
        input_requests={key: ASK_NAME for key in keys} or None, request_state=state
    )


def done(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


class Server:
    """Answers each retry from a script and records what it was sent."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.retries: list[tuple[dict[str, Any] | None, str | None]] = []

    async def __call__(self, responses: dict[str, Any] | None, state: str | None) -> Any:
        self.retries.append((responses, state))
        return self.answers.pop(0)


async def accept(request: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def test_questions_are_answered_and_the_call_retried_with_the_answers_and_the_state() -> None:
    server = Server(asking("second", state="s2"), done("hello Ada"))
    outcome = await drive_input_required(asking("first", "other", state="s1"), server, accept)
    assert outcome == done("hello Ada")
    (first_answers, first_state), (second_answers, second_state) = server.retries
    assert set(first_answers or {}) == {"first", "other"} and first_state == "s1"
    assert set(second_answers or {}) == {"second"} and second_state == "s2"
    assert first_answers["first"].content == {"name": "Ada"}  # type: ignore[index]


async def test_a_state_only_round_is_asked_again_without_answers() -> None:
    server = Server(done("ready now"))
    assert await drive_input_required(asking(state="wait"), server, accept) == done("ready now")
    assert server.retries == [(None, "wait")]


async def test_a_declined_question_ends_the_call_with_the_callers_error() -> None:
    async def decline(request: Any) -> types.ErrorData:
        return types.ErrorData(code=types.INVALID_REQUEST, message="this client cannot elicit")

    server = Server(done("never"))
    with pytest.raises(MCPError, match="this client cannot elicit"):
        await drive_input_required(asking("q"), server, decline)
    assert server.retries == []


async def test_a_server_that_keeps_asking_is_stopped_after_the_round_limit() -> None:
    server = Server(*[asking("again", state=str(i)) for i in range(MAX_ROUNDS)])
    with pytest.raises(MCPError, match=f"kept asking for input after {MAX_ROUNDS} rounds"):
        await drive_input_required(asking("q"), server, accept)
    assert len(server.retries) == MAX_ROUNDS
