"""Bytes <-> JSON for every JSON-RPC endpoint: strict where it must be, forgiving where it can be.

Decoding takes the fast path (orjson) and falls back to the standard library only for
what orjson refuses but a peer may legitimately send: lone surrogates inside strings
(`"\\ud800"`, valid JSON text). NaN/Infinity are refused (not JSON), as is nesting
deeper than `MAX_DEPTH`. Encoding never emits bare NaN or unencodable strings: orjson
first, and where it refuses (lone surrogates) an ASCII-escaped dump that is still valid JSON.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from mcp_nexus.jsonrpc.errors import PARSE_ERROR, JsonRpcError

MAX_DEPTH = 512


class ParseError(JsonRpcError):
    code = PARSE_ERROR


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode(data: bytes | str) -> Any:
    """One JSON text; raises ParseError (never RecursionError or UnicodeError)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as fast_error:
        reason = str(fast_error)
        if "depth limit" in reason:
            raise ParseError(f"Parse error: nested deeper than {MAX_DEPTH} levels") from None
        if "surrogate" not in reason:
            raise ParseError(f"Parse error: {reason.split(':', 1)[0]}") from None
    try:
        # Strict UTF-8: a surrogate may arrive escaped (`\\ud800`, valid JSON), never as raw bytes.
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError, UnicodeError) as exc:
        raise ParseError(f"Parse error: {str(exc)[:120] or type(exc).__name__}") from None
    if _too_deep(value):
        raise ParseError(f"Parse error: nested deeper than {MAX_DEPTH} levels")
    return value


def _too_deep(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return False


def encode(message: Any) -> bytes:
    """Compact UTF-8 JSON; lone surrogates are escaped, NaN/Infinity become null."""
    try:
        return orjson.dumps(message)
    except TypeError:
        return json.dumps(_without_nan(message), ensure_ascii=True, separators=(",", ":")).encode()


def _without_nan(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {key: _without_nan(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_without_nan(item) for item in value]
    return value
