"""Cortex at team scale: 100,000 entities and 300,000 relations in a temporary folder.

Measures, in a fresh child process so the figures are not inflated by the generator:
the cold load of the folder, the first search (which builds the word index), the rest of
the view (relations and their index by entity, built on first need), fuzzy search latency
(median and p95 over several queries, typos included), the entropy report, one durable
append, and peak memory (max RSS). With `--runs N` the child runs N times and each figure
is the median of the runs (the VM's timings vary by tens of percent from run to run).

    .venv/bin/python bench/cortex.py [--entities 100000] [--relations 300000] [--runs 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp_nexus.builtin.cortex.entropy import build_entropy_report
from mcp_nexus.builtin.cortex.jsonl import encode_record
from mcp_nexus.builtin.cortex.records import utc_now
from mcp_nexus.builtin.cortex.store import DEFAULT_CATEGORIES, KnowledgeStore

SEED = 20260211
QUERIES = [
    "kubernetes",
    "kubernetse",  # transposed letters
    "postgres replication",
    "graph databse",  # missing letter
    "rust async runtime",
    "observability tracing",
    "machine lerning pipeline",
    "frontend design system",
    "zzzz nothing like this",
    "auth",
]
SEARCH_ROUNDS = 5

# Technical words (what the queries look for) plus a long tail of made-up words drawn with
# Zipf weights, so the vocabulary and the word frequencies look like real prose.
TECH_WORDS = (  # noqa: SIM905
    "alpha beta gamma delta graph vector kernel cache queue stream batch async runtime "
    "python rust go java kotlin swift typescript react vue svelte django flask fastapi "
    "postgres mysql sqlite redis kafka rabbit nats grpc rest graphql oauth auth token "
    "kubernetes docker helm terraform ansible nginx envoy istio linkerd prometheus grafana "
    "loki tempo jaeger tracing metrics logging observability pipeline scheduler worker "
    "actor channel mutex lock shard replica replication consensus raft paxos gossip "
    "index search ranking embedding model training inference machine learning "
    "frontend backend design system component widget layout theme router gateway "
    "proxy balancer firewall network packet socket protocol codec schema migration "
    "storage bucket blob object file folder journal ledger audit policy role user team"
).split()
SYLLABLES = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
TAIL_WORDS = 30_000
TAGS = [f"tag-{word}" for word in TECH_WORDS[:60]]


def made_up_words(rng: random.Random, count: int) -> list[str]:
    words: set[str] = set()
    while len(words) < count:
        words.add("".join(rng.choices(SYLLABLES, k=rng.randint(2, 4))))
    return sorted(words)


def generate(root: Path, entity_count: int, relation_count: int) -> None:
    """Write the folder directly in the cortex's on-disk format (as years of use would)."""
    rng = random.Random(SEED)
    ids: list[str] = []
    seen: set[str] = set()
    (root / "entities").mkdir(parents=True, exist_ok=True)
    files = {
        category: (root / "entities" / f"{category}.jsonl").open("wb") for category in DEFAULT_CATEGORIES
    }
    tail = made_up_words(rng, TAIL_WORDS)
    tail_weights = list(itertools.accumulate(1.0 / rank for rank in range(1, len(tail) + 1)))
    while len(ids) < entity_count:
        words = rng.sample(TECH_WORDS, 2) + rng.choices(tail, cum_weights=tail_weights, k=rng.randint(0, 1))
        entity_id = "-".join(words)
        if entity_id in seen:
            continue
        seen.add(entity_id)
        ids.append(entity_id)
        month = rng.randint(1, 12)
        created = f"2025-{month:02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z"
        desc = rng.choices(tail, cum_weights=tail_weights, k=rng.randint(6, 12)) + rng.sample(TECH_WORDS, 3)
        rng.shuffle(desc)
        record = {
            "kind": "entity",
            "id": entity_id,
            "type": rng.choice(["concept", "framework", "person", "project", "service"]),
            "name": " ".join(word.capitalize() for word in words),
            "desc": " ".join(desc),
            "tags": rng.sample(TAGS, rng.randint(1, 3)),
            "created": created,
            "updated": created,
        }
        category_file = files[rng.choice(DEFAULT_CATEGORIES)]
        category_file.write(encode_record(record))
        for _ in range(rng.choice([0, 0, 0, 0, 1, 2])):  # a third of the entities have observations
            note = " ".join(rng.choices(tail, cum_weights=tail_weights, k=8))
            observation = {"kind": "observation", "id": entity_id, "text": note, "created": created}
            category_file.write(encode_record(observation))
    for handle in files.values():
        handle.close()

    months = {}
    for month in range(1, 13):
        path = root / "relations" / "2025" / f"{month:02d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        months[month] = path.open("wb")
    predicates = ["uses", "depends_on", "part_of", "owned_by", "related_to", "replaces"]
    for _ in range(relation_count):
        month = rng.randint(1, 12)
        src, dst = rng.sample(ids, 2)
        relation = {
            "src": src,
            "rel": rng.choice(predicates),
            "dst": dst,
            "context": "seen in " + rng.choice(TECH_WORDS),
            "created": f"2025-{month:02d}-{rng.randint(1, 28):02d}T12:00:00Z",
        }
        months[month].write(encode_record(relation))
    for handle in months.values():
        handle.close()


def measure(root: Path) -> dict[str, object]:
    """Run in a fresh process: every figure the docs quote (public API only)."""
    started, cpu_started = time.perf_counter(), time.process_time()
    store = KnowledgeStore(root)
    store.refresh()
    load_s, load_cpu_s = time.perf_counter() - started, time.process_time() - cpu_started
    with store.snapshot():
        entity_count = store.entity_count()

    with store.snapshot():
        store.search(QUERIES[0], 10)
    first_search_s = time.perf_counter() - started - load_s

    # The rest of the view: every relation, and the relations of an entity.
    view_started = time.perf_counter()
    with store.snapshot():
        relation_count = store.relation_count()
        store.relations_of("bench-probe")
    rest_of_view_s = time.perf_counter() - view_started
    everything_s = time.perf_counter() - started

    latencies: list[float] = []
    hits_per_query: dict[str, str] = {}
    for _ in range(SEARCH_ROUNDS):
        for query in QUERIES:
            started = time.perf_counter()
            with store.snapshot():
                hits = store.search(query, 10)
            latencies.append(time.perf_counter() - started)
            hits_per_query[query] = hits[0].entity_id if hits else "-"
    latencies.sort()

    started = time.perf_counter()
    with store.snapshot():
        report = build_entropy_report(store, stale_days=30, now=utc_now())
    entropy_s = time.perf_counter() - started

    started = time.perf_counter()
    store.add_entity("concepts", "bench-probe", "concept", "Bench probe", "one durable append")
    append_s = time.perf_counter() - started

    return {
        "entities": entity_count,
        "relations": relation_count,
        "load_problems": len(store.problems()),
        "load_s": round(load_s, 3),
        "load_cpu_s": round(load_cpu_s, 3),
        "first_search_s": round(first_search_s, 3),
        "load_and_first_search_s": round(load_s + first_search_s, 3),
        "rest_of_view_s": round(rest_of_view_s, 3),
        "everything_loaded_s": round(everything_s, 3),
        "search_median_ms": round(statistics.median(latencies) * 1000, 1),
        "search_p95_ms": round(latencies[int(len(latencies) * 0.95) - 1] * 1000, 1),
        "search_samples": len(latencies),
        "top_hit": hits_per_query,
        "entropy_report_s": round(entropy_s, 3),
        "near_duplicates": report["near_duplicates"]["count"],  # type: ignore[index]
        "orphans": report["orphans"]["count"],  # type: ignore[index]
        "append_one_entity_ms": round(append_s * 1000, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def median_of_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each numeric figure's median over the runs; the others from the first run."""
    figures = dict(runs[0])
    for key, value in figures.items():
        if isinstance(value, int | float):
            figures[key] = round(statistics.median(run[key] for run in runs), 3)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--relations", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=1, help="measure N times, report the medians")
    parser.add_argument(
        "--dir", type=Path, help="use this folder (generated there if it holds no entities) and keep it"
    )
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the child's entry point
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return

    with tempfile.TemporaryDirectory(prefix="cortex-bench-") as folder:
        root = args.dir or Path(folder)
        started = time.perf_counter()
        generated = not (root / "entities").is_dir()
        if generated:
            generate(root, args.entities, args.relations)
        generate_s = time.perf_counter() - started
        size_mb = sum(path.stat().st_size for path in root.rglob("*.jsonl")) / 1e6
        runs = []
        for _ in range(args.runs):
            child = subprocess.run(
                [sys.executable, __file__, "--measure", str(root)], capture_output=True, text=True, check=True
            )
            runs.append(json.loads(child.stdout))
            _remove_probe(root)  # so the next run starts alike
        figures = median_of_runs(runs)
    source = f"generated in {generate_s:.1f} s" if generated else f"reused from {root}"
    print(
        f"data:                {figures['entities']:,} entities, {figures['relations']:,} relations "
        f"({size_mb:.1f} MB), {source}"
    )
    print(
        f"machine:             {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
        f"median of {args.runs} run(s)"
    )
    print(
        f"cold load:           {figures['load_s']:.2f} s wall, {figures['load_cpu_s']:.2f} s CPU "
        f"({figures['load_problems']} load problems)"
    )
    print(f"first search:        {figures['first_search_s']:.2f} s (after the load: builds the word index)")
    print(f"load + first search: {figures['load_and_first_search_s']:.2f} s")
    print(f"rest of the view:    {figures['rest_of_view_s']:.2f} s (relations and their index by entity)")
    print(f"everything loaded:   {figures['everything_loaded_s']:.2f} s")
    print(
        f"search (10 queries x {SEARCH_ROUNDS}): median {figures['search_median_ms']} ms, "
        f"p95 {figures['search_p95_ms']} ms"
    )
    print(
        f"entropy report:      {figures['entropy_report_s']:.2f} s  "
        f"({figures['near_duplicates']} near-duplicate pairs, {figures['orphans']} orphans)"
    )
    print(f"one durable append:  {figures['append_one_entity_ms']} ms (lock + refresh + write + fsync)")
    print(f"peak memory (RSS):   {figures['peak_rss_mb']} MB")
    print("top hit per query:   " + json.dumps(figures["top_hit"]))


def _remove_probe(root: Path) -> None:
    """Drop the line the measuring run appended (bench data only: the cortex never rewrites)."""
    concepts = root / "entities" / "concepts.jsonl"
    lines = concepts.read_bytes().splitlines(keepends=True)
    if lines and b'"id":"bench-probe"' in lines[-1]:
        concepts.write_bytes(b"".join(lines[:-1]))


if __name__ == "__main__":
    main()
