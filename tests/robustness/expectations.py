"""The malformed inputs of issue 12 (items 1, 2, 3, 11, 13) and what a correct JSON-RPC peer answers.

One table, used by every frontend: stdio, the Xiaozhi endpoint link and the envelope server
(which may, by their dialect, ignore what stdio must answer).

How ids are judged (JSON-RPC 2.0 section 5, and MCP: ids are strings or integers):
- a message whose id is invalid (null, boolean, fraction, object, array, NaN) gets an error
  with id null, since there is no id to answer to;
- a message that is not JSON at all gets -32700 with id null;
- a malformed message with a usable id (jsonrpc "1.0", no method, ...) gets -32600, with
  its id or null;
- a notification (no id) never gets an answer, however wrong its params.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from robustness.gateways import ECHO_TOOL, SURROGATE_TOOL
from robustness.wire import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, id_key

DEEP = 100_000


def line(message: Any) -> bytes:
    """Compact JSON with non-ASCII escaped: lone surrogates travel as `\\ud800`, still valid JSON."""
    return json.dumps(message, separators=(",", ":"), allow_nan=True).encode()


def call(request_id: Any, name: str, arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


@dataclass(frozen=True)
class Expect:
    """What one input must earn: no answer, or exactly one answer within these bounds."""

    answered: bool
    codes: frozenset[int] | None = None  # allowed error codes (None: any)
    ids: tuple[Any, ...] = (None,)  # allowed ids of the answer
    result_ids: tuple[Any, ...] = ()  # a result (not an error) is also fine when it carries one of these

    @property
    def required_ids(self) -> tuple[Any, ...]:
        """Ids an answer must carry (a test may wait for them): none when a null-id error is allowed."""
        if not self.answered or None in self.ids:
            return ()
        return self.ids

    @property
    def due_ids(self) -> tuple[Any, ...]:
        """The ids one of which the single due answer carries (empty when no answer is due)."""
        return self.ids if self.answered else ()

    def check(self, answers: list[dict[str, Any]]) -> None:
        if not self.answered:
            assert answers == [], f"expected no answer, got {answers}"
            return
        assert len(answers) == 1, f"expected exactly one answer, got {len(answers)}: {answers}"
        answer = answers[0]
        allowed = {id_key(i) for i in self.ids}
        assert id_key(answer.get("id")) in allowed, (
            f"answer id {answer.get('id')!r} not in {self.ids}: {answer}"
        )
        if "result" in answer:
            assert id_key(answer["id"]) in {id_key(i) for i in self.result_ids}, (
                f"expected an error, got a result: {answer}"
            )
            return
        code = answer["error"]["code"]
        if self.codes is not None:
            assert code in self.codes, f"expected error code in {sorted(self.codes)}, got {code}: {answer}"


NO_ANSWER = Expect(False)


def error(codes: set[int], *ids: Any) -> Expect:
    return Expect(True, frozenset(codes), ids or (None,))


def answer_to(request_id: Any, *also_ids: Any, codes: set[int] | None = None) -> Expect:
    """One answer for this request: a result, or an error (with any code unless `codes` says)."""
    allowed = frozenset(codes) if codes is not None else None
    return Expect(True, allowed, (request_id, *also_ids), result_ids=(request_id,))


@dataclass(frozen=True)
class Case:
    name: str
    raw: bytes
    expect: Expect  # on stdio; link dialects may ignore instead (see the Xiaozhi tests)
    issue_item: str


def _deep_array() -> bytes:
    return b"[" * DEEP + b"]" * DEEP


def _deep_arguments(request_id: str) -> bytes:
    head = line(call(request_id, ECHO_TOOL, {}))[: -len(b"{}}}")]  # cut after "arguments":
    return head + b'{"a":' + _deep_array() + b"}}}"


MALFORMED_CASES: list[Case] = [
    Case(
        "cancelled-params-array",
        line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [1]}),
        NO_ANSWER,
        "1",
    ),
    Case(
        "cancelled-requestId-object",
        line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"a": 1}}}),
        NO_ANSWER,
        "1",
    ),
    Case(
        "cancelled-requestId-array",
        line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1, 2]}}),
        NO_ANSWER,
        "1",
    ),
    Case(
        "notification-params-array",
        line({"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]}),
        NO_ANSWER,
        "1",
    ),
    Case("notification-unknown-method", line({"jsonrpc": "2.0", "method": "no/such/thing"}), NO_ANSWER, "1"),
    Case(
        "initialize-params-array",
        line({"jsonrpc": "2.0", "id": "init-arr", "method": "initialize", "params": [1]}),
        error({INVALID_PARAMS}, "init-arr"),
        "1",
    ),
    Case(
        "tools-call-params-array",
        line({"jsonrpc": "2.0", "id": "call-arr", "method": "tools/call", "params": [1]}),
        error({INVALID_PARAMS}, "call-arr"),
        "1",
    ),
    Case(
        "tools-call-arguments-array",
        line(call("args-arr", ECHO_TOOL, [1])),
        error({INVALID_PARAMS}, "args-arr"),
        "1",
    ),
    Case("tools-call-object-id", line(call({"a": 1}, ECHO_TOOL, {})), error({INVALID_REQUEST}), "1"),
    Case("tools-call-array-id", line(call([1], ECHO_TOOL, {})), error({INVALID_REQUEST}), "1"),
    Case(
        "ping-null-id", line({"jsonrpc": "2.0", "id": None, "method": "ping"}), error({INVALID_REQUEST}), "1"
    ),
    Case(
        "ping-bool-id", line({"jsonrpc": "2.0", "id": True, "method": "ping"}), error({INVALID_REQUEST}), "1"
    ),
    Case(
        "ping-fraction-id",
        line({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
        error({INVALID_REQUEST}),
        "1",
    ),
    Case("deep-array-100k", _deep_array(), error({PARSE_ERROR, INVALID_REQUEST}), "1"),
    Case(
        "deep-arguments-100k",
        _deep_arguments("deep-args"),
        error({PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS}, "deep-args", None),
        "1",
    ),
    Case(
        "invalid-utf8",
        b'{"jsonrpc":"2.0","id":"bad-utf8","method":"ping","params":{"x":"\xff\xfe\xc3"}}',
        # Not JSON (RFC 8259 text is UTF-8): -32700; a lenient decoder may answer the ping instead.
        answer_to("bad-utf8", None, codes={PARSE_ERROR, INVALID_REQUEST}),
        "1",
    ),
    Case("not-json", b'{"jsonrpc":"2.0","id":"oops",', error({PARSE_ERROR}), "1"),
    Case("empty-batch", b"[]", error({INVALID_REQUEST}), "1"),
    Case(
        "batch",
        line(
            [
                {"jsonrpc": "2.0", "id": "in-batch-1", "method": "ping"},
                {"jsonrpc": "2.0", "id": "in-batch-2", "method": "tools/list"},
            ]
        ),
        error({INVALID_REQUEST}),  # MCP has no batches: one error, and neither ping is answered
        "1",
    ),
    Case("json-string", b'"hello"', error({INVALID_REQUEST}), "1"),
    Case("json-number", b"42", error({INVALID_REQUEST}), "1"),
    Case("json-object-empty", b"{}", error({INVALID_REQUEST}), "1"),
    Case(
        "jsonrpc-1.0",
        line({"jsonrpc": "1.0", "id": "v1", "method": "ping"}),
        error({INVALID_REQUEST}, "v1", None),
        "1",
    ),
    Case(
        "jsonrpc-missing", line({"id": "nov", "method": "ping"}), error({INVALID_REQUEST}, "nov", None), "1"
    ),
    Case(
        "method-missing",
        line({"jsonrpc": "2.0", "id": "nometh", "params": {}}),
        error({INVALID_REQUEST}, "nometh", None),
        "1",
    ),
    Case(
        "method-not-string",
        line({"jsonrpc": "2.0", "id": "meth42", "method": 42}),
        error({INVALID_REQUEST}, "meth42", None),
        "1",
    ),
    Case(
        "method-unknown",
        line({"jsonrpc": "2.0", "id": "unknown", "method": "no/such/method"}),
        error({METHOD_NOT_FOUND}, "unknown"),
        "1",
    ),
    Case(
        "method-lone-surrogate",
        line({"jsonrpc": "2.0", "id": "surr-meth", "method": "tools/\ud800"}),
        error({METHOD_NOT_FOUND}, "surr-meth"),
        "3",
    ),
    Case(
        "id-nan", b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}', error({PARSE_ERROR, INVALID_REQUEST}), "13"
    ),
    Case(
        "id-infinity",
        b'{"jsonrpc":"2.0","id":Infinity,"method":"ping"}',
        error({PARSE_ERROR, INVALID_REQUEST}),
        "13",
    ),
    Case(
        "id-minus-infinity",
        b'{"jsonrpc":"2.0","id":-Infinity,"method":"tools/list"}',
        error({PARSE_ERROR, INVALID_REQUEST}),
        "13",
    ),
    Case(
        "nan-in-arguments",
        line(call("nan-args", ECHO_TOOL, {"x": float("nan"), "y": float("inf")})),
        answer_to("nan-args", None, codes={PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS}),
        "13",
    ),
    Case(
        "lone-surrogate-in-arguments",
        line(call("surr-args", ECHO_TOOL, {"text": "a\ud800b"})),
        answer_to("surr-args"),
        "3",
    ),
    Case(
        "lone-surrogate-raw-bytes",
        # the surrogate itself encoded (ED A0 80): not UTF-8, so not JSON
        line(call("surr-raw", ECHO_TOOL, {"text": "x"})).replace(
            b'"x"', '"\ud800"'.encode("utf-8", "surrogatepass")
        ),
        answer_to("surr-raw", None, codes={PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS}),
        "3",
    ),
    Case(
        "lone-surrogate-in-result",
        line(call("surr-result", SURROGATE_TOOL, {})),
        answer_to("surr-result"),
        "3",
    ),
    Case(
        "lone-surrogate-in-string-id",
        line({"jsonrpc": "2.0", "id": "sid-\udc00", "method": "ping"}),
        answer_to("sid-\udc00"),
        "3",
    ),
]

CASES_BY_NAME = {case.name: case for case in MALFORMED_CASES}
