"""`nexus stop/start/restart/reload` on a running gateway: what they say, and what they count.

An unknown server name gets the gateway's server list and the closest names. Only a crash (or
failed health checks) is a restart in `nexus servers` and in `nexus_upstream_restarts_total`: an
operator's stop, start or restart and a config reload once counted as restarts too.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest

from cli.serve_process import Served, serving
from lifecycle.faults import faulty
from mcp_nexus.cli.options import unknown_name_message


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(tmp_path_factory.mktemp("control"), {"alpha": faulty("alpha"), "beta": faulty("beta")}) as s:
        yield s


def restarts(served: Served, name: str) -> tuple[int, float]:
    """What `nexus servers --json` and the Prometheus counter say of `name`'s restarts."""
    listed = served.nexus("servers", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    rows = rows["servers"] if isinstance(rows, dict) else rows
    row = next(r for r in rows if r["name"] == name)
    metrics = served.api("GET", "/metrics").text
    found = re.search(rf'^nexus_upstream_restarts_total{{server="{name}"}} (\S+)$', metrics, re.MULTILINE)
    assert found, metrics[:3000]
    return row["restarts"], float(found.group(1))


def wait_ready(served: Served, name: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = served.api("GET", "/api/servers").json()["servers"]
        if any(r["name"] == name and r["state"] == "READY" for r in rows):
            return
        time.sleep(0.1)
    raise AssertionError(f"{name} not READY within {timeout} s")


def test_an_unknown_server_name_lists_the_servers_and_the_closest(served: Served) -> None:
    done = served.nexus("stop", "alpah")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "no server named 'alpah'; servers: alpha, beta; did you mean 'alpha'?" in done.stderr, done.stderr
    nothing_close = served.nexus("restart", "zzz")
    assert nothing_close.returncode == 1
    assert "no server named 'zzz'; servers: alpha, beta" in nothing_close.stderr
    assert "did you mean" not in nothing_close.stderr


def test_the_message_of_an_unknown_name() -> None:
    assert (
        unknown_name_message("no server named 'x'", "x", [], "servers")
        == "no server named 'x'; servers: none"
    )
    assert unknown_name_message("no server named 'bta'", "bta", ["alpha", "beta"], "servers").endswith(
        "did you mean 'beta'?"
    )


def test_operator_actions_and_reloads_are_not_restarts_but_a_crash_is(served: Served) -> None:
    assert restarts(served, "beta") == (0, 0.0)
    for action in ("stop", "start", "restart"):
        done = served.nexus(action, "beta")
        assert done.returncode == 0, done.stderr
    assert restarts(served, "beta") == (0, 0.0)

    # A reload that changes the server's command line restarts it: not a crash either.
    config = served.stderr.parent / "nexus.json"  # written by serving()
    document = json.loads(config.read_text())
    document["servers"]["beta"]["env"]["NEXUS_TEST_RELOADED"] = "1"
    config.write_text(json.dumps(document))
    reloaded = served.nexus("reload")
    assert reloaded.returncode == 0 and "beta" in reloaded.stdout, reloaded.stdout + reloaded.stderr
    wait_ready(served, "beta")
    assert restarts(served, "beta") == (0, 0.0)

    crashed = served.api("POST", "/api/tools/beta.crash/call", {"arguments": {}})
    assert crashed.status_code in (200, 502, 503), crashed.text
    deadline = time.monotonic() + 20
    while restarts(served, "beta") != (1, 1.0):
        assert time.monotonic() < deadline, f"the crash was not counted: {restarts(served, 'beta')}"
        time.sleep(0.2)
    assert restarts(served, "alpha") == (0, 0.0)
