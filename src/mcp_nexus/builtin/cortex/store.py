"""The knowledge store: an in-memory view derived from append-only JSONL files.

The files are the truth. Every operation first reads what other threads or processes
appended since the last look (under the folder lock), so several servers and CLI runs can
share one folder. Writes go through a `Transaction`, which checks the rules against that
fresh view plus its own pending records, appends everything at once, and then reads its
own lines back: there is one code path that turns records into the view.

A cold load of a large folder does only what a search needs: it parses the entity files
(one orjson call per file) and builds the entities. Relation lines are read under the same
lock but parsed on the first question about relations, the word index is built by the
first search, and the relations by entity on first need; `prepare_search` and
`prepare_relations` do either ahead of time (the MCP server does, in the background).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, KeysView, Sequence
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
    WriteFailedError,
)
from mcp_nexus.builtin.cortex.gc_pause import garbage_collector_paused
from mcp_nexus.builtin.cortex.jsonl import (
    NO_NEW_LINES,
    NewLines,
    ParkedLines,
    ParsedChunk,
    ReadPosition,
    append_lines,
    encode_record,
    folder_lock,
    parse_lines,
    read_new_lines,
    truncate_back,
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
    ID_REGEX,
    MAX_CONTEXT_LENGTH,
    MAX_DESC_LENGTH,
    MAX_ID_LENGTH,
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
    normalize_predicate,
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
        # relation) and answered by a scan, which keeps loading lean. By entity: see _by_entity.
        self._relations_by_entity: dict[str, list[Relation]] | None = None
        # Relation lines read but not parsed yet (see _load_relations), and whether anyone
        # asked about relations yet (from then on, new lines are parsed as they are read).
        self._unparsed_relations: list[tuple[str, str, ParkedLines]] = []
        self._relations_wanted = False
        self._problems: dict[tuple[str, int], LoadProblem] = {}
        self._search = FuzzySearchIndex()
        self._predicates: dict[str, str] = {}  # predicates already checked, to their shared string

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
        self._load_relations()
        return list(self._relations)

    def relation_count(self) -> int:
        self._load_relations()
        return len(self._relations)

    def relations_of(self, entity_id: str) -> list[Relation]:
        """Every relation with `entity_id` at either end, in recording order."""
        return list(self._by_entity().get(entity_id, ()))

    def has_relation(self, src: str, rel: str, dst: str) -> bool:
        return any(r.rel == rel and r.src == src and r.dst == dst for r in self._by_entity().get(src, ()))

    def degree(self, entity_id: str) -> int:
        return len(self._by_entity().get(entity_id, ()))

    def relations_in_month(self, year: str, month: str) -> list[Relation]:
        year, month = check_year_month(year, month)
        key = f"{year}/{month}"
        self._load_relations()
        return [relation for relation in self._relations if relation.month == key]

    def months(self) -> list[str]:
        self._load_relations()
        return sorted({relation.month for relation in self._relations})

    def problems(self) -> list[LoadProblem]:
        """Every line that could not be used, by file and line."""
        self._load_relations()  # their problems are found when they are parsed
        return sorted(self._problems.values(), key=lambda problem: (problem.file, problem.line))

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """The best entities for `query`; the first search after a load builds the word index."""
        with self._mutex:
            return self._search.search(query, limit)

    def prepare_search(self) -> None:
        """Bring the search index up to date now (e.g. in the background after a load)."""
        with self._mutex:
            self._search.catch_up()

    def prepare_relations(self) -> None:
        """Parse the relations and index them by entity now, rather than on first need."""
        self._by_entity()

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
        with garbage_collector_paused():
            changed: dict[str, Entity] = {}
            for category, path in self.layout.category_files():
                name, lines = self._read(path)
                if lines.line_count:
                    self._apply_entity_records(category, name, self._parse(name, lines), changed)
            for month, path in self.layout.month_files():
                name, lines = self._read(path)
                if not lines.line_count:
                    continue
                if self._relations_wanted:
                    self._apply_relation_records(month, name, self._parse(name, lines))
                else:
                    self._unparsed_relations.append((month, name, ParkedLines(lines)))
            # Changed entities are handed over once each; the index re-reads them when
            # the next search needs it, so reads and writes never pay for indexing.
            if changed:
                self._search.upsert_many(changed.values())

    def _load_relations(self) -> None:
        """Parse the relation lines read so far; from now on they are parsed as they are read.

        A cold load leaves them unparsed, so that a search (which never needs them) is
        answered without waiting for 300,000 relations; the first question about relations
        parses them, and `prepare_relations` does it ahead of time.
        """
        with self._mutex:
            self._relations_wanted = True
            if self._unparsed_relations:
                with garbage_collector_paused():
                    self._parse_relations_locked()

    def _parse_relations_locked(self) -> None:
        pending, self._unparsed_relations = self._unparsed_relations, []
        pending.reverse()
        while pending:  # each file's bytes are let go as soon as they are parsed
            month, name, parked = pending.pop()
            self._apply_relation_records(month, name, self._parse(name, parked.take()))

    def _read(self, path: Path) -> tuple[str, NewLines]:
        """The complete lines appended to `path` since the last read; torn ones are reported."""
        position = self._positions.setdefault(path, ReadPosition())
        name = path.relative_to(self.root).as_posix()
        try:
            if path.stat().st_size < position.offset:
                reason = "the file shrank: history was rewritten outside the cortex"
                self._problem(name, position.lines, reason)
                return name, NO_NEW_LINES
            lines, torn = read_new_lines(path, position)
        except OSError as exc:
            self._problem(name, position.lines, f"cannot read: {exc}")
            return name, NO_NEW_LINES
        if torn is not None:
            reason = f"torn last line ({torn.length} bytes without a newline, e.g. from a crash): ignored"
            self._problem(name, torn.number, reason)
        return name, lines

    def _parse(self, name: str, lines: NewLines) -> ParsedChunk:
        chunk = parse_lines(lines)
        for number, reason in chunk.bad_lines:
            self._problem(name, number, reason)
        return chunk

    def _problem(self, file: str, line: int, reason: str) -> None:
        if (file, line) not in self._problems:
            problem = LoadProblem(file, line, reason)
            self._problems[(file, line)] = problem
            logger.warning("cortex: %s line %d: %s", file, line, reason)

    def _apply_entity_records(
        self, category: str, file: str, chunk: ParsedChunk, changed: dict[str, Entity]
    ) -> None:
        # One of the two hot loops of a load: the checks are written out inline (a function
        # call per field costs more than the check) and say the same as the helpers below.
        entities, intern, new_tuple = self._entities, sys.intern, tuple.__new__
        id_match = ID_REGEX.fullmatch
        for index, record in enumerate(chunk.records):
            try:
                kind = record.get("kind")
                raw_id = record["id"]
                if kind == "observation":
                    # A known id was checked when its entity was loaded.
                    entity = entities.get(raw_id) if type(raw_id) is str else None  # type: ignore[assignment]
                    if entity is None:
                        raise InvalidInputError(f"observation for unknown entity {check_id(raw_id)!r}")
                    text = record["text"]
                    if type(text) is not str:
                        _string(text, "text")
                    created = record["created"]
                    if not (
                        type(created) is str
                        and len(created) == 20
                        and created[4] == "-"
                        and created[19] == "Z"
                    ):
                        _timestamp(created)
                    entity.observations.append(new_tuple(Observation, (text, created)))
                    if created > entity.updated:
                        entity.updated = created
                elif kind == "entity":
                    if not (type(raw_id) is str and len(raw_id) <= MAX_ID_LENGTH and id_match(raw_id)):
                        check_id(raw_id)
                    entity_id = raw_id
                    known = entities.get(entity_id)
                    if known is not None:
                        raise InvalidInputError(f"duplicate entity {entity_id!r} (first in {known.category})")
                    created = _timestamp(record["created"])
                    entity_type = record["type"]
                    if type(entity_type) is not str:
                        _string(entity_type, "type")
                    name = record["name"]
                    if type(name) is not str:
                        _string(name, "name")
                    desc = record.get("desc", "")
                    if type(desc) is not str:
                        _string(desc, "desc")
                    raw_tags = record.get("tags") or ()
                    try:
                        tags = list(map(intern, raw_tags))
                    except TypeError:  # let the check name the bad tag
                        tags = [_string(tag, "tag") for tag in raw_tags]
                    updated = record.get("updated", created)
                    # Equal (the usual case): keep one string for both, not two copies.
                    updated = created if updated == created else max(created, _timestamp(updated))
                    entity = Entity(
                        intern(entity_id), category, intern(entity_type), name, desc, tags, created, updated
                    )
                    entities[entity.id] = entity
                else:
                    check_id(raw_id)  # a bad id is the first problem named, whatever the kind
                    raise InvalidInputError(f"unknown kind {kind!r}")
            except (InvalidInputError, KeyError, TypeError) as exc:
                self._problem(file, chunk.numbers[index], f"bad record: {exc}")
                continue
            changed[entity.id] = entity

    def _apply_relation_records(self, month: str, file: str, chunk: ParsedChunk) -> None:
        # The hottest loop of a load (300,000 records in the benchmark). The ends are checked
        # against the id pattern inline (a function call costs more than the check) rather
        # than looked up among the entities; sys.intern then hands an end that names an
        # entity that entity's own id string, so the relations hold no copies of ids. Names
        # are bound locally and a named tuple is built with tuple.__new__ (its constructor
        # is Python).
        predicates, relations = self._predicates, self._relations
        id_match, new_tuple = ID_REGEX.fullmatch, tuple.__new__
        share = sys.intern  # an end that is an entity gets the entity's own id string
        first_new = len(relations)
        for index, record in enumerate(chunk.records):
            try:
                src, dst, rel = record["src"], record["dst"], record["rel"]
                if not (type(src) is str and len(src) <= MAX_ID_LENGTH and id_match(src)):
                    check_id(src, "src")
                if not (type(dst) is str and len(dst) <= MAX_ID_LENGTH and id_match(dst)):
                    check_id(dst, "dst")
                predicate = predicates.get(rel)  # one shared string per predicate
                if predicate is None:
                    predicate = predicates[rel] = sys.intern(check_predicate(rel))
                context = record.get("context", "")
                if type(context) is not str:
                    raise InvalidInputError(f"context must be a string, got {type(context).__name__}")
                created = record["created"]
                if not (
                    type(created) is str and len(created) == 20 and created[4] == "-" and created[19] == "Z"
                ):
                    _timestamp(created)
            except (InvalidInputError, KeyError, TypeError) as exc:
                self._problem(file, chunk.numbers[index], f"bad record: {exc}")
                continue
            relations.append(
                new_tuple(Relation, (share(src), predicate, share(dst), context, created, month))
            )
        if self._relations_by_entity is not None:
            _index_by_entity(self._relations_by_entity, relations[first_new:])

    def _by_entity(self) -> dict[str, list[Relation]]:
        """Relations by the entity at either end, built on first need and kept up to date after.

        Not built while loading: a search never needs it, and at 300,000 relations it is the
        slowest part of a load (every relation lands in two lists spread over memory).
        """
        ready = self._relations_by_entity
        if ready is not None and not self._unparsed_relations:
            return ready  # the usual case, asked once per entity by the entropy report
        with self._mutex:
            self._load_relations()
            if self._relations_by_entity is None:
                by_entity: dict[str, list[Relation]] = {}
                with garbage_collector_paused():
                    _index_by_entity(by_entity, self._relations)
                self._relations_by_entity = by_entity
            return self._relations_by_entity


def _index_by_entity(by_entity: dict[str, list[Relation]], relations: Iterable[Relation]) -> None:
    """Add each relation to the lists of both its ends (once if they are the same)."""
    get = by_entity.get
    for relation in relations:
        src, dst = relation[0], relation[2]
        found = get(src)
        if found is None:
            by_entity[src] = [relation]
        else:
            found.append(relation)
        if dst != src:
            found = get(dst)
            if found is None:
                by_entity[dst] = [relation]
            else:
                found.append(relation)


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
        rel = normalize_predicate(rel)
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
        done: list[tuple[Path, int]] = []
        try:
            for path in paths:
                done.append((path, append_lines(path, b"".join(self._pending[path]))))
        except WriteFailedError:
            for written, size in reversed(done):  # all or nothing: the files written before too
                truncate_back(written, size)
            raise
        finally:
            self._pending.clear()


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    return value


def _timestamp(value: Any) -> str:
    if not isinstance(value, str) or len(value) != 20 or value[4] != "-" or value[-1] != "Z":
        raise InvalidInputError(f"timestamp {value!r} is not of the form YYYY-MM-DDTHH:MM:SSZ")
    return value
