"""The first tool search of a process: what it costs before the search is warm.

    .venv/bin/python bench/search_first.py [--runs 5]

Each run is a fresh Python process (a gateway's first `find_tools` is the same situation) that
loads the gateway's modules (not timed), imports the search, builds the index over the 51 real tools, then searches once in English
("show recent commits") and once in Chinese ("查看最近的提交记录"), and a second Chinese query
to show the warm cost. The index build loads the sentence vectors (hybrid ranking); the first
Chinese query loads the Chinese lexicon. Two cases:

  cold data folder   a new, empty NEXUS_DATA_DIR: the first process of an install (it writes
                     what it caches there)
  warm data folder   the same folder again: every later process

The figures are the median over `--runs` processes, in milliseconds; the host's 1-minute load
average is printed with them, since a loaded two-core host stretches every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from search.real_tools import index_entries  # the gateway's own modules, loaded before any search
entries = index_entries()
started = time.perf_counter()
from mcp_nexus.catalog.index_search import IndexSearch
imported = time.perf_counter()
search = IndexSearch(entries)
built = time.perf_counter()
english = [e.name for e in search.search("show recent commits", limit=3)]
first_en = time.perf_counter()
chinese = [e.name for e in search.search("查看最近的提交记录", limit=3)]
first_zh = time.perf_counter()
search.search("切换到另一个分支", limit=3)
second_zh = time.perf_counter()
print(json.dumps({
    "import": (imported - started) * 1000,
    "build": (built - imported) * 1000,
    "first English search": (first_en - built) * 1000,
    "first Chinese search": (first_zh - first_en) * 1000,
    "second Chinese search": (second_zh - first_zh) * 1000,
    "answers": [english, chinese],
}))
"""


def one_run(data_dir: Path) -> dict[str, float]:
    env = {**os.environ, "NEXUS_DATA_DIR": str(data_dir)}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(ROOT / "tests")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    figures: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {"cold data folder": [], "warm data folder": []}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            folder = Path(tmp) / f"data-{run}"
            results["cold data folder"].append(one_run(folder))
            results["warm data folder"].append(one_run(folder))
    load = os.getloadavg()[0]
    columns = ["import", "build", "first English search", "first Chinese search", "second Chinese search"]
    print(f"{args.runs} processes per case, median ms, 1-minute load average {load:.2f}")
    print("| case | " + " | ".join(columns) + " |")
    print("| --- |" + " ---: |" * len(columns))
    for case, runs in results.items():
        cells = [f"{statistics.median(r[c] for r in runs):.0f}" for c in columns]
        print(f"| {case} | " + " | ".join(cells) + " |")
    print("answers:", results["warm data folder"][-1]["answers"])


if __name__ == "__main__":
    main()
