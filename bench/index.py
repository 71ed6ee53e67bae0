"""Tool index benchmark: full sync time and search latency at 1,000 and 10,000 tools.

    .venv/bin/python bench/index.py [--sizes 1000 10000] [--queries 200]

Each size runs a real gateway (in process) over embedded MCP servers of made-up tools
(bench/synthetic_tools.py, 100 tools per server), with the index saved to sqlite in a
temporary data folder:
  sync           a full sync: tools/list to every server, entries (tags, traits), sqlite save
  save / load    the sqlite write and read of the whole snapshot alone
  search build   BM25 index built on the first query after a change
  search         ToolIndex.search(query, limit=10): p50 / p95 over English and Chinese queries
  find_tools     the same through the pipeline (Gateway.call_tool("find_tools", ...)): p50
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for extra in (BENCH, ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from mcp_nexus.catalog.index import ToolIndex  # noqa: E402
from mcp_nexus.config.load import config_from_document  # noqa: E402
from mcp_nexus.runtime import Runtime, RuntimeOptions  # noqa: E402
from mcp_nexus.stores.index_location import open_index_store  # noqa: E402

TOOLS_PER_SERVER = 100
QUERIES = [
    "turn on the light in the kitchen",
    "delete an order from the shop",
    "search the warehouse sensor",
    "send a message to the office",
    "move the robot to the garden",
    "open the door of the car",
    "list calendar of the lab",
    "update the thermostat",
    "打开客厅的灯",
    "导航到厨房",
    "紧急停止机器人",
    "查询订单",
    "拍照识别",
    "repository branch",
    "alarm",
]


def config(size: int, index_file: Path) -> dict[str, Any]:
    servers = {
        f"s{i}": {
            "transport": "embedded",
            "module": "synthetic_tools:create_server",
            "options": {"count": TOOLS_PER_SERVER, "seed": i},
        }
        for i in range(size // TOOLS_PER_SERVER)
    }
    return {
        "gateway": {
            "include_builtins": False,
            "rate_limit": None,
            "index": {"path": str(index_file)},
            "tool_search": {"mode": "on"},
        },
        "servers": servers,
    }


def ms(seconds: float) -> str:
    value = seconds * 1000
    return f"{value:.2f} ms" if value < 10 else f"{value:.0f} ms"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(size: int, queries: int, folder: Path) -> dict[str, float]:
    index_file = folder / f"index-{size}.sqlite3"
    loaded, _ = config_from_document(config(size, index_file))
    options = RuntimeOptions(http=False, stdio=False, bridge=False, watch=False, wait_ready=True)
    async with Runtime(loaded, options) as runtime:
        gateway = runtime.gateway
        assert await gateway.index_sync.wait_settled(120)
        assert len(gateway.index.get_all_tools()) == size, gateway.index_sync.describe()
        syncs = []
        for _ in range(3):
            started = time.perf_counter()
            status = await gateway.index_sync.sync("bench")
            syncs.append(time.perf_counter() - started)
            assert status["tools"] == size
        snapshot = gateway.index.snapshot
        store = open_index_store(index_file)
        saves, loads = [], []
        for _ in range(3):
            started = time.perf_counter()
            await store.save(snapshot)
            saves.append(time.perf_counter() - started)
            started = time.perf_counter()
            again = await store.load()
            loads.append(time.perf_counter() - started)
            assert again is not None and again.tool_count == size

        fresh = ToolIndex(snapshot)
        started = time.perf_counter()
        fresh.search("warm up")
        build = time.perf_counter() - started
        rng = random.Random(7)
        picked = [rng.choice(QUERIES) for _ in range(queries)]
        latencies = []
        for query in picked:
            started = time.perf_counter()
            found = fresh.search(query, limit=10)
            latencies.append(time.perf_counter() - started)
            assert found, query
        through = []
        for query in picked[: max(20, queries // 4)]:
            started = time.perf_counter()
            result = await gateway.call_tool_result("find_tools", {"query": query})
            through.append(time.perf_counter() - started)
            assert not result.is_error
    return {
        "sync": statistics.median(syncs),
        "save": statistics.median(saves),
        "load": statistics.median(loads),
        "build": build,
        "p50": percentile(latencies, 0.5),
        "p95": percentile(latencies, 0.95),
        "find_p50": percentile(through, 0.5),
        "db_bytes": float(index_file.stat().st_size),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nexus-index-bench-") as tmp:
        os.environ["NEXUS_DATA_DIR"] = tmp  # nothing lands in the user's data folder
        print(
            "| tools | full sync | sqlite save | sqlite load | BM25 build | search p50 | search p95 | find_tools p50 | file |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for size in args.sizes:
            figures = await measure(size, args.queries, Path(tmp))
            print(
                f"| {size:,} | {ms(figures['sync'])} | {ms(figures['save'])} | {ms(figures['load'])} | "
                f"{ms(figures['build'])} | {ms(figures['p50'])} | {ms(figures['p95'])} | "
                f"{ms(figures['find_p50'])} | {figures['db_bytes'] / 1e6:.1f} MB |",
                flush=True,
            )


if __name__ == "__main__":
    asyncio.run(main())
