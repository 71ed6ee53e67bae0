"""Acceptance: Nexus as the client under test of the official suite's client mode (issue 25).

For each spec version, the suite's `auth` scenarios run as one parallel suite, and the
scenarios `initialize`, `tools_call`, `sse-retry` and `request-metadata` (those the version
has) one by one; every scenario gets `tests/oauth/conformance_driver.py`, which puts a
`nexus serve` between the harness's server and the calls. A check
may fail only where the MCP SDK's own client fails too (none of these scenarios: its expected
failures are DPoP and workload identity, which are extensions outside the `auth` suite).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conformance.runner import _suite_command
from support.processes import ROOT

DRIVER = Path(__file__).with_name("conformance_driver.py")
TOOLS = ROOT / "tools" / "node"
CORE = {
    "2025-11-25": ("initialize", "tools_call", "sse-retry"),
    "2026-07-28": ("tools_call", "request-metadata"),
}
# auth/* scenarios of 2026-07-28 outside the `auth` suite (`conformance list --client`).
AUTH_EXTRA = {
    "2025-11-25": (),
    "2026-07-28": (
        "auth/resource-mismatch",
        "auth/offline-access-scope",
        "auth/offline-access-not-supported",
        "auth/authorization-server-migration",
        "auth/iss-supported",
        "auth/iss-not-advertised",
        "auth/iss-supported-missing",
        "auth/iss-wrong-issuer",
        "auth/iss-unexpected",
        "auth/iss-normalized",
        "auth/metadata-issuer-mismatch",
    ),
}
PARALLEL_RUNS = 1  # harness runs one at a time: an auth suite already starts 14 gateways at once
# Checks the SDK's client fails too (.github/actions/conformance/expected-failures*.yml there); none here.
EXPECTED_FAILURES: set[str] = set()
SUITE_TIMEOUT_S = 400


def _run(spec_version: str, out: Path, *selection: str) -> subprocess.CompletedProcess[str]:
    command, env = _suite_command(TOOLS)
    return subprocess.run(
        [
            *command,
            "client",
            "--command",
            f"{sys.executable} {DRIVER}",
            *selection,
            "--spec-version",
            spec_version,
            "--timeout",
            "150000",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=SUITE_TIMEOUT_S,
        cwd=TOOLS,
    )


def _read(out: Path) -> dict[str, tuple[int, list[str]]]:
    """Scenario -> (checks passed, checks failed) of the runs under `out`."""
    found: dict[str, tuple[int, list[str]]] = {}
    for checks in sorted(out.rglob("checks.json")):
        # <out>/<run>/<scenario, auth/ for the auth ones>-<timestamp>/checks.json
        folder = checks.parent.relative_to(out).as_posix().split("/", 1)[1]
        folder = folder.removeprefix("auth/") if folder.startswith("auth/auth/") else folder
        name = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", folder)
        rows = json.loads(checks.read_text())
        passed = sum(row["status"] == "SUCCESS" for row in rows)
        failed = [f"{name}:{row['id']}" for row in rows if row["status"] == "FAILURE"]
        found[name] = (passed, failed)
    return found


def check_version(tmp_path: Path, version: str) -> None:
    """Run one spec version's jobs (the auth suite, then the other scenarios one by one) and check them."""
    jobs = [(version, "auth", ("--suite", "auth"))]
    jobs += [
        (version, s.replace("/", "_"), ("--scenario", s)) for s in (*CORE[version], *AUTH_EXTRA[version])
    ]
    with ThreadPoolExecutor(PARALLEL_RUNS) as pool:
        for done in [pool.submit(_run, v, tmp_path / v / name, *args) for v, name, args in jobs]:
            done.result()
    scenarios = _read(tmp_path / version)
    passed = sum(p for p, _ in scenarios.values())
    failed = [f for _, fs in scenarios.values() for f in fs]
    report = f"{version}: {len(scenarios)} scenarios, {passed} checks passed, {len(failed)} failed"
    unexpected = sorted(set(failed) - EXPECTED_FAILURES)
    assert not unexpected, f"{version}: unexpected failures {unexpected}\n{report}"
    assert {"auth/metadata-default", "auth/scope-step-up", "auth/pre-registration"} <= set(scenarios), (
        scenarios
    )
    assert {*CORE[version], *AUTH_EXTRA[version]} <= set(scenarios), sorted(scenarios)
    print(report)
