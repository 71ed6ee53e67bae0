"""Tool search latency at 1,000 and 10,000 tools: index build and IndexSearch.search p50 / p95.

    .venv/bin/python bench/search_latency.py [--sizes 1000 10000] [--rounds 3]

The catalogs are made from the 51 real tool definitions (tests/search/fixtures/real_tools.json)
varied: each copy gets its own namespace, a name with a suffix, and its description with words
from another tool's description and a domain word added, so the BM25 vocabulary and the vectors
are not 51 repeated points. The queries are the 166 labelled requests (English and Chinese);
each is searched `--rounds` times (limit 10) after one warm-up pass, which also loads the model
and the Chinese lexicon (their one-off load time is shown apart).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from mcp_nexus.catalog.index_entry import IndexEntry  # noqa: E402
from mcp_nexus.catalog.index_search import IndexSearch  # noqa: E402
from mcp_nexus.catalog.search_embedding import shared_embedding  # noqa: E402
from mcp_nexus.catalog.search_lexicon_cache import shared_glosser  # noqa: E402
from mcp_nexus.catalog.tags import Tagger  # noqa: E402
from search.real_tools import index_entries, load_requests  # noqa: E402

DOMAINS = ["home", "office", "factory", "garden", "kitchen", "warehouse", "car", "cloud", "shop", "lab"]


def synthetic_catalog(size: int, seed: int = 7) -> list[IndexEntry]:
    real = index_entries()
    rng = random.Random(seed)
    words = [w for e in real for w in e.description.split() if w.isalpha()]
    out: list[IndexEntry] = []
    for i in range(size):
        base = real[i % len(real)]
        copy = i // len(real)
        domain = DOMAINS[copy % len(DOMAINS)]
        extra = " ".join(rng.sample(words, 4))
        out.append(
            base.model_copy(
                update={
                    "server_id": f"p{copy}",
                    "tool_name": f"{base.tool_name}_{copy}",
                    "name": f"p{copy}.{base.tool_name}_{copy}",
                    "description": f"{base.description} ({domain}: {extra})",
                }
            )
        )
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    started = time.perf_counter()
    shared_embedding()
    model = time.perf_counter() - started
    started = time.perf_counter()
    shared_glosser()
    lexicon = time.perf_counter() - started
    load = os.getloadavg()[0]
    print(f"one-off loads: sentence vectors {model * 1000:.0f} ms, Chinese lexicon {lexicon * 1000:.0f} ms")
    print(f"1-minute load average at the start: {load:.2f}\n")
    tagger = Tagger()
    queries = [(r["request"], tagger.tags_for("", r["request"])) for r in load_requests()]
    print("| tools | ranking | index build | search p50 | search p95 | search max |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    for size in args.sizes:
        catalog = synthetic_catalog(size)
        for ranking in ("bm25", "hybrid"):
            started = time.perf_counter()
            search = IndexSearch(catalog, ranking)  # type: ignore[arg-type]
            build = time.perf_counter() - started
            for query, tags in queries:  # warm-up
                search.search(query, limit=10, query_tags=tags)
            times: list[float] = []
            for _ in range(args.rounds):
                for query, tags in queries:
                    started = time.perf_counter()
                    search.search(query, limit=10, query_tags=tags)
                    times.append(time.perf_counter() - started)
            print(
                f"| {size:,} | {ranking} | {build * 1000:.0f} ms | {statistics.median(times) * 1000:.2f} ms "
                f"| {percentile(times, 0.95) * 1000:.2f} ms | {max(times) * 1000:.2f} ms |"
            )


if __name__ == "__main__":
    main()
