"""Run the official MCP conformance suite against a server URL and read its verdict.

`run_conformance` runs `conformance server --url URL --suite all --spec-version V`
(npm `@modelcontextprotocol/conformance`, installed under `tools/node` with Node 22,
which the suite needs) and parses the per-scenario `checks.json` files it writes.
Counting follows the suite's own summary: a check passes when its status is SUCCESS
and fails when it is FAILURE; WARNING, INFO and SKIPPED are reported but not counted.

Command line: `python tests/conformance/runner.py --url URL --spec-version V`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TOOLS_DIR = REPO_ROOT / "tools" / "node"
SPEC_VERSIONS = ("2025-11-25", "2026-07-28")
DEFAULT_TIMEOUT_S = 240.0

# Result folders are named `server-<scenario>-<ISO timestamp with dashes>Z`.
_RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")


class ConformanceError(RuntimeError):
    """The suite could not be run or produced no readable results."""


@dataclass(frozen=True)
class CheckResult:
    """One check the suite reported, keyed like its baseline files: `scenario:check-id`."""

    scenario: str
    check_id: str
    status: str
    message: str

    @property
    def key(self) -> str:
        return f"{self.scenario}:{self.check_id}"


@dataclass
class ConformanceReport:
    """Counts and failing checks of one suite run at one spec version."""

    url: str
    spec_version: str
    checks: list[CheckResult]
    duration_s: float
    exit_code: int
    output: str
    expected_failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(check.status == "SUCCESS" for check in self.checks)

    @property
    def failed(self) -> int:
        return sum(check.status == "FAILURE" for check in self.checks)

    @property
    def total(self) -> int:
        """Passed plus failed: the suite's own "Total" (warnings and skips excluded)."""
        return self.passed + self.failed

    @property
    def failed_checks(self) -> list[str]:
        return sorted({check.key for check in self.checks if check.status == "FAILURE"})

    @property
    def warning_checks(self) -> list[str]:
        return sorted({check.key for check in self.checks if check.status == "WARNING"})

    @property
    def scenarios(self) -> list[str]:
        return sorted({check.scenario for check in self.checks})

    def _is_expected(self, key: str) -> bool:
        scenario = key.split(":", 1)[0]
        return key in self.expected_failures or scenario in self.expected_failures

    @property
    def unexpected_failures(self) -> list[str]:
        """Failing (or warning) checks that the expected-failures baseline does not excuse."""
        return [
            key for key in sorted({*self.failed_checks, *self.warning_checks}) if not self._is_expected(key)
        ]

    @property
    def stale_expectations(self) -> list[str]:
        """Baseline entries that no longer fail: the baseline should shrink."""
        failing = {*self.failed_checks, *self.warning_checks}
        failing_scenarios = {key.split(":", 1)[0] for key in failing}
        return [
            entry
            for entry in self.expected_failures
            if entry not in failing and entry not in failing_scenarios
        ]

    def summary(self) -> str:
        lines = [
            f"conformance {self.spec_version} against {self.url}: {self.passed}/{self.total} passed, "
            f"{self.failed} failed, {len(self.warning_checks)} warnings, "
            f"{len(self.scenarios)} scenarios, {self.duration_s:.1f} s"
        ]
        lines += [f"  FAILED  {key}" for key in self.failed_checks]
        lines += [f"  WARNING {key}" for key in self.warning_checks]
        lines += [f"  UNEXPECTED {key}" for key in self.unexpected_failures if self.expected_failures]
        lines += [f"  STALE EXPECTATION {key}" for key in self.stale_expectations]
        return "\n".join(lines)


def read_expected_failures(path: Path) -> list[str]:
    """Read a baseline in the suite's own format: `server: [scenario | scenario:check-id, ...]`.

    Each entry should carry a `# reason` comment in the file; YAML drops comments, so
    only the entries come back.
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConformanceError(f"cannot read expected-failures file {path}: {exc}") from exc
    if data is None:
        return []
    entries = data.get("server") if isinstance(data, dict) else None
    if entries is None:
        return []
    if not isinstance(entries, list) or not all(isinstance(entry, str) and entry for entry in entries):
        raise ConformanceError(
            f"{path}: 'server' must be a list of 'scenario' or 'scenario:check-id' strings"
        )
    return list(entries)


def read_checks(results_dir: Path) -> list[CheckResult]:
    """Collect every check from `results_dir/server-<scenario>-<timestamp>/checks.json`."""
    checks: list[CheckResult] = []
    for checks_file in sorted(results_dir.glob("*/checks.json")):
        match = _RESULT_DIR.match(checks_file.parent.name)
        scenario = match.group("scenario") if match else checks_file.parent.name
        try:
            entries = json.loads(checks_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConformanceError(f"unreadable suite result {checks_file}: {exc}") from exc
        if not isinstance(entries, list):
            raise ConformanceError(f"{checks_file}: expected a JSON array of checks")
        for entry in entries:
            checks.append(
                CheckResult(
                    scenario=scenario,
                    check_id=str(entry.get("id", "?")),
                    status=str(entry.get("status", "?")),
                    message=str(entry.get("errorMessage") or ""),
                )
            )
    return checks


def _suite_command(tools_dir: Path) -> tuple[list[str], dict[str, str]]:
    conformance = tools_dir / "node_modules" / ".bin" / "conformance"
    node_bin = tools_dir / "node_modules" / "node" / "bin"
    if not conformance.exists():
        raise ConformanceError(
            f"conformance suite not installed: {conformance} is missing (run `npm install` in {tools_dir})"
        )
    if not (node_bin / "node").exists():
        raise ConformanceError(
            f"Node 22 not installed: {node_bin / 'node'} is missing (npm package `node@22`)"
        )
    env = dict(os.environ)
    # The suite crashes on Node 20 (globSync); the npm `node@22` package must win on PATH.
    env["PATH"] = f"{node_bin}{os.pathsep}{env.get('PATH', '')}"
    env["NO_COLOR"] = "1"
    return [str(conformance)], env


def run_conformance(
    url: str,
    spec_version: str,
    workdir: Path,
    expected_failures: Path | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    tools_dir: Path = DEFAULT_TOOLS_DIR,
) -> ConformanceReport:
    """Run the whole suite (`--suite all`) at `spec_version` against `url`.

    Results are written under `workdir/results`; the process runs with `cwd=workdir`
    and is killed (with its children) if it outlives `timeout_s`.
    """
    if spec_version not in SPEC_VERSIONS:
        raise ConformanceError(f"unsupported spec version {spec_version!r}; expected one of {SPEC_VERSIONS}")
    if not url.startswith(("http://", "https://")):
        raise ConformanceError(f"server URL must be http(s)://..., got {url!r}")
    command, env = _suite_command(tools_dir)
    workdir.mkdir(parents=True, exist_ok=True)
    results_dir = workdir / "results"
    command += [
        "server",
        "--url",
        url,
        "--suite",
        "all",
        "--spec-version",
        spec_version,
        "-o",
        str(results_dir),
    ]
    expected: list[str] = []
    if expected_failures is not None:
        expected = read_expected_failures(expected_failures)
        command += ["--expected-failures", str(expected_failures)]

    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, so a timeout kills the whole tree
    )
    try:
        output, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        raise ConformanceError(
            f"conformance suite exceeded {timeout_s:.0f} s against {url}; last output:\n{output[-2000:]}"
        ) from None
    duration = time.monotonic() - started

    checks = read_checks(results_dir)
    if not checks:
        raise ConformanceError(
            f"conformance suite (exit {process.returncode}) wrote no checks under {results_dir}; "
            f"output:\n{output[-2000:]}"
        )
    return ConformanceReport(
        url=url,
        spec_version=spec_version,
        checks=checks,
        duration_s=duration,
        exit_code=process.returncode,
        output=output,
        expected_failures=expected,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the MCP conformance suite against a server URL.")
    parser.add_argument("--url", required=True, help="e.g. http://127.0.0.1:8000/mcp")
    parser.add_argument("--spec-version", required=True, choices=SPEC_VERSIONS)
    parser.add_argument(
        "--workdir", type=Path, default=None, help="where results/ goes (default: a temp dir)"
    )
    parser.add_argument("--expected-failures", type=Path, default=None, help="baseline YAML (suite format)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds for the whole run")
    args = parser.parse_args(argv)
    if args.workdir is None:
        import tempfile

        args.workdir = Path(tempfile.mkdtemp(prefix="nexus-conformance-"))
    try:
        report = run_conformance(
            args.url, args.spec_version, args.workdir, args.expected_failures, timeout_s=args.timeout
        )
    except ConformanceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report.summary())
    print(f"results: {args.workdir / 'results'}")
    return 0 if not report.unexpected_failures and not report.stale_expectations else 1


if __name__ == "__main__":
    raise SystemExit(main())
