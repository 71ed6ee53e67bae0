"""First contact in every combination: frontend x client era x config dialect, first second and steady state.

Each case starts a real `nexus serve` (stdio, or HTTP on a free port) on the matrix config
written in one dialect, with `slow` still in its first start (it answers `initialize` after
START_DELAY seconds). At once, concurrently, the client lists the tools, calls `ticket` twice
in a row and `echo` five times. Then, in steady state: a cache hit, an offloaded result read
back with python_sandbox, a picture passed through, priority fallback and the error for a
server that went down. What each behaviour must show:

- first list complete: `slow`'s tools are in the very first tools/list (issue 20 item 1);
- policy known at once: the second `ticket` made in the first second is a cache hit, and at most
  two of five `echo`s pass `2/second` (item 2);
- offload + sandbox: `rows` comes back as an alert naming a file; python_sandbox counts its rows;
- media: `picture` arrives as an image, not an alert (item 10);
- fallback: `lookup` is answered by `primary`, then, once it crashed, by `backup`;
- down server: a call to `crash` after the crash names `primary` with -32003.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from matrix.clients import ERAS, HttpClient, MatrixClient, StdioClient
from matrix.dialects import DIALECTS, START_DELAY, document, gateway_section
from support.processes import NODE_BIN, VENV_BIN, free_port, require, running, wait_for_http
from support.served_gateway import gateway_env

FRONTENDS = ("stdio", "http")


def _text(answer: dict[str, Any]) -> str:
    assert "result" in answer, answer
    return "\n".join(item.get("text", "") for item in answer["result"]["content"])


def _named(tools: list[dict[str, Any]], own: str) -> str:
    """The exposed name of the tool whose server calls it `own` (dialects differ in prefixes)."""
    names = [t["name"] for t in tools if t["name"] == own or t["name"].endswith("." + own)]
    assert len(names) == 1, f"expected one tool named like {own!r}, got {names}"
    return names[0]


@asynccontextmanager
async def _upstreams_over_http(ports: dict[str, int], tmp_path: Path) -> AsyncIterator[None]:
    """The controller dialect names URLs: run the three matrix servers over HTTP."""
    roles = {"slow": ("main", START_DELAY), "primary": ("primary", 0.0), "backup": ("backup", 0.0)}
    with contextlib.ExitStack() as stack:
        for name, (role, delay) in roles.items():
            args = [
                str(VENV_BIN / "python"),
                str(Path(__file__).parents[1] / "support" / "matrix_server.py"),
                "--role",
                role,
                "--start-delay",
                str(delay),
                "--http",
                str(ports[name]),
            ]
            stack.enter_context(running(args, log=tmp_path / f"upstream-{name}.log"))
        for name in roles:
            await _port_open(ports[name])
        yield


async def _port_open(port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing listens on port {port} after {timeout} s") from None
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return


@asynccontextmanager
async def _client(
    frontend: str, era: str, config: Path, tmp_path: Path, port: int
) -> AsyncIterator[MatrixClient]:
    env = gateway_env(tmp_path)
    if frontend == "stdio":
        async with StdioClient(config, era, env, tmp_path / "gateway.log") as client:
            yield client
        return
    args = [str(VENV_BIN / "nexus"), "serve", "--no-watch", "--config", str(config)]
    log = tmp_path / "gateway.log"
    with running(args, env=env, log=log) as proc:
        base = f"http://127.0.0.1:{port}"
        try:
            await asyncio.to_thread(wait_for_http, base + "/healthz", timeout=60, proc=proc)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- gateway log ---\n{log.read_text()[-3000:]}") from None
        async with HttpClient(base + "/mcp", era) as client:
            yield client


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("frontend", FRONTENDS)
async def test_first_contact(frontend: str, era: str, dialect: str, tmp_path: Path) -> None:
    port = free_port()
    ports = {name: free_port() for name in ("slow", "primary", "backup")}
    doc = document(dialect, ports)
    doc["gateway"] = gateway_section(port)
    config = tmp_path / "config.json"
    config.write_text(json.dumps(doc))
    log = tmp_path / "gateway.log"
    upstreams = _upstreams_over_http(ports, tmp_path) if dialect == "controller" else _nothing()
    async with upstreams, _client(frontend, era, config, tmp_path, port) as client:
        try:
            await _sweep(client)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- gateway log ---\n{log.read_text()[-3000:]}") from None


@asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield


async def _sweep(client: MatrixClient) -> None:
    # -- the first second: everything at once, while `slow` is still starting ------------------
    async def tickets() -> tuple[dict[str, Any], dict[str, Any]]:
        first = await client.request("tools/call", {"name": "slow.ticket", "arguments": {}})
        second = await client.request("tools/call", {"name": "slow.ticket", "arguments": {}})
        return first, second

    listed, (ticket_1, ticket_2), *echoes = await asyncio.gather(
        client.request("tools/list"),
        tickets(),
        *(client.request("tools/call", {"name": "slow.echo", "arguments": {"text": "hi"}}) for _ in range(5)),
    )
    tools = listed["result"]["tools"]
    names = {t["name"] for t in tools}
    assert "slow.ticket" in names, f"the first tools/list lacks slow's tools: {sorted(names)}"
    for own in ("ticket", "echo", "rows", "picture", "lookup", "crash"):
        _named(tools, own)
    assert _text(ticket_1) == _text(ticket_2), (
        f"the second ticket call made at start was not a cache hit: {_text(ticket_1)} then {_text(ticket_2)}"
    )
    passed = [e for e in echoes if not _text(e).startswith("SYSTEM_ALERT")]
    alerted = [e for e in echoes if _text(e).startswith("SYSTEM_ALERT")]
    assert len(passed) <= 2 and alerted, f"2/second let {len(passed)} of 5 echo calls through at start"
    # -- steady state ---------------------------------------------------------------------
    ticket_3 = await client.request("tools/call", {"name": _named(tools, "ticket"), "arguments": {}})
    assert _text(ticket_3) == _text(ticket_1), "a later ticket call missed the cache"
    rows = _text(await client.request("tools/call", {"name": _named(tools, "rows"), "arguments": {}}))
    assert rows.startswith("SYSTEM_ALERT"), rows[:200]
    found = re.search(r"tool_output_[0-9a-f-]+\.json", rows)
    assert found, rows[:300]
    code = "print(sum(1 for d in data if d['on']))"
    counted = await client.request(
        "tools/call",
        {"name": _named(tools, "python_sandbox"), "arguments": {"code": code, "files": [found[0]]}},
    )
    assert _text(counted).strip().splitlines()[-1] == "100", _text(counted)
    picture = await client.request("tools/call", {"name": _named(tools, "picture"), "arguments": {}})
    content = picture["result"]["content"]
    assert [item["type"] for item in content] == ["image"], str(content)[:300]
    assert content[0]["mimeType"] == "image/png" and len(content[0]["data"]) > 5120
    lookup = _named(tools, "lookup")
    assert _text(await client.request("tools/call", {"name": lookup, "arguments": {}})) == "primary"
    crash = _named(tools, "crash")
    await client.request("tools/call", {"name": crash, "arguments": {}})
    down = await client.request("tools/call", {"name": crash, "arguments": {}})
    assert down.get("error", {}).get("code") == -32003, down
    assert "primary" in down["error"]["message"], down
    assert _text(await client.request("tools/call", {"name": lookup, "arguments": {}})) == "backup"


@pytest.mark.parametrize(("frontend", "era"), [("stdio", ERAS[0]), ("http", ERAS[0]), ("http", ERAS[1])])
async def test_a_hung_server_holds_the_first_list_only_up_to_the_bound(
    frontend: str, era: str, tmp_path: Path
) -> None:
    """`hung` never finishes starting: the first list waits `first_list_wait` (2 s), then answers
    without it; a 2026-07-28 answer says `ttlMs: 0` so the client asks again; the second list of a
    session does not wait again."""
    port = free_port()
    doc = document("nexus", delay=600.0)
    doc["gateway"] = {**gateway_section(port), "first_list_wait": 2.0}
    config = tmp_path / "config.json"
    config.write_text(json.dumps(doc))
    async with _client(frontend, era, config, tmp_path, port) as client:
        started = time.monotonic()
        first = await client.request("tools/list")
        waited = time.monotonic() - started
        started = time.monotonic()
        second = await client.request("tools/list")
        again = time.monotonic() - started
    names = {t["name"] for t in first["result"]["tools"]}
    assert "slow.ticket" not in names and "lookup" in names, sorted(names)
    assert waited < 2.0 + 2.0, f"the first list took {waited:.1f} s with a 2 s bound"
    if era == ERAS[1]:
        assert first["result"].get("ttlMs") == 0, first["result"].get("ttlMs")
    else:
        assert waited > 1.0, f"the first list did not wait for the starting server ({waited:.2f} s)"
        assert again < 1.0, f"the second list of the session waited again ({again:.2f} s)"
        assert {t["name"] for t in second["result"]["tools"]} == names


@pytest.mark.parametrize("era", ERAS)
async def test_real_servers_are_complete_in_the_first_lists_over_stdio(era: str, tmp_path: Path) -> None:
    """The issue's desktop case: `time` (PyPI) and `everything` (npm) configured, the client lists
    tools, resources and prompts at once after connecting; every list is complete the first time."""
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {
                        "command": require(VENV_BIN / "mcp-server-time"),
                        "args": ["--local-timezone", "UTC"],
                    },
                    "everything": {"command": require(NODE_BIN / "mcp-server-everything"), "args": ["stdio"]},
                }
            }
        )
    )
    async with StdioClient(config, era, gateway_env(tmp_path), tmp_path / "gateway.log") as client:
        tools, resources, prompts = await asyncio.gather(
            client.request("tools/list"), client.request("resources/list"), client.request("prompts/list")
        )
    names = {t["name"] for t in tools["result"]["tools"]}
    assert {"time.get_current_time", "everything.echo", "cortex.add_entity"} <= names, sorted(names)
    assert any(r["uri"].startswith("demo://") for r in resources["result"]["resources"]), resources["result"]
    assert any(p["name"].startswith("everything.") for p in prompts["result"]["prompts"]), prompts["result"]
