"""An upstream's tool list as index entries: exposed names, tags, traits; unchanged tools keep their time."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import mcp_types as types

from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.names import exposed_name, is_allowed
from mcp_nexus.catalog.tags import Tagger
from mcp_nexus.catalog.tool_names import name_problem
from mcp_nexus.catalog.tool_traits import tool_traits
from mcp_nexus.config.schema import ServerConfig


def entries_for_server(
    server: ServerConfig,
    tools: Iterable[types.Tool],
    *,
    separator: str,
    tagger: Tagger,
    now: str,
    previous: Mapping[str, IndexEntry] | None = None,
) -> tuple[IndexEntry, ...]:
    """Entries for the tools the server's filter exposes; `previous` (by tool name) keeps unchanged timestamps.

    `tools` should already be the catalog's admitted ones (tool_admission.py); a name no entry
    may hold (empty, control characters, ...) is skipped here too, so a saved index never
    carries one.
    """
    entries = []
    namespace = server.effective_namespace
    for tool in tools:
        if name_problem(tool.name) is not None or not is_allowed(tool.name, server.tools):
            continue
        annotations = (
            tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
            if tool.annotations
            else {}
        )
        description = tool.description or ""
        schema = dict(tool.input_schema or {})
        traits = tool_traits(server, tool.name, description, annotations, schema)
        name = exposed_name(namespace, tool.name, separator)
        tags = tagger.tags_for(tool.name, description, annotations)
        old = (previous or {}).get(tool.name)
        if (
            old is not None
            and (old.name, old.description, old.tags, old.blocking, old.cost_estimate)
            == (name, description, tags, traits.blocking, traits.cost_estimate)
            and old.input_schema == schema
            and old.annotations == annotations
        ):
            entries.append(old)  # the same tool as before: its entry (and last_updated) stays
            continue
        # Built from a validated types.Tool and our own computations: no second validation.
        entries.append(
            IndexEntry.model_construct(
                server_id=server.name,
                tool_name=tool.name,
                name=name,
                description=description,
                input_schema=schema,
                tags=tags,
                blocking=traits.blocking,
                cost_estimate=traits.cost_estimate,
                last_updated=now,
                annotations=annotations,
            )
        )
    return tuple(entries)
