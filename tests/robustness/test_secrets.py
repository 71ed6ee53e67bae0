"""Planted secrets never come out: not in `nexus config check`, the log, the admin API, `nexus servers`
or tool results (issue 12 items 6 and 7).

Twenty secrets of every shape sit in one config (headers, cookie, bearer, apiKey, URL userinfo
and query, env values, a database URL's password, secret-named arguments, `${VAR}` values,
the gateway token, a Xiaozhi endpoint token). Two stdio servers print their environment and
arguments on stderr (`echo "API_TOKEN=$API_TOKEN" >&2`), one of them dies at start doing so,
the other dies mid-call doing so; an HTTP server refuses one entry (its error names the URL).
Every place an operator or a client can read is then searched for every secret.
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.processes import TESTS, VENV_BIN, free_port, running, wait_for_port
from support.served_gateway import ServedGateway, gateway_env, served

LEAKY = TESTS / "support" / "leaky_server.py"
PEERS = TESTS / "support" / "lumi_peers.py"

SHAPES = [
    "x_api_key_header",
    "cookie_value",
    "bearer_header",
    "api_key",
    "url_userinfo_password",
    "url_query_sig",
    "url_query_token",
    "env_github_pat",
    "env_database_url_password",
    "env_api_token",
    "interpolated_header",
    "interpolated_env",
    "interpolated_arg",
    "arg_after_secret_flag",
    "gateway_token",
    "xiaozhi_endpoint_token",
    "env_api_token_of_dying_server",
    "env_aws_secret",
    "basic_auth_password",
    "interpolated_url_query",
]


@pytest.fixture(scope="module")
def planted() -> dict[str, str]:
    # Distinct random values: a hit can only be a leak, never a coincidence.
    return {shape: f"{shape[:6]}-{secrets.token_hex(10)}" for shape in SHAPES}


def config_doc(s: dict[str, str], http_port: int) -> dict[str, Any]:
    closed = free_port()  # nothing listens there: the endpoint bridge keeps failing and logging
    basic = base64.b64encode(f"proxyuser:{s['basic_auth_password']}".encode()).decode()
    http = f"http://127.0.0.1:{http_port}/mcp"
    return {
        "gateway": {"token": s["gateway_token"], "include_builtins": False},
        "mcpServers": {
            "remote": {
                "type": "http",
                "url": f"{http}?sig={s['url_query_sig']}&token={s['url_query_token']}",
                "headers": {
                    "Authorization": f"Bearer {s['bearer_header']}",
                    "X-API-Key": s["x_api_key_header"],
                    "Cookie": f"session={s['cookie_value']}; theme=dark",
                    "X-Custom": "${LEAK_HEADER}",
                    "Proxy-Authorization": f"Basic {basic}",
                },
            },
            # The HTTP server wants the bearer of `remote`: this entry gets 401 (its error may name its URL).
            "signed": {
                "type": "http",
                "url": f"http://deploy:{s['url_userinfo_password']}@127.0.0.1:{http_port}/mcp?sig=${{LEAK_SIG}}",
                "apiKey": s["api_key"],
                "restart": {"max_attempts": 1, "backoff_min": 0.2},
            },
            "leaky": {
                "command": "python",
                "args": [str(LEAKY), "--api-key", s["arg_after_secret_flag"], "--secret=${LEAK_ARG}"],
                "env": {
                    "API_TOKEN": s["env_api_token"],
                    "GITHUB_PAT": s["env_github_pat"],
                    "DATABASE_URL": f"postgres://app:{s['env_database_url_password']}@db.internal:5432/app",
                    "AWS_SECRET_ACCESS_KEY": s["env_aws_secret"],
                    "FROM_ENV": "${LEAK_ENV}",
                },
                "restart": {"max_attempts": 1, "backoff_min": 0.2},
            },
            "dying": {
                "command": "python",
                "args": [str(LEAKY), "--crash-at-start"],
                "env": {"API_TOKEN": s["env_api_token_of_dying_server"]},
                "restart": {"max_attempts": 1, "backoff_min": 0.2},
            },
        },
        "xiaozhi": {"endpoints": [f"ws://127.0.0.1:{closed}/mcp/?token={s['xiaozhi_endpoint_token']}"]},
    }


def interpolation_env(s: dict[str, str]) -> dict[str, str]:
    return {
        "LEAK_HEADER": s["interpolated_header"],
        "LEAK_ENV": s["interpolated_env"],
        "LEAK_ARG": s["interpolated_arg"],
        "LEAK_SIG": s["interpolated_url_query"],
    }


def leaks(text: str, s: dict[str, str]) -> list[str]:
    return [shape for shape, value in s.items() if value in text]


def nexus(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "nexus"), *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.fixture(scope="module")
def http_port(tmp_path_factory: pytest.TempPathFactory, planted: dict[str, str]) -> Any:
    port = free_port()
    log = tmp_path_factory.mktemp("peer") / "http.log"
    args = [sys.executable, str(PEERS), "weather", "--http", str(port), "--bearer", planted["bearer_header"]]
    with running(args, log=log) as proc:
        wait_for_port(port, proc=proc)
        yield port


@pytest.fixture
def config(tmp_path: Path, planted: dict[str, str], http_port: int) -> Path:
    path = tmp_path / "nexus.json"
    path.write_text(json.dumps(config_doc(planted, http_port)))
    return path


def test_config_check_shows_none_of_them(tmp_path: Path, config: Path, planted: dict[str, str]) -> None:
    env = gateway_env(tmp_path, **interpolation_env(planted))
    done = nexus("config", "check", str(config), env=env)
    assert done.returncode == 0, done.stderr
    assert leaks(done.stdout + done.stderr, planted) == []
    # the control: they are all really in there
    shown = nexus("config", "check", str(config), "--show-secrets", env=env)
    assert sorted(leaks(shown.stdout, planted)) == sorted(
        shape
        for shape in SHAPES
        if shape != "basic_auth_password"  # inside the base64 of its header
    )


def _call(gateway: ServedGateway, tool: str, arguments: dict[str, Any] | None = None) -> str:
    answer = gateway.call(tool, arguments)
    return f"{answer.status_code} {answer.text}"


def test_the_running_gateway_shows_none_of_them(
    tmp_path: Path, config: Path, planted: dict[str, str]
) -> None:
    env = gateway_env(tmp_path, **interpolation_env(planted))
    seen: dict[str, str] = {}
    with served(config, tmp_path, token=planted["gateway_token"], env=env) as gateway:
        gateway.wait_state("remote", "READY")
        gateway.wait_state("leaky", "READY")
        gateway.wait_for(
            "the dying server to give up", lambda: gateway.servers()["dying"]["state"] == "ERROR"
        )
        gateway.wait_for("signed to fail", lambda: gateway.servers()["signed"]["last_error"] is not None)
        # tool results: a normal answer, a server dying mid-call, then the dead servers' errors
        seen["result hello"] = _call(gateway, "leaky.hello")
        seen["result leak_and_crash"] = _call(gateway, "leaky.leak_and_crash")
        gateway.wait_for("leaky to be down", lambda: gateway.servers()["leaky"]["state"] != "READY")
        seen["result after crash"] = _call(gateway, "leaky.hello")
        seen["result of the dead server"] = _call(gateway, "dying.hello")
        seen["result remote"] = _call(gateway, "remote.get_weather", {"city": "Oslo"})
        # the admin API
        seen["/api/servers"] = gateway.get("/api/servers").text
        for name in ("remote", "signed", "leaky", "dying"):
            seen[f"/api/servers/{name}"] = gateway.get(f"/api/servers/{name}").text
        seen["/api/tools"] = gateway.get("/api/tools").text
        seen["/api/frontends"] = gateway.get("/api/frontends").text
        # the CLI against the running gateway
        # Wide: a table cell wrapped over two lines would hide a leaked secret from the search.
        cli_env = {**env, "COLUMNS": "1000"}
        for args in (("servers",), ("servers", "--json"), ("servers", "--history")):
            done = nexus(*args, "--url", gateway.base, "--token", planted["gateway_token"], env=cli_env)
            assert done.returncode == 0, done.stderr
            seen[f"nexus {' '.join(args)}"] = done.stdout + done.stderr
        log = gateway.log
    seen["gateway log"] = log.read_text(errors="replace")
    found = {place: leaks(text, planted) for place, text in seen.items()}
    assert {place: shapes for place, shapes in found.items() if shapes} == {}
    # controls: the leaks really happened and were logged, masked; the calls really ran
    assert "[leaky] API_TOKEN=***" in seen["gateway log"] and "[dying] fatal:" in seen["gateway log"]
    assert "fatal: cannot log in with API_TOKEN=***" in seen["/api/servers/dying"]
    assert "sunny in Oslo" in seen["result remote"] and "hello from leaky" in seen["result hello"]
