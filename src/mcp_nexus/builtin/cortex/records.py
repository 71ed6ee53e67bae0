"""The values the knowledge base is made of, and their JSON form on disk and on the wire."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

# Timestamps are stored as fixed-width UTC strings, so comparing two of them as strings
# compares the instants (the stale-node check relies on it).
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def format_timestamp(moment: datetime) -> str:
    """`2026-02-03T10:00:00Z` for any aware or naive-UTC datetime."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime(TIMESTAMP_FORMAT)


def utc_now() -> datetime:
    return datetime.now(UTC)


class Observation(NamedTuple):
    """A note appended to an entity after it was created."""

    text: str
    created: str

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "created": self.created}


@dataclass(slots=True)
class Entity:
    """The current view of one entity: its creation record plus every later observation."""

    id: str
    category: str
    type: str
    name: str
    desc: str
    tags: list[str]
    created: str
    updated: str
    observations: list[Observation] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The entity without its observations (for lists and search hits)."""
        return {
            "id": self.id,
            "category": self.category,
            "type": self.type,
            "name": self.name,
            "desc": self.desc,
            "tags": list(self.tags),
            "created": self.created,
            "updated": self.updated,
        }

    def to_json(self) -> dict[str, Any]:
        view = self.summary()
        view["observations"] = [observation.to_json() for observation in self.observations]
        return view


class Relation(NamedTuple):
    """A directed, dated edge `src -rel-> dst`; `month` is the `YYYY/MM` file it lives in.

    A named tuple rather than a dataclass: a large graph holds hundreds of thousands, and
    tuples are both the cheapest to build and the smallest in memory.
    """

    src: str
    rel: str
    dst: str
    context: str
    created: str
    month: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.src, self.rel, self.dst)

    def to_json(self) -> dict[str, Any]:
        return {
            "src": self.src,
            "rel": self.rel,
            "dst": self.dst,
            "context": self.context,
            "created": self.created,
        }


def entity_record(entity: Entity) -> dict[str, Any]:
    """The line appended to a category file when an entity is created."""
    return {
        "kind": "entity",
        "id": entity.id,
        "type": entity.type,
        "name": entity.name,
        "desc": entity.desc,
        "tags": entity.tags,
        "created": entity.created,
        "updated": entity.updated,
    }


def observation_record(entity_id: str, observation: Observation) -> dict[str, Any]:
    """The line appended to the entity's category file for a new observation."""
    return {"kind": "observation", "id": entity_id, "text": observation.text, "created": observation.created}
