"""The report behind `nexus config check`: verdict, rows, non-default settings, problems naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp_nexus.config.check_report import build_report
from mcp_nexus.config.load import load_config


def report_of(tmp_path: Path, doc: dict[str, Any], env: dict[str, str] | None = None) -> Any:
    path = tmp_path / "nexus.json"
    path.write_text(json.dumps(doc))
    config, warnings = load_config(path, env or {})
    return build_report(config, str(path), warnings, config_path=path)


def program(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_a_fine_config_gets_one_verdict_line_and_only_its_overrides(tmp_path: Path) -> None:
    calc = program(tmp_path / "calc-server")
    report = report_of(
        tmp_path,
        {
            "gateway": {"port": 9000, "rate_limit": "5/second"},  # written equal to the default: no override
            "stores": {"cache": "redis://127.0.0.1:6379/0"},
            "mcpServers": {
                "calc": {
                    "command": str(calc),
                    "args": ["--fast"],
                    "env": {"LOG_LEVEL": "debug"},
                    "timeout": 60,
                },
                "remote": {"type": "http", "url": "https://h.test/mcp?token=abc&v=2"},
                "off": {"command": "nowhere-to-be-found", "disabled": True},
            },
        },
    )
    assert report.ok and report.problems == []
    assert report.verdict() == (
        "config OK: 5 servers (2 embedded, 1 http, 2 stdio; 2 built-in), mcpServers format, "
        "stores: redis for cache, memory for the rest"
    )
    rows = {row.name: row for row in report.servers}
    assert (rows["calc"].found, rows["calc"].resolved, rows["calc"].target) == (
        "yes",
        str(calc),
        f"{calc} --fast",
    )
    assert rows["calc"].overrides == {"env.LOG_LEVEL": "debug", "timeouts.call": 60.0}
    assert rows["remote"].target == "https://h.test/mcp?token=***&v=2" and rows["remote"].found == "-"
    assert rows["off"].found == "disabled"  # a disabled server is not checked
    assert rows["device"].found == "built-in" and rows["device"].builtin
    assert report.settings == {"gateway": {"port": 9000}, "stores": {"cache": "redis://127.0.0.1:6379/0"}}


def test_a_command_not_found_and_a_missing_cwd_are_problems_naming_the_field(tmp_path: Path) -> None:
    report = report_of(
        tmp_path,
        {
            "gateway": {"include_builtins": False},
            "servers": {
                "calc": {"transport": "stdio", "command": "calc-server-nowhere"},
                "here": {"transport": "stdio", "command": "sh", "cwd": str(tmp_path / "gone")},
            },
        },
    )
    assert not report.ok and report.verdict() == "config has 2 problems:"
    assert [(p.path, p.message) for p in report.problems] == [
        ("servers.calc.command", "'calc-server-nowhere' is not found on PATH: the server cannot start"),
        ("servers.here.cwd", f"{str(tmp_path / 'gone')!r} is not a folder: the server cannot start"),
    ]


def test_list_formats_name_the_server_by_its_name(tmp_path: Path) -> None:
    report = report_of(
        tmp_path,
        {"servers": [{"name": "calc", "type": "external", "transport": "stdio", "command": "nowhere-x"}]},
    )
    assert [p.path for p in report.problems] == ["servers[calc].command"]


def test_secrets_in_overrides_are_masked_and_the_json_form_carries_everything(tmp_path: Path) -> None:
    report = report_of(
        tmp_path,
        {
            "gateway": {"include_builtins": False, "token": "${GW_TOKEN}"},
            "llm": {"api_key_env": "MY_KEY"},
            "mcpServers": {
                "r": {"type": "http", "url": "https://h.test/mcp", "headers": {"Authorization": "x"}}
            },
        },
        env={"GW_TOKEN": "gw-secret-value-1"},
    )
    data = report.as_json()
    text = json.dumps(data)
    assert "gw-secret-value-1" not in text
    assert data["settings"] == {"gateway": {"token": "***"}, "llm": {"api_key_env": "MY_KEY"}}
    assert data["servers"][0]["overrides"] == {"headers.Authorization": "***"}
    assert data["ok"] and data["verdict"].startswith("config OK: 1 server (1 http)")
