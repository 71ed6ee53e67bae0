"""A plugin package adds a transport, a step and an embedded server; `nexus serve` uses all three.

The plugin (tests/plugins/nexus_test_plugin) is a separate distribution that `make test` installs
into the venv; no file of Nexus names it (test_plugin_registry.py checks that).
"""

from __future__ import annotations

import json
from pathlib import Path

from plugin_peers import mcp_list_and_call, texts, websocket_server

from support.served_gateway import served


def test_a_websocket_server_is_listed_and_called_through_nexus_serve_and_the_step_runs_inside_the_cache(
    tmp_path: Path,
) -> None:
    with websocket_server("ws-echo") as ws_url:
        config = tmp_path / "nexus.json"
        config.write_text(
            json.dumps(
                {
                    "gateway": {"include_builtins": False, "steps": {"call_tag": {"tag": "seen"}}},
                    "servers": {
                        # the transport named, and the plugin's own field `open_timeout` beside Nexus's
                        "robot": {
                            "transport": "websocket",
                            "url": ws_url,
                            "open_timeout": 5,
                            "tool_config": {"add": {"cache_ttl": 60}},
                        },
                        # the embedded server the plugin registers by name
                        "byname": {"transport": "embedded", "module": "plugin_echo"},
                    },
                }
            )
        )
        with served(config, tmp_path) as gateway:
            gateway.wait_state("robot", "READY")
            assert gateway.servers()["robot"]["transport"] == "websocket"
            import asyncio

            names, results = asyncio.run(
                mcp_list_and_call(
                    gateway.base + "/mcp",
                    [
                        ("robot.echo", {"text": "over a websocket"}),
                        ("robot.add", {"a": 2, "b": 3}),
                        ("robot.add", {"a": 2, "b": 3}),  # answered from the cache
                        ("byname.echo", {"text": "embedded by name"}),
                    ],
                )
            )
    assert {"robot.echo", "robot.add", "byname.echo", "byname.add"} <= names
    echo, add_first, add_cached, by_name = (texts(r) for r in results)
    assert echo == ["ws-echo: over a websocket", "[call_tag seen #1]"]
    assert add_first == ["5", "[call_tag seen #2]"]
    # The step sits inside the cache (`after: cache`): the hit never reached it, so the count
    # stays 2 and the cached result carries the tag the step gave it on the first call.
    assert add_cached == ["5", "[call_tag seen #2]"]
    assert by_name == ["plugin-echo: embedded by name", "[call_tag seen #3]"]


def test_a_bare_ws_url_means_the_plugin_transport(tmp_path: Path) -> None:
    from support.gateway import load

    config = load({"mcpServers": {"robot": {"url": "ws://127.0.0.1:1/mcp"}}})
    assert config.servers["robot"].transport == "websocket"
    assert config.servers["robot"].effective_priority == 50
