"""Bytes <-> JSON for every JSON-RPC endpoint: strict where it must be, forgiving where it can be.

Decoding takes the fast path (orjson) and falls back to the standard library only for
what orjson refuses but a peer may legitimately send: lone surrogates inside strings
(`"\\ud800"`, valid JSON text). NaN/Infinity are refused (not JSON), as is nesting
deeper than `MAX_DEPTH`. Encoding never emits bare NaN or unencodable strings: orjson
first, and where it refuses (lone surrogates) an ASCII-escaped dump that is still valid JSON.
A request whose params hold a lone surrogate is answered -32602 naming where
(`lone_surrogate`), by whoever decoded it, before anything is handed on.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from mcp_nexus.jsonrpc.errors import INVALID_PARAMS, PARSE_ERROR, JsonRpcError

MAX_DEPTH = 512


class ParseError(JsonRpcError):
    code = PARSE_ERROR


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode(data: bytes | str) -> Any:
    """One JSON text; raises ParseError (never RecursionError or UnicodeError)."""
    return decode_checked(data)[0]


def decode_checked(data: bytes | str) -> tuple[Any, bool]:
    """`decode`, and whether the value may hold a lone UTF-16 surrogate: only when orjson refused
    the text for one (then `lone_surrogate` says where). An ordinary message costs nothing more."""
    try:
        return orjson.loads(data), False
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
    return value, True


class LoneSurrogateError(JsonRpcError):
    """A request's params hold a lone UTF-16 surrogate: valid JSON text, but not Unicode, so no
    strict peer can take it (an upstream would drop the line and the caller wait for a timeout)."""

    code = INVALID_PARAMS


def _lone(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return text[exc.start]
    return None


def lone_surrogate(params: Any, root: str = "params") -> LoneSurrogateError | None:
    """The first string or key in `params` holding a lone surrogate, as an error naming its path
    (`arguments.text`, `arguments.items[2]`, relative to `root`); None when there is none."""
    pending: list[tuple[Any, str]] = [(params, root)]
    while pending:
        item, path = pending.pop()
        if isinstance(item, str):
            if (found := _lone(item)) is not None:
                return _surrogate_error(found, path, "")
        elif isinstance(item, dict):
            for key in item:
                if (found := _lone(key)) is not None:
                    return _surrogate_error(found, path, "a key in ")
            children = [(child, _child_path(path, root, key)) for key, child in item.items()]
            pending.extend(reversed(children))  # document order: the first one is named
        elif isinstance(item, list):
            pending.extend((child, f"{path}[{index}]") for index, child in reversed(list(enumerate(item))))
    return None


def _child_path(path: str, root: str, key: str) -> str:
    if not key.isidentifier():
        return f"{path}[{json.dumps(key)}]"
    return key if path == root else f"{path}.{key}"


def _surrogate_error(char: str, path: str, what: str) -> LoneSurrogateError:
    escaped = f"\\u{ord(char):04x}"
    return LoneSurrogateError(
        f"Invalid params: {what}{path} contains a lone UTF-16 surrogate ({escaped}), which is not valid Unicode",
        data={"path": path, "surrogate": escaped},
    )


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
