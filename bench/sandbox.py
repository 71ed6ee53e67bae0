"""Cold-start and throughput of python_sandbox on this machine.

Run: .venv/bin/python bench/sandbox.py [runs]
Prints the probe result, the median/p95 wall time of a trivial run, of filtering a 1 MB
JSON file, and the time for 8 runs through the default concurrency limit of 2.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp_nexus.sandbox import Sandbox, SandboxRequest


def summarize(label: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    print(f"{label:<34} median {statistics.median(ordered) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms")


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        data_dir = Path(folder)
        devices = [{"id": f"{('light', 'switch')[i % 2]}.room_{i}", "pad": "x" * 80} for i in range(9000)]
        (data_dir / "big.json").write_text(json.dumps(devices))
        box = Sandbox(data_dir)
        started = time.perf_counter()
        status = await box.status()
        print(f"backend: {status.backend}  probe: {(time.perf_counter() - started) * 1000:.0f} ms")
        for name, probe in status.probes.items():
            print(f"  {name}: {probe.reason}")
        if status.backend is None:
            raise SystemExit(1)
        trivial: list[float] = []
        for _ in range(runs):
            result = await box.run(SandboxRequest("print(1)"))
            trivial.append(result.duration_s)
        summarize("trivial run (print(1))", trivial)
        filtering: list[float] = []
        code = "print(len([x for x in data if 'light' in x['id']]))"
        for _ in range(runs):
            result = await box.run(SandboxRequest(code, ["big.json"]))
            assert result.stdout.strip() == "4500", result
            filtering.append(result.duration_s)
        summarize("filter a 1 MB JSON file", filtering)
        started = time.perf_counter()
        await asyncio.gather(*(box.run(SandboxRequest("print(1)")) for _ in range(8)))
        print(f"{'8 runs, concurrency limit 2':<34} total  {(time.perf_counter() - started) * 1000:7.1f} ms")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
