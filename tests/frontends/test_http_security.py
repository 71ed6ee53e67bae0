"""The HTTP frontend's defaults: loopback, DNS-rebinding protection, a token off loopback."""

from __future__ import annotations

import json
import socket
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


@pytest.mark.parametrize(
    "origin", ["http://localhost:3000", "https://127.0.0.1", "HTTP://LOCALHOST", "http://[::1]:5173"]
)
def test_local_origin_is_accepted(loopback: str, origin: str) -> None:
    response = httpx2.post(f"{loopback}/mcp", json=INIT, headers={**HEADERS, "Origin": origin})
    assert response.status_code == 200


def raw_status(base: str, head: bytes) -> int:
    """Send a request exactly as given (no client normalises or drops a header); its status."""
    port = int(base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        reply = b""
        while b"\r\n" not in reply:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
    return int(reply.split(b" ", 2)[1])


def get_with(host_lines: bytes, extra: bytes = b"") -> bytes:
    return b"GET /api/servers HTTP/1.1\r\n" + host_lines + extra + b"Connection: close\r\n\r\n"


# The reported bypasses first, then tricks of the same family (the parser's own cases are in
# test_http_authority.py; these prove the running gateway uses it).
@pytest.mark.parametrize(
    ("host", "status"),
    [
        (b"[::1]evil.com", 400),
        (b"[::1]:1@evil.com", 400),
        (b"localhost.evil.com", 421),
        (b"127.0.0.1.evil.com", 421),
        (b"evil.localhost", 421),
        (b"localhost.", 400),
        (b"127.1", 400),
        (b"[::1%25lo]", 400),
        (b"l\xd0\xbecalhost", 400),  # Cyrillic o, as UTF-8 bytes
        (b"", 400),
        (b"LOCALHOST", 200),
        (b"[::ffff:127.0.0.1]:8787", 200),
        (b"[::1]", 200),
    ],
)
def test_host_header_is_parsed_not_pattern_matched(loopback: str, host: bytes, status: int) -> None:
    assert raw_status(loopback, get_with(b"Host: " + host + b"\r\n")) == status


def test_several_or_no_host_headers_are_refused(loopback: str) -> None:
    assert raw_status(loopback, get_with(b"Host: localhost\r\nHost: evil.com\r\n")) == 400
    assert raw_status(loopback, get_with(b"Host: evil.com\r\nHost: localhost\r\n")) == 400
    assert raw_status(loopback, b"GET /api/servers HTTP/1.0\r\n\r\n") == 400


@pytest.mark.parametrize(
    "origin",
    [
        b"http://[::1]evil.com",
        b"http://127.0.0.1:1@evil.com",
        b"http://localhost@evil.com",
        b"http://localhost:3000/",
        b"http://localhost.",
        b"ws://localhost",
        b"HTTP://LOCALHOST.evil.com",
    ],
)
def test_origin_header_is_parsed_not_pattern_matched(loopback: str, origin: bytes) -> None:
    assert raw_status(loopback, get_with(b"Host: localhost\r\n", b"Origin: " + origin + b"\r\n")) == 403


def test_several_origin_headers_are_refused(loopback: str) -> None:
    two = b"Origin: http://localhost\r\nOrigin: http://evil.com\r\n"
    assert raw_status(loopback, get_with(b"Host: localhost\r\n", two)) == 403


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
    with running(args, env=child_env(NEXUS_TOKEN="t0ken-for-the-tests"), log=tmp_path / "gw.log") as proc:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
        url = f"http://127.0.0.1:{port}/mcp"
        assert httpx2.post(url, json=INIT, headers=HEADERS).status_code == 401
        wrong = httpx2.post(url, json=INIT, headers={**HEADERS, "Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"].startswith("Bearer")
        client = httpx2.AsyncClient(headers={"Authorization": "Bearer t0ken-for-the-tests"})
        from mcp.client.streamable_http import streamable_http_client

        async with Client(streamable_http_client(url, http_client=client), mode="legacy") as mcp_client:
            result = await mcp_client.call_tool("echo", {"text": "authorised"})
        await client.aclose()
        assert result.content[0].text == "demo: authorised"  # type: ignore[union-attr]
        log = (tmp_path / "gw.log").read_text()
        assert "t0ken-for-the-tests" not in log  # secrets never logged
