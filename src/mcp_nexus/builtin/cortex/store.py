"""The knowledge store: an in-memory view derived from append-only JSONL files.

The files are the truth. Every operation first reads what other threads or processes
appended since the last look (under the folder lock), so several servers and CLI runs can
share one folder. Writes go through a `Transaction`, which checks the rules against that
fresh view plus its own pending records, appends everything at once, and then reads its
own lines back: there is one code path that turns records into the view.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, KeysView, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from mcp_nexus.builtin.cortex.errors import (
    EntityExistsError,
    EntityNotFoundError,
    InvalidInputError,
    RelationExistsError,
)
from mcp_nexus.builtin.cortex.jsonl import (
    ParsedLine,
    ReadPosition,
    append_lines,
    encode_record,
    folder_lock,
    read_new_lines,
)
from mcp_nexus.builtin.cortex.layout import KnowledgeLayout
from mcp_nexus.builtin.cortex.records import (
    Entity,
    Observation,
    Relation,
    entity_record,
    format_timestamp,
    observation_record,
    utc_now,
)
from mcp_nexus.builtin.cortex.search import FuzzySearchIndex, SearchHit
from mcp_nexus.builtin.cortex.validation import (
    MAX_CONTEXT_LENGTH,
    MAX_DESC_LENGTH,
    MAX_NAME_LENGTH,
    MAX_OBSERVATION_LENGTH,
    check_category,
    check_category_name,
    check_id,
    check_line,
    check_predicate,
    check_tags,
    check_text,
    check_type,
    check_year_month,
)

logger = logging.getLogger(__name__)

DEFAULT_CATEGORIES: tuple[str, ...] = ("concepts", "tech_stack", "people", "projects")


@dataclass(frozen=True, slots=True)
class LoadProblem:
    """A line that could not be used: where it is and why. Reported, never fatal."""

    file: str
    line: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "reason": self.reason}


class KnowledgeStore:
    """One knowledge folder, shared safely with every other store opened on it."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        categories: Sequence[str] | None = None,
        *,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        if isinstance(categories, str):
            raise InvalidInputError(f"categories must be a list of names, got the string {categories!r}")
        chosen = list(DEFAULT_CATEGORIES if categories is None else categories)
        if not chosen:
            raise InvalidInputError("at least one category is needed")
        for category in chosen:
            check_category_name(category)
        if len(set(chosen)) != len(chosen):
            raise InvalidInputError(f"categories are repeated: {', '.join(chosen)}")
        self.categories: tuple[str, ...] = tuple(chosen)
        self.layout = KnowledgeLayout(Path(root).expanduser().resolve())
        self.layout.create()
        self._clock = clock
        self._mutex = threading.RLock()
        self._positions: dict[Path, ReadPosition] = {}
        self._entities: dict[str, Entity] = {}
        self._relations: list[Relation] = []
        # No index by month or by triple: both questions are rare (a resource read, a new
        # relation) and answered by a scan, which keeps loading lean.
        self._relations_by_entity: dict[str, list[Relation]] = {}
        self._problems: dict[tuple[str, int], LoadProblem] = {}
        self._search = FuzzySearchIndex()
        self._stale_search: set[str] = set()
        self._predicates: set[str] = set()  # predicates already checked

    @property
    def root(self) -> Path:
        return self.layout.root

    def now(self) -> str:
        return format_timestamp(self._clock())

    # -- reading ---------------------------------------------------------------------

    @contextmanager
    def snapshot(self) -> Iterator[KnowledgeStore]:
        """Bring the view up to date and hold it steady for the block (no writer can run)."""
        with self._mutex:
            with folder_lock(self.layout.lock_file, exclusive=False):
                self._refresh_locked()
            yield self

    def refresh(self) -> None:
        with self.snapshot():
            pass

    def get(self, entity_id: str) -> Entity:
        """The current view of one entity (no refresh: call inside `snapshot()`)."""
        entity = self._entities.get(check_id(entity_id))
        if entity is None:
            raise EntityNotFoundError(f"no entity with id {entity_id!r}")
        return entity

    def find(self, entity_id: str) -> Entity | None:
        return self._entities.get(entity_id)

    def entity_ids(self) -> KeysView[str]:
        return self._entities.keys()

    def entities(self) -> list[Entity]:
        return list(self._entities.values())

    def entity_count(self) -> int:
        return len(self._entities)

    def relations(self) -> list[Relation]:
        return list(self._relations)

    def relation_count(self) -> int:
        return len(self._relations)

    def relations_of(self, entity_id: str) -> list[Relation]:
        """Every relation with `entity_id` at either end, in recording order."""
        return list(self._relations_by_entity.get(entity_id, ()))

    def has_relation(self, src: str, rel: str, dst: str) -> bool:
        return any(
            r.rel == rel and r.src == src and r.dst == dst for r in self._relations_by_entity.get(src, ())
        )

    def degree(self, entity_id: str) -> int:
        return len(self._relations_by_entity.get(entity_id, ()))

    def relations_in_month(self, year: str, month: str) -> list[Relation]:
        year, month = check_year_month(year, month)
        key = f"{year}/{month}"
        return [relation for relation in self._relations if relation.month == key]

    def months(self) -> list[str]:
        return sorted({relation.month for relation in self._relations})

    def problems(self) -> list[LoadProblem]:
        return list(self._problems.values())

    def search(self, query: str, limit: int) -> list[SearchHit]:
        return self._search.search(query, limit)

    # -- writing ---------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Check and queue records in the block; on a clean exit append them all durably."""
        with self._mutex, folder_lock(self.layout.lock_file, exclusive=True):
            self._refresh_locked()
            transaction = Transaction(self)
            yield transaction
            transaction.commit()
            self._refresh_locked()

    def add_entity(
        self,
        category: str,
        entity_id: str,
        type: str,
        name: str,
        desc: str,
        tags: Sequence[str] | None = None,
    ) -> Entity:
        with self.transaction() as transaction:
            transaction.add_entity(category, entity_id, type, name, desc, tags)
        return self._entities[entity_id]

    def add_observation(self, entity_id: str, text: str) -> Entity:
        with self.transaction() as transaction:
            transaction.add_observation(entity_id, text)
        return self._entities[entity_id]

    def connect(self, src: str, rel: str, dst: str, context: str = "") -> Relation:
        with self.transaction() as transaction:
            relation = transaction.connect(src, rel, dst, context)
        return relation

    # -- turning records into the view -----------------------------------------------

    def _refresh_locked(self) -> None:
        for category, path in self.layout.category_files():
            name, lines = self._read(path)
            for line in lines:
                try:
                    self._apply_entity_record(category, line.record)  # type: ignore[arg-type]
                except (InvalidInputError, KeyError, TypeError) as exc:
                    self._problem(name, line.number, f"bad record: {exc}")
        for month, path in self.layout.month_files():
            name, lines = self._read(path)
            self._apply_relation_lines(month, name, lines)
        # The search index is rebuilt once per changed entity, not once per record.
        for entity_id in self._stale_search:
            self._search.upsert(self._entities[entity_id])
        self._stale_search.clear()

    def _read(self, path: Path) -> tuple[str, list[ParsedLine]]:
        """The new, well-formed lines of `path`; unreadable and torn ones are reported."""
        position = self._positions.setdefault(path, ReadPosition())
        name = path.relative_to(self.root).as_posix()
        try:
            if path.stat().st_size < position.offset:
                reason = "the file shrank: history was rewritten outside the cortex"
                self._problem(name, position.lines, reason)
                return name, []
            lines, torn = read_new_lines(path, position)
        except OSError as exc:
            self._problem(name, position.lines, f"cannot read: {exc}")
            return name, []
        good = []
        for line in lines:
            if line.record is None:
                self._problem(name, line.number, line.error or "unreadable line")
            else:
                good.append(line)
        if torn is not None:
            reason = f"torn last line ({torn.length} bytes without a newline, e.g. from a crash): ignored"
            self._problem(name, torn.number, reason)
        return name, good

    def _problem(self, file: str, line: int, reason: str) -> None:
        if (file, line) not in self._problems:
            problem = LoadProblem(file, line, reason)
            self._problems[(file, line)] = problem
            logger.warning("cortex: %s line %d: %s", file, line, reason)

    def _apply_entity_record(self, category: str, record: dict[str, Any]) -> None:
        kind = record.get("kind")
        entity_id = check_id(record["id"])
        if kind == "entity":
            known = self._entities.get(entity_id)
            if known is not None:
                raise InvalidInputError(f"duplicate entity {entity_id!r} (first in {known.category})")
            created = _timestamp(record["created"])
            entity = Entity(
                sys.intern(entity_id),
                category,
                sys.intern(_string(record["type"], "type")),
                _string(record["name"], "name"),
                _string(record.get("desc", ""), "desc"),
                [sys.intern(_string(tag, "tag")) for tag in record.get("tags") or ()],
                created,
                max(created, _timestamp(record.get("updated", created))),
            )
            self._entities[entity.id] = entity
        elif kind == "observation":
            entity = self._entities.get(entity_id)  # type: ignore[assignment]
            if entity is None:
                raise InvalidInputError(f"observation for unknown entity {entity_id!r}")
            observation = Observation(_string(record["text"], "text"), _timestamp(record["created"]))
            entity.observations.append(observation)
            if observation.created > entity.updated:
                entity.updated = observation.created
        else:
            raise InvalidInputError(f"unknown kind {kind!r}")
        self._stale_search.add(entity.id)

    def _apply_relation_lines(self, month: str, file: str, lines: list[ParsedLine]) -> None:
        # The hottest loop of a load (300,000 records in the benchmark): names are bound
        # locally and a named tuple is built with tuple.__new__ (its constructor is Python).
        entities, predicates, relations = self._entities, self._predicates, self._relations
        by_entity = self._relations_by_entity
        intern, new_tuple = sys.intern, tuple.__new__
        for number, record, _ in lines:
            try:
                src, dst, rel = record["src"], record["dst"], record["rel"]  # type: ignore[index]
                # A known entity's id was checked when it was loaded, and sharing its string
                # saves holding hundreds of thousands of copies; unknown ends get the full check.
                known_src, known_dst = entities.get(src), entities.get(dst)
                src = known_src.id if known_src is not None else intern(check_id(src, "src"))
                dst = known_dst.id if known_dst is not None else intern(check_id(dst, "dst"))
                if rel not in predicates:
                    predicates.add(intern(check_predicate(rel)))
                context = record.get("context", "")  # type: ignore[union-attr]
                if type(context) is not str:
                    raise InvalidInputError(f"context must be a string, got {type(context).__name__}")
                relation: Relation = new_tuple(
                    Relation,
                    (src, intern(rel), dst, context, _timestamp(record["created"]), month),  # type: ignore[index]
                )
            except (InvalidInputError, KeyError, TypeError) as exc:
                self._problem(file, number, f"bad record: {exc}")
                continue
            relations.append(relation)
            if src in by_entity:
                by_entity[src].append(relation)
            else:
                by_entity[src] = [relation]
            if dst != src:
                if dst in by_entity:
                    by_entity[dst].append(relation)
                else:
                    by_entity[dst] = [relation]


class Transaction:
    """Records checked against the fresh view and queued; written together by `commit`."""

    def __init__(self, store: KnowledgeStore) -> None:
        self._store = store
        self._pending: dict[Path, list[bytes]] = {}
        self._new_ids: dict[str, str] = {}  # id -> category, for entities created in this transaction
        self._new_relations: set[tuple[str, str, str]] = set()

    def _category_of(self, entity_id: str) -> str | None:
        entity = self._store.find(entity_id)
        return entity.category if entity is not None else self._new_ids.get(entity_id)

    def exists(self, entity_id: str) -> bool:
        return self._category_of(entity_id) is not None

    def has_relation(self, src: str, rel: str, dst: str) -> bool:
        key = (src, rel, dst)
        return key in self._new_relations or self._store.has_relation(src, rel, dst)

    def _queue(self, path: Path, record: dict[str, Any]) -> None:
        self._pending.setdefault(path, []).append(encode_record(record))

    def add_entity(
        self,
        category: str,
        entity_id: str,
        type: str,
        name: str,
        desc: str,
        tags: Sequence[str] | None = None,
    ) -> None:
        store = self._store
        category = check_category(category, store.categories)
        entity_id = check_id(entity_id)
        entity_type = check_type(type)
        name = check_line(name, "name", MAX_NAME_LENGTH)
        desc = check_text(desc, "desc", MAX_DESC_LENGTH, required=False)
        checked_tags = check_tags(list(tags) if tags is not None else None)
        existing = self._category_of(entity_id)
        if existing is not None:
            raise EntityExistsError(
                f"entity {entity_id!r} already exists (category {existing!r}); knowledge is append-only, "
                "so it is never overwritten: record new facts about it with add_observation"
            )
        now = store.now()
        entity = Entity(entity_id, category, entity_type, name, desc, checked_tags, now, now)
        self._queue(store.layout.entity_file(category), entity_record(entity))
        self._new_ids[entity_id] = category

    def add_observation(self, entity_id: str, text: str) -> None:
        entity_id = check_id(entity_id)
        text = check_text(text, "text", MAX_OBSERVATION_LENGTH)
        category = self._category_of(entity_id)
        if category is None:
            raise EntityNotFoundError(f"no entity with id {entity_id!r}")
        observation = Observation(text, self._store.now())
        self._queue(self._store.layout.entity_file(category), observation_record(entity_id, observation))

    def connect(self, src: str, rel: str, dst: str, context: str = "") -> Relation:
        src = check_id(src, "src")
        rel = check_predicate(rel)
        dst = check_id(dst, "dst")
        context = check_text(context, "context", MAX_CONTEXT_LENGTH, required=False)
        for end, entity_id in (("src", src), ("dst", dst)):
            if not self.exists(entity_id):
                raise EntityNotFoundError(f"{end} {entity_id!r} is not a recorded entity: add it first")
        if self.has_relation(src, rel, dst):
            raise RelationExistsError(f"{src} -{rel}-> {dst} is already recorded")
        created = self._store.now()
        year, month = created[0:4], created[5:7]
        relation = Relation(src, rel, dst, context, created, f"{year}/{month}")
        self._queue(self._store.layout.relation_file(year, month), relation.to_json())
        self._new_relations.add(relation.key)
        return relation

    def commit(self) -> None:
        # Entity files first: a crash between files can lose relations, never leave them dangling.
        paths = sorted(self._pending, key=lambda path: (path.parent.name != "entities", str(path)))
        for path in paths:
            append_lines(path, b"".join(self._pending[path]))
        self._pending.clear()


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    return value


def _timestamp(value: Any) -> str:
    if not isinstance(value, str) or len(value) != 20 or value[4] != "-" or value[-1] != "Z":
        raise InvalidInputError(f"timestamp {value!r} is not of the form YYYY-MM-DDTHH:MM:SSZ")
    return value
