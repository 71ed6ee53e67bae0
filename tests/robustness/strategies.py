"""Hypothesis strategies for JSON-RPC-ish input: mostly well-formed MCP traffic, plus every kind of junk.

A drawn `Draft` is turned into bytes by `render`, which gives each usable id a value unique
for the whole run (so every answer can be traced to the one message that earned it). What
the bytes deserve is then read back from the bytes themselves (`wire.classify`), never from
what the strategy meant to produce.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from robustness.gateways import ECHO_TOOL, SURROGATE_TOOL

REQUEST_METHODS = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "server/discover",
    # not subscriptions/listen: it is answered only when the stream ends, by design
]
NOTIFICATION_METHODS = [
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
]
TOOL_NAMES = [ECHO_TOOL, SURROGATE_TOOL, "echo.nope", "nope", ""]

UNIQUE_INT_BASE = 10**9  # usable ids are drawn above this; junk ints stay below it
ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "ABSENT"})()


@dataclass(frozen=True)
class UniqueInt:
    """Replaced by an integer id used by no other message."""


@dataclass(frozen=True)
class UniqueStr:
    """Replaced by a string id used by no other message; `tail` may hold any unicode."""

    tail: str


SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
ODD_TEXT = st.sampled_from(["\x00", "\n", "\r", "\u2028", "\ufeff", "\U0001f600", "\\", '"', "\ufffd", "é"])
chars = st.one_of(st.characters(), SURROGATES, ODD_TEXT)
text = st.text(alphabet=chars, max_size=12)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    text,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(text, inner, max_size=4),
    ),
    max_leaves=10,
)
fraction = st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer())

ids = st.one_of(
    st.just(UniqueInt()),
    st.just(UniqueInt()),
    st.builds(UniqueStr, text),
    st.none(),
    st.booleans(),
    fraction,
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.lists(json_scalars, max_size=2),
    st.dictionaries(text, json_scalars, max_size=2),
)
methods = st.one_of(
    st.sampled_from(REQUEST_METHODS),
    st.sampled_from(REQUEST_METHODS),
    st.sampled_from(NOTIFICATION_METHODS),
    text,
    json_scalars,
)


def _finite(value: Any) -> bool:
    """No NaN/Infinity anywhere inside (they would make the JSON text invalid)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


# Ids a cancellation may name: never one of the unique ids, so no real request is cancelled.
cancel_targets = st.one_of(
    st.integers(min_value=-1000, max_value=1000),
    text.map(lambda t: f"c-{t}"),
    json_values,
)
call_params = st.fixed_dictionaries(
    {"name": st.one_of(st.sampled_from(TOOL_NAMES), text)},
    optional={"arguments": st.one_of(st.dictionaries(text, json_values, max_size=4), json_values)},
)
params = st.one_of(
    st.just(ABSENT),
    st.just(ABSENT),
    call_params,
    call_params,
    st.fixed_dictionaries({"requestId": cancel_targets}, optional={"reason": text}),
    st.fixed_dictionaries(
        {
            "protocolVersion": st.sampled_from(["2025-11-25", "2024-11-05", "2026-07-28", "1999-01-01"]),
            "capabilities": st.one_of(st.just({}), json_values),
            "clientInfo": st.one_of(st.just({"name": "fuzz", "version": "1"}), json_values),
        }
    ),
    st.fixed_dictionaries({"uri": st.one_of(text, st.just("demo://info"))}),
    st.fixed_dictionaries({"level": st.sampled_from(["debug", "info", "emergency", "nope"])}),
    json_values,
)
jsonrpc_versions = st.sampled_from(["2.0", "2.0", "2.0", "2.0", "2.0", "2.0", "1.0", ABSENT, None, 2.0])


@dataclass(frozen=True)
class Draft:
    """One message before rendering: a JSON-RPC-ish object, or raw bytes (junk, deep nesting, batches)."""

    message: Any = None
    raw: bytes | None = None
    ascii_escapes: bool = True  # False: non-ASCII as UTF-8, lone surrogates as invalid bytes


def _message(
    jsonrpc: Any, request_id: Any, method: Any, parameters: Any, extra: dict[str, Any]
) -> dict[str, Any]:
    message: dict[str, Any] = {}
    for key, value in (("jsonrpc", jsonrpc), ("id", request_id), ("method", method), ("params", parameters)):
        if value is not ABSENT:
            message[key] = value
    message.update({k: v for k, v in extra.items() if k not in message})
    return message


# Anything goes: every field may be missing, of the wrong type, or contradict another.
junk_messages = st.builds(
    _message,
    jsonrpc_versions,
    st.one_of(ids, ids, st.just(ABSENT)),  # ABSENT: a notification
    st.one_of(methods, methods, methods, st.just(ABSENT)),
    params,
    st.one_of(
        st.just({}), st.dictionaries(st.sampled_from(["extra", "result", "error"]), json_values, max_size=1)
    ),
)
# Well-formed JSON-RPC 2.0 (what a correct peer must answer, or not answer, exactly):
# strict JSON values only (no NaN), but any unicode, lone surrogates included (escaped).
clean_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)
clean_values = st.recursive(
    clean_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)),
    max_leaves=10,
)
clean_call_params = st.fixed_dictionaries(
    {"name": st.one_of(st.sampled_from(TOOL_NAMES), st.sampled_from(TOOL_NAMES), text)},
    optional={"arguments": st.one_of(st.dictionaries(text, clean_values, max_size=4), clean_values)},
)
clean_params = st.one_of(
    st.just(ABSENT),
    clean_call_params,
    st.fixed_dictionaries({"requestId": cancel_targets.filter(_finite)}),
    st.fixed_dictionaries({"uri": st.one_of(text, st.just("demo://info"))}),
    st.fixed_dictionaries({"cursor": st.one_of(text, clean_scalars)}),
    clean_values,
)
unique_ids = st.one_of(st.just(UniqueInt()), st.builds(UniqueStr, text))
requests = st.builds(
    _message,
    st.just("2.0"),
    unique_ids,
    st.one_of(st.sampled_from(REQUEST_METHODS), st.sampled_from(REQUEST_METHODS), text),
    clean_params,
    st.just({}),
)
notifications = st.builds(
    _message,
    st.just("2.0"),
    st.just(ABSENT),
    st.one_of(st.sampled_from(NOTIFICATION_METHODS), st.sampled_from(REQUEST_METHODS), text),
    clean_params,
    st.just({}),
)
tool_calls = st.builds(
    _message, st.just("2.0"), unique_ids, st.just("tools/call"), clean_call_params, st.just({})
)
messages = st.one_of(requests, requests, tool_calls, tool_calls, notifications, junk_messages, junk_messages)


def _deep(depth: int, opener: bytes, closer: bytes) -> bytes:
    return opener * depth + closer * depth


raw_junk = st.one_of(
    st.binary(min_size=1, max_size=40),
    st.sampled_from([b"[]", b"{}", b"null", b"42", b'"text"', b"[1,2]", b"{", b'{"jsonrpc":"2.0"']),
    st.integers(min_value=1, max_value=5000).map(lambda d: _deep(d, b"[", b"]")),
    # deep params on a notification: answered by nothing when parsed, by -32700 when refused
    st.integers(min_value=1, max_value=5000).map(
        lambda d: (
            b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"a":'
            + _deep(d, b"[", b"]")
            + b"}}"
        )
    ),
)

escapes = st.sampled_from([True, True, True, False])  # False: UTF-8 bytes, lone surrogates invalid
drafts = st.one_of(
    st.builds(Draft, messages, st.none(), escapes),
    st.builds(Draft, messages, st.none(), escapes),
    st.builds(Draft, messages, st.none(), escapes),
    st.builds(Draft, messages, st.none(), escapes),
    st.builds(Draft, st.lists(messages, min_size=1, max_size=3), st.none(), escapes),  # a batch
    st.builds(Draft, st.none(), raw_junk),
)
exchanges = st.lists(drafts, min_size=1, max_size=4)


class Renderer:
    """Turns drafts into bytes, giving each usable id a value unique for the run."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._counter = itertools.count(1)

    def _fill(self, value: Any) -> Any:
        if isinstance(value, UniqueInt):
            return UNIQUE_INT_BASE + next(self._counter)
        if isinstance(value, UniqueStr):
            return f"{self.prefix}-{next(self._counter)}-{value.tail}"
        if isinstance(value, dict):
            return {k: self._fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._fill(v) for v in value]
        return value

    def render(self, draft: Draft, *, newline_free: bool = True) -> bytes:
        if draft.raw is not None:
            raw = draft.raw
        else:
            text_form = json.dumps(
                self._fill(draft.message),
                ensure_ascii=draft.ascii_escapes,
                allow_nan=True,
                separators=(",", ":"),
            )
            raw = text_form.encode("utf-8", "surrogatepass")
        if newline_free:  # one message per line on stdio: a raw newline would split it in two
            raw = raw.replace(b"\n", b" ").replace(b"\r", b" ")
        return raw
