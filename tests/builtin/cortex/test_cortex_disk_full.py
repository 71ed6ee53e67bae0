"""A failed append leaves nothing: on a full disk or at a file-size limit, the file is
byte-identical to before, the next load finds no bad line, and the caller is told why.

Both limits are real: a 64 KiB tmpfs (mounted when the tests run as root, which the tests'
machines do) filled until the kernel answers ENOSPC, and RLIMIT_FSIZE in a child process
(EFBIG after a short write; CPython ignores SIGXFSZ), which also fails the second file of a
two-file transaction after the first was written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cortex_support import error_text, structured
from mcp import Client

from mcp_nexus.builtin.cortex.server import create_server
from mcp_nexus.builtin.cortex.store import KnowledgeStore


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; the RLIMIT_FSIZE test below covers the same path")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], check=False)
    if done.returncode != 0:
        pytest.skip("this machine does not let root mount a tmpfs")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


async def test_full_disk_answers_disk_full_and_leaves_the_file_as_it_was(small_tmpfs: Path) -> None:
    root = small_tmpfs / "kb"
    concepts = root / "entities" / "concepts.jsonl"
    async with Client(create_server(knowledge_dir=str(root), preload=False)) as client:
        structured(
            await client.call_tool(
                "add_entity",
                {"category": "concepts", "id": "seed", "type": "concept", "name": "Seed", "desc": "s"},
            )
        )
        failed = None
        for n in range(200):
            before = concepts.read_bytes()
            result = await client.call_tool(
                "add_entity",
                {
                    "category": "concepts",
                    "id": f"e{n}",
                    "type": "concept",
                    "name": f"E {n}",
                    "desc": "x" * 9_000,
                },
            )
            if result.is_error:
                failed = error_text(result)
                break
        assert failed is not None, "the 64 KiB tmpfs never filled up"
        assert failed.startswith("[disk_full] disk full: cannot append to ")
        assert str(concepts.resolve()) in failed and "No space left on device" in failed
        assert concepts.read_bytes() == before  # no partial record

        # An observation on a full disk fails the same way and also leaves nothing.
        before = concepts.read_bytes()
        result = await client.call_tool("add_observation", {"id": "seed", "text": "y" * 9_000})
        assert error_text(result).startswith("[disk_full] disk full")
        assert concepts.read_bytes() == before

        # The store still answers, and what was recorded is all there.
        found = structured(await client.call_tool("open_entities", {"ids": ["seed", "e0"]}))
        assert [entity["id"] for entity in found["entities"]] == ["seed", "e0"]

    fresh = KnowledgeStore(root)
    fresh.refresh()
    assert fresh.problems() == []
    assert "seed" in fresh.entity_ids() and f"e{n}" not in fresh.entity_ids()


CHILD = r"""
import json, resource, sys
from pathlib import Path
from mcp_nexus.builtin.cortex.errors import WriteFailedError
from mcp_nexus.builtin.cortex.store import KnowledgeStore

root, limit = Path(sys.argv[1]), int(sys.argv[2])
store = KnowledgeStore(root)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
out = {}
try:
    store.add_entity("concepts", "big", "concept", "Big", "z" * 2_000)
except WriteFailedError as exc:
    out["one_file"] = str(exc)
try:
    with store.transaction() as transaction:  # a small entity file, then the relations file past the limit
        transaction.add_entity("people", "ada", "person", "Ada", "")
        transaction.connect("ada", "knows", "a0")
except WriteFailedError as exc:
    out["two_files"] = str(exc)
print(json.dumps(out))
"""


def test_file_size_limit_undoes_the_append_and_every_file_of_its_transaction(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    store = KnowledgeStore(root)
    for n in range(12):
        store.add_entity("concepts", f"a{n}", "concept", f"A {n}", "d" * 10)
        if n:
            store.connect(f"a{n}", "follows", f"a{n - 1}", "c" * 200)
    concepts = root / "entities" / "concepts.jsonl"
    relations = next((root / "relations").rglob("*.jsonl"))
    people = root / "entities" / "people.jsonl"
    limit = concepts.stat().st_size + 300  # a 2,000-character record goes past it, part-way
    assert relations.stat().st_size > limit  # every append to the relations file fails
    snapshot = {path: path.read_bytes() for path in (concepts, relations)}

    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), str(limit)], capture_output=True, text=True, timeout=60
    )
    assert child.returncode == 0, child.stderr
    out = json.loads(child.stdout)
    assert (
        out["one_file"]
        == f"[write_failed] cannot append to {concepts.resolve()} (File too large); nothing was written"
    )
    assert out["two_files"].startswith(
        f"[write_failed] cannot append to {relations.resolve()} (File too large)"
    )
    for path, content in snapshot.items():
        assert path.read_bytes() == content, f"{path} changed"
    assert not people.exists() or people.read_bytes() == b""  # created by the transaction, then removed

    fresh = KnowledgeStore(root)
    fresh.refresh()
    assert fresh.problems() == []
    assert "big" not in fresh.entity_ids() and "ada" not in fresh.entity_ids()
    assert fresh.relation_count() == 11
    # Without the limit, the same records go in, and the files stay clean.
    fresh.add_entity("concepts", "big", "concept", "Big", "z" * 2_000)
    fresh.add_entity("people", "ada", "person", "Ada", "")
    fresh.connect("ada", "knows", "a0")
    again = KnowledgeStore(root)
    again.refresh()
    assert again.problems() == [] and again.relation_count() == 12
