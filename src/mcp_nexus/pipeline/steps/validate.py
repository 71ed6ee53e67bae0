"""Checks a call's arguments against the tool's input schema before anything is sent upstream.

A failure is JSON-RPC -32602 naming where in the arguments and which schema rule failed.
Validators are compiled once per schema; a schema that is itself invalid is not enforced
(the upstream remains the judge) and is logged once.

One leniency, because LLM clients often quote numbers: where the schema asks for an
integer or a number and the value is a string that is a plain decimal number (`"40"`,
`"2.5"`; the rules are in `mcp_nexus.builtin.numeric_text`, the same the built-in servers
apply), the string is converted and the converted arguments travel on, so every server
receives a number. Everything else stays strict: `"abc"`, `true`, `"40.5"` for an integer,
and a converted value that breaks another rule (`"101"` with a maximum of 100) are refused.
"""

from __future__ import annotations

import copy
import logging
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from jsonschema import exceptions as schema_errors
from jsonschema import validators

from mcp_nexus.builtin.numeric_text import number_from_text
from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.errors import InvalidArgumentsError
from mcp_nexus.pipeline.call import CallNext, ToolCall, ToolOutcome

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


def _quoted_numbers(errors: Iterable[Any]) -> dict[tuple[Any, ...], int | float]:
    """Where a string stands for a number the schema wants: path in the arguments -> the number."""
    found: dict[tuple[Any, ...], int | float] = {}
    for error in errors:
        if error.validator == "type" and isinstance(error.instance, str) and error.absolute_path:
            expected = error.validator_value
            wanted = {expected} if isinstance(expected, str) else set(expected)
            if wanted & {"integer", "number"}:
                number = number_from_text(error.instance, integer="number" not in wanted)
                if number is not None:
                    found[tuple(error.absolute_path)] = number
        if error.context:  # the branches of anyOf / oneOf (e.g. an optional integer)
            found.update(_quoted_numbers(error.context))
    return found


def _with_values(arguments: dict[str, Any], values: dict[tuple[Any, ...], int | float]) -> dict[str, Any]:
    converted = copy.deepcopy(arguments)  # the caller's dict stays as it was sent
    for path, value in values.items():
        container: Any = converted
        for step in path[:-1]:
            container = container[step]
        container[path[-1]] = value
    return converted


def _json_path(path: Sequence[Any]) -> str:
    return "$" + "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path)


_VALID_KEPT = 512


class ValidateStep:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._validators: dict[str, tuple[dict[str, Any], Any | None]] = {}
        # Arguments already found valid, per validator: the same arguments against the same
        # schema get the same verdict, and checking a small dict's bytes costs far less than
        # walking the schema again (agents repeat calls a lot).
        self._valid: OrderedDict[tuple[int, bytes], None] = OrderedDict()

    def _known_valid(
        self, validator: Any, arguments: dict[str, Any]
    ) -> tuple[bool, tuple[int, bytes] | None]:
        try:
            key = (id(validator), orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS))
        except TypeError:  # not plain JSON (cannot happen from the wire): always check
            return False, None
        if key in self._valid:
            self._valid.move_to_end(key)
            return True, key
        return False, key

    def _remember_valid(self, key: tuple[int, bytes] | None) -> None:
        if key is None:
            return
        self._valid[key] = None
        if len(self._valid) > _VALID_KEPT:
            self._valid.popitem(last=False)

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
        if validator is None:
            return await call_next(call)
        known, key = self._known_valid(validator, call.arguments)
        if known:
            return await call_next(call)
        if validator.is_valid(call.arguments):
            self._remember_valid(key)
        else:
            quoted = _quoted_numbers(validator.iter_errors(call.arguments))
            if quoted:
                call.arguments = _with_values(call.arguments, quoted)
                logger.debug(
                    "tool %s: quoted numbers taken as numbers at %s",
                    call.name,
                    [_json_path(p) for p in quoted],
                )
                if validator.is_valid(call.arguments):
                    return await call_next(call)
            error = schema_errors.best_match(validator.iter_errors(call.arguments))
            where = error.json_path
            rule = "/".join(str(part) for part in error.schema_path) or "<root>"
            raise InvalidArgumentsError(
                f"Invalid arguments for tool {call.name}: {error.message} (at {where}, schema rule {rule})",
                data={"tool": call.name, "path": where, "schema_path": rule, "validator": error.validator},
            )
        return await call_next(call)
