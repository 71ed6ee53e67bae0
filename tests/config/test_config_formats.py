"""Every accepted config format normalises into the one model; bad files name the problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import load_config


def write(tmp_path: Path, doc: Any, name: str = "nexus.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def load(tmp_path: Path, doc: Any, name: str = "nexus.json", env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    config, _warnings = load_config(write(tmp_path, doc, name), env or {}, include_builtins=False)
    return config


def test_desktop_mcp_servers_format(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        {
            "mcpServers": {
                "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}, "cwd": "/tmp"},
                "remote": {
                    "type": "streamableHttp",
                    "url": "https://example.test/mcp",
                    "headers": {"X-A": "1"},
                },
                "legacy": {"transport": "sse", "url": "https://example.test/sse"},
                "inferred": {"url": "https://example.test/mcp"},
                "off": {"command": "x", "disabled": True},
                "on": {"command": "x", "enabled": True, "alwaysAllow": ["t"], "disabledTools": ["danger"]},
            },
            "globalShortcut": "Ctrl+Space",
        },
    )
    servers = config.servers
    assert config.source_format == "mcpServers"
    assert (
        servers["time"].transport == "stdio"
        and servers["time"].env == {"TZ": "UTC"}
        and servers["time"].cwd == "/tmp"
    )
    assert servers["remote"].transport == "http" and servers["remote"].headers == {"X-A": "1"}
    assert servers["legacy"].transport == "sse"
    assert servers["inferred"].transport == "http"
    assert servers["off"].enabled is False and servers["on"].enabled is True
    assert servers["on"].tools.deny == ["danger"]
    assert servers["time"].effective_namespace == "time"


def test_seed_gateway_format(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        {
            "servers": [
                {
                    "name": "home",
                    "type": "embedded",
                    "module": "support.demo_server:create_server",
                    "priority": 100,
                    "tools": ["echo", "add"],
                    "tool_config": {"echo": {"cache_ttl": 1800}},
                },
                {
                    "name": "lights",
                    "type": "external",
                    "transport": "http",
                    "url": "http://127.0.0.1:9/mcp",
                    "enabled": False,
                    "autoStart": False,
                    "apiKey": "sekret",
                },
            ]
        },
    )
    home, lights = config.servers["home"], config.servers["lights"]
    assert config.source_format == "seed"
    assert home.transport == "embedded" and home.effective_priority == 100
    assert home.tools.allow == ["echo", "add"]
    assert home.tool_config["echo"].cache_ttl == 1800
    assert (
        lights.transport == "http"
        and not lights.enabled
        and not lights.auto_start
        and lights.api_key == "sekret"
    )


def test_controller_format(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        {
            "mcp_servers": [
                {
                    "id": "search",
                    "url": "http://127.0.0.1:9/mcp",
                    "timeout": 12,
                    "headers": {"Authorization": "Bearer t"},
                }
            ],
            "cache_ttl_seconds": 60,
            "force_refresh_on_init": True,
        },
    )
    server = config.servers["search"]
    assert config.source_format == "controller"
    assert (
        server.transport == "http"
        and server.timeouts.call == 12
        and server.headers["Authorization"] == "Bearer t"
    )
    # The tool index's settings, never a result-cache TTL (issue 11 item 2).
    assert config.gateway.index.cache_ttl_seconds == 60 and config.gateway.index.force_refresh_on_init is True
    assert config.gateway.cache_ttl is None and "cache_ttl" not in config.gateway.model_fields_set


def test_bridge_format_with_namespace(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        {
            "services": {
                "calculator": {"type": "stdio", "command": "calc-server", "args": ["-v"], "namespace": "calc"}
            }
        },
    )
    server = config.servers["calculator"]
    assert config.source_format == "bridge"
    assert server.effective_namespace == "calc" and server.args == ["-v"]


def test_native_format_in_yaml(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        "gateway:\n  port: 9999\nservers:\n  t:\n    command: mcp-server-time\n    namespace: ''\n",
        name="nexus.yaml",
    )
    assert config.gateway.port == 9999
    assert config.servers["t"].effective_namespace == ""


def test_environment_interpolation(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        {"mcpServers": {"r": {"url": "${BASE}/mcp", "headers": {"Authorization": "Bearer ${TOKEN:-none}"}}}},
        env={"BASE": "https://h.test"},
    )
    assert config.servers["r"].url == "https://h.test/mcp"
    assert config.servers["r"].headers["Authorization"] == "Bearer none"


@pytest.mark.parametrize(
    ("doc", "name", "fragment"),
    [
        ('{"mcpServers": {', "nexus.json", "not valid JSON (line 1"),
        ("servers: [\n  - name: x\n bad", "nexus.yaml", "not valid YAML"),
        ([1, 2], "nexus.json", "expected a JSON/YAML object"),
        ({"mcpServers": {"t": {"command": 5}}}, "nexus.json", "mcpServers.t.command"),
        (
            {"mcpServers": {"t": {"type": "carrier-pigeon", "command": "x"}}},
            "nexus.json",
            "mcpServers.t.type",
        ),
        ({"mcpServers": {"t": {"args": []}}}, "nexus.json", "cannot tell the transport"),
        ({"mcpServers": ["not", "a", "map"]}, "nexus.json", "mcpServers: expected an object"),
        ({"servers": [{"type": "embedded"}]}, "nexus.json", "servers[0].name"),
        ({"servers": [{"name": "e", "type": "embedded", "module": "no_colon"}]}, "nexus.json", "servers[0]"),
        ({"servers": [{"name": "e", "type": "weird"}]}, "nexus.json", "servers[0].type"),
        ({"mcp_servers": [{"url": "http://x/mcp"}]}, "nexus.json", "mcp_servers[0].id"),
        ({"mcp_servers": [{"id": "a", "url": "ftp://x"}]}, "nexus.json", "must start with http"),
        ({"services": {"c": {"type": "stdio"}}}, "nexus.json", "services.c"),
        ({"services": {"c": {"command": "x", "namespace": "bad name!"}}}, "nexus.json", "namespace"),
        (
            {"servers": {"t": {"command": "x", "prioritty": 3}}},
            "nexus.json",
            "servers.t.prioritty: unknown field",
        ),
        ({"servers": {"t": {"command": "x", "cache_ttl": -1}}}, "nexus.json", "servers.t.cache_ttl"),
        (
            {"servers": {"t": {"command": "x", "rate_limit": "lots"}}},
            "nexus.json",
            'expected a rate such as "5/second"',
        ),
        ({"gateway": {"port": 70000}}, "nexus.json", "gateway.port"),
        ({"mcpServers": {"t": {"command": "${MISSING_VAR}"}}}, "nexus.json", "${MISSING_VAR} is not set"),
    ],
)
def test_bad_files_name_file_field_and_expectation(
    tmp_path: Path, doc: Any, name: str, fragment: str
) -> None:
    path = write(tmp_path, doc, name)
    with pytest.raises(ConfigError) as caught:
        load_config(path, {}, include_builtins=False)
    message = str(caught.value)
    assert str(path) in message
    assert fragment in message, message


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(tmp_path / "absent.json")


def test_builtin_layer_and_user_override(tmp_path: Path) -> None:
    path = write(tmp_path, {"mcpServers": {"cortex": {"command": "my-own-cortex"}, "t": {"command": "x"}}})
    config, _ = load_config(path, {})
    assert config.servers["device"].transport == "embedded"  # built-in kept
    assert config.servers["cortex"].transport == "stdio"  # user entry replaced the built-in one
    no_builtins = load(tmp_path, {"gateway": {"include_builtins": False}, "servers": {"t": {"command": "x"}}})
    assert set(no_builtins.servers) == {"t"}


def test_errors_never_repeat_secrets(tmp_path: Path) -> None:
    doc = {
        "mcpServers": {
            "a": {"url": "ftp://host/mcp?token=SECRET-1", "headers": {"Authorization": "Bearer SECRET-2"}},
            "b": {"url": "https://h/mcp", "headers": {"Authorization": 5}, "api_key": "SECRET-3"},
        },
        "xiaozhi": {"endpoints": ["not a url SECRET-4"]},
    }
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, doc), {}, include_builtins=False)
    message = str(caught.value)
    assert "mcpServers.a" in message and "mcpServers.b.headers.Authorization" in message
    assert "SECRET" not in message, message
