"""What a JSON-RPC peer may send and must get back, judged from the bytes on the wire.

The gateway's output is parsed strictly: UTF-8 only, no `NaN`/`Infinity` (Python's json module
accepts them, JSON does not). Escaped lone surrogates (`"\\ud800"`) are accepted: they are
valid JSON text, and escaping is the safe way to carry them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


class NotStrictJson(ValueError):
    """Bytes that a strict JSON parser (RFC 8259, UTF-8) refuses."""


def _refuse_constant(name: str) -> Any:
    raise NotStrictJson(f"bare {name} is not JSON")


def strict_loads(data: bytes | str) -> Any:
    """Parse like a strict peer would: invalid UTF-8, NaN/Infinity and absurd nesting are errors."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return json.loads(text, parse_constant=_refuse_constant)
    except NotStrictJson:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise NotStrictJson(f"{type(exc).__name__}: {exc}"[:200]) from None


def id_key(value: Any) -> str:
    """A dictionary key for a JSON-RPC id of any type (1, 1.0, True and "1" stay distinct)."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=True)


def is_valid_id(value: Any) -> bool:
    """MCP ids are strings or integers (never null, booleans, fractions, objects or arrays)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def shape_problem(message: Any) -> str | None:
    """Why an output message is not a well-formed JSON-RPC 2.0 message, or None."""
    if not isinstance(message, dict):
        return f"not a JSON object: {type(message).__name__}"
    if message.get("jsonrpc") != "2.0":
        return f"jsonrpc is {message.get('jsonrpc')!r}, not '2.0'"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "method is not a string"
        if "id" in message and not is_valid_id(message["id"]):
            return f"request from the gateway with an invalid id {message['id']!r}"
        return None
    if "id" not in message:
        return "neither a method nor an id"
    if not (message["id"] is None or is_valid_id(message["id"])):
        return f"answer with an invalid id {message['id']!r}"
    if ("result" in message) == ("error" in message):
        return "an answer needs exactly one of result and error"
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict):
            return "error is not an object"
        code = error.get("code")
        if not isinstance(code, int) or isinstance(code, bool):
            return f"error.code is not an integer: {code!r}"
        if not isinstance(error.get("message"), str):
            return "error.message is not a string"
    return None


def is_answer(message: Any) -> bool:
    """A response (result or error), as opposed to a request or notification from the gateway."""
    return isinstance(message, dict) and "method" not in message and "id" in message


def error_code(message: dict[str, Any]) -> int | None:
    error = message.get("error")
    return error.get("code") if isinstance(error, dict) else None


Kind = Literal["request", "invalid", "maybe", "notification", "response"]

# Deeper than this, a server may refuse a message as a parse error (its own nesting limit):
# such input is judged like unreadable input, whatever it would be otherwise.
PORTABLE_DEPTH = 64


def depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


@dataclass(frozen=True)
class Sent:
    """One input message, and what a correct JSON-RPC 2.0 / MCP peer must answer to it.

    request       well-formed, usable id, params an object or absent:
                  exactly one answer, carrying `id`.
    invalid       a JSON value that is not a valid request but is no notification either
                  (an array or batch, a scalar, an object with an "id" member but a bad
                  id, envelope or params): exactly one error, carrying `id` when it had a
                  usable one, else null.
    maybe         not strict JSON (a lenient parser may still read it), nested deeper than
                  PORTABLE_DEPTH, or an object without "id" that is no valid notification:
                  at most one error, with `id` (if usable) or null.
    notification  no answer. response: no answer.
    """

    kind: Kind
    id: Any = None
    has_id: bool = False  # `id` is usable (a string or an integer)


def _is_response_body(message: dict[str, Any]) -> bool:
    if ("result" in message) == ("error" in message):
        return False
    if "result" in message:
        return True
    error = message["error"]
    return (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and not isinstance(error.get("code"), bool)
        and isinstance(error.get("message"), str)
    )


def classify(raw: bytes) -> Sent:
    try:
        message = strict_loads(raw)
    except NotStrictJson:
        return Sent("maybe")
    if not isinstance(message, dict):
        return Sent("maybe") if depth(message) > PORTABLE_DEPTH else Sent("invalid")
    request_id = message.get("id")
    usable = "id" in message and is_valid_id(request_id)
    own = request_id if usable else None
    if depth(message) > PORTABLE_DEPTH:
        return Sent("maybe", own, usable)
    well_formed = message.get("jsonrpc") == "2.0"
    if "method" not in message and ("result" in message or "error" in message):
        if well_formed and usable and _is_response_body(message):
            return Sent("response", request_id, True)
        return Sent("maybe", own, usable)  # a broken response: answering it or not are both fine
    shaped = (
        well_formed
        and isinstance(message.get("method"), str)
        and "result" not in message
        and "error" not in message
    )
    if "id" not in message:
        return Sent("notification") if shaped else Sent("maybe")
    if shaped and usable and isinstance(message.get("params", {}), dict):
        return Sent("request", request_id, True)
    return Sent("invalid", own, usable)


@dataclass
class Verdict:
    problems: list[str] = field(default_factory=list)

    def fail(self, text: str) -> None:
        self.problems.append(text)


def judge_stream(sent: list[Sent], answers: list[dict[str, Any]]) -> Verdict:
    """Judge the answers one peer got for `sent` on a stream (stdio, WebSocket).

    Ids are unique per run, so an answer with an id belongs to exactly one sent message.
    Answers with a null id cannot be attributed: they are counted against the messages
    that need one (invalid ones not answered by their own id) and those that may earn one.
    """
    verdict = Verdict()
    counts: dict[str, int] = {}
    for answer in answers:
        key = id_key(answer.get("id"))
        counts[key] = counts.get(key, 0) + 1
    null_key = id_key(None)
    own_ids = {id_key(s.id): s for s in sent if s.has_id and s.kind in ("request", "invalid", "maybe")}
    needed_nulls = 0
    for s in sent:
        key = id_key(s.id)
        got = counts.get(key, 0) if s.has_id else 0
        if s.kind == "request" and got != 1:
            verdict.fail(f"request id {key} got {got} answers, expected exactly 1")
        elif s.kind in ("invalid", "maybe") and got > 1:
            verdict.fail(f"{s.kind} message with id {key} got {got} answers, expected at most 1")
        elif s.kind == "invalid" and got == 0:
            needed_nulls += 1
    for key, got in counts.items():
        if key != null_key and key not in own_ids:
            verdict.fail(f"{got} answer(s) with id {key}, which no request carried")
    nulls = counts.get(null_key, 0)
    may = sum(1 for s in sent if s.kind == "maybe" and not (s.has_id and counts.get(id_key(s.id), 0)))
    if nulls < needed_nulls:
        verdict.fail(f"{needed_nulls} invalid messages needed an error with a null id, {nulls} came")
    if nulls > needed_nulls + may:
        verdict.fail(
            f"{nulls} answers with a null id, at most {needed_nulls + may} were due "
            "(notifications and responses get no answer)"
        )
    for answer in answers:
        if answer.get("id") is None and "error" not in answer:
            verdict.fail(f"a result with a null id: {str(answer)[:200]}")
    return verdict


def judge_single(
    sent: Sent, answers: list[dict[str, Any]], *, null_for_notifications: bool = False
) -> list[str]:
    """Judge the answers to one message on its own exchange (an HTTP POST)."""
    problems: list[str] = []
    ids = [id_key(a.get("id")) for a in answers]
    null_key = id_key(None)
    own = id_key(sent.id) if sent.has_id else null_key
    if sent.kind == "request":
        if ids != [own]:
            problems.append(f"a request with id {own} got answers with ids {ids}")
    elif sent.kind in ("notification", "response"):
        allowed = [null_key] if null_for_notifications else []
        if len(ids) > len(allowed) or any(key not in allowed for key in ids):
            problems.append(f"a {sent.kind} got answers with ids {ids}")
    else:
        allowed_ids = {null_key, own}
        wanted = 1 if sent.kind == "invalid" else (0, 1)
        if (len(ids) != wanted if isinstance(wanted, int) else len(ids) not in wanted) or any(
            key not in allowed_ids for key in ids
        ):
            problems.append(
                f"{sent.kind} input got answers with ids {ids} (expected {wanted} of {allowed_ids})"
            )
    for answer in answers:
        if answer.get("id") is None and "error" not in answer:
            problems.append(f"a result with a null id: {str(answer)[:200]}")
    return problems


class StreamLedger:
    """Judges a long run of examples on one stream, where an answer may arrive an example late.

    Ids are unique for the run, so an answer whose id an earlier example sent belongs to that
    example: it is counted there (at most one answer per id, ever) instead of being blamed on
    the current one.
    """

    def __init__(self) -> None:
        self._earlier: dict[str, Sent] = {}
        self._answered: dict[str, int] = {}

    def judge(self, sent: list[Sent], answers: list[dict[str, Any]]) -> Verdict:
        late = [a for a in answers if a.get("id") is not None and id_key(a["id"]) in self._earlier]
        current = [a for a in answers if not any(a is b for b in late)]
        verdict = judge_stream(sent, current)
        for answer in late:
            key = id_key(answer["id"])
            self._answered[key] = self._answered.get(key, 0) + 1
            if self._answered[key] > 1:
                verdict.fail(f"id {key} (sent in an earlier example) answered {self._answered[key]} times")
        for message in sent:
            if message.has_id:
                self._earlier[id_key(message.id)] = message
        for answer in current:
            if answer.get("id") is not None:
                key = id_key(answer["id"])
                self._answered[key] = self._answered.get(key, 0) + 1
        return verdict
