"""Acceptance: Nexus as the client under test of the official suite's client mode (issue 25).

For each spec version, the suite's `auth` scenarios run as one parallel suite, and the
scenarios `initialize`, `tools_call`, `sse-retry` and `request-metadata` (those the version
has) one by one; then the scenarios on no current version (OTHER_LEGS): the 2025-03-26
backwards-compatibility ones and the extensions. Every scenario gets
`tests/oauth/conformance_driver.py`, which puts a `nexus serve` between the harness's server
and the calls. A check may fail only where the MCP SDK's own client fails too: DPoP and
workload identity, two of the extensions (EXPECTED_FAILURES).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conformance.runner import _suite_command
from oauth.conformance_driver import LEAK_MARK
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
# The scenarios outside both versions, one harness run each (its scenarios in parallel): the
# 2025-03-26 ones (`backcompat`) at that wire, and the extensions (`extensions`: client
# credentials, enterprise-managed authorization, DPoP, workload identity), which no
# --spec-version selects, at the harness's default wire, as the SDK's CI runs them.
OTHER_LEGS: dict[str, tuple[str, ...]] = {
    "2025-03-26": ("--suite", "backcompat", "--spec-version", "2025-03-26"),
    "extension": ("--suite", "extensions"),
}
OTHER_SCENARIOS = {
    "2025-03-26": {"auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback"},
    "extension": {
        "auth/client-credentials-jwt",
        "auth/client-credentials-basic",
        "auth/enterprise-managed-authorization",
        "auth/dpop",
        "auth/dpop-nonce",
        "auth/wif-jwt-bearer",
    },
}
PARALLEL_RUNS = 1  # harness runs one at a time: an auth suite already starts 14 gateways at once
# Checks the SDK's client fails too, exactly its list (.github/actions/conformance/expected-failures.yml
# in the SDK's repository): DPoP proofs (SEP-1932) and the workload-identity jwt-bearer grant are
# in neither. A listed check that passes fails the test too: the list must shrink with them.
EXPECTED_FAILURES: set[str] = {
    "auth/dpop:sep-1932-client-token-request-proof",
    "auth/dpop:sep-1932-client-dpop-auth-scheme",
    "auth/dpop:sep-1932-client-fresh-proof",
    "auth/dpop-nonce:sep-1932-client-token-request-proof",
    "auth/dpop-nonce:sep-1932-client-dpop-auth-scheme",
    "auth/dpop-nonce:sep-1932-client-fresh-proof",
    "auth/dpop-nonce:sep-1932-client-as-nonce",
    "auth/dpop-nonce:sep-1932-client-rs-nonce",
    "auth/wif-jwt-bearer:wif-grant-type",
}
SUITE_TIMEOUT_S = 400


def _run(out: Path, *selection: str) -> subprocess.CompletedProcess[str]:
    command, env = _suite_command(TOOLS)
    return subprocess.run(
        [
            *command,
            "client",
            "--command",
            f"{sys.executable} {DRIVER}",
            *selection,
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
        stderr = checks.with_name("stderr.txt")
        if stderr.exists() and LEAK_MARK in stderr.read_text(errors="replace"):
            failed.append(f"{name}:a secret of the scenario in the gateway's log")  # never expected
        found[name] = (passed, failed)
    return found


def _judge(leg: str, scenarios: dict[str, tuple[int, list[str]]]) -> str:
    """The leg's report; fails on a check failing outside EXPECTED_FAILURES or an expected one passing."""
    passed = sum(p for p, _ in scenarios.values())
    failed = [f for _, fs in scenarios.values() for f in fs]
    report = f"{leg}: {len(scenarios)} scenarios, {passed} checks passed, {len(failed)} failed"
    unexpected = sorted(set(failed) - EXPECTED_FAILURES)
    assert not unexpected, f"{leg}: unexpected failures {unexpected}\n{report}"
    stale = sorted(f for f in EXPECTED_FAILURES if f.split(":")[0] in scenarios and f not in failed)
    assert not stale, f"{leg}: expected failures that passed (drop them from EXPECTED_FAILURES): {stale}"
    return report


def check_version(tmp_path: Path, version: str) -> None:
    """Run one spec version's jobs (the auth suite, then the other scenarios one by one) and check them."""
    jobs = [("auth", ("--suite", "auth"))]
    jobs += [(s.replace("/", "_"), ("--scenario", s)) for s in (*CORE[version], *AUTH_EXTRA[version])]
    with ThreadPoolExecutor(PARALLEL_RUNS) as pool:
        running = [
            pool.submit(_run, tmp_path / version / name, *args, "--spec-version", version)
            for name, args in jobs
        ]
        for done in running:
            done.result()
    scenarios = _read(tmp_path / version)
    report = _judge(version, scenarios)
    assert {"auth/metadata-default", "auth/scope-step-up", "auth/pre-registration"} <= set(scenarios), (
        scenarios
    )
    assert {*CORE[version], *AUTH_EXTRA[version]} <= set(scenarios), sorted(scenarios)
    print(report)


def check_other_leg(tmp_path: Path, leg: str) -> None:
    """Run one of OTHER_LEGS (one harness run) and check it."""
    _run(tmp_path / leg / "suite", *OTHER_LEGS[leg])
    scenarios = _read(tmp_path / leg)
    report = _judge(leg, scenarios)
    assert set(scenarios) == OTHER_SCENARIOS[leg], sorted(scenarios)
    print(report)
