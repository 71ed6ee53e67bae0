"""Which input schemas declare `Mcp-Param-*` headers: judged once per schema object, bounded.

A schema that declares none (or declares them invalidly, which validates nothing) lets the
2026-07-28 lean path skip the per-call header check; the end-to-end checks of the declared
case are the conformance suite's SEP-2243 scenarios through the gateway (tests/conformance).
"""

from __future__ import annotations

from typing import Any

from mcp.shared.inbound import validate_mcp_param_headers

from mcp_nexus.frontends.mcp.param_header_schemas import SCHEMAS_KEPT, ParamHeaderSchemas

PLAIN = {"type": "object", "properties": {"text": {"type": "string"}}}
DECLARED = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
NESTED = {
    "type": "object",
    "properties": {
        "where": {"type": "object", "properties": {"zone": {"type": "integer", "x-mcp-header": "Zone"}}}
    },
}
INVALID = {"type": "object", "properties": {"tags": {"type": "array", "x-mcp-header": "Tags"}}}


def test_only_a_schema_that_can_refuse_declares() -> None:
    schemas = ParamHeaderSchemas()
    assert schemas.declares(DECLARED) and schemas.declares(NESTED)
    assert not schemas.declares(PLAIN) and not schemas.declares(INVALID)
    # What "declares nothing" stands for: the SDK's check refuses nothing for such a schema,
    # whatever headers come, while a declaring schema refuses a mismatch.
    lying = {"mcp-param-region": "eu", "mcp-param-tags": "x", "mcp-param-text": "no"}
    for schema in (PLAIN, INVALID):
        assert validate_mcp_param_headers(schema, {"text": "hi"}, lying) is None
    assert validate_mcp_param_headers(DECLARED, {"region": "us"}, lying) is not None


def test_the_verdict_follows_the_schema_object_and_the_memory_is_bounded() -> None:
    schemas = ParamHeaderSchemas()
    made: list[dict[str, Any]] = []
    for n in range(SCHEMAS_KEPT * 2 + 10):
        schema = {"type": "object", "properties": {f"p{n}": {"type": "string", "x-mcp-header": f"P{n}"}}}
        made.append(schema)  # kept alive: ids stay distinct
        assert schemas.declares(schema)
        assert len(schemas._known) <= SCHEMAS_KEPT
    # A new schema object under an id once seen is judged anew, not by the old verdict.
    first = dict(PLAIN)
    assert not schemas.declares(first)
    del first
    again = {"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": "X"}}}
    assert schemas.declares(again)
