"""Which tools' input schemas declare `Mcp-Param-*` headers, judged once per schema.

Why: a 2026-07-28 tools/call's `Mcp-Param-*` headers must agree with its arguments, but only
where the tool's schema annotates a property with a valid `x-mcp-header`; the SDK's check
walks the whole schema on every call to find that out. Most tools declare none, so the
answer (the same for as long as the catalog keeps the schema object) is remembered here and
the per-call check runs only for the tools that do.
"""

from __future__ import annotations

from typing import Any

from mcp.shared.inbound import find_invalid_x_mcp_header, x_mcp_header_map

SCHEMAS_KEPT = 4096
"""Distinct schema objects remembered; beyond that the memory starts afresh (a catalog rebuild
makes new schema objects, so old entries would otherwise pile up)."""


class ParamHeaderSchemas:
    def __init__(self) -> None:
        # id -> (the schema itself, kept so its id cannot be reused while remembered; its verdict)
        self._known: dict[int, tuple[dict[str, Any], bool]] = {}

    def declares(self, schema: dict[str, Any]) -> bool:
        """Whether `validate_mcp_param_headers(schema, ...)` can refuse anything: the schema is
        valid as to `x-mcp-header` (an invalid one validates nothing) and annotates a property."""
        known = self._known.get(id(schema))
        if known is not None and known[0] is schema:
            return known[1]
        if len(self._known) >= SCHEMAS_KEPT:
            self._known.clear()
        declares = find_invalid_x_mcp_header(schema) is None and bool(x_mcp_header_map(schema))
        self._known[id(schema)] = (schema, declares)
        return declares
