"""Several processes (each with several threads) append to one folder at once: nothing is lost."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from cortex_support import child_env
from cortex_writer import CONTESTED

from mcp_nexus.builtin.cortex.store import KnowledgeStore

WRITER = Path(__file__).with_name("cortex_writer.py")
PROCESSES, THREADS, PER_THREAD = 4, 3, 25


def test_concurrent_writers_from_several_processes_lose_nothing(knowledge_dir: Path, tmp_path: Path) -> None:
    KnowledgeStore(knowledge_dir).add_entity(
        "concepts", "shared", "concept", "Shared", "everyone writes here"
    )
    go_file = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                str(WRITER),
                str(knowledge_dir),
                f"p{n}",
                str(PER_THREAD),
                str(THREADS),
                str(go_file),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        for n in range(PROCESSES)
    ]
    try:
        go_file.touch()
        outputs = [writer.communicate(timeout=120) for writer in writers]
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
    assert [writer.returncode for writer in writers] == [0] * PROCESSES, [err for _, err in outputs]
    won = Counter(entity_id for out, _ in outputs for entity_id in json.loads(out)["won"])
    assert won == {f"contested-{n}": 1 for n in range(CONTESTED)}

    total = PROCESSES * THREADS * PER_THREAD
    # Count every record in the files themselves: each line is whole, valid JSON.
    concepts = [
        json.loads(line) for line in (knowledge_dir / "entities" / "concepts.jsonl").read_text().splitlines()
    ]
    kinds = Counter(record["kind"] for record in concepts)
    assert kinds == {"entity": total + 1, "observation": total}
    assert len({record["id"] for record in concepts if record["kind"] == "entity"}) == total + 1
    projects = [
        json.loads(line) for line in (knowledge_dir / "entities" / "projects.jsonl").read_text().splitlines()
    ]
    assert sorted(record["id"] for record in projects) == sorted(won)
    relation_lines = [
        json.loads(line)
        for path in (knowledge_dir / "relations").rglob("*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert len(relation_lines) == total
    assert len({(r["src"], r["rel"], r["dst"]) for r in relation_lines}) == total

    # And a fresh store derives the same view without a single problem.
    store = KnowledgeStore(knowledge_dir)
    with store.snapshot():
        assert store.problems() == []
        assert store.entity_count() == total + 1 + CONTESTED
        assert store.relation_count() == total
        assert len(store.get("shared").observations) == total
        assert store.degree("shared") == total
