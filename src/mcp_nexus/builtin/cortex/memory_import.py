"""Import a knowledge graph written by the reference server-memory (npm).

server-memory stores one JSON object a line:
`{"type":"entity","name":...,"entityType":...,"observations":[...]}` and
`{"type":"relation","from":...,"to":...,"relationType":...}`. The mapping:

- name -> id: the name folded to ASCII and kebab-cased ("John Smith" -> "john-smith");
  the name itself is kept as `name`.
- entityType -> type (snake_case) and a category: by `category_map`, else by a small
  built-in table (person -> people, framework -> tech_stack, ...), else the default.
- observations -> the first becomes `desc`, the others observation records.
- relationType -> rel (snake_case); from/to -> src/dst through the same name -> id map.

An entity already in the folder under the same id and name gets only the observations it
lacks, so importing the same file twice adds nothing. Whatever cannot be mapped is listed
with its line number and the reason, and the rest is imported.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_nexus.builtin.cortex.errors import CortexError, InvalidInputError
from mcp_nexus.builtin.cortex.store import KnowledgeStore, Transaction
from mcp_nexus.builtin.cortex.validation import MAX_ID_LENGTH, check_category

IMPORT_CONTEXT = "imported from server-memory"
IMPORT_TAG = "server-memory"

BUILTIN_TYPE_TO_CATEGORY: dict[str, str] = {
    "person": "people",
    "people": "people",
    "user": "people",
    "human": "people",
    "team_member": "people",
    "project": "projects",
    "repository": "projects",
    "repo": "projects",
    "product": "projects",
    "technology": "tech_stack",
    "framework": "tech_stack",
    "library": "tech_stack",
    "language": "tech_stack",
    "programming_language": "tech_stack",
    "tool": "tech_stack",
    "database": "tech_stack",
    "service": "tech_stack",
    "concept": "concepts",
    "idea": "concepts",
    "topic": "concepts",
}


@dataclass(frozen=True, slots=True)
class ImportIssue:
    line: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "reason": self.reason}


@dataclass(slots=True)
class ImportReport:
    """What an import did, and what it could not do."""

    source: str
    entities_added: int = 0
    entities_merged: int = 0
    observations_added: int = 0
    relations_added: int = 0
    relations_already_present: int = 0
    unmapped: list[ImportIssue] = field(default_factory=list)
    warnings: list[ImportIssue] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)  # server-memory name -> cortex id

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "entities_added": self.entities_added,
            "entities_merged": self.entities_merged,
            "observations_added": self.observations_added,
            "relations_added": self.relations_added,
            "relations_already_present": self.relations_already_present,
            "unmapped": [issue.to_json() for issue in self.unmapped],
            "warnings": [issue.to_json() for issue in self.warnings],
            "ids": dict(self.ids),
        }


def slugify(text: str, separator: str = "-") -> str:
    """ASCII-fold and lowercase `text`, joining its letter/digit runs with `separator`."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9]+", separator, folded).strip(separator)
    if len(slug) > MAX_ID_LENGTH:
        slug = slug[:MAX_ID_LENGTH].rstrip(separator)
    return slug


def import_memory_file(
    store: KnowledgeStore,
    source: str | Path,
    *,
    default_category: str | None = None,
    category_map: Mapping[str, str] | None = None,
) -> ImportReport:
    """Append the contents of a server-memory JSONL file to the store; see the module doc."""
    path = Path(source)
    default = default_category or ("concepts" if "concepts" in store.categories else store.categories[0])
    check_category(default, store.categories)
    type_map = {
        slugify(key, "_"): check_category(value, store.categories)
        for key, value in (category_map or {}).items()
    }
    report = ImportReport(source=str(path))
    try:
        raw_lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read {path}: {exc}") from exc

    entity_lines: list[tuple[int, dict[str, Any]]] = []
    relation_lines: list[tuple[int, dict[str, Any]]] = []
    for number, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except ValueError as exc:
            report.unmapped.append(ImportIssue(number, f"invalid JSON: {exc}"))
            continue
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "entity":
            entity_lines.append((number, item))
        elif kind == "relation":
            relation_lines.append((number, item))
        else:
            report.unmapped.append(ImportIssue(number, f"not an entity or relation record (type {kind!r})"))

    claimed: dict[str, str] = {}  # cortex id -> the server-memory name that took it
    with store.transaction() as transaction:
        for number, item in entity_lines:
            try:
                _import_entity(store, transaction, item, number, default, type_map, report, claimed)
            except CortexError as exc:
                report.unmapped.append(ImportIssue(number, str(exc)))
        for number, item in relation_lines:
            try:
                _import_relation(store, transaction, item, number, report)
            except CortexError as exc:
                report.unmapped.append(ImportIssue(number, str(exc)))
    report.unmapped.sort(key=lambda issue: issue.line)
    return report


def _category_for(entity_type: str, store: KnowledgeStore, default: str, type_map: Mapping[str, str]) -> str:
    if entity_type in type_map:
        return type_map[entity_type]
    builtin = BUILTIN_TYPE_TO_CATEGORY.get(entity_type)
    if builtin is not None and builtin in store.categories:
        return builtin
    return default


def _import_entity(
    store: KnowledgeStore,
    transaction: Transaction,
    item: dict[str, Any],
    number: int,
    default: str,
    type_map: Mapping[str, str],
    report: ImportReport,
    claimed: dict[str, str],
) -> None:
    name, entity_type, observations = item.get("name"), item.get("entityType"), item.get("observations", [])
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError("entity without a usable name")
    if not isinstance(entity_type, str):
        raise InvalidInputError(f"entity {name!r} has no entityType string")
    if not isinstance(observations, list):
        raise InvalidInputError(f"entity {name!r}: observations is not a list")
    entity_id = slugify(name)
    if not entity_id:
        raise InvalidInputError(
            f"entity {name!r}: the name has no ASCII letters or digits to build an id from"
        )
    texts = []
    for index, text in enumerate(observations):
        if isinstance(text, str) and text.strip():
            texts.append(text.strip())
        else:
            report.warnings.append(
                ImportIssue(number, f"entity {name!r}: observation {index} is not text: skipped")
            )

    claimed_by = claimed.get(entity_id)
    if claimed_by is not None:
        raise InvalidInputError(f"entity {name!r} maps to id {entity_id!r}, already taken by {claimed_by!r}")
    existing = store.find(entity_id)
    if existing is not None:
        if existing.name.casefold() != name.strip().casefold():
            raise InvalidInputError(
                f"entity {name!r} maps to id {entity_id!r}, "
                f"which already names a different entity ({existing.name!r})"
            )
        known_texts = {existing.desc, *(observation.text for observation in existing.observations)}
        added = _add_observations(
            transaction, entity_id, [t for t in texts if t not in known_texts], number, report
        )
        report.ids[name] = entity_id
        claimed[entity_id] = name
        if added:
            report.entities_merged += 1
        return

    cortex_type = slugify(entity_type, "_")
    if not cortex_type or not cortex_type[0].isalpha():
        report.warnings.append(
            ImportIssue(number, f"entity {name!r}: entityType {entity_type!r} -> type 'unknown'")
        )
        cortex_type = "unknown"
    category = _category_for(cortex_type, store, default, type_map)
    desc = texts[0] if texts else ""
    transaction.add_entity(category, entity_id, cortex_type, name, desc, tags=[IMPORT_TAG])
    report.ids[name] = entity_id
    claimed[entity_id] = name
    report.entities_added += 1
    _add_observations(transaction, entity_id, texts[1:], number, report)


def _add_observations(
    transaction: Transaction, entity_id: str, texts: list[str], number: int, report: ImportReport
) -> int:
    added = 0
    for text in dict.fromkeys(texts):  # keeps order, drops repeats
        try:
            transaction.add_observation(entity_id, text)
        except CortexError as exc:
            report.warnings.append(ImportIssue(number, f"observation of {entity_id!r} skipped: {exc}"))
            continue
        added += 1
    report.observations_added += added
    return added


def _import_relation(
    store: KnowledgeStore, transaction: Transaction, item: dict[str, Any], number: int, report: ImportReport
) -> None:
    source, target, relation_type = item.get("from"), item.get("to"), item.get("relationType")
    if not (isinstance(source, str) and isinstance(target, str) and isinstance(relation_type, str)):
        raise InvalidInputError("relation without from/to/relationType strings")
    ends = []
    for end, name in (("from", source), ("to", target)):
        entity_id = report.ids.get(name)
        if entity_id is None:
            # Not in this file: an entity recorded earlier under the same name still counts.
            recorded = store.find(slugify(name))
            if recorded is not None and recorded.name.casefold() == name.strip().casefold():
                entity_id = recorded.id
        if entity_id is None or not transaction.exists(entity_id):
            raise InvalidInputError(f"relation {end} {name!r} names no imported or recorded entity")
        ends.append(entity_id)
    rel = slugify(relation_type, "_")
    if not rel or not rel[0].isalpha():
        raise InvalidInputError(f"relationType {relation_type!r} cannot be made a predicate (a-z, 0-9, '_')")
    if transaction.has_relation(ends[0], rel, ends[1]):
        report.relations_already_present += 1
        return
    transaction.connect(ends[0], rel, ends[1], IMPORT_CONTEXT)
    report.relations_added += 1
