"""The gateway serves at once; slow servers join later (issue: never-blocking startup)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from lifecycle.faults import document, faulty, text
from mcp_nexus.config.load import config_from_document
from mcp_nexus.events import ListChanged
from mcp_nexus.runtime import BindError, Runtime, RuntimeOptions
from support.gateway import running
from support.polling import eventually
from support.processes import TESTS, VENV_BIN, child_env, free_port


def hung(name: str = "slow") -> dict[str, Any]:
    """A server that never answers initialize (sleeps 600 s before serving)."""
    return faulty(name, "--slow-start", "600", timeouts={"connect": 2})


def with_builtins(servers: dict[str, Any], **gateway: Any) -> Any:
    doc = document(servers, **gateway)
    doc["gateway"]["include_builtins"] = True
    config, _ = config_from_document(doc)
    return config


async def test_builtin_tools_answer_within_a_second_while_a_server_hangs(tmp_path: Path) -> None:
    config = with_builtins({"slow": hung()}, offload_dir=str(tmp_path / "off"), startup_timeout=60)
    started = time.monotonic()
    async with running(config, wait_ready=False) as runtime:
        gateway = runtime.gateway
        await eventually(
            lambda: "cortex.search_knowledge" in gateway.catalog.tools, timeout=1.0, what="built-ins"
        )
        result = await gateway.call_tool("cortex.search_knowledge", {"query": "x"})
        assert not result.is_error, text(result)
        assert time.monotonic() - started < 1.5
        assert gateway.upstreams["slow"].connecting


async def test_a_slow_server_joins_later_and_list_changed_is_announced() -> None:
    config, _ = config_from_document(document({"late": faulty("late", "--slow-start", "1.0")}))
    async with running(config, wait_ready=False) as runtime:
        gateway = runtime.gateway
        heard: list[str] = []
        gateway.events.subscribe(ListChanged, lambda event: heard.append(event.kind))
        assert "late.echo" not in gateway.catalog.tools
        took = await eventually(lambda: "late.echo" in gateway.catalog.tools, timeout=15, what="late server")
        assert took > 0.5  # it really was late
        assert "tools" in heard


async def test_a_call_to_a_server_still_connecting_waits_for_it() -> None:
    config, _ = config_from_document(document({"late": faulty("late", "--slow-start", "1.0")}))
    async with running(config, wait_ready=False) as runtime:
        started = time.monotonic()
        result = await runtime.gateway.call_tool("late.echo", {"text": "hi"})
        assert "hi" in text(result)
        assert time.monotonic() - started > 0.5


async def test_wait_ready_waits_for_every_server() -> None:
    config, _ = config_from_document(document({"late": faulty("late", "--slow-start", "0.5")}))
    async with Runtime(
        config, RuntimeOptions(http=False, bridge=False, watch=False, wait_ready=True)
    ) as runtime:
        assert runtime.gateway.upstreams["late"].is_ready
        assert "late.echo" in runtime.gateway.catalog.tools


async def test_a_busy_port_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config, _ = config_from_document(document({"f": faulty("f")}, port=port))
        with pytest.raises(BindError) as caught:
            async with Runtime(config, RuntimeOptions(bridge=False, watch=False)):
                pass
        assert f"port {port}" in caught.value.strerror and "--port" in caught.value.strerror


def test_nexus_serve_reports_a_busy_port_before_the_banner(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        path = tmp_path / "c.json"
        path.write_text(json.dumps(document({})))
        done = subprocess.run(
            [str(VENV_BIN / "nexus"), "serve", "-c", str(path), "--port", str(port), "--no-watch"],
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=60,
        )
    assert done.returncode == 2
    assert f"port {port}" in done.stderr and "--port" in done.stderr
    assert "serving" not in done.stderr


def test_nexus_serve_banner_comes_at_once_with_a_hung_server(tmp_path: Path) -> None:
    port = free_port()
    path = tmp_path / "c.json"
    doc = document({"slow": hung()}, port=port, offload_dir=str(tmp_path / "off"))
    doc["gateway"]["include_builtins"] = True
    path.write_text(json.dumps(doc))
    proc = subprocess.Popen(
        [str(VENV_BIN / "nexus"), "serve", "-c", str(path), "--no-watch"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=child_env(PYTHONPATH=str(TESTS)),
        start_new_session=True,
    )
    try:
        started = time.monotonic()
        assert proc.stderr is not None
        lines = []
        while time.monotonic() - started < 20:
            line = proc.stderr.readline().decode()
            lines.append(line)
            if "serving" in line:
                break
        took = time.monotonic() - started
        assert any("serving" in line for line in lines), "".join(lines)
        assert took < 10, f"the banner took {took:.1f} s"  # imports included; not the 600 s server
        still = proc.stderr.readline().decode()
        assert "still starting: slow" in still, still  # the built-in servers are already in
        assert any("serving" in line and " 0 tools" not in line for line in lines), "".join(lines)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def test_a_silent_http_server_is_bounded_by_the_connect_timeout() -> None:
    """It accepts the TCP connection and never answers: the seed's connect timeout ends the wait."""
    import asyncio

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(60)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        doc = document(
            {
                "mute": {
                    "type": "streamableHttp",
                    "url": f"http://127.0.0.1:{port}/mcp",
                    "timeouts": {"connect": 1},
                }
            }
        )
        config, _ = config_from_document(doc)
        started = time.monotonic()
        async with running(config) as runtime:
            took = time.monotonic() - started
            upstream = runtime.gateway.upstreams["mute"]
            assert not upstream.is_ready
            assert "connect timeout (1 s)" in (upstream.last_error or ""), upstream.last_error
            assert took < 5, f"waited {took:.1f} s for a silent server with connect: 1"
    finally:
        server.close()
