"""Machine instructions the gateway process executes per tools/call, counted by callgrind: the trimmed
config against the default one (built-in servers on, never called).

    .venv/bin/python bench/instructions_per_call.py [--calls 1000] [--era legacy] [--no-health]

`nexus serve --stdio` runs under `valgrind --tool=callgrind --instr-atstart=no` behind the lean
client of bench/_common.py (`--era`: its client era; the upstream is `protocol: auto`, the
default); instrumentation goes on (`callgrind_control -i on`) after 200 warm-up calls and off
after `--calls` more, and the total is divided by the calls. Unlike time, the count does not
depend on the machine's load, so a per-call cost of a few per cent shows in one run.

Anything that runs per interval rather than per call (health checks, timers) is counted too,
and valgrind slows the process ~50x, so the window is long: `--no-health` turns every server's
health check off (`health: {interval: 0}`, the built-ins re-declared with it under their own
keys) to leave only what a call itself costs. Needs valgrind; takes a few minutes per config.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common as bench

BUILTINS = bench.ROOT / "src" / "mcp_nexus" / "defaults" / "builtin.json"


def config(tmp: Path, builtins: bool, health: bool) -> Path:
    path = bench.write_gateway_config(tmp / f"builtins-{builtins}.json", protocol="auto", builtins=builtins)
    if not health:
        doc = json.loads(path.read_text())
        if builtins:  # a server of the same key replaces the built-in one: the same entry, no health check
            doc["servers"] |= json.loads(BUILTINS.read_text())["servers"]
        for server in doc["servers"].values():
            server["health"] = {"interval": 0}
        path.write_text(json.dumps(doc))
    return path


def instructions(config_path: Path, out: Path, calls: int, era: str) -> tuple[float, float]:
    """Instructions per call and the window's length in seconds."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}",
        sys.executable,
        "-m",
        "mcp_nexus",
        *bench.nexus_stdio_command(config_path)[1:],
    ]
    client = bench.LeanStdioClient(command, env=bench.child_env(), era=era)
    try:
        for n in range(200):
            client.call(bench.call_message(n + 2, "x"))
        subprocess.run(
            ["callgrind_control", "-i", "on", str(client.proc.pid)], check=True, capture_output=True
        )
        started = time.perf_counter()
        for n in range(calls):
            client.call(bench.call_message(n + 1000, "x"))
        window = time.perf_counter() - started
        subprocess.run(
            ["callgrind_control", "-i", "off", str(client.proc.pid)], check=True, capture_output=True
        )
    finally:
        client.close()
    total = max(
        int(line.split()[1])
        for dump in out.parent.glob(out.name + "*")
        for line in dump.read_text(errors="replace").splitlines()
        if line.startswith(("totals:", "summary:"))
    )
    return total / calls, window


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--era", choices=["legacy", "modern"], default="legacy", help="the client's era")
    parser.add_argument("--no-health", dest="health", action="store_false", help="every health check off")
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("needs valgrind (callgrind) on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[bench.DATA_DIR_ENV] = str(Path(tmp) / "data")  # a new user's data folder
        found = {}
        for builtins in (False, True):
            path = config(Path(tmp), builtins, args.health)
            found[builtins] = instructions(
                path, Path(tmp) / f"callgrind-{builtins}.out", args.calls, args.era
            )
    health = "on" if args.health else "off"
    print(f"{args.calls} calls, {args.era}-era client, upstream protocol auto, health checks {health}")
    for builtins, (per_call, window) in found.items():
        name = "default config (built-ins on)" if builtins else "trimmed (include_builtins: false)"
        print(f"  {name:<36} {per_call:>10,.0f} instructions per call  (window {window:.0f} s)")
    print(f"  default / trimmed: {found[True][0] / found[False][0]:.4f}")


if __name__ == "__main__":
    main()
