"""Checks a call's arguments against the tool's input schema before anything is sent upstream.

A failure is JSON-RPC -32602 naming where in the arguments and which schema rule failed.
Validators are compiled once per schema; a schema that is itself invalid is not enforced
(the upstream remains the judge) and is logged once.
"""

from __future__ import annotations

import logging
from typing import Any

from jsonschema import exceptions as schema_errors
from jsonschema import validators

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.pipeline.call import CallNext, ToolCall, ToolOutcome
from mcp_nexus.pipeline.errors import InvalidArgumentsError

logger = logging.getLogger(__name__)


def _compile(name: str, schema: dict[str, Any]) -> Any | None:
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except schema_errors.SchemaError as exc:
        logger.warning(
            "tool %s has an invalid input schema (%s); its arguments are not checked", name, exc.message
        )
        return None
    return cls(schema)


class ValidateStep:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._validators: dict[str, tuple[dict[str, Any], Any | None]] = {}

    def _validator(self, name: str) -> Any | None:
        entry = self.catalog.tools.get(name)
        if entry is None:
            return None
        schema = entry.tool.input_schema
        known = self._validators.get(name)
        if known is not None and known[0] is schema:
            return known[1]
        validator = _compile(name, schema) if isinstance(schema, dict) else None
        self._validators[name] = (schema, validator)
        return validator

    async def __call__(self, call: ToolCall, call_next: CallNext) -> ToolOutcome:
        validator = self._validator(call.name)
        if validator is not None and not validator.is_valid(call.arguments):
            error = schema_errors.best_match(validator.iter_errors(call.arguments))
            where = error.json_path
            rule = "/".join(str(part) for part in error.schema_path) or "<root>"
            raise InvalidArgumentsError(
                f"Invalid arguments for tool {call.name}: {error.message} (at {where}, schema rule {rule})",
                data={"tool": call.name, "path": where, "schema_path": rule, "validator": error.validator},
            )
        return await call_next(call)
