"""`nexus config check --full` masks every secret shape (and only secrets), shows effective defaults, and
`--show-secrets` (issue 12 item 6, issue 22)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from support.processes import VENV_BIN, child_env

SECRETS = {
    "api_key_header": "xak-4f1c2d9e8b7a",
    "cookie": "sess-77d0c1e5a2f9",
    "github_pat": "ghp_Zx81Qp0LmN3v",
    "db_password": "pg-Pa55w0rd-91",
    "sig": "sig-0b9f3e2d1c7a",
    "interpolated": "env-9c8b7a6f5e4d",
    "userinfo": "ui-Secret-4455",
    "flag": "flag-Secret-6677",
    "endpoint_token": "jwt-aa11bb22cc33",
}


def config_doc() -> dict[str, Any]:
    return {
        "gateway": {"include_builtins": False, "rate_limit": "10/minute"},
        "mcpServers": {
            "remote": {
                "type": "http",
                "url": f"https://deploy:{SECRETS['userinfo']}@api.example.test/mcp?sig={SECRETS['sig']}&v=2",
                "headers": {
                    "X-API-Key": SECRETS["api_key_header"],
                    "Cookie": f"session={SECRETS['cookie']}",
                    "X-Trace": "${TRACE_ID}",
                },
            },
            "tool": {
                "command": "sh",
                "args": ["--verbose", "--api-key", SECRETS["flag"], "--path", "/srv/data"],
                "env": {
                    "GITHUB_PAT": SECRETS["github_pat"],
                    "DATABASE_URL": f"postgres://app:{SECRETS['db_password']}@db.internal:5432/app",
                    "TZ": "UTC",
                },
                "cwd": "${CWD_BASE}/${TRACE_ID}",  # an existing folder: a missing cwd is a problem
            },
        },
        "xiaozhi": {"endpoints": [f"wss://api.xiaozhi.me/mcp/?token={SECRETS['endpoint_token']}"]},
    }


def check(tmp_path: Path, *extra: str, doc: Any = None) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "nexus.json"
    path.write_text(json.dumps(doc if doc is not None else config_doc()))
    (tmp_path / SECRETS["interpolated"]).mkdir(exist_ok=True)
    env = child_env(
        TRACE_ID=SECRETS["interpolated"], CWD_BASE=str(tmp_path), NEXUS_DATA_DIR=str(tmp_path / "data")
    )
    return subprocess.run(
        [str(VENV_BIN / "nexus"), "config", "check", "--full", str(path), *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_every_secret_shape_is_masked(tmp_path: Path) -> None:
    done = check(tmp_path)
    assert done.returncode == 0, done.stderr
    printed = done.stdout + done.stderr
    leaked = {name: value for name, value in SECRETS.items() if value in printed}
    assert leaked == {}
    shown = json.loads(done.stdout)
    remote, tool = shown["servers"]["remote"], shown["servers"]["tool"]
    assert remote["headers"] == {"X-API-Key": "***", "Cookie": "***", "X-Trace": "***"}  # X-Trace: a ${VAR}
    assert remote["url"] == "https://***@api.example.test/mcp?sig=***&v=2"  # v=2 is no secret
    assert tool["env"] == {
        "GITHUB_PAT": "***",
        "DATABASE_URL": "postgres://***@db.internal:5432/app",
        "TZ": "UTC",  # a plain value is shown
    }
    assert tool["args"] == ["--verbose", "--api-key", "***", "--path", "/srv/data"]
    assert tool["cwd"] == f"{tmp_path}/***"  # the part from ${TRACE_ID}; ${CWD_BASE}, a plain path, is shown
    assert shown["xiaozhi"]["endpoints"] == ["wss://api.xiaozhi.me/mcp/?token=***"]


def test_show_secrets_prints_them_in_clear(tmp_path: Path) -> None:
    done = check(tmp_path, "--show-secrets")
    assert done.returncode == 0, done.stderr
    assert {name for name, value in SECRETS.items() if value in done.stdout} == set(SECRETS)
    assert "--show-secrets" in done.stderr  # a reminder of what was asked


def test_effective_defaults_are_shown_not_null(tmp_path: Path) -> None:
    done = check(tmp_path, doc={"mcpServers": {"t": {"command": "sh"}}})
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    gateway = shown["gateway"]
    assert (gateway["rate_limit"], gateway["offload_threshold"], gateway["timeout"], gateway["retries"]) == (
        "5/second",
        5120,
        30.0,
        2,
    )
    assert gateway["cache_ttl"] == 0.0
    assert gateway["offload_dir"] == str(tmp_path / "data" / "offload")
    assert gateway["index"] == {
        "cache_ttl_seconds": 3600.0,
        "force_refresh_on_init": False,
        "path": str(tmp_path / "data" / "index" / "tool_index.sqlite3"),
        "sync_timeout": 10.0,
        "persist": True,
        "tag_rules": {},
    }
    assert gateway["tool_search"]["mode"] == "off"
    server = shown["servers"]["t"]
    assert (server["rate_limit"], server["priority"], server["namespace"]) == ("5/second", 10, "t")
    # an explicit setting wins, and servers inherit it
    done = check(
        tmp_path, doc={"gateway": {"rate_limit": "1/minute"}, "mcpServers": {"t": {"command": "sh"}}}
    )
    shown = json.loads(done.stdout)
    assert shown["gateway"]["rate_limit"] == shown["servers"]["t"]["rate_limit"] == "1/minute"


def test_errors_never_repeat_an_interpolated_value(tmp_path: Path) -> None:
    done = check(tmp_path, doc={"gateway": {"host": "${TRACE_ID}", "port": "${TRACE_ID}"}})
    assert done.returncode == 2
    assert "gateway.port" in done.stderr and SECRETS["interpolated"] not in done.stderr
    assert "value from an environment variable" in done.stderr
