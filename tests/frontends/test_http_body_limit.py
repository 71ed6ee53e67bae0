"""`gateway.request_max_bytes` caps every route's body, /mcp included, and can be raised."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx2
import pytest

from support.processes import VENV_BIN, free_port, running, wait_for_http

LIMIT = 6 * 1024 * 1024  # above the MCP SDK's own 4 MiB default, so both caps must follow it
CONFIG = {
    "gateway": {"include_builtins": False, "request_max_bytes": LIMIT},
    "servers": {"demo": {"transport": "embedded", "module": "support.demo_server:create_server"}},
}
JSON = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("limit")
    config = tmp / "nexus.json"
    config.write_text(json.dumps(CONFIG))
    port = free_port()
    args = [str(VENV_BIN / "nexus"), "serve", "-c", str(config), "--port", str(port)]
    with running(args, log=tmp / "gw.log") as proc:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
        yield f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("path", ["/mcp", "/api/cache/clear", "/api/tools/demo.echo/call", "/api/reload"])
def test_a_body_under_the_configured_limit_is_read(base: str, path: str) -> None:
    # 5 MiB of spaces: over the 4 MiB default, under the configured 6 MiB; not JSON, so 4xx.
    response = httpx2.post(f"{base}{path}", content=b" " * (5 << 20), headers=JSON, timeout=60)
    assert response.status_code != 413, response.text
    assert response.status_code < 500


@pytest.mark.parametrize("path", ["/mcp", "/api/cache/clear", "/api/tools/demo.echo/call"])
def test_a_body_over_the_configured_limit_is_413(base: str, path: str) -> None:
    response = httpx2.post(f"{base}{path}", content=b" " * (LIMIT + 1), headers=JSON, timeout=60)
    assert response.status_code == 413
    assert response.json()["limit"] == LIMIT
    assert "request_max_bytes" in response.json()["error"]


def test_an_open_route_takes_a_small_body_at_most(base: str) -> None:
    # /healthz needs no token: it takes 16 KiB at most, whatever request_max_bytes says
    # (tests/robustness/test_http_body_attacks.py: a GET takes none).
    response = httpx2.post(f"{base}/healthz", content=b" " * (LIMIT + 1), headers=JSON, timeout=60)
    assert response.status_code == 413
    assert response.json()["limit"] == 16 * 1024
