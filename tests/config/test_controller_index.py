"""The controller's `mcp_server.json` keys are the tool index's settings, never a result cache (issue 11 item 2)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp_nexus.config.load import load_config
from support.processes import free_port, running, wait_for_port
from support.served_gateway import served

ENTITY = {
    "category": "tech_stack",
    "id": "starlette",
    "type": "framework",
    "name": "Starlette",
    "desc": "ASGI",
}


def controller_config(tmp_path: Path, url: str, **extra: Any) -> Path:
    # The document's own shape and values (section 5.1), with a local server for the URL.
    doc = {
        "mcp_servers": [
            {"id": "search", "url": url, "timeout": 60, "headers": {"Authorization": "Bearer t0ken"}}
        ],
        "cache_ttl_seconds": 3600,
        "force_refresh_on_init": False,
        **extra,
    }
    path = tmp_path / "mcp_server.json"
    path.write_text(json.dumps(doc))
    return path


def test_index_keys_land_in_gateway_index_not_cache_ttl(tmp_path: Path) -> None:
    config, warnings = load_config(
        controller_config(tmp_path, "http://127.0.0.1:9/mcp", force_refresh_on_init=True, extra_key=1), {}
    )
    index = config.gateway.index
    assert (index.cache_ttl_seconds, index.force_refresh_on_init) == (3600, True)
    assert config.gateway.cache_ttl is None and config.servers["search"].cache_ttl is None
    assert [str(w) for w in warnings] == ["extra_key: not a gateway setting; ignored"]


def test_native_index_section_and_the_old_top_level_key(tmp_path: Path) -> None:
    path = tmp_path / "nexus.json"
    path.write_text(
        json.dumps({"gateway": {"index": {"cache_ttl_seconds": 5}, "force_refresh_on_init": True}})
    )
    config, _ = load_config(path, {})
    assert (config.gateway.index.cache_ttl_seconds, config.gateway.index.force_refresh_on_init) == (5, True)


def _result(answer: Any) -> tuple[bool, str]:
    assert answer.status_code == 200, answer.text
    body = answer.json()
    return bool(body.get("isError")), body["content"][0]["text"]


def test_duplicate_add_entity_is_refused_on_the_second_call(tmp_path: Path) -> None:
    port = free_port()
    demo = [sys.executable, "-m", "support.demo_server", "search", "--http", str(port)]
    with running(demo, log=tmp_path / "demo.log") as proc:
        wait_for_port(port, proc=proc)
        config = controller_config(tmp_path, f"http://127.0.0.1:{port}/mcp")
        with served(config, tmp_path) as gateway:
            gateway.wait_state("search", "READY")
            first = _result(gateway.call("cortex.add_entity", ENTITY))
            assert first[0] is False, first
            again = _result(gateway.call("cortex.add_entity", ENTITY))
            assert again[0] is True and "[entity_exists]" in again[1], again
            # reads are not stale either: the new entity is found at once
            found = _result(gateway.call("cortex.search_knowledge", {"query": "starlette"}))
            assert found[0] is False and "starlette" in found[1].lower(), found
            # the server behind the controller config works as before
            assert _result(gateway.call("search.echo", {"text": "hi"})) == (False, "search: hi")
