"""The fast load path: bulk parsing, relations and indexes built on first need, the paused collector.

Each shortcut must give exactly what the plain path gives: a store that watched every write
and searched after each one is compared with a store that loads the finished folder cold.
"""

from __future__ import annotations

import gc
import json
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mcp_nexus.builtin.cortex.jsonl import encode_record
from mcp_nexus.builtin.cortex.records import Entity, Observation
from mcp_nexus.builtin.cortex.search import FuzzySearchIndex, SearchHit
from mcp_nexus.builtin.cortex.store import KnowledgeStore

WORDS = (  # noqa: SIM905
    "kubernetes postgres replication graph database rust async runtime tracing observability "
    "machine learning pipeline frontend design system auth token gateway proxy cache queue"
).split()
QUERIES = [
    "kubernetes",
    "kubernetse",
    "postgres replication",
    "graph databse",
    "rust async",
    "machine lerning pipeline",
    "auth",
    "zzzz nothing",
    "ingest",
]


SEARCH_LIMIT = 30  # x 8 candidates = every entity of the graph, so no candidate is cut at a tie


def ticking_clock() -> Callable[[], datetime]:
    """A clock one second further on each call, so timestamps differ and order is fixed."""
    moments = iter(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=n) for n in range(10**6))
    return lambda: next(moments)


def ranking(hits: list[SearchHit]) -> list[tuple[float, str, str]]:
    """Hits by score, equal scores by id: the order among equals depends on when each entity
    was first indexed (which differs between a cold load and a store that watched the
    writes), and the equals at the cut-off may differ, so they are left out."""
    if len(hits) == SEARCH_LIMIT:
        hits = [hit for hit in hits if hit.score > hits[-1].score]
    return sorted((-hit.score, hit.entity_id, hit.matched) for hit in hits)


def grow_graph(writer: KnowledgeStore, watcher: KnowledgeStore) -> None:
    """Write a small graph in batches; the watcher searches and reads relations after each batch."""
    rng = random.Random(7)
    ids: list[str] = []
    for batch in range(6):
        with writer.transaction() as transaction:
            for _ in range(40):
                words = rng.sample(WORDS, 2)
                entity_id = f"{'-'.join(words)}-{len(ids)}"
                desc = " ".join(rng.choices(WORDS, k=6))
                tags = rng.sample(WORDS, 2)
                category = rng.choice(["concepts", "tech_stack", "people", "projects"])
                transaction.add_entity(category, entity_id, "concept", " ".join(words).title(), desc, tags)
                ids.append(entity_id)
        with writer.transaction() as transaction:
            for _ in range(60):  # observations on older entities re-index them
                transaction.add_observation(rng.choice(ids), f"ingest {' '.join(rng.choices(WORDS, k=4))}")
            for _ in range(80):
                src, dst = rng.sample(ids, 2)
                if not transaction.has_relation(src, "uses", dst):
                    transaction.connect(src, "uses", dst, f"batch {batch}")
        with watcher.snapshot():
            for query in QUERIES:
                watcher.search(query, 10)
            watcher.relations_of(ids[0])


def view_of(store: KnowledgeStore) -> dict[str, object]:
    """Everything a client can see of the store, in a comparable form."""
    with store.snapshot():
        # By id: the order of entities() follows the files as each refresh met them.
        return {
            "entities": {entity.id: entity.to_json() for entity in store.entities()},
            "relations": [(relation, relation.month) for relation in store.relations()],
            "by_entity": {entity.id: store.relations_of(entity.id) for entity in store.entities()},
            "degrees": {entity.id: store.degree(entity.id) for entity in store.entities()},
            "months": store.months(),
            "problems": store.problems(),
            "search": {query: ranking(store.search(query, SEARCH_LIMIT)) for query in QUERIES},
        }


def test_a_cold_load_sees_exactly_what_a_store_that_watched_every_write_sees(knowledge_dir: Path) -> None:
    writer = KnowledgeStore(knowledge_dir, clock=ticking_clock())
    watcher = KnowledgeStore(knowledge_dir)
    grow_graph(writer, watcher)

    cold = KnowledgeStore(knowledge_dir)
    cold.refresh()
    watched, loaded = view_of(watcher), view_of(cold)
    assert loaded == watched
    assert len(loaded["entities"]) == 240 and loaded["problems"] == []  # type: ignore[arg-type]
    assert any(loaded["search"].values())  # type: ignore[attr-defined]
    # The shared strings are an optimisation only: relations still name their ends.
    assert all(relation.src in cold.entity_ids() for relation, _ in loaded["relations"])  # type: ignore[attr-defined]


def test_an_index_built_in_one_go_ranks_like_one_built_entity_by_entity() -> None:
    rng = random.Random(11)
    entities = []
    for number in range(400):
        words = rng.sample(WORDS, 3)
        entity = Entity(
            f"{'-'.join(words)}-{number}",
            "concepts",
            "concept",
            " ".join(words).title(),
            " ".join(rng.choices(WORDS, k=8)),
            rng.sample(WORDS, 2),
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00Z",
        )
        entities.append(entity)

    one_by_one = FuzzySearchIndex()
    for entity in entities:
        one_by_one.upsert(entity)
        one_by_one.catch_up()
    in_one_go = FuzzySearchIndex()
    in_one_go.upsert_many(entities)
    assert len(in_one_go) == 400  # counted while still waiting to be indexed

    # Later observations: indexed again, in place, in both.
    for entity in entities[::7]:
        entity.observations.append(Observation("ingested by the nightly pipeline", "2026-01-02T00:00:00Z"))
        one_by_one.upsert(entity)
        one_by_one.catch_up()
        in_one_go.upsert(entity)

    for query in [*QUERIES, "nightly ingested", "pipline"]:
        assert in_one_go.search(query, 25) == one_by_one.search(query, 25), query
    assert in_one_go.search("nightly", 100)  # the observation words were indexed
    assert {hit.entity_id for hit in in_one_go.search("nightly ingested", 100)} >= {
        entity.id for entity in entities[::7]
    }


def entity_line(number: int) -> bytes:
    return encode_record(
        {
            "kind": "entity",
            "id": f"entity-{number}",
            "type": "concept",
            "name": f"Entity {number}",
            "desc": "bulk",
            "tags": ["bulk"],
            "created": "2026-01-01T00:00:00Z",
            "updated": "2026-01-01T00:00:00Z",
        }
    )


def test_bad_lines_in_a_large_file_are_found_by_their_exact_line_number(knowledge_dir: Path) -> None:
    # 2,500 lines parsed in blocks: the bad ones fall in different blocks, one at a block edge.
    lines = [entity_line(number) for number in range(2500)]
    lines[9] = b"\n"  # a blank line is skipped silently
    lines[999] = b'{"kind":"entity","id":"cut-he\n'
    lines[1500] = b"[1, 2]\n"
    lines[2400] = b'{"kind":"entity"}\n'
    (knowledge_dir / "entities").mkdir(parents=True)
    (knowledge_dir / "entities" / "concepts.jsonl").write_bytes(b"".join(lines))

    store = KnowledgeStore(knowledge_dir)
    store.refresh()
    with store.snapshot():
        problems = [(problem.line, problem.reason.split(" (")[0]) for problem in store.problems()]
        assert problems == [(1000, "invalid JSON"), (1501, "not an object"), (2401, "bad record: 'id'")]
        assert store.entity_count() == 2500 - 4
        assert store.find("entity-1001") is not None and store.find("entity-999") is None
        assert [hit.entity_id for hit in store.search("entity 2499", 1)] == ["entity-2499"]


def test_relation_problems_are_reported_without_asking_about_relations_first(knowledge_dir: Path) -> None:
    (knowledge_dir / "entities").mkdir(parents=True)
    (knowledge_dir / "entities" / "concepts.jsonl").write_bytes(entity_line(1) + entity_line(2))
    month = knowledge_dir / "relations" / "2026" / "01.jsonl"
    month.parent.mkdir(parents=True)
    good = {
        "src": "entity-1",
        "rel": "uses",
        "dst": "entity-2",
        "context": "",
        "created": "2026-01-05T00:00:00Z",
    }
    month.write_text(
        json.dumps(good)
        + "\n"
        + json.dumps({**good, "rel": "Bad Predicate"})
        + "\n"
        + json.dumps({**good, "dst": "../escape"})
        + "\n"
    )

    store = KnowledgeStore(knowledge_dir)
    store.refresh()
    with store.snapshot():
        reasons = {problem.line: problem.reason for problem in store.problems()}
        assert sorted(reasons) == [2, 3]
        assert "rel 'Bad Predicate' is not valid" in reasons[2]
        assert "dst '../escape' contains a path separator" in reasons[3]
        assert store.relation_count() == 1
        assert [relation.dst for relation in store.relations_of("entity-1")] == ["entity-2"]
        assert store.relations_in_month("2026", "01") == store.relations()


def test_the_garbage_collector_runs_again_after_a_load_and_stays_off_if_it_was_off(
    knowledge_dir: Path,
) -> None:
    (knowledge_dir / "entities").mkdir(parents=True)
    (knowledge_dir / "entities" / "concepts.jsonl").write_bytes(b"".join(entity_line(n) for n in range(50)))
    assert gc.isenabled()
    store = KnowledgeStore(knowledge_dir)
    store.refresh()
    store.search("entity", 5)
    assert gc.isenabled()

    gc.disable()
    try:
        other = KnowledgeStore(knowledge_dir)
        other.refresh()
        other.search("entity", 5)
        assert not gc.isenabled()
    finally:
        gc.enable()
