"""The append-only JSONL storage: layout, refusal to rewrite, crash damage, shared folders."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mcp_nexus.builtin.cortex.errors import EntityExistsError, RelationExistsError
from mcp_nexus.builtin.cortex.store import KnowledgeStore


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def seed(store: KnowledgeStore) -> None:
    store.add_entity("tech_stack", "fastapi", "framework", "FastAPI", "Web framework", ["python"])
    store.add_entity("concepts", "asgi", "concept", "ASGI", "Server interface")
    store.connect("fastapi", "uses", "asgi", "server side")


def test_layout_and_records_on_disk(knowledge_dir: Path) -> None:
    fixed = datetime(2026, 2, 3, 10, 0, 0, tzinfo=UTC)
    store = KnowledgeStore(knowledge_dir, clock=lambda: fixed)
    seed(store)
    store.add_observation("fastapi", "Uses pydantic")

    assert lines_of(knowledge_dir / "entities" / "concepts.jsonl") == [
        '{"kind":"entity","id":"asgi","type":"concept","name":"ASGI","desc":"Server interface","tags":[],'
        '"created":"2026-02-03T10:00:00Z","updated":"2026-02-03T10:00:00Z"}'
    ]
    tech = [json.loads(line) for line in lines_of(knowledge_dir / "entities" / "tech_stack.jsonl")]
    assert [record["kind"] for record in tech] == ["entity", "observation"]
    assert tech[1] == {
        "kind": "observation",
        "id": "fastapi",
        "text": "Uses pydantic",
        "created": "2026-02-03T10:00:00Z",
    }
    assert [json.loads(line) for line in lines_of(knowledge_dir / "relations" / "2026" / "02.jsonl")] == [
        {
            "src": "fastapi",
            "rel": "uses",
            "dst": "asgi",
            "context": "server side",
            "created": "2026-02-03T10:00:00Z",
        }
    ]


def test_adding_an_existing_id_fails_and_never_rewrites_history(knowledge_dir: Path) -> None:
    store = KnowledgeStore(knowledge_dir)
    seed(store)
    files = sorted(knowledge_dir.rglob("*.jsonl"))
    before = {path: path.read_bytes() for path in files}

    with pytest.raises(EntityExistsError, match=r"\[entity_exists\] entity 'fastapi' already exists"):
        store.add_entity("tech_stack", "fastapi", "framework", "FastAPI 2", "rewritten")
    with pytest.raises(EntityExistsError, match="category 'tech_stack'"):
        store.add_entity("concepts", "fastapi", "concept", "Other", "same id in another category")
    with pytest.raises(EntityExistsError):  # a second store on the same folder sees it too
        KnowledgeStore(knowledge_dir).add_entity("people", "asgi", "person", "Asgi", "")
    with pytest.raises(RelationExistsError):
        store.connect("fastapi", "uses", "asgi")

    assert {path: path.read_bytes() for path in sorted(knowledge_dir.rglob("*.jsonl"))} == before
    assert store.get("fastapi").desc == "Web framework"

    # Updates are new records appended after the old ones; the view is derived from both.
    entity = store.add_observation("fastapi", "Now at version 1.0")
    tech = knowledge_dir / "entities" / "tech_stack.jsonl"
    assert tech.read_bytes().startswith(before[tech])
    assert [o.text for o in entity.observations] == ["Now at version 1.0"]


def test_a_line_torn_by_a_crash_is_reported_and_the_rest_still_reads(knowledge_dir: Path) -> None:
    store = KnowledgeStore(knowledge_dir)
    seed(store)
    store.add_entity("concepts", "wsgi", "concept", "WSGI", "The older interface")
    concepts = knowledge_dir / "entities" / "concepts.jsonl"
    # A crash in the middle of a write: the last line stops half-way, without its newline.
    full = '{"kind":"entity","id":"half-written","type":"concept","name":"Half","desc":"lost","tags":[],'
    with concepts.open("a", encoding="utf-8") as handle:
        handle.write(full[:40])

    reader = KnowledgeStore(knowledge_dir)
    reader.refresh()
    assert sorted(entity.id for entity in reader.entities()) == ["asgi", "fastapi", "wsgi"]
    [problem] = reader.problems()
    assert problem.file == "entities/concepts.jsonl" and problem.line == 3
    assert "torn last line (40 bytes" in problem.reason
    assert reader.relation_count() == 1

    # The next writer ends the torn line first, so its own record is intact.
    reader.add_entity("concepts", "http", "concept", "HTTP", "The protocol")
    raw = lines_of(concepts)
    assert raw[2] == full[:40] and json.loads(raw[3])["id"] == "http"

    fresh = KnowledgeStore(knowledge_dir)
    fresh.refresh()
    assert sorted(entity.id for entity in fresh.entities()) == ["asgi", "fastapi", "http", "wsgi"]
    assert [(p.line, p.reason.split(" (")[0]) for p in fresh.problems()] == [(3, "invalid JSON")]


def test_a_torn_relation_file_and_a_garbage_line_do_not_break_reading(knowledge_dir: Path) -> None:
    store = KnowledgeStore(knowledge_dir)
    seed(store)
    store.add_entity("concepts", "http", "concept", "HTTP", "")
    store.connect("asgi", "uses", "http")
    [relations_file] = list((knowledge_dir / "relations").rglob("*.jsonl"))
    good = relations_file.read_text()
    relations_file.write_text('not json at all\n["a list"]\n{"src":"x"}\n' + good + '{"src":"asgi","rel":"us')

    reader = KnowledgeStore(knowledge_dir)
    reader.refresh()
    assert reader.relation_count() == 2
    reasons = {problem.line: problem.reason for problem in reader.problems()}
    assert sorted(reasons) == [1, 2, 3, 6]
    assert reasons[1].startswith("invalid JSON") and reasons[2] == "not an object"
    assert reasons[3].startswith("bad record") and reasons[6].startswith("torn last line")


def test_records_with_bad_values_on_disk_are_skipped(knowledge_dir: Path) -> None:
    (knowledge_dir / "entities").mkdir(parents=True)
    records = [
        {"kind": "entity", "id": "../evil", "type": "t", "name": "n", "created": "2026-01-01T00:00:00Z"},
        {"kind": "entity", "id": "ok", "type": "t", "name": "n", "created": "2026-01-01T00:00:00Z"},
        {"kind": "entity", "id": "ok", "type": "t", "name": "again", "created": "2026-01-01T00:00:00Z"},
        {"kind": "observation", "id": "ghost", "text": "x", "created": "2026-01-01T00:00:00Z"},
        {"kind": "entity", "id": "no-date", "type": "t", "name": "n", "created": "yesterday"},
        {"kind": "mystery", "id": "ok"},
    ]
    path = knowledge_dir / "entities" / "concepts.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    store = KnowledgeStore(knowledge_dir)
    store.refresh()
    assert [entity.id for entity in store.entities()] == ["ok"]
    assert store.get("ok").name == "n"
    assert [problem.line for problem in store.problems()] == [1, 3, 4, 5, 6]


def test_two_stores_on_one_folder_see_each_other(knowledge_dir: Path) -> None:
    first, second = KnowledgeStore(knowledge_dir), KnowledgeStore(knowledge_dir)
    first.add_entity("concepts", "one", "concept", "One", "")
    second.add_entity("concepts", "two", "concept", "Two", "")
    second.connect("two", "follows", "one")
    first.add_observation("two", "seen from the first store")
    with first.snapshot():
        assert [entity.id for entity in first.entities()] == ["one", "two"]
        assert first.relation_count() == 1
    with second.snapshot():
        assert [o.text for o in second.get("two").observations] == ["seen from the first store"]
