"""Cold-start and throughput of python_sandbox on this machine.

Run: .venv/bin/python bench/sandbox.py [runs] [calls]
Prints the probe result, the median/p95 wall time of a trivial run (the cold start: bwrap,
the seccomp filter, the system Python) with and without the syscall filter, of filtering a
1 MB JSON file, and the wall time of
`calls` (default 50) one-second calls started at once, at the default concurrency and with
every call allowed to run at once.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp_nexus.sandbox import BwrapBackend, Sandbox, SandboxRequest


def summarize(label: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    print(f"{label:<40} median {statistics.median(ordered) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms")


async def one_second_calls(data_dir: Path, calls: int, concurrency: int | None) -> None:
    """Start `calls` runs of `time.sleep(1)` at once and time them all."""
    box = Sandbox(data_dir) if concurrency is None else Sandbox(data_dir, max_concurrent=concurrency)
    await box.status()
    started = time.perf_counter()
    results = await asyncio.gather(
        *(box.run(SandboxRequest("import time; time.sleep(1); print(1)")) for _ in range(calls))
    )
    wall = time.perf_counter() - started
    assert all(r.stdout.strip() == "1" for r in results), [r for r in results if r.stdout.strip() != "1"][:1]
    label = f"{calls} one-second calls, " + (
        "default concurrency" if concurrency is None else f"concurrency {concurrency}"
    )
    waits = [getattr(r, "queued_s", 0.0) for r in results]
    print(f"{label:<40} total  {wall:7.2f} s    longest queue wait {max(waits):5.2f} s")


async def main(runs: int = 20, calls: int = 50) -> None:
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
        # The same without the seccomp filter (never done by the gateway), run alternately with
        # the filtered one so that load drift on the machine hits both alike: the filter's cost.
        unfiltered_box = Sandbox(data_dir, backends=[BwrapBackend(syscall_filter=False)])
        await unfiltered_box.status()
        trivial: list[float] = []
        unfiltered: list[float] = []
        for _ in range(runs):
            trivial.append((await box.run(SandboxRequest("print(1)"))).duration_s)
            unfiltered.append((await unfiltered_box.run(SandboxRequest("print(1)"))).duration_s)
        summarize("trivial run (print(1)): cold start", trivial)
        summarize("  the same without the syscall filter", unfiltered)
        cost = statistics.median(a - b for a, b in zip(trivial, unfiltered, strict=True))
        print(f"{'  the filter costs (paired median)':<40} {cost * 1000:+.1f} ms")
        filtering: list[float] = []
        code = "print(len([x for x in data if 'light' in x['id']]))"
        for _ in range(runs):
            result = await box.run(SandboxRequest(code, ["big.json"]))
            assert result.stdout.strip() == "4500", result
            filtering.append(result.duration_s)
        summarize("filter a 1 MB JSON file", filtering)
        await one_second_calls(data_dir, calls, None)
        await one_second_calls(data_dir, calls, calls)


if __name__ == "__main__":
    arguments = [int(value) for value in sys.argv[1:3]]
    asyncio.run(main(*arguments))
