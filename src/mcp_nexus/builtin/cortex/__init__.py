"""Nexus Cortex: a knowledge graph in append-only JSONL files, served over MCP.

Standalone: `nexus cortex serve`. Embedded in the gateway:
`{"type": "embedded", "module": "mcp_nexus.builtin.cortex.server:create_server"}`.
The package imports nothing of the gateway; `server` is imported only when serving, so
the `nexus` command line does not pay for the MCP SDK on every start.
"""

from mcp_nexus.builtin.cortex.errors import (
    CortexError,
    EntityExistsError,
    EntityNotFoundError,
    InvalidInputError,
    RelationExistsError,
)
from mcp_nexus.builtin.cortex.store import DEFAULT_CATEGORIES, KnowledgeStore

__all__ = [
    "DEFAULT_CATEGORIES",
    "CortexError",
    "EntityExistsError",
    "EntityNotFoundError",
    "InvalidInputError",
    "KnowledgeStore",
    "RelationExistsError",
]
