"""A plugin that fails to import or declares the wrong thing is reported by name; the gateway serves."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from broken_dist import broken_plugin

from support.processes import VENV_BIN
from support.served_gateway import gateway_env, served


def test_nexus_plugins_names_the_broken_plugins_and_exits_1(tmp_path: Path) -> None:
    env = gateway_env(tmp_path, PYTHONPATH=str(broken_plugin(tmp_path / "site")))
    done = subprocess.run(
        [str(VENV_BIN / "nexus"), "plugins", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done.stderr
    rows = {(row["group"], row["name"]): row for row in json.loads(done.stdout)}
    explodes = rows[("mcp_nexus.steps", "explodes")]
    assert explodes["distribution"] == "broken-plugin" and explodes["version"] == "0.3"
    assert explodes["module"] == "broken_plugin_boom"
    assert "RuntimeError: the plugin module fails on import" in explodes["error"]
    assert "TransportSpec" in rows[("mcp_nexus.transports", "not_a_spec")]["error"]
    # everything else loaded: the built-ins and the installed test plugin
    assert rows[("mcp_nexus.transports", "websocket")]["error"] is None
    assert rows[("mcp_nexus.steps", "redact")]["error"] is None
    assert rows[("mcp_nexus.steps", "cache")]["builtin"] is True


def test_the_gateway_serves_without_a_broken_plugin_and_logs_it_by_name(tmp_path: Path) -> None:
    env = gateway_env(tmp_path, PYTHONPATH=str(broken_plugin(tmp_path / "site")))
    config = tmp_path / "nexus.json"
    config.write_text(
        json.dumps(
            {
                "gateway": {"include_builtins": False},
                "servers": {"echo": {"transport": "embedded", "module": "plugin_echo"}},
            }
        )
    )
    with served(config, tmp_path, env=env) as gateway:
        gateway.wait_state("echo", "READY")
        answer = gateway.call("echo.echo", {"text": "still serving"})
        assert answer.status_code == 200, answer.text
        assert "plugin-echo: still serving" in answer.text
        log = gateway.log.read_text()
    assert "plugin 'explodes' (mcp_nexus.steps, from broken-plugin)" in log
    assert "RuntimeError: the plugin module fails on import" in log


def test_a_config_naming_the_broken_transport_says_its_plugin_did_not_load(tmp_path: Path) -> None:
    env = gateway_env(tmp_path, PYTHONPATH=str(broken_plugin(tmp_path / "site")))
    config = tmp_path / "nexus.json"
    config.write_text(json.dumps({"servers": {"x": {"transport": "not_a_spec", "url": "ws://127.0.0.1:1"}}}))
    done = subprocess.run(
        [str(VENV_BIN / "nexus"), "config", "check", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "servers.x.transport: the transport 'not_a_spec' comes from a plugin that did not load (broken-plugin)"
        in done.stdout + done.stderr
    )
