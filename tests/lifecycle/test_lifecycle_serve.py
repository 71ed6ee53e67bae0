"""A real `nexus serve` process: the admin API, the CLI that drives it, hot reload, graceful SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import psutil

from lifecycle.faults import document, faulty
from support.polling import eventually_sync
from support.processes import VENV_BIN, child_env, free_port, running, wait_for_http

TOKEN = "lifecycle-token"


def start_serve(tmp_path: Path, servers: dict[str, Any], **gateway: Any) -> tuple[Path, list[str], int]:
    port = free_port()
    path = tmp_path / "nexus.json"
    path.write_text(json.dumps(document(servers, **gateway)))
    args = [
        str(VENV_BIN / "nexus"),
        "serve",
        "--wait-ready",
        "--config",
        str(path),
        "--port",
        str(port),
        "--token",
        TOKEN,
    ]
    return path, args, port


def api(port: int, method: str, path: str, body: Any = None, token: str | None = TOKEN) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.request(method, f"http://127.0.0.1:{port}{path}", json=body, headers=headers, timeout=30)


def cli(port: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "nexus"), *args, "--url", f"http://127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        env=child_env(NEXUS_TOKEN=TOKEN, COLUMNS="200"),
        timeout=60,
    )


def servers(port: int) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in api(port, "GET", "/api/servers").json()["servers"]}


def test_admin_api_and_cli_control_a_running_gateway(tmp_path: Path) -> None:
    config, args, port = start_serve(tmp_path, {"a": faulty("a"), "b": faulty("b")})
    with running(args, log=tmp_path / "serve.log") as proc:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
        assert api(port, "GET", "/api/servers", token=None).status_code == 401
        assert api(port, "GET", "/api/servers", token="wrong").status_code == 401

        listed = servers(port)
        assert {name: row["state"] for name, row in listed.items()} == {"a": "READY", "b": "READY"}
        assert all(row["uptime"] is not None and row["history"] for row in listed.values())

        document_ = api(port, "GET", "/api/openapi.json").json()
        assert document_["openapi"].startswith("3.") and "/api/servers/{name}/restart" in document_["paths"]

        stopped = cli(port, "stop", "a")
        assert stopped.returncode == 0 and "a: STOPPED" in stopped.stdout
        tools = {t["name"] for t in api(port, "GET", "/api/tools").json()["tools"]}
        assert "a.echo" not in tools and "b.echo" in tools
        assert cli(port, "start", "a").stdout.strip() == "a: READY"

        pid_b = servers(port)["b"]["pid"]
        assert cli(port, "restart", "b").stdout.strip() == "b: READY"
        # An operator's restart is not a restart the counter reports (only crashes and failed health checks).
        assert servers(port)["b"]["pid"] not in (None, pid_b) and servers(port)["b"]["restarts"] == 0

        answer = api(port, "POST", "/api/tools/b.echo/call", {"arguments": {"text": "via api"}})
        assert answer.status_code == 200 and answer.json()["content"][0]["text"] == "b: via api"
        assert answer.json()["_meta"]["nexus/server"] == "b"
        assert api(port, "POST", "/api/tools/nope/call", {}).status_code == 404
        assert api(port, "POST", "/api/tools/b.echo/call", {"arguments": [1]}).status_code == 400
        missing = api(port, "POST", "/api/servers/zzz/stop")
        assert missing.status_code == 404 and "no server named 'zzz'" in missing.json()["error"]

        table = cli(port, "servers", "--history").stdout
        assert "restarted by operator" in table
        # Piped: one tab-separated row per line, the server's name first (other lines start with "#").
        rows = {line.split("\t")[0]: line for line in table.splitlines() if "\t" in line and line[:1] != "#"}
        assert "READY" in rows["a"] and "READY" in rows["b"]

        config.write_text(json.dumps(document({"a": faulty("a"), "b": faulty("b"), "c": faulty("c")})))
        eventually_sync(
            lambda: servers(port).get("c", {}).get("state") == "READY",
            timeout=15,
            what="c added by the watcher",
        )
        reloaded = cli(port, "reload")
        assert reloaded.returncode == 0 and "nothing changed" in reloaded.stdout
        config.write_text("{broken")
        rejected = api(port, "POST", "/api/reload")
        assert rejected.status_code == 422 and "not valid JSON" in rejected.json()["error"]
        assert servers(port)["c"]["state"] == "READY"

        cleared = cli(port, "cache", "clear")
        assert cleared.returncode == 0 and "cleared" in cleared.stdout


def test_sigterm_lets_calls_in_flight_finish_and_leaves_nothing_running(tmp_path: Path) -> None:
    _config, args, port = start_serve(tmp_path, {"a": faulty("a"), "b": faulty("b")}, shutdown_grace=5)
    proc = subprocess.Popen(
        args, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
        children = {row["pid"] for row in servers(port).values()}
        assert len(children) == 2 and all(psutil.pid_exists(pid) for pid in children)
        answers: list[httpx2.Response] = []

        def slow_call(server: str) -> None:
            body = {"arguments": {"seconds": 1.5}}
            answers.append(api(port, "POST", f"/api/tools/{server}.slow/call", body))

        callers = [threading.Thread(target=slow_call, args=(name,)) for name in ("a", "b", "a")]
        for thread in callers:
            thread.start()
        eventually_sync(
            lambda: api(port, "GET", "/api/servers").json()["in_flight"] == 3,
            timeout=15,
            what="3 calls in flight",
        )
        signalled = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)
        time.sleep(0.3)
        late = api(port, "POST", "/api/tools/a.echo/call", {"arguments": {"text": "late"}})
        assert late.status_code == 503 and "shutting down" in late.json()["error"]
        for thread in callers:
            thread.join(timeout=10)
        assert [r.status_code for r in answers] == [200, 200, 200]
        assert all(r.json()["content"][0]["text"].endswith("slept 1.5") for r in answers)
        code = proc.wait(timeout=10)
        assert code == 0, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() - signalled < 5
        eventually_sync(
            lambda: not any(psutil.pid_exists(pid) for pid in children), timeout=5, what="children gone"
        )
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
