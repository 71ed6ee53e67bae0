"""Offload benchmark: a 50 MB tool result through the offload step vs a plain json.loads of it.

    .venv/bin/python bench/offload.py [--mb 50]

Both sides get the same JSON text (an array of device records). Reported: wall time (untraced run) and
peak Python memory (a second run under tracemalloc, beyond the payload itself) of
  json.loads            the baseline any consumer of the data would pay
  measure               result_size(): the size check every result above a limit needs
  offload step          write tool_output_<uuid>.json atomically + scan the shape + build the alert
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types as types

from mcp_nexus.pipeline.call import Caller, ToolCall
from mcp_nexus.pipeline.offload_folder import OffloadFolder
from mcp_nexus.pipeline.result_size import measure
from mcp_nexus.pipeline.steps.offload import Offloader


def payload(megabytes: int) -> str:
    item = {
        "id": "light.room_00000",
        "state": "on",
        "attributes": {"brightness": 128, "color": [255, 200, 10]},
    }
    one = len(json.dumps(item)) + 2
    count = megabytes * 1024 * 1024 // one
    return json.dumps([{**item, "id": f"light.room_{i:05d}"} for i in range(count)])


def timed(label: str, run: Callable[[], Any]) -> tuple[float, int, Any]:
    """Time one run without tracing (tracemalloc slows allocation a lot), then trace a second for the peak."""
    gc.collect()
    started = time.perf_counter()
    value = run()
    seconds = time.perf_counter() - started
    del value
    gc.collect()
    tracemalloc.start()
    value = run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak, value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=50)
    args = parser.parse_args()
    text = payload(args.mb)
    size = len(text)
    result = types.CallToolResult(content=[types.TextContent(type="text", text=text)])
    with tempfile.TemporaryDirectory() as tmp:
        offloader = Offloader(OffloadFolder(Path(tmp), max_age=3600, max_bytes=10 * size))
        call = ToolCall("bench.big", {}, Caller("bench"))
        rows = [
            ("json.loads", *timed("json.loads", lambda: json.loads(text))[:2]),
            ("measure (size check)", *timed("measure", lambda: measure(result))[:2]),
            (
                "offload step",
                *timed("offload", lambda: asyncio.run(offloader.offload(call, result, size, threshold=5120)))[
                    :2
                ],
            ),
        ]
        written = sum(p.stat().st_size for p in Path(tmp).iterdir())
    base_time, base_peak = rows[0][1], rows[0][2]
    print(
        f"payload: {size / 1e6:.1f} MB JSON array (python {sys.version.split()[0]}); offloaded files written: {written / 1e6:.1f} MB (timed + traced run)"
    )
    for name, seconds, peak in rows:
        print(
            f"{name:<22} {seconds * 1000:8.1f} ms ({seconds / base_time:5.2f}x)   "
            f"peak +{peak / 1e6:8.1f} MB ({peak / base_peak:5.2f}x)"
        )


if __name__ == "__main__":
    main()
