"""`nexus bridge xiaozhi` as a real process: mcp_config.json + MCP_ENDPOINT, like the popular bridge's setup."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from support.fake_xiaozhi import FakeXiaozhiEndpoint
from support.processes import TESTS
from xiaozhi.stack import text_of

TOKEN_A = "token-aaaa-0123456789-secret-a"
TOKEN_B = "token-bbbb-0123456789-secret-b"
RUN_CLI = "from mcp_nexus.cli.bridge import app; app()"


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NEXUS_CONFIG", "MCP_CONFIG", "MCP_ENDPOINT")}
    env["PYTHONPATH"] = str(TESTS)
    env.update(extra)
    return env


async def run_cli(*args: str, cwd: Path, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        RUN_CLI,
        *args,
        cwd=cwd,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def test_bridge_process_serves_two_endpoints_and_never_shows_tokens(tmp_path: Path) -> None:
    (tmp_path / "mcp_config.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "demo": {
                        "type": "stdio",
                        "command": sys.executable,
                        "args": ["-m", "support.demo_server", "cli-demo"],
                        "env": {"PYTHONPATH": str(TESTS)},
                    }
                },
                "gateway": {"include_builtins": False, "offload_dir": str(tmp_path / "data")},
            }
        )
    )
    async with FakeXiaozhiEndpoint({TOKEN_A, TOKEN_B}) as fake:
        env = cli_env(MCP_ENDPOINT=f"{fake.url(TOKEN_A)};{fake.url(TOKEN_B)}")
        process = await run_cli("xiaozhi", "--verbose", cwd=tmp_path, env=env)
        try:
            a = await fake.next_session(TOKEN_A, timeout=30)
            b = await fake.next_session(TOKEN_B, timeout=30)
            assert text_of(await a.call_tool("demo_echo", {"text": "via A"})) == "cli-demo: via A"
            assert text_of(await b.call_tool("demo_add", {"a": 20, "b": 22})) == "42"
        finally:
            process.send_signal(signal.SIGINT)
            _, stderr_bytes = await asyncio.wait_for(process.communicate(), 30)
    stderr = stderr_bytes.decode()
    assert process.returncode == 0, stderr
    assert TOKEN_A not in stderr and TOKEN_B not in stderr  # not even in debug logs
    assert f"ws://127.0.0.1:{fake.port}/mcp/?token=***et-a" in stderr
    assert "1 calls served" in stderr  # the status printed on exit
    assert fake.max_bridge_sockets == {TOKEN_A: 1, TOKEN_B: 1}


async def test_nothing_to_bridge_is_a_clear_error(tmp_path: Path) -> None:
    process = await run_cli("xiaozhi", cwd=tmp_path, env=cli_env(NEXUS_CONFIG=str(tmp_path / "none.json")))
    _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2, stderr.decode()
    assert "none.json" in stderr.decode() and "cannot read" in stderr.decode(), stderr.decode()
    (tmp_path / "empty.json").write_text(json.dumps({"gateway": {"include_builtins": False}}))
    process = await run_cli("xiaozhi", "--config", "empty.json", cwd=tmp_path, env=cli_env())
    _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2, stderr.decode()
    assert "no Xiaozhi endpoint: pass --endpoint URL" in stderr.decode(), stderr.decode()


async def test_bad_endpoint_is_named_without_its_token(tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_text(json.dumps({"gateway": {"include_builtins": False}}))
    args = ("xiaozhi", "-c", "empty.json", "--endpoint", f"ftp://host/mcp/?token={TOKEN_A}")
    process = await run_cli(*args, cwd=tmp_path, env=cli_env())
    _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2, stderr.decode()
    assert "endpoints[0] must be a ws:// or wss:// URL" in stderr.decode()
    assert TOKEN_A not in stderr.decode()
