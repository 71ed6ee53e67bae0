"""The cortex as an MCP server: tools and resources over one knowledge folder.

`create_server` is the factory both `nexus cortex serve` and the gateway's embedded
upstream call. It imports nothing from the gateway. No `from __future__ import annotations` here: the tool
signatures use local annotated types (the category enum), which must be real objects.
"""

import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import wraps
from typing import Annotated, Any, ParamSpec, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from mcp_nexus import __version__
from mcp_nexus.builtin.cortex.entropy import DEFAULT_DUPLICATE_THRESHOLD, build_entropy_report
from mcp_nexus.builtin.cortex.errors import CortexError, InvalidInputError
from mcp_nexus.builtin.cortex.records import utc_now
from mcp_nexus.builtin.cortex.settings import default_knowledge_dir
from mcp_nexus.builtin.cortex.store import KnowledgeStore
from mcp_nexus.builtin.cortex.validation import (
    ID_PATTERN,
    MAX_CONTEXT_LENGTH,
    MAX_DESC_LENGTH,
    MAX_ID_LENGTH,
    MAX_NAME_LENGTH,
    MAX_OBSERVATION_LENGTH,
    MAX_PREDICATE_LENGTH,
    MAX_TAGS,
    MAX_TYPE_LENGTH,
    PREDICATE_PATTERN,
    TYPE_PATTERN,
    check_category,
    check_id,
)

INSTRUCTIONS = """\
A shared, append-only knowledge graph. Search before adding (search_knowledge), add an
entity once (add_entity: ids are kebab-case slugs and never reused), record later facts
with add_observation, and link entities with connect_entities (rel such as uses,
depends_on). get_entropy_report shows orphans, stale nodes and near-duplicates to tidy.
Resources: knowledge://entities/{category}/{id}, knowledge://relations/{year}/{month},
knowledge://stats/entropy."""

logger = logging.getLogger(__name__)

MAX_OPEN_IDS = 100
MAX_READ_GRAPH_LIMIT = 5_000

P = ParamSpec("P")
R = TypeVar("R")


def _as_tool_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Report deliberate cortex errors to the caller; the SDK hides any other exception."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except CortexError as exc:
            raise ToolError(str(exc)) from exc

    return wrapper


def _as_resource_errors(fn: Callable[P, str]) -> Callable[P, str]:
    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> str:
        try:
            return fn(*args, **kwargs)
        except CortexError as exc:
            raise ResourceNotFoundError(str(exc)) from exc

    return wrapper


def create_server(
    knowledge_dir: str | os.PathLike[str] | None = None,
    categories: list[str] | None = None,
    stale_days: int = 30,
    *,
    name: str = "cortex",
    duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD,
    clock: Callable[[], datetime] = utc_now,
    preload: bool = True,
) -> MCPServer:
    """An MCP server over the knowledge folder `knowledge_dir` (default: see `default_knowledge_dir`)."""
    if isinstance(stale_days, bool) or not isinstance(stale_days, int) or stale_days < 1:
        raise InvalidInputError(f"stale_days must be a whole number of days >= 1, got {stale_days!r}")
    store = KnowledgeStore(
        knowledge_dir if knowledge_dir is not None else default_knowledge_dir(), categories, clock=clock
    )
    if preload:
        # Reading a large folder takes seconds: start now, in the background, so the first
        # call finds it loaded (a call that comes sooner waits for the load to finish).
        threading.Thread(target=_preload, args=(store,), name="cortex-preload", daemon=True).start()
    server: MCPServer = MCPServer(name, version=__version__, instructions=INSTRUCTIONS)
    _register_tools(server, store, stale_days, duplicate_threshold, clock)
    _register_resources(server, store, stale_days, duplicate_threshold, clock)
    return server


def _preload(store: KnowledgeStore) -> None:
    # Step by step, each under the store's mutex only while it runs: a call that comes in
    # between is answered at once, e.g. a search as soon as the entities and their index are in.
    try:
        store.refresh()
        store.prepare_search()
        store.prepare_relations()
    except OSError as exc:  # the next call reports it to its caller
        logger.warning("cortex: preloading %s failed: %s", store.root, exc)


def _register_tools(
    server: MCPServer,
    store: KnowledgeStore,
    stale_days: int,
    duplicate_threshold: float,
    clock: Callable[[], datetime],
) -> None:
    categories = list(store.categories)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
    reads = ToolAnnotations(read_only_hint=True)

    # The schema publishes the rules (enum, pattern, lengths); the checks themselves run in
    # `validation`, whose errors say exactly what is wrong with a value.
    entity_id = Annotated[
        str,
        Field(
            description="Kebab-case slug, e.g. 'fast-api'",
            json_schema_extra={"pattern": ID_PATTERN, "minLength": 1, "maxLength": MAX_ID_LENGTH},
        ),
    ]

    @_as_tool_errors
    def add_entity(
        category: Annotated[
            str, Field(description="Where the entity belongs", json_schema_extra={"enum": categories})
        ],
        id: entity_id,
        type: Annotated[
            str,
            Field(
                description="What kind of thing it is, e.g. concept, framework, person",
                json_schema_extra={"pattern": TYPE_PATTERN, "maxLength": MAX_TYPE_LENGTH},
            ),
        ],
        name: Annotated[
            str, Field(description="Display name", json_schema_extra={"maxLength": MAX_NAME_LENGTH})
        ],
        desc: Annotated[
            str,
            Field(
                description="What it is, in a few sentences", json_schema_extra={"maxLength": MAX_DESC_LENGTH}
            ),
        ],
        tags: Annotated[
            list[str] | None, Field(description="Short labels", json_schema_extra={"maxItems": MAX_TAGS})
        ] = None,
    ) -> dict[str, Any]:
        """Record a new entity. Fails with [entity_exists] if the id is taken: use add_observation instead."""
        return store.add_entity(category, id, type, name, desc, tags).to_json()

    @_as_tool_errors
    def connect_entities(
        src: entity_id,
        rel: Annotated[
            str,
            Field(
                description="Predicate in snake_case, e.g. uses, depends_on, part_of",
                json_schema_extra={"pattern": PREDICATE_PATTERN, "maxLength": MAX_PREDICATE_LENGTH},
            ),
        ],
        dst: entity_id,
        context: Annotated[
            str,
            Field(description="Why or where this holds", json_schema_extra={"maxLength": MAX_CONTEXT_LENGTH}),
        ] = "",
    ) -> dict[str, Any]:
        """Record the relation src -rel-> dst between two existing entities."""
        return store.connect(src, rel, dst, context).to_json()

    @_as_tool_errors
    def search_knowledge(
        query: Annotated[str, Field(description="Words to look for; typos are tolerated", min_length=1)],
        limit: Annotated[int, Field(description="Most hits to return", ge=1, le=100)] = 10,
    ) -> dict[str, Any]:
        """Fuzzy, ranked search over entity names, descriptions, tags and observations."""
        with store.snapshot():
            hits = store.search(query, limit)
            results = []
            for hit in hits:
                summary = store.get(hit.entity_id).summary()
                summary.update(score=hit.score, matched=hit.matched)
                results.append(summary)
        return {"query": query, "count": len(results), "results": results}

    @_as_tool_errors
    def get_entropy_report() -> dict[str, Any]:
        """Counts, density, orphans, stale nodes, dangling relations, near-duplicates, per-category counts."""
        with store.snapshot():
            return build_entropy_report(
                store, stale_days=stale_days, now=clock(), duplicate_threshold=duplicate_threshold
            )

    @_as_tool_errors
    def add_observation(
        id: entity_id,
        text: Annotated[
            str,
            Field(
                description="The new fact or note", json_schema_extra={"maxLength": MAX_OBSERVATION_LENGTH}
            ),
        ],
    ) -> dict[str, Any]:
        """Append an observation to an entity (its earlier records stay as they are)."""
        return store.add_observation(id, text).to_json()

    @_as_tool_errors
    def open_entities(
        ids: Annotated[list[str], Field(description="Entity ids", min_length=1, max_length=MAX_OPEN_IDS)],
        relation_limit: Annotated[int, Field(description="Most relations to return", ge=0, le=5_000)] = 200,
    ) -> dict[str, Any]:
        """Entities with their observations, plus the relations touching any of them."""
        with store.snapshot():
            found, missing = [], []
            relations: dict[tuple[str, str, str], dict[str, Any]] = {}
            for raw in ids:
                entity = store.find(check_id(raw))
                if entity is None:
                    missing.append(raw)
                    continue
                found.append(entity.to_json())
                for relation in store.relations_of(entity.id):
                    relations.setdefault(relation.key, relation.to_json())
        listed = list(relations.values())
        return {
            "entities": found,
            "missing": missing,
            "relations": listed[:relation_limit],
            "relations_total": len(listed),
        }

    @_as_tool_errors
    def read_graph(
        limit: Annotated[
            int, Field(description="Most entities and relations to return", ge=1, le=5_000)
        ] = 100,
        offset: Annotated[int, Field(description="Entities and relations to skip (paging)", ge=0)] = 0,
    ) -> dict[str, Any]:
        """A page of the whole graph, oldest records first, with the totals."""
        with store.snapshot():
            entities = store.entities()
            relations = store.relations()
        page_entities = entities[offset : offset + limit]
        page_relations = relations[offset : offset + limit]
        return {
            "entities": [entity.to_json() for entity in page_entities],
            "relations": [relation.to_json() for relation in page_relations],
            "total_entities": len(entities),
            "total_relations": len(relations),
            "offset": offset,
            "truncated": offset + limit < max(len(entities), len(relations)),
        }

    server.add_tool(add_entity, annotations=writes)
    server.add_tool(connect_entities, annotations=writes)
    server.add_tool(add_observation, annotations=writes)
    server.add_tool(search_knowledge, annotations=reads)
    server.add_tool(open_entities, annotations=reads)
    server.add_tool(read_graph, annotations=reads)
    server.add_tool(get_entropy_report, annotations=reads)


def _register_resources(
    server: MCPServer,
    store: KnowledgeStore,
    stale_days: int,
    duplicate_threshold: float,
    clock: Callable[[], datetime],
) -> None:
    # The issue names the first segment {type}; paths are by category, so it is the
    # entity's category (concepts, tech_stack, ...), which together with the id is unique.
    @server.resource(
        "knowledge://entities/{category}/{id}",
        name="entity",
        description="One entity as JSON: its fields, observations and relations",
        mime_type="application/json",
    )
    @_as_resource_errors
    def entity_resource(category: str, id: str) -> str:
        category = check_category(category, _known_categories(store))
        with store.snapshot():
            entity = store.get(id)
            if entity.category != category:
                raise InvalidInputError(f"entity {id!r} is in category {entity.category!r}, not {category!r}")
            view = entity.to_json()
            view["relations"] = [relation.to_json() for relation in store.relations_of(entity.id)]
        return json.dumps(view, ensure_ascii=False, indent=2)

    @server.resource(
        "knowledge://relations/{year}/{month}",
        name="relations-of-month",
        description="Every relation recorded in one month (UTC), oldest first",
        mime_type="application/json",
    )
    @_as_resource_errors
    def relations_resource(year: str, month: str) -> str:
        with store.snapshot():
            relations = store.relations_in_month(year, month)
        payload = {
            "month": f"{year}/{month}",
            "count": len(relations),
            "relations": [r.to_json() for r in relations],
        }
        return json.dumps(payload, ensure_ascii=False, indent=2)

    @server.resource(
        "knowledge://stats/entropy",
        name="entropy-report",
        description="The current entropy report (same as the get_entropy_report tool)",
        mime_type="application/json",
    )
    def entropy_resource() -> str:
        with store.snapshot():
            report = build_entropy_report(
                store, stale_days=stale_days, now=clock(), duplicate_threshold=duplicate_threshold
            )
        return json.dumps(report, ensure_ascii=False, indent=2)


def _known_categories(store: KnowledgeStore) -> Sequence[str]:
    """Configured categories plus any found on disk (entities there stay readable)."""
    on_disk = [category for category, _ in store.layout.category_files()]
    return list(dict.fromkeys([*store.categories, *on_disk]))
