"""The cortex as an MCP server: tools and resources over one knowledge folder.

`create_server` is the factory both `nexus cortex serve` and the gateway's embedded
upstream call. It imports nothing from the gateway. No `from __future__ import annotations` here: the tool
signatures use local annotated types (the category enum), which must be real objects.
"""

import json
import logging
import os
import threading
from collections.abc import Callable
from datetime import datetime
from functools import wraps
from typing import Annotated, Any, ParamSpec, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from mcp_nexus import __version__
from mcp_nexus.builtin.cortex.entropy import DEFAULT_DUPLICATE_THRESHOLD, build_entropy_report
from mcp_nexus.builtin.cortex.errors import CortexError, EntityNotFoundError, InvalidInputError
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
    PREDICATE_INPUT_PATTERN,
    TYPE_PATTERN,
    check_id,
    check_type,
)
from mcp_nexus.builtin.numeric_text import AcceptsQuotedInteger

INSTRUCTIONS = """\
A shared, append-only knowledge graph. Search before adding (search_knowledge), add an
entity once (add_entity: ids are kebab-case slugs and never reused), record later facts
with add_observation, and link entities with connect_entities (rel such as uses,
depends_on; depends-on or dependsOn are stored as depends_on). get_entropy_report shows
orphans, stale nodes and near-duplicates to tidy. Resources:
knowledge://entities/{category}/{id} (or the entity's type in place of its category, e.g.
knowledge://entities/concept/mcp-protocol), knowledge://relations/{year}/{month},
knowledge://stats/entropy."""

logger = logging.getLogger(__name__)

MAX_OPEN_IDS = 100
MAX_READ_GRAPH_LIMIT = 5_000

P = ParamSpec("P")
R = TypeVar("R")


def _tool_error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _as_tool_errors(fn: Callable[P, R]) -> Callable[P, R | CallToolResult]:
    """Report deliberate cortex errors to the caller as `[code] ...`; the SDK hides any other exception.

    The error result is returned rather than raised: a raised `ToolError` reaches the
    caller as "Error executing tool <name>: [code] ...", and the text must start with the
    code. (A returned error result is not checked against the tool's output schema.)
    """

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | CallToolResult:
        try:
            return fn(*args, **kwargs)
        except CortexError as exc:
            return _tool_error(str(exc))

    return wrapper


def _describe_argument_errors(error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        problem = f"{where}: {item['msg']}"
        if item["type"] != "missing":
            shown = repr(item.get("input"))
            problem += f" (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
        problems.append(problem)
    return "; ".join(problems)


class CortexServer(MCPServer):
    """The SDK's server, with argument errors reported like every other cortex error.

    The SDK checks the arguments against the tool's signature before the tool runs and
    reports a failure as "Error executing tool <name>: 1 validation error for ...". Here it
    becomes `[invalid_input] <argument>: <rule> (got <value>)`, so every deliberate error
    of a cortex tool starts with its code.
    """

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            logger.info("cortex: tool %r refused its arguments", name)
            return _tool_error(
                f"[{InvalidInputError.code}] {name}: {_describe_argument_errors(exc.__cause__)}"
            )


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
    server: MCPServer = CortexServer(name, version=__version__, instructions=INSTRUCTIONS)
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
                description=(
                    "Predicate, e.g. uses, depends_on, part_of; stored in snake_case, so "
                    "depends-on, 'depends on' and dependsOn are all recorded as depends_on"
                ),
                json_schema_extra={"pattern": PREDICATE_INPUT_PATTERN, "maxLength": MAX_PREDICATE_LENGTH},
            ),
        ],
        dst: entity_id,
        context: Annotated[
            str,
            Field(description="Why or where this holds", json_schema_extra={"maxLength": MAX_CONTEXT_LENGTH}),
        ] = "",
    ) -> dict[str, Any]:
        """Record the relation src -rel-> dst between two existing entities (rel is stored in snake_case)."""
        return store.connect(src, rel, dst, context).to_json()

    @_as_tool_errors
    def search_knowledge(
        query: Annotated[str, Field(description="Words to look for; typos are tolerated", min_length=1)],
        limit: Annotated[
            int, Field(description="Most hits to return", ge=1, le=100), AcceptsQuotedInteger()
        ] = 10,
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
        relation_limit: Annotated[
            int, Field(description="Most relations to return", ge=0, le=5_000), AcceptsQuotedInteger()
        ] = 200,
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
            int,
            Field(description="Most entities and relations to return", ge=1, le=5_000),
            AcceptsQuotedInteger(),
        ] = 100,
        offset: Annotated[
            int, Field(description="Entities and relations to skip (paging)", ge=0), AcceptsQuotedInteger()
        ] = 0,
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
    # The design names the first segment {type} (knowledge://entities/concept/mcp-protocol);
    # entities are stored by category. Either one is accepted: see `_check_entity_segment`.
    @server.resource(
        "knowledge://entities/{category}/{id}",
        name="entity",
        description=(
            "One entity as JSON: its fields, observations and relations. The first segment is the "
            "entity's category (concepts, tech_stack, ...) or its type (concept, framework, ...)"
        ),
        mime_type="application/json",
    )
    @_as_resource_errors
    def entity_resource(category: str, id: str) -> str:
        segment = check_type(category)  # the wider of the two patterns; refuses traversal and look-alikes
        with store.snapshot():
            entity = store.get(id)
            _check_entity_segment(segment, entity.id, entity.category, entity.type)
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


def _check_entity_segment(segment: str, entity_id: str, category: str, entity_type: str) -> None:
    """The first segment of an entity URI must name the entity's category or its type.

    Ids are unique across the folder, so the id alone picks the entity and the segment can
    never select a different one: it only has to agree with it. A word that is both a
    category and a type (a category `person` beside entities of type `person` filed in
    `people`) is therefore never ambiguous: it reads the entity if it is either.
    """
    if segment in (category, entity_type):
        return
    raise EntityNotFoundError(
        f"entity {entity_id!r} is in category {category!r} and has type {entity_type!r}, "
        f"neither is {segment!r}: read knowledge://entities/{category}/{entity_id} "
        f"or knowledge://entities/{entity_type}/{entity_id}"
    )
