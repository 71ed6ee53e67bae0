"""Speaking to `/mcp` by hand, in both protocol eras, and reading what comes back strictly.

Handshake era (2024-11-05 .. 2025-11-25): `initialize` opens a session whose id travels in
the `Mcp-Session-Id` header, then `MCP-Protocol-Version` on every request.
2026-07-28: no session; every request carries the envelope in `params._meta`
(protocol version, client capabilities, client info) and mirrors it in headers
(`MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for tools/call, prompts/get and
resources/read), as `mcp.shared.inbound.classify_inbound_request` checks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx2
from mcp.shared.inbound import encode_header_value

from robustness.wire import NotStrictJson, shape_problem, strict_loads

HANDSHAKE_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
CLIENT_INFO = {"name": "robustness-tests", "version": "1"}
NAME_PARAM = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


@dataclass
class HttpAnswer:
    """One HTTP response to one POST: its status and every JSON-RPC message it carried."""

    status: int
    content_type: str
    body: bytes
    messages: list[Any] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def answers(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if isinstance(m, dict) and "method" not in m and "id" in m]

    def only_answer(self) -> dict[str, Any]:
        assert not self.problems, self.describe()
        assert len(self.answers) == 1, f"expected exactly one JSON-RPC answer; {self.describe()}"
        return self.answers[0]

    def describe(self) -> str:
        return f"HTTP {self.status} {self.content_type!r}, problems {self.problems}, body {self.body[:400]!r}"


def read_answer(response: httpx2.Response) -> HttpAnswer:
    content_type = response.headers.get("content-type", "")
    answer = HttpAnswer(response.status_code, content_type, response.content)
    body = response.content
    if not body.strip():
        return answer
    if content_type.startswith("text/event-stream"):
        payloads = _sse_payloads(body)
    elif content_type.startswith("application/json"):
        payloads = [body]
    else:
        return answer  # plain-text refusals (404 "Session not found", 413, ...) carry no JSON-RPC
    for payload in payloads:
        try:
            message = strict_loads(payload)
        except NotStrictJson as exc:
            answer.problems.append(f"not valid JSON ({exc}): {payload[:200]!r}")
            continue
        for item in message if isinstance(message, list) else [message]:
            problem = shape_problem(item)
            if problem:
                answer.problems.append(f"{problem}: {str(item)[:200]}")
            answer.messages.append(item)
    return answer


def _sse_payloads(body: bytes) -> list[bytes]:
    """The data of each server-sent event (empty priming events skipped)."""
    payloads: list[bytes] = []
    for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
        joined = b"\n".join(data)
        if joined.strip():
            payloads.append(joined)
    return payloads


def modern_meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    }


def modern_headers(message: Any) -> dict[str, str]:
    """The routing headers a 2026-07-28 client sends for `message` (junk methods get a junk header)."""
    headers = {**ACCEPT, "MCP-Protocol-Version": MODERN_VERSION}
    method = message.get("method") if isinstance(message, dict) else None
    headers["Mcp-Method"] = method if isinstance(method, str) and _header_safe(method) else "x-junk"
    params = message.get("params") if isinstance(message, dict) else None
    name_key = NAME_PARAM.get(method) if isinstance(method, str) else None
    if name_key and isinstance(params, dict) and isinstance(params.get(name_key), str):
        try:
            headers["Mcp-Name"] = encode_header_value(params[name_key])
        except (ValueError, UnicodeEncodeError):
            headers["Mcp-Name"] = "x-junk"
    return headers


def _header_safe(value: str) -> bool:
    return all(0x20 <= ord(ch) <= 0x7E for ch in value)


def modern_request(method: str, params: dict[str, Any] | None, request_id: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**(params or {}), "_meta": modern_meta()},
    }


class HandshakeSession:
    """A handshake-era session on `/mcp`: initialize, initialized, then requests in the session."""

    def __init__(self, client: httpx2.Client, url: str) -> None:
        self.client = client
        self.url = url
        self.session_id: str | None = None

    def open(self) -> HandshakeSession:
        init = {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
        }
        response = self.client.post(self.url, json=init, headers=ACCEPT)
        answer = read_answer(response)
        assert response.status_code == 200 and "result" in answer.only_answer(), answer.describe()
        self.session_id = response.headers["mcp-session-id"]
        note = self.post(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
        assert note.status == 202, note.describe()
        return self

    @property
    def headers(self) -> dict[str, str]:
        assert self.session_id is not None
        return {**ACCEPT, "Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": HANDSHAKE_VERSION}

    def post(self, body: bytes, extra: dict[str, str] | None = None, timeout: float = 15.0) -> HttpAnswer:
        response = self.client.post(
            self.url, content=body, headers={**self.headers, **(extra or {})}, timeout=timeout
        )
        return read_answer(response)


def post_modern(
    client: httpx2.Client, url: str, body: bytes, message: Any, timeout: float = 15.0
) -> HttpAnswer:
    response = client.post(url, content=body, headers=modern_headers(message), timeout=timeout)
    return read_answer(response)
