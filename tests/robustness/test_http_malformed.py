"""Issue 12 items 3, 11 and 13 on HTTP `/mcp`, in both protocol eras.

Nothing may be dropped silently (202 with no body for a request), errors are short and
carry the right code, and a lone surrogate in arguments or in an upstream's result still
gets an answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

import httpx2
import pytest

from robustness.expectations import line
from robustness.gateways import ECHO_TOOL, SURROGATE_TOOL, HttpGateway
from robustness.http_client import (
    ACCEPT,
    HANDSHAKE_VERSION,
    MODERN_VERSION,
    HandshakeSession,
    HttpAnswer,
    modern_meta,
    modern_request,
    post_modern,
    read_answer,
)
from robustness.wire import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR

Era = Literal["handshake", "2026-07-28"]
ERAS: list[Era] = ["handshake", "2026-07-28"]
SHORT = 200  # characters: an error message is a sentence, not a validation dump
DUMP_MARKERS = ("validation error", "input_value", "errors.pydantic.dev", "type=", "union[")


@pytest.fixture
def client() -> Iterator[httpx2.Client]:
    with httpx2.Client(timeout=15) as c:
        yield c


def post(
    era: Era, gateway: HttpGateway, client: httpx2.Client, message: Any, raw: bytes | None = None
) -> HttpAnswer:
    """POST one body the way a client of `era` would (session headers, or the per-request envelope)."""
    if era == "handshake":
        session = HandshakeSession(client, gateway.mcp_url).open()
        return session.post(raw if raw is not None else line(message))
    if isinstance(message, dict) and isinstance(message.get("params", {}), dict):
        message = {**message, "params": {**message.get("params", {}), "_meta": modern_meta()}}
    return post_modern(client, gateway.mcp_url, raw if raw is not None else line(message), message)


def assert_short_invalid_request(answer: HttpAnswer) -> None:
    assert answer.status == 400, answer.describe()
    reply = answer.only_answer()
    assert reply.get("id") is None, answer.describe()
    assert reply["error"]["code"] == INVALID_REQUEST, answer.describe()
    message = reply["error"]["message"]
    assert len(message) <= SHORT, f"{len(message)} characters: {message[:300]!r}"
    assert not any(marker in message for marker in DUMP_MARKERS), message


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    "bad_id", [None, {}, [1], 1.5, True], ids=["null", "object", "array", "fraction", "true"]
)
def test_invalid_id_is_an_invalid_request_not_a_silent_202(
    http_gateway: HttpGateway, client: httpx2.Client, era: Era, bad_id: Any
) -> None:
    """Item 11: ids null, {}, [1], 1.5, true returned 202 with no body (the request vanished)."""
    answer = post(era, http_gateway, client, {"jsonrpc": "2.0", "id": bad_id, "method": "tools/list"})
    assert_short_invalid_request(answer)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("token", ["NaN", "Infinity"])
def test_nan_id_is_refused_and_never_echoed(
    http_gateway: HttpGateway, client: httpx2.Client, era: Era, token: str
) -> None:
    """Item 13 on HTTP: not JSON, so -32700 (or -32600) with id null; never a bare NaN, never a 202."""
    body = {"jsonrpc": "2.0", "id": 0, "method": "tools/list"}
    raw = post_body_with_id(era, body, token)
    answer = post(era, http_gateway, client, body, raw=raw)
    assert answer.status == 400, answer.describe()
    reply = answer.only_answer()
    assert reply.get("id") is None and reply["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST), (
        answer.describe()
    )


def post_body_with_id(era: Era, message: dict[str, Any], token: str) -> bytes:
    if era == "2026-07-28":
        message = {**message, "params": {"_meta": modern_meta()}}
    return line(message).replace(b'"id":0', b'"id":' + token.encode())


BAD_ENVELOPES = {
    "batch": [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ],
    "jsonrpc-1.0": {"jsonrpc": "1.0", "id": 3, "method": "tools/list"},
    "empty-batch": [],
}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("name", list(BAD_ENVELOPES))
def test_batch_and_wrong_jsonrpc_version_get_a_short_invalid_request(
    http_gateway: HttpGateway, client: httpx2.Client, era: Era, name: str
) -> None:
    """Item 11: these answered -32602 with a pydantic dump; -32600 and one sentence is right."""
    message = BAD_ENVELOPES[name]
    if era == "2026-07-28" and isinstance(message, list):
        message = [{**m, "params": {"_meta": modern_meta()}} for m in message]
    answer = post(era, http_gateway, client, message, raw=line(message))
    assert_short_invalid_request(answer)


def _version_error_text(answer: HttpAnswer) -> str:
    assert answer.status == 400, answer.describe()
    reply = answer.only_answer()
    assert "error" in reply, answer.describe()
    error = reply["error"]
    assert "_meta" not in error["message"], f"an envelope error instead of the version error: {error}"
    assert "version" in error["message"].lower(), error
    return json.dumps(error)


@pytest.mark.parametrize("where", ["in-a-session", "no-session"])
def test_unknown_protocol_version_header_gets_the_version_error(
    http_gateway: HttpGateway, client: httpx2.Client, where: str
) -> None:
    """Item 11: an unknown MCP-Protocol-Version got an error about `_meta` envelope keys."""
    ping = line({"jsonrpc": "2.0", "id": 7, "method": "ping"})
    if where == "in-a-session":
        session = HandshakeSession(client, http_gateway.mcp_url).open()
        answer = session.post(ping, extra={"MCP-Protocol-Version": "1999-01-01"})
    else:
        response = client.post(
            http_gateway.mcp_url, content=ping, headers={**ACCEPT, "MCP-Protocol-Version": "1999-01-01"}
        )
        answer = read_answer(response)
    text = _version_error_text(answer)
    assert HANDSHAKE_VERSION in text or MODERN_VERSION in text, f"supported versions not named: {text}"


def test_unknown_version_in_the_envelope_names_the_supported_versions(
    http_gateway: HttpGateway, client: httpx2.Client
) -> None:
    message = modern_request("tools/list", None, 8)
    message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01"
    headers = {**ACCEPT, "MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"}
    answer = read_answer(client.post(http_gateway.mcp_url, content=line(message), headers=headers))
    text = _version_error_text(answer)
    assert MODERN_VERSION in text, f"supported versions not named: {text}"


def _call(request_id: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


@pytest.mark.parametrize("era", ERAS)
def test_lone_surrogate_in_arguments_gets_an_answer(
    http_gateway: HttpGateway, client: httpx2.Client, era: Era
) -> None:
    """Item 3: the call got HTTP 200 with an empty stream. An answer (or a clear error) is required."""
    answer = post(era, http_gateway, client, _call("surr-args", ECHO_TOOL, {"text": "a\ud800b"}))
    assert answer.status < 500, answer.describe()
    reply = answer.only_answer()
    if reply.get("id") is None:  # refused before it was read as a request: a clear error, with its code
        assert reply["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS), answer.describe()
    else:
        assert reply["id"] == "surr-args", answer.describe()


@pytest.mark.parametrize("era", ERAS)
def test_lone_surrogate_in_an_upstream_result_gets_an_answer(
    http_gateway: HttpGateway, client: httpx2.Client, era: Era
) -> None:
    """Item 3: an upstream's result holding "\\ud800" must reach the client as valid JSON."""
    answer = post(era, http_gateway, client, _call("surr-result", SURROGATE_TOOL, {}))
    assert answer.status == 200, answer.describe()
    reply = answer.only_answer()
    assert reply["id"] == "surr-result", answer.describe()
    if "result" in reply:
        text = reply["result"]["content"][0]["text"]
        assert text.startswith("broken ") and text.endswith(" text"), reply


@pytest.mark.parametrize("era", ERAS)
def test_the_gateway_still_serves_after_all_of_it(
    http_gateway: HttpGateway, client: httpx2.Client, era: Era
) -> None:
    answer = post(era, http_gateway, client, _call("after", ECHO_TOOL, {"still": "here"}))
    reply = answer.only_answer()
    assert reply["result"]["content"][0]["text"] == '{"still":"here"}', answer.describe()
    assert http_gateway.alive
