"""Numbers that arrive quoted: `"40"` where the schema says integer.

LLM clients often quote numbers. The built-in servers accept a string that is a plain
decimal number for an integer or number parameter, and the gateway's argument check
accepts (and converts) exactly the same strings, so a call never passes one and fails
the other. This module is the single definition of "a string that is a valid number";
it imports nothing but pydantic.

Accepted after trimming surrounding whitespace: an optional sign, digits with an
optional fraction, an optional exponent (`40`, `-3`, `+7`, `40.0`, `.5`, `4e1`), ASCII
digits only, at most 64 characters. Not accepted: `nan`, `inf`, `0x10`, `1_000`,
`40%`, Arabic-Indic or other non-ASCII digits, booleans, empty strings. An integer
parameter takes only values without a fractional part (`"40.0"` is 40, `"40.5"` is
refused), as JSON Schema counts 40.0 as an integer.
"""

from __future__ import annotations

import math
import re
from typing import Any, cast

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

MAX_NUMBER_TEXT_LENGTH = 64

_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+", re.ASCII)


def number_from_text(text: str, *, integer: bool) -> int | float | None:
    """The number `text` spells, or None when it is not a plain decimal number.

    With `integer=True` the value must have no fractional part and comes back as an int.
    Otherwise an integer spelling comes back as an int and any other as a finite float.
    """
    candidate = text.strip()
    if len(candidate) > MAX_NUMBER_TEXT_LENGTH or _NUMBER_TEXT.fullmatch(candidate) is None:
        return None
    if _INTEGER_TEXT.fullmatch(candidate):
        return int(candidate)
    value = float(candidate)
    if not math.isfinite(value):  # "1e999" overflows to inf
        return None
    if value.is_integer():
        return int(value) if integer else value
    return None if integer else value


def _unquote_integer(value: Any) -> Any:
    # Anything this does not convert is left for the strict int check to refuse with
    # pydantic's usual message ("Input should be a valid integer").
    if isinstance(value, str):
        number = number_from_text(value, integer=True)
        return value if number is None else number
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class AcceptsQuotedInteger:
    """Annotation for an `int` parameter: also take `"40"`, and nothing looser than JSON Schema.

    Put it last, after the `Field(...)` with the bounds:
    `Annotated[int, Field(ge=0, le=100), AcceptsQuotedInteger()]`. The bounds then stay in
    the published schema as `minimum`/`maximum`, and are checked on the converted value.
    The int check runs in strict mode, so `true` is not 1 and `"1_000"` is not 1000, as a
    JSON Schema validator would also say; `40.0` is 40 (JSON Schema counts it as an integer).
    """

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        inner = handler(source)
        if inner.get("type") == "int":
            cast(dict[str, Any], inner)["strict"] = True  # so `true` is not taken as 1
        return core_schema.no_info_before_validator_function(_unquote_integer, inner)

    def __repr__(self) -> str:
        return "AcceptsQuotedInteger()"
