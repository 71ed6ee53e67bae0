"""One `Session` per transport, against real servers: open and negotiate both eras, list, call, close.

The same contract is checked on every transport (stdio child, streamable HTTP and SSE on a
real 127.0.0.1 socket, embedded in process), each with the SDK's MCPServer on the other end;
then what only one transport can get wrong: a stdio child that crashes or refuses an era,
an HTTP server that is not there, an embedded module that is not a server.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import psutil
import pytest
from mcp.shared.exceptions import MCPError

from lifecycle.faults import faulty
from mcp_nexus.upstream.embedded import EmbeddedServerError, EmbeddedSession, load_embedded
from mcp_nexus.upstream.http import HttpSession, http_headers
from mcp_nexus.upstream.session import Session, describe_error
from mcp_nexus.upstream.sse import SseSession
from mcp_nexus.upstream.stdio import StdioSession
from support.demo_server import create_server
from support.gateway import server_config
from support.governance_server import SLEEP_EVENTS
from support.http_server import serving
from support.polling import eventually
from support.processes import TESTS


class RecordingEvents:
    """A session's upstream, as far as these tests need one: it records what it is told."""

    def __init__(self) -> None:
        self.losses: list[str] = []
        self.notifications: list[Any] = []
        self.transport_errors: list[Exception] = []

    async def sampling(self, params: Any) -> types.ErrorData:
        return types.ErrorData(code=types.INVALID_REQUEST, message="no sampling here")

    async def elicitation(self, params: Any) -> types.ErrorData:
        return types.ErrorData(code=types.INVALID_REQUEST, message="no elicitation here")

    async def list_roots(self) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[])

    async def log(self, params: Any) -> None:
        return None

    def notification(self, message: Any) -> None:
        self.notifications.append(message)

    def transport_error(self, error: Exception) -> None:
        self.transport_errors.append(error)

    def lost(self, session: Session, reason: str) -> None:
        self.losses.append(reason)


@contextlib.asynccontextmanager
async def opened(session: Session) -> AsyncIterator[Session]:
    await session.start()
    try:
        yield session
    finally:
        await session.close()


@contextlib.asynccontextmanager
async def demo_session(transport: str, era: str, events: RecordingEvents) -> AsyncIterator[Session]:
    """A session to the demo server (instance "x") over `transport`, negotiated in `era`."""
    if transport == "stdio":
        entry = {
            "command": sys.executable,
            "args": ["-m", "support.demo_server", "x"],
            "env": {"PYTHONPATH": str(TESTS)},
        }
        async with opened(StdioSession(server_config("demo", entry), events, era=era)) as session:  # type: ignore[arg-type]
            yield session
    elif transport == "embedded":
        entry = {
            "transport": "embedded",
            "module": "support.demo_server:create_server",
            "options": {"instance": "x"},
        }
        async with opened(EmbeddedSession(server_config("demo", entry), events, era=era)) as session:  # type: ignore[arg-type]
            yield session
    elif transport == "http":
        async with serving(create_server("x").streamable_http_app()) as base:
            config = server_config("demo", {"url": f"{base}/mcp"})
            async with opened(HttpSession(config, events, era=era)) as session:  # type: ignore[arg-type]
                yield session
    else:
        async with serving(create_server("x").sse_app()) as base:
            config = server_config("demo", {"transport": "sse", "url": f"{base}/sse"})
            async with opened(SseSession(config, events, era=era)) as session:  # type: ignore[arg-type]
                yield session


ERA_VERSIONS = {"latest": "2026-07-28", "handshake": "2025-11-25", "legacy": "2025-11-25"}


@pytest.mark.parametrize("era", ["latest", "handshake", "legacy"])
@pytest.mark.parametrize("transport", ["stdio", "http", "sse", "embedded"])
async def test_every_transport_negotiates_lists_and_calls(transport: str, era: str) -> None:
    events = RecordingEvents()
    async with demo_session(transport, era, events) as session:
        assert session.transport == transport and session.open
        assert session.protocol_version == ERA_VERSIONS[era]
        assert session.modern == (era == "latest")
        assert session.server_info is not None and session.server_info.name == "demo-x"
        assert session.capabilities.tools is not None

        tools = {tool.name for tool in await session.list_tools()}
        assert {"echo", "add", "fail", "slow_steps", "grow"} <= tools
        assert "demo://info" in {str(r.uri) for r in await session.list_resources()}
        assert "demo://items/{item_id}" in {t.uri_template for t in await session.list_resource_templates()}
        assert "greet" in {p.name for p in await session.list_prompts()}

        echo = await session.call_tool("echo", {"text": "hi"}, timeout=10)
        assert isinstance(echo, types.CallToolResult) and not echo.is_error
        assert echo.content[0].text == "x: hi"  # type: ignore[union-attr]
        failed = await session.call_tool("fail", {"reason": "boom"}, timeout=10)
        assert (
            isinstance(failed, types.CallToolResult) and failed.is_error
        )  # the server's answer, not an exception

        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        steps = await session.call_tool("slow_steps", {"steps": 3}, timeout=10, progress=on_progress)
        assert steps.content[0].text == "x: 3 steps done"  # type: ignore[union-attr]
        await eventually(lambda: len(progress) == 3, timeout=5, what="three progress reports")
        assert progress == [1, 2, 3]

        read = await session.read_resource("demo://items/7", timeout=10)
        assert isinstance(read, types.ReadResourceResult)
        assert read.contents[0].text == "item 7 from x"  # type: ignore[union-attr]
        prompt = await session.get_prompt("greet", {"name": "Ada"}, timeout=10)
        assert isinstance(prompt, types.GetPromptResult)
        assert "Hello Ada, from x" in prompt.messages[0].content.text  # type: ignore[union-attr]
    assert not session.open
    assert session.ended.done() and not events.losses  # our own close is no loss


async def test_a_closed_session_refuses_calls_and_closing_twice_is_harmless() -> None:
    entry = {"transport": "embedded", "module": "support.demo_server:create_server"}
    session = EmbeddedSession(server_config("demo", entry), RecordingEvents(), era="latest")
    async with opened(session):
        pass
    await session.close()
    with pytest.raises(ConnectionError, match="'demo' is not open"):
        await session.call_tool("echo", {"text": "late"})


@pytest.mark.parametrize(
    "era",
    [
        "legacy",
        "latest",
    ],
)
async def test_closing_an_embedded_session_ends_its_calls_in_flight(era: str) -> None:
    instance = f"closing-{era}"
    entry = {
        "transport": "embedded",
        "module": "support.governance_server:create_server",
        "options": {"instance": instance},
    }
    session = EmbeddedSession(server_config("gov", entry), RecordingEvents(), era=era)  # type: ignore[arg-type]
    await session.start()
    left = asyncio.ensure_future(session.call_tool("sleep", {"seconds": 1.5}, timeout=10))
    await eventually(lambda: SLEEP_EVENTS[instance] == ["started"], what="the call to reach the server")
    began = time.monotonic()
    await session.close()
    (outcome,) = await asyncio.wait_for(asyncio.gather(left, return_exceptions=True), 10)
    took = time.monotonic() - began
    assert SLEEP_EVENTS[instance] == ["started", "cancelled"], (
        f"the server's handler: {SLEEP_EVENTS[instance]}"
    )
    assert isinstance(outcome, BaseException) and took < 1.0, f"{outcome!r} after {took:.1f} s"


# -- stdio ------------------------------------------------------------------------------------


def stdio_session(
    name: str, *flags: str, era: str = "handshake", events: RecordingEvents | None = None
) -> StdioSession:
    return StdioSession(server_config(name, faulty(name, *flags)), events or RecordingEvents(), era=era)  # type: ignore[arg-type]


async def test_stdio_auto_falls_back_to_the_handshake_for_a_server_without_discover() -> None:
    async with opened(stdio_session("old")) as session:
        assert session.protocol_version == "2025-11-25"
        answer = await session.call_tool("echo", {"text": "hi"})
        assert answer.content[0].text == "old: hi"  # type: ignore[union-attr]


async def test_stdio_auto_speaks_2026_to_a_server_that_speaks_nothing_else() -> None:
    async with opened(stdio_session("new", "--modern-only")) as session:
        assert session.protocol_version == "2026-07-28" and session.modern
        assert "echo" in {tool.name for tool in await session.list_tools()}
        answer = await session.call_tool("echo", {"text": "hi"})
        assert answer.content[0].text == "new: hi"  # type: ignore[union-attr]


async def test_stdio_legacy_against_a_2026_only_server_fails_naming_the_refusal() -> None:
    session = stdio_session("new", "--modern-only", era="legacy")
    with pytest.raises(BaseException) as caught:
        await session.start()
    assert "2026-07-28 only" in describe_error(caught.value)
    assert session.pid is None  # the child is gone with the failed start


async def test_stdio_child_runs_while_open_and_is_reaped_by_close() -> None:
    session = stdio_session("f")
    async with opened(session):
        pid = session.pid
        assert pid is not None and psutil.pid_exists(pid)
    assert session.pid is None
    assert session.process is not None and session.process.returncode is not None
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


async def test_stdio_crash_mid_call_fails_the_call_and_reports_the_loss_with_the_exit() -> None:
    events = RecordingEvents()
    session = stdio_session("f", events=events)
    async with opened(session):
        with pytest.raises((ConnectionError, MCPError)) as caught:
            await session.call_tool("crash", {"code": 3}, timeout=10)
        assert "exited" in str(caught.value)
        reason = await asyncio.wait_for(session.ended, 5)
        assert "code 3" in reason
        await eventually(
            lambda: any("crashing on purpose" in r for r in events.losses), what="the child's last words"
        )
        assert not session.open


async def test_stdio_exit_during_the_handshake_names_the_code_and_the_last_words() -> None:
    session = stdio_session("dies", "--exit-during-initialize", "4")
    with pytest.raises(ConnectionError) as caught:
        await session.start()
    assert "code 4" in str(caught.value) and "dying during initialize" in str(caught.value)


async def test_stdio_lean_call_honours_its_timeout() -> None:
    async with opened(stdio_session("h")) as session:
        with pytest.raises(MCPError) as caught:
            await session.call_tool("hang", {}, timeout=0.3)
        assert caught.value.error.code == types.REQUEST_TIMEOUT
        answer = await session.call_tool("echo", {"text": "still here"})  # the session survives
        assert answer.content[0].text == "h: still here"  # type: ignore[union-attr]


# -- HTTP and SSE -------------------------------------------------------------------------


@pytest.mark.parametrize("session_type", [HttpSession, SseSession])
async def test_http_and_sse_fail_to_start_when_nothing_listens(session_type: type[Session]) -> None:
    from support.processes import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    entry = {
        "url": url,
        "timeouts": {"connect": 2},
        **({"transport": "sse"} if session_type is SseSession else {}),
    }
    session = session_type(server_config("gone", entry), RecordingEvents(), era="latest")
    with pytest.raises(BaseException) as caught:
        await asyncio.wait_for(session.start(), 15)
    assert "connect" in describe_error(caught.value).lower()
    assert not session.open


def test_http_headers_carry_the_api_key_unless_authorization_is_given() -> None:
    keyed = server_config(
        "k", {"url": "http://127.0.0.1:1/mcp", "api_key": "s3cret", "headers": {"X-A": "1"}}
    )
    assert http_headers(keyed) == {"X-A": "1", "Authorization": "Bearer s3cret"}
    explicit = server_config(
        "e", {"url": "http://127.0.0.1:1/mcp", "api_key": "s3cret", "headers": {"authorization": "Basic x"}}
    )
    assert http_headers(explicit) == {"authorization": "Basic x"}


# -- embedded -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "options", "expected"),
    [
        ("support.no_such_module:create", {}, "cannot import module 'support.no_such_module'"),
        ("support.demo_server:nothing_here", {}, "has no attribute 'nothing_here'"),
        ("support.demo_server:create_server", {"colour": "red"}, "rejected options ['colour']"),
        ("support.demo_server:bare_demo_pair", {}, "returned dict, not an MCP server"),
        ("support.processes:TESTS", {}, "neither an MCP server nor a factory"),
    ],
)
def test_embedded_module_errors_name_the_module_and_the_problem(
    module: str, options: dict[str, Any], expected: str
) -> None:
    config = server_config("e", {"transport": "embedded", "module": module, "options": options})
    with pytest.raises(EmbeddedServerError, match=expected.replace("[", r"\[").replace("]", r"\]")):
        load_embedded(config)


async def test_embedded_start_fails_with_the_loading_error() -> None:
    config = server_config("e", {"transport": "embedded", "module": "support.demo_server:nothing_here"})
    session = EmbeddedSession(config, RecordingEvents(), era="latest")
    with pytest.raises(BaseException) as caught:
        await session.start()
    assert "has no attribute 'nothing_here'" in describe_error(caught.value)


async def test_stdio_auto_takes_2026_when_its_timed_out_probe_was_read_late(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The SDK's server/discover times out (10 s; here 0.05 s) before a slow-starting server reads
    # it; the server then reads the probe first, serves 2026-07-28 on this connection and refuses
    # the handshake that followed (-32022). Seen with mcp-server-git on a busy host: ERROR before.
    monkeypatch.setattr("mcp.client.session.DISCOVER_TIMEOUT_SECONDS", 0.05)
    entry = {
        "command": sys.executable,
        "args": ["-m", "support.demo_server", "late"],
        "env": {"PYTHONPATH": str(TESTS)},
    }
    session = StdioSession(server_config("late", entry), RecordingEvents(), era="latest")
    async with opened(session):
        assert session.protocol_version == "2026-07-28" and session.modern
        answer = await session.call_tool("echo", {"text": "hi"})
        assert answer.content[0].text == "late: hi"  # type: ignore[union-attr]
