"""`nexus serve` runs the Xiaozhi bridge when endpoints are configured, and reports it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx2

from support.fake_xiaozhi import FakeXiaozhiEndpoint
from support.processes import VENV_BIN, child_env, free_port, running, wait_for_http
from xiaozhi.stack import text_of

TOKEN = "good-token-0123456789abcdef"


async def test_serve_starts_the_bridge_and_reports_it_without_the_token(tmp_path: Path) -> None:
    async with FakeXiaozhiEndpoint(tokens={TOKEN}) as fake:
        port = free_port()
        config = {
            "gateway": {"include_builtins": False, "port": port, "offload_dir": str(tmp_path / "offload")},
            "servers": {
                "demo": {
                    "transport": "embedded",
                    "module": "support.demo_server:create_server",
                    "namespace": "calc",
                }
            },
            "xiaozhi": {"endpoints": [fake.url(TOKEN)]},
        }
        path = tmp_path / "nexus.json"
        path.write_text(json.dumps(config))
        args = [str(VENV_BIN / "nexus"), "serve", "-c", str(path), "--no-watch", "--wait-ready"]
        with running(args, log=tmp_path / "gw.log") as proc:
            wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
            session = await fake.next_session(TOKEN, timeout=20)
            names = {tool["name"] for tool in await session.list_tools()}
            assert "calc_add" in names  # `calc.add` as the endpoint may name it
            answer = await session.call_tool("calc_add", {"a": 20, "b": 22})
            assert text_of(answer) == "42"

            status = httpx2.get(f"http://127.0.0.1:{port}/api/servers").json()["frontends"]["xiaozhi"]
            assert status[0]["connected"] is True and status[0]["calls_served"] >= 1
            assert TOKEN not in json.dumps(status) and "***" in status[0]["url"]

            shown = await asyncio.create_subprocess_exec(
                str(VENV_BIN / "nexus"),
                "servers",
                "--url",
                f"http://127.0.0.1:{port}",
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=child_env(COLUMNS="200"),
            )
            stdout, stderr = await asyncio.wait_for(shown.communicate(), 60)
            assert shown.returncode == 0, stderr.decode()
            printed = stdout.decode()
            assert "demo" in printed and "connected" in printed.lower()
            assert TOKEN not in printed
        assert TOKEN not in (tmp_path / "gw.log").read_text()
