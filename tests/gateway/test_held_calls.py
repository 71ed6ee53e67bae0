"""A 2026-07-28 client answers a handshake-era server's questions through the gateway (held_calls.py).

The upstream is the conformance fixture over stdio, told `protocol: legacy`: it asks its
questions (elicitation, sampling, roots) mid-call over the session, as every handshake-era
server does. The client is the SDK's in 2026-07-28 mode, which can only be asked with an
`InputRequiredResult` and answers by calling again. Before the gateway held such calls, the
fixture's questions were refused ("the caller cannot answer") and each tool failed.

Every frontend: the SDK's server in memory, HTTP (uvicorn; the first round takes the lean
2026-07-28 path, the retries the SDK's) and `nexus serve --stdio` as a child process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from conformance.fixture_process import FIXTURE_SERVER
from mcp_nexus.errors import GatewayError
from mcp_nexus.frontends.mcp.server import McpFrontend
from mcp_nexus.gateway import Gateway
from mcp_nexus.pipeline import held_calls
from mcp_nexus.pipeline.call import Caller, InputRound
from mcp_nexus.pipeline.held_calls import STATE_PREFIX, HeldCalls
from support.gateway import running
from support.processes import VENV_BIN, child_env

FIXTURE = {
    "command": sys.executable,
    "args": [str(FIXTURE_SERVER), "--stdio"],
    "protocol": "legacy",
    "namespace": "",
}
CONFIG: dict[str, Any] = {
    "gateway": {"include_builtins": False, "rate_limit": None, "first_list_wait": 10},
    "servers": {"old": FIXTURE},
}
ELICIT: dict[str, Any] = {"elicitation": {"form": {}}}


class Answers:
    """The client's side: answers every question the way a person and a model would, and counts them."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.asked.append(params.message)
        content: dict[str, Any] = {"name": "Ada"}
        if "color" in params.message:
            content = {"color": "blue"}
        elif "context" in params.message:
            content = {"context": "a held prompt"}
        return types.ElicitResult(action="accept", content=content)

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.asked.append("sampling")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text="Paris"),
            model="test-model",
            stop_reason="endTurn",
        )

    async def roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.asked.append("roots")
        return types.ListRootsResult(
            roots=[types.Root.model_validate({"uri": "file:///work/project", "name": "project"})]
        )

    def client_options(self) -> dict[str, Any]:
        return {
            "elicitation_callback": self.elicitation,
            "sampling_callback": self.sampling,
            "list_roots_callback": self.roots,
        }


def text(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


@contextlib.asynccontextmanager
async def client_through(
    frontend: str, tmp_path: Path, **options: Any
) -> AsyncIterator[tuple[Client, Gateway | None]]:
    """A 2026-07-28 SDK client on the gateway through `frontend`, and the gateway when in this process."""
    if frontend == "stdio":
        config = tmp_path / "nexus.json"
        config.write_text(json.dumps(CONFIG))
        env = {**child_env(), "NEXUS_DATA_DIR": str(tmp_path / "data")}
        params = StdioServerParameters(
            command=str(VENV_BIN / "nexus"),
            args=["serve", "--stdio", "--no-watch", "--config", str(config)],
            env=env,
        )
        with open(tmp_path / "stderr.log", "w") as errlog:
            transport = stdio_client(params, errlog=errlog)
            async with Client(transport, mode="auto", read_timeout_seconds=30, **options) as client:
                yield client, None
        return
    async with running(CONFIG, http=frontend == "http") as runtime:
        gateway = runtime.gateway
        assert gateway.upstreams["old"].session().modern is False  # the handshake era, as configured
        target: Any = runtime.url if frontend == "http" else McpFrontend(gateway, "test").server
        async with Client(target, mode="auto", read_timeout_seconds=30, **options) as client:
            yield client, gateway


@pytest.mark.timeout(120)
@pytest.mark.parametrize("frontend", ["memory", "http", "stdio"])
async def test_a_2026_client_answers_a_handshake_era_servers_questions(frontend: str, tmp_path: Path) -> None:
    answers = Answers()
    async with client_through(frontend, tmp_path, **answers.client_options()) as (client, gateway):
        assert client.protocol_version == "2026-07-28"

        greeted = await client.call_tool("test_input_required_result_elicitation", {})
        assert text(greeted) == "Hello, Ada!", greeted
        assert answers.asked == ["What is your name?"]

        sampled = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
        assert text(sampled) == "LLM response: Paris", sampled

        rooted = await client.call_tool("test_input_required_result_list_roots", {})
        assert "Found 1 root(s): file:///work/project" in text(rooted), rooted

        # Two questions one after the other: two rounds of one held call.
        answers.asked.clear()
        rounds = await client.call_tool("test_input_required_result_multi_round", {})
        assert text(rounds) == "Ada likes blue", rounds
        assert answers.asked == ["Step 1: What is your name?", "Step 2: What is your favorite color?"]

        # Three kinds in one call (elicitation, sampling, roots), asked in turn by the server.
        answers.asked.clear()
        every = await client.call_tool("test_input_required_result_multiple_inputs", {})
        assert text(every) == "All inputs received for Ada", every
        assert sorted(answers.asked) == ["What is your name?", "roots", "sampling"]

        # prompts/get asks too: the same rounds.
        prompt = await client.get_prompt("test_input_required_result_prompt")
        content = prompt.messages[0].content
        assert isinstance(content, types.TextContent), prompt
        assert content.text == "Prompt built with context: a held prompt"

        plain = await client.call_tool("test_simple_text", {})
        assert text(plain) == "This is a simple text response for testing."
        if gateway is not None:
            assert len(gateway.held_calls) == 0  # every held call ended with its result


@pytest.mark.timeout(60)
async def test_a_caller_that_declared_nothing_is_not_held_and_the_server_hears_why() -> None:
    async with running(CONFIG) as runtime:
        frontend = McpFrontend(runtime.gateway, "test")
        async with Client(frontend.server, mode="auto", read_timeout_seconds=30) as client:
            with pytest.raises(MCPError, match="no client connected that supports elicitation"):
                await client.call_tool("test_input_required_result_elicitation", {})
        assert len(runtime.gateway.held_calls) == 0


def modern_caller(client: str = "ide") -> Caller:
    return Caller(frontend="test", client=client, modern=True, capabilities=ELICIT)


@pytest.mark.timeout(60)
async def test_a_round_is_answered_only_by_its_own_caller_and_for_its_own_tool() -> None:
    async with running(CONFIG) as runtime:
        gateway = runtime.gateway
        name = "test_input_required_result_elicitation"
        first = await gateway.call_tool(name, {}, caller=modern_caller())
        assert isinstance(first, types.InputRequiredResult), first
        state = first.request_state
        assert state is not None and state.startswith(STATE_PREFIX) and len(state) > 40
        (key,) = first.input_requests or {}
        answer = {key: {"action": "accept", "content": {"name": "Eve"}}}

        for caller, tool in ((modern_caller("intruder"), name), (modern_caller(), "test_simple_text")):
            with pytest.raises(GatewayError) as refused:
                await gateway.call_tool(
                    tool, {}, caller=caller, round_=InputRound(input_responses=answer, request_state=state)
                )
            assert refused.value.code == types.INVALID_PARAMS
            assert "requestState names no call" in refused.value.message
        with pytest.raises(GatewayError, match="requestState names no call"):
            await gateway.call_tool(
                name, {}, caller=modern_caller(), round_=InputRound(answer, STATE_PREFIX + "forged")
            )

        done = await gateway.call_tool(
            name, {}, caller=modern_caller(), round_=InputRound(input_responses=answer, request_state=state)
        )
        assert isinstance(done, types.CallToolResult) and text(done) == "Hello, Eve!", done
        assert len(gateway.held_calls) == 0
        with pytest.raises(GatewayError, match="it ended"):  # a round after the end: said, not hung
            await gateway.call_tool(
                name,
                {},
                caller=modern_caller(),
                round_=InputRound(input_responses=answer, request_state=state),
            )


@pytest.mark.timeout(60)
async def test_held_calls_are_bounded_in_number_and_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Callers that never answer: at most `limit` calls are held, and each question expires."""
    monkeypatch.setattr(held_calls, "ANSWER_WAIT_S", 1.5)
    async with running(CONFIG) as runtime:
        gateway = runtime.gateway
        gateway.held_calls.limit = 2
        name = "test_input_required_result_elicitation"
        waiting = [await gateway.call_tool(name, {}, caller=modern_caller(f"c{i}")) for i in range(2)]
        assert all(isinstance(outcome, types.InputRequiredResult) for outcome in waiting)
        assert len(gateway.held_calls) == 2

        # The third is not held: the server's question is refused at once, naming why (and never
        # handed to the held calls, whose own questions wait for their answers).
        with pytest.raises(GatewayError, match="elicitation"):
            await gateway.call_tool(name, {}, caller=modern_caller("c2"))
        assert len(gateway.held_calls) == 2

        # Nobody answers: each question expires, the server is told, the held calls end.
        deadline = asyncio.get_running_loop().time() + 10
        while len(gateway.held_calls) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.1)
        assert len(gateway.held_calls) == 0
        # The gateway still serves, and holds again.
        again = await gateway.call_tool(name, {}, caller=modern_caller("c3"))
        assert isinstance(again, types.InputRequiredResult)


async def test_closing_cancels_what_is_held() -> None:
    held = HeldCalls()
    started = asyncio.Event()

    async def run(caller: Caller, progress: Any) -> types.CallToolResult:
        started.set()
        await caller.peer.send_request(  # type: ignore[union-attr]
            types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message="?", requested_schema={"type": "object", "properties": {}}
                )
            ),
            types.ElicitResult,
        )
        return types.CallToolResult(content=[])

    first = await held.start(modern_caller(), ("tools/call", "t"), "s", None, run)
    assert isinstance(first, types.InputRequiredResult) and started.is_set()
    assert len(held) == 1
    await held.close()
    assert len(held) == 0


def test_only_a_request_state_the_gateway_minted_resumes_a_held_call() -> None:
    # A 2026-07-28 server's own requestState passes through to it: only ours carries the prefix.
    assert held_calls.held_state(InputRound(request_state="opaque-from-a-server")) is None
    assert held_calls.held_state(None) is None
    assert held_calls.held_state(InputRound(request_state=STATE_PREFIX + "x")) == STATE_PREFIX + "x"


async def test_a_first_round_cancelled_before_its_answer_cancels_the_call() -> None:
    """The caller never got a requestState, so nothing could resume the call: it is not kept."""
    held = HeldCalls()
    cancelled = asyncio.Event()

    async def run(caller: Caller, progress: Any) -> types.CallToolResult:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return types.CallToolResult(content=[])

    first = asyncio.create_task(held.start(modern_caller(), ("tools/call", "t"), "s", None, run))
    await asyncio.sleep(0.05)
    assert len(held) == 1
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(cancelled.wait(), 5)
    await asyncio.sleep(0)
    assert len(held) == 0


async def test_progress_reaches_the_round_that_is_current() -> None:
    """Each round is a request of its own: the server's progress goes to the one in flight."""
    held = HeldCalls()
    heard: dict[str, list[str | None]] = {"first": [], "second": []}

    def listener(round_name: str) -> Any:
        async def progress(done: float, total: float | None, message: str | None) -> None:
            heard[round_name].append(message)

        return progress

    async def run(caller: Caller, progress: Any) -> types.CallToolResult:
        await progress(1, 2, "before the question")
        answer = await caller.peer.send_request(  # type: ignore[union-attr]
            types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message="Go on?", requested_schema={"type": "object", "properties": {}}
                )
            ),
            types.ElicitResult,
        )
        await progress(2, 2, "after the answer")
        return types.CallToolResult(content=[types.TextContent(text=answer.action)])

    asked = await held.start(modern_caller(), ("tools/call", "t"), "s", listener("first"), run)
    assert isinstance(asked, types.InputRequiredResult) and asked.request_state is not None
    [key] = asked.input_requests or {}
    answer = InputRound(input_responses={key: {"action": "accept"}}, request_state=asked.request_state)
    done = await held.resume(modern_caller(), ("tools/call", "t"), answer, listener("second"))
    assert isinstance(done, types.CallToolResult) and done.content[0].text == "accept"  # type: ignore[union-attr]
    assert heard == {"first": ["before the question"], "second": ["after the answer"]}
