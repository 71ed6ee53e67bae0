"""SIGHUP (issue item 7): `nexus serve` reloads its config file; `nexus serve --stdio` stops gracefully.

Real processes: a gateway with a config file, a server of its own (the stdlib one of
tests/robustness/hostile_stdio_server.py, no flood) with a slow tool, and signals sent with
os.kill. `--no-watch`, so only the signal can have applied the change.
"""

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

from robustness.gateways import HttpGateway
from robustness.hostile_stdio import hostile_server, wait_state, write_config
from support.processes import VENV_BIN, child_env


def _servers(gateway: HttpGateway) -> dict[str, str]:
    rows = httpx2.get(f"{gateway.base}/api/servers", timeout=30).json()["servers"]
    return {row["name"]: row["state"] for row in rows}


def test_sighup_reloads_the_config_file_and_lets_calls_in_flight_finish(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"first": hostile_server()})
    gateway = HttpGateway(config, tmp_path / "gateway.log")
    try:
        gateway.wait_ready()
        wait_state(gateway, "first", ("READY",))
        answers: list[Any] = []
        slow = threading.Thread(
            target=lambda: answers.append(
                httpx2.post(
                    f"{gateway.base}/api/tools/first.slow/call",
                    json={"arguments": {"seconds": 3}},
                    timeout=30,
                )
            )
        )
        slow.start()
        time.sleep(0.5)  # the call is in flight
        document = json.loads(config.read_text())
        document["servers"]["second"] = hostile_server()
        config.write_text(json.dumps(document))
        os.kill(gateway.pid, signal.SIGHUP)
        wait_state(gateway, "second", ("READY",), timeout=20)
        assert gateway.alive
        slow.join(20)
        assert answers and answers[0].status_code == 200, answers
        assert answers[0].json()["content"][0]["text"] == "done"
        assert _servers(gateway) == {"first": "READY", "second": "READY"}
        # A bad file: rejected, logged, the gateway keeps running with what it had.
        config.write_text("{not json")
        os.kill(gateway.pid, signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "config change rejected" not in gateway.log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "config change rejected" in gateway.log.read_text()
        assert gateway.alive and _servers(gateway) == {"first": "READY", "second": "READY"}
        log = gateway.log.read_text()
        assert "SIGHUP: reloading" in log and "added second" in log
    finally:
        gateway.stop()


def test_sighup_to_a_stdio_gateway_stops_it_gracefully(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"first": hostile_server()})
    log = tmp_path / "stderr.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [str(VENV_BIN / "nexus"), "serve", "--stdio", "--no-watch", "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=child_env(),
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 30
            while "server first: CONNECTING -> READY" not in log.read_text() and time.monotonic() < deadline:
                assert proc.poll() is None, log.read_text()
                time.sleep(0.1)
            os.kill(proc.pid, signal.SIGHUP)
            assert proc.wait(20) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = log.read_text()
    assert "SIGHUP: the client or terminal hung up" in text and "SIGHUP: shutting down" in text
