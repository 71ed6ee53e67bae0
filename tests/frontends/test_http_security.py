"""The HTTP frontend's defaults: loopback, DNS-rebinding protection, a token off loopback."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client

from support.processes import VENV_BIN, child_env, free_port, running, wait_for_http

CONFIG = {
    "gateway": {"include_builtins": False},
    "servers": {
        "demo": {"transport": "embedded", "module": "support.demo_server:create_server", "namespace": ""}
    },
}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "nexus.json"
    path.write_text(json.dumps(CONFIG))
    return path


@pytest.fixture(scope="module")
def loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("loopback")
    port = free_port()
    args = [str(VENV_BIN / "nexus"), "serve", "-c", str(config_file(tmp)), "--port", str(port)]
    with running(args, log=tmp / "gw.log") as proc:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
        yield f"http://127.0.0.1:{port}"


def test_default_loopback_serves_without_a_token(loopback: str) -> None:
    response = httpx2.post(f"{loopback}/mcp", json=INIT, headers=HEADERS)
    assert response.status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "attacker.test:8787", "192.0.2.1"])
def test_foreign_host_header_is_rejected(loopback: str, host: str) -> None:
    response = httpx2.post(f"{loopback}/mcp", json=INIT, headers={**HEADERS, "Host": host})
    assert response.status_code == 421
    assert "Host" in response.json()["error"]


@pytest.mark.parametrize("origin", ["http://evil.example", "https://localhost.evil.example", "null"])
def test_foreign_origin_is_rejected(loopback: str, origin: str) -> None:
    response = httpx2.post(f"{loopback}/mcp", json=INIT, headers={**HEADERS, "Origin": origin})
    assert response.status_code == 403


def test_local_origin_is_accepted(loopback: str) -> None:
    response = httpx2.post(
        f"{loopback}/mcp", json=INIT, headers={**HEADERS, "Origin": "http://localhost:3000"}
    )
    assert response.status_code == 200


def test_non_loopback_bind_without_token_is_refused(tmp_path: Path) -> None:
    env = child_env()
    env.pop("NEXUS_TOKEN", None)
    done = subprocess.run(
        [
            str(VENV_BIN / "nexus"),
            "serve",
            "-c",
            str(config_file(tmp_path)),
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "needs a bearer token" in done.stderr


async def test_non_loopback_bind_requires_the_token(tmp_path: Path) -> None:
    port = free_port()
    args = [
        str(VENV_BIN / "nexus"),
        "serve",
        "-c",
        str(config_file(tmp_path)),
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
    ]
    with running(args, env=child_env(NEXUS_TOKEN="t0ken-for-tests"), log=tmp_path / "gw.log") as proc:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
        url = f"http://127.0.0.1:{port}/mcp"
        assert httpx2.post(url, json=INIT, headers=HEADERS).status_code == 401
        wrong = httpx2.post(url, json=INIT, headers={**HEADERS, "Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"].startswith("Bearer")
        client = httpx2.AsyncClient(headers={"Authorization": "Bearer t0ken-for-tests"})
        from mcp.client.streamable_http import streamable_http_client

        async with Client(streamable_http_client(url, http_client=client), mode="legacy") as mcp_client:
            result = await mcp_client.call_tool("echo", {"text": "authorised"})
        await client.aclose()
        assert result.content[0].text == "demo: authorised"  # type: ignore[union-attr]
        log = (tmp_path / "gw.log").read_text()
        assert "t0ken-for-tests" not in log  # secrets never logged
