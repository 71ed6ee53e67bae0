"""The entropy report: how tidy the knowledge graph is, and where it is decaying.

Near-duplicates are found without comparing every pair (impossible at 100,000 entities):
names that are equal once case, spaces and punctuation are dropped are grouped exactly,
and a sorted-neighbourhood pass compares each name with its few neighbours in two sort
orders (by the name, and by the name reversed, so a difference at either end is caught).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from rapidfuzz import fuzz, utils

from mcp_nexus.builtin.cortex.gc_pause import garbage_collector_paused
from mcp_nexus.builtin.cortex.records import Entity, format_timestamp
from mcp_nexus.builtin.cortex.store import KnowledgeStore

LISTED_PER_SECTION = 50
NEIGHBOURHOOD = 4
DEFAULT_DUPLICATE_THRESHOLD = 90.0
MIN_FUZZY_NAME_LENGTH = 5  # below this, one letter apart is a different word ("vue"/"vuex")


def build_entropy_report(
    store: KnowledgeStore,
    *,
    stale_days: int,
    now: datetime,
    duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD,
) -> dict[str, Any]:
    """The report, computed from the store's current view (call inside `store.snapshot()`)."""
    # Hundreds of thousands of short-lived containers and no cycles: without the pause they
    # set off full collections that walk the whole loaded view, about a third of the report.
    with garbage_collector_paused():
        return _build_report(store, stale_days, now, duplicate_threshold)


def _build_report(
    store: KnowledgeStore, stale_days: int, now: datetime, duplicate_threshold: float
) -> dict[str, Any]:
    entities = store.entities()
    relations = store.relations()
    nodes, edges = len(entities), len(relations)

    orphans = [entity.id for entity in entities if store.degree(entity.id) == 0]
    cutoff = format_timestamp(now - timedelta(days=stale_days))
    stale = sorted(
        (entity for entity in entities if entity.updated < cutoff), key=lambda e: (e.updated, e.id)
    )
    known = store.entity_ids()
    dangling = [relation for relation in relations if relation.src not in known or relation.dst not in known]
    duplicates = find_near_duplicates(entities, duplicate_threshold)
    problems = store.problems()
    per_category = Counter(entity.category for entity in entities)

    return {
        "generated": format_timestamp(now),
        "nodes": nodes,
        "edges": edges,
        "density": round(edges / (nodes * (nodes - 1)), 8) if nodes > 1 else 0.0,
        "per_category": {category: per_category.get(category, 0) for category in _all_categories(store)},
        "orphans": {"count": len(orphans), "ids": orphans[:LISTED_PER_SECTION]},
        "stale": {
            "days": stale_days,
            "cutoff": cutoff,
            "count": len(stale),
            "entities": [{"id": e.id, "updated": e.updated} for e in stale[:LISTED_PER_SECTION]],
        },
        "dangling_relations": {
            "count": len(dangling),
            "relations": [relation.to_json() for relation in dangling[:LISTED_PER_SECTION]],
        },
        "near_duplicates": {
            "threshold": duplicate_threshold,
            "count": len(duplicates),
            "pairs": duplicates[:LISTED_PER_SECTION],
        },
        "load_problems": {
            "count": len(problems),
            "problems": [problem.to_json() for problem in problems[:LISTED_PER_SECTION]],
        },
    }


def _all_categories(store: KnowledgeStore) -> list[str]:
    """Configured categories first, then any other category found on disk."""
    found = [category for category, _ in store.layout.category_files()]
    return list(store.categories) + sorted(set(found) - set(store.categories))


def find_near_duplicates(entities: list[Entity], threshold: float) -> list[dict[str, Any]]:
    """Pairs of entities whose names are (nearly) the same, most similar first."""
    pairs: dict[tuple[str, str], float] = {}

    def note(a: Entity, b: Entity, score: float) -> None:
        key = (a.id, b.id) if a.id < b.id else (b.id, a.id)
        if score > pairs.get(key, -1.0):
            pairs[key] = score

    processed = [(utils.default_process(entity.name), entity) for entity in entities]
    by_compact: dict[str, list[Entity]] = {}
    for name, entity in processed:
        compact = name.replace(" ", "")
        if compact:
            by_compact.setdefault(compact, []).append(entity)
    for group in by_compact.values():
        for index, first in enumerate(group):
            for second in group[index + 1 :]:
                note(first, second, 100.0)

    candidates = [(name, entity) for name, entity in processed if len(name) >= MIN_FUZZY_NAME_LENGTH]
    # ratio = 2*matches/(len a + len b), so two names whose lengths differ too much cannot
    # reach the threshold: skip those without calling the scorer.
    max_length_ratio = 200.0 / threshold - 1.0 if threshold > 0 else float("inf")
    ratio = fuzz.ratio
    for order in (
        sorted(candidates, key=lambda item: item[0]),
        sorted(candidates, key=lambda item: item[0][::-1]),
    ):
        for index, (name, entity) in enumerate(order):
            longest = len(name) * max_length_ratio
            shortest = len(name) / max_length_ratio
            for other_name, other in order[index + 1 : index + 1 + NEIGHBOURHOOD]:
                if not shortest <= len(other_name) <= longest:
                    continue
                score = ratio(name, other_name, score_cutoff=threshold)
                if score:
                    note(entity, other, round(score, 1))

    ranked = sorted(pairs.items(), key=lambda item: (-item[1], item[0]))
    return [{"a": a, "b": b, "score": score} for (a, b), score in ranked]
