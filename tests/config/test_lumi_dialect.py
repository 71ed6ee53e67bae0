"""The Lumi (unified manager) config, exactly as its design document writes it (issue 11 item 1)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_nexus.config.builtins import device_module
from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import load_config
from mcp_nexus.upstream.http import http_headers
from support.processes import TESTS, free_port, running, wait_for_port
from support.served_gateway import ServedGateway, gateway_env, served

# Verbatim from the document's section 5.1 (and the issue): nothing changed, not even spacing.
LUMI_CONFIG = """{"mcpServers": {
  "builtin_device_control": {"name": "内置设备控制", "type": "embedded", "enabled": true, "autoStart": true,
    "priority": 100, "tools": ["set_brightness", "adjust_volume", "get_current_volume", "get_current_brightness", "get_system_info"]},
  "weather_service": {"name": "天气服务", "type": "external", "transport": "streamableHttp",
    "command": "http://localhost:3001/mcp", "enabled": true, "autoStart": true, "priority": 50,
    "tools": ["get_weather", "get_forecast"], "apiKey": "your-api-key"},
  "file_operations": {"name": "文件操作", "type": "external", "transport": "stdio", "command": "python",
    "args": ["/path/to/file_mcp_server.py"], "enabled": false, "autoStart": false, "priority": 10,
    "tools": ["read_file", "write_file", "list_directory"]}}}
"""

DEVICE_TOOLS = [
    "set_brightness",
    "adjust_volume",
    "get_current_volume",
    "get_current_brightness",
    "get_system_info",
]
PEERS = TESTS / "support" / "lumi_peers.py"


def write(tmp_path: Path, text: str, name: str = "mcp_config.json") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def with_local_peers(port: int) -> str:
    """The document's config with only its URL's port and its script path pointing at local stand-ins."""
    text = LUMI_CONFIG.replace("http://localhost:3001/mcp", f"http://localhost:{port}/mcp")
    return text.replace("/path/to/file_mcp_server.py", str(PEERS))


def test_the_document_config_loads_unchanged(tmp_path: Path) -> None:
    config, warnings = load_config(write(tmp_path, LUMI_CONFIG), {})
    assert warnings == [] and config.source_format == "lumi"
    servers = config.servers
    device, weather, files = (
        servers["builtin_device_control"],
        servers["weather_service"],
        servers["file_operations"],
    )
    # embedded without module = the built-in device server, which it replaces (no second copy)
    assert device.transport == "embedded" and device.module == device_module()
    assert "device" not in servers and "cortex" in servers
    assert device.tools.allow == DEVICE_TOOLS
    # a URL in `command` is the HTTP server's URL; apiKey travels as a bearer header
    assert (
        weather.transport == "http" and weather.url == "http://localhost:3001/mcp" and weather.command is None
    )
    assert http_headers(weather) == {"Authorization": "Bearer your-api-key"}
    assert (
        files.transport == "stdio"
        and files.command == "python"
        and files.args == ["/path/to/file_mcp_server.py"]
    )
    assert (files.enabled, files.auto_start) == (False, False)
    # display names kept; keys stay the ids
    assert (device.display_name, weather.display_name, files.display_name) == (
        "内置设备控制",
        "天气服务",
        "文件操作",
    )
    assert [s.name for s in (device, weather, files)] == [
        "builtin_device_control",
        "weather_service",
        "file_operations",
    ]
    # bare names, the document's priorities
    assert {s.effective_namespace for s in (device, weather, files)} == {""}
    assert [s.effective_priority for s in (device, weather, files)] == [100, 50, 10]
    assert servers["cortex"].effective_namespace == "cortex"


def test_default_priorities_follow_the_document(tmp_path: Path) -> None:
    doc = {
        "mcpServers": {
            "dev": {"type": "embedded"},
            "web": {"type": "external", "transport": "streamableHttp", "command": "http://127.0.0.1:9/mcp"},
            "feed": {"type": "external", "transport": "sse", "command": "http://127.0.0.1:9/sse"},
            "cli": {"type": "external", "transport": "stdio", "command": "x"},
            "plain": {"command": "y"},  # an entry without `type` in a Lumi file: bare names too
        }
    }
    config, _ = load_config(write(tmp_path, json.dumps(doc)), {}, include_builtins=False)
    priorities = {name: s.effective_priority for name, s in config.servers.items()}
    assert priorities == {"dev": 100, "web": 50, "feed": 50, "cli": 10, "plain": 10}
    assert (
        config.servers["feed"].transport == "sse" and config.servers["feed"].url == "http://127.0.0.1:9/sse"
    )
    assert {s.effective_namespace for s in config.servers.values()} == {""}


def test_an_embedded_entry_may_still_name_its_module(tmp_path: Path) -> None:
    doc = {"mcpServers": {"demo": {"type": "embedded", "module": "support.demo_server:create_server"}}}
    config, _ = load_config(write(tmp_path, json.dumps(doc)), {})
    assert config.servers["demo"].module == "support.demo_server:create_server"
    assert "device" in config.servers  # a different module: the built-in device server stays


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            {"type": "externl", "command": "x"},
            "mcpServers.s.type: expected 'embedded' or 'external' (Lumi) or 'stdio'|'http'|'sse' (desktop), "
            "got 'externl'",
        ),
        (
            {"type": "external", "transport": "pigeon", "command": "x"},
            "mcpServers.s.transport: expected 'stdio', 'streamableHttp' (also 'http') or 'sse', got 'pigeon'",
        ),
        (
            {"type": "external", "transport": "stdio", "command": "http://127.0.0.1:9/mcp"},
            "mcpServers.s.command: holds a URL but the transport is 'stdio'",
        ),
        (
            {"type": "external", "transport": "embedded"},
            "mcpServers.s.transport: 'type': 'external' needs 'stdio', 'streamableHttp' or 'sse'",
        ),
        (
            {"type": "embedded", "transport": "stdio"},
            "mcpServers.s.transport: an embedded server runs inside Nexus and has no transport",
        ),
        (
            {
                "type": "external",
                "transport": "streamableHttp",
                "command": "http://a/mcp",
                "url": "http://b/mcp",
            },
            "mcpServers.s.command: a URL in both 'command' and 'url': give it once",
        ),
        ({"type": "external"}, "mcpServers.s: cannot tell the transport"),
    ],
)
def test_wrong_values_name_what_is_accepted(tmp_path: Path, entry: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, json.dumps({"mcpServers": {"s": entry}})), {})
    assert expected in str(caught.value)


def test_other_dialects_keep_server_prefixes(tmp_path: Path) -> None:
    desktop = {
        "mcpServers": {
            "old": {"transport": "sse", "url": "http://127.0.0.1:9/sse"},  # `transport` alone: not Lumi
            "time": {"type": "stdio", "command": "x"},
            "named": {"name": "A display name", "command": "x"},
        }
    }
    config, _ = load_config(write(tmp_path, json.dumps(desktop)), {}, include_builtins=False)
    assert config.source_format == "mcpServers"
    assert {n: s.effective_namespace for n, s in config.servers.items()} == {
        "old": "old",
        "time": "time",
        "named": "named",
    }
    assert config.servers["named"].display_name == "A display name"
    seed_list = {"servers": [{"name": "home", "type": "external", "command": "x"}]}
    config, _ = load_config(write(tmp_path, json.dumps(seed_list)), {}, include_builtins=False)
    assert config.servers["home"].effective_namespace == ""  # the Lumi vocabulary as a list
    native = {"servers": {"t": {"transport": "stdio", "command": "x"}}}
    config, _ = load_config(write(tmp_path, json.dumps(native)), {}, include_builtins=False)
    assert config.servers["t"].effective_namespace == "t"


# -- the same config served, with local stand-ins for its URL and script ------------------------


def _text(answer: Any) -> str:
    assert answer.status_code == 200, answer.text
    body = answer.json()
    return str(body["content"][0]["text"])


def _server_of(answer: Any) -> str:
    return str(answer.json()["_meta"]["nexus/server"])


@pytest.fixture
def weather_port(tmp_path: Path) -> Any:
    port = free_port()
    args = [sys.executable, str(PEERS), "weather", "--http", str(port), "--bearer", "your-api-key"]
    with running(args, log=tmp_path / "weather.log") as proc:
        wait_for_port(port, proc=proc)
        yield port


def test_the_document_config_behaves_as_the_document_says(tmp_path: Path, weather_port: int) -> None:
    config = write(tmp_path, with_local_peers(weather_port))
    with served(config, tmp_path) as gateway:
        gateway.wait_state("weather_service", "READY")  # READY: the peer refuses requests without the bearer
        servers = gateway.servers()
        assert "device" not in servers
        device = gateway.wait_state("builtin_device_control", "READY")
        assert (device["priority"], device["namespace"]) == (100, "")
        assert (servers["weather_service"]["priority"], servers["weather_service"]["namespace"]) == (50, "")
        assert servers["weather_service"]["display_name"] == "天气服务"
        # enabled: false, autoStart: false: configured, listed, not started
        assert servers["file_operations"]["state"] == "DISABLED"
        names = gateway.tool_names()
        # volume and brightness tools exist only where the host has them; system info always
        assert {"get_system_info", "get_weather", "get_forecast"} <= names
        assert device["tools"] == len(names & set(DEVICE_TOOLS))
        assert not any(name.startswith(("weather_service.", "builtin_device_control.")) for name in names)
        assert "read_file" not in names
        answer = gateway.call("get_weather", {"city": "Hangzhou"})
        assert _text(answer) == "weather-http: sunny in Hangzhou" and _server_of(answer) == "weather_service"
        # startable at run time
        assert gateway.post("/api/servers/file_operations/enable").status_code == 200
        gateway.wait_state("file_operations", "READY")
        gateway.wait_for("the file tools", lambda: {"read_file", "list_directory"} <= gateway.tool_names())
        listing = gateway.call("list_directory", {"path": str(PEERS.parent)})
        assert "lumi_peers.py" in _text(listing) and _server_of(listing) == "file_operations"
        # the stdio server also offers get_weather (not in its `tools` list): still the HTTP one answers
        assert _server_of(gateway.call("get_weather", {"city": "x"})) == "weather_service"


def test_two_servers_offering_get_weather_fall_back_by_priority(tmp_path: Path) -> None:
    port = free_port()
    doc = {
        "mcpServers": {
            "weather_service": {
                "name": "天气服务",
                "type": "external",
                "transport": "streamableHttp",
                "command": f"http://127.0.0.1:{port}/mcp",
                "tools": ["get_weather"],
                "apiKey": "k-123456",
                "autoReconnect": False,
            },
            "file_operations": {
                "name": "文件操作",
                "type": "external",
                "transport": "stdio",
                "command": "python",
                "args": [str(PEERS)],
                "autoStart": False,  # enabled, but started only when asked
                "tools": ["get_weather", "read_file"],
            },
        }
    }
    config = write(tmp_path, json.dumps(doc, ensure_ascii=False))
    weather_args = [sys.executable, str(PEERS), "weather", "--http", str(port), "--bearer", "k-123456"]
    with running(weather_args, log=tmp_path / "weather.log") as weather:
        wait_for_port(port, proc=weather)
        with served(config, tmp_path, env=gateway_env(tmp_path)) as gateway:
            gateway.wait_state("weather_service", "READY")
            assert gateway.servers()["file_operations"]["state"] == "STOPPED"
            assert _server_of(gateway.call("get_weather", {"city": "a"})) == "weather_service"
            assert gateway.post("/api/servers/file_operations/start").status_code == 200
            gateway.wait_state("file_operations", "READY")
            assert _server_of(gateway.call("get_weather", {"city": "b"})) == "weather_service"
            weather.kill()
            weather.wait(10)
            _falls_back(gateway)


def _falls_back(gateway: ServedGateway) -> None:
    answer = gateway.call("get_weather", {"city": "c"})
    assert _text(answer) == "files-stdio: probably sunny in c", answer.text
    assert _server_of(answer) == "file_operations"


def test_a_tools_list_and_disabled_tools_combine(tmp_path: Path) -> None:
    doc = {
        "mcpServers": {
            "a": {"type": "external", "command": "x", "tools": ["t1", "t2"], "disabledTools": ["t2"]}
        }
    }
    config, _ = load_config(write(tmp_path, json.dumps(doc)), {}, include_builtins=False)
    assert (config.servers["a"].tools.allow, config.servers["a"].tools.deny) == (["t1", "t2"], ["t2"])
