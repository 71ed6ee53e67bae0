"""Every POST to /mcp is checked by the JSON-RPC core before the SDK's transport sees it.

Why: the SDK's streamable-HTTP transport answers some malformed messages in ways clients
cannot use (an id of `null`, `{}`, `[1]`, `1.5` or `true` is taken for a notification and
gets 202 with no body; a batch or `"jsonrpc": "1.0"` gets a pydantic dump; an unknown
`Mcp-Protocol-Version` header gets an error about `_meta` keys). Here the same rules as on
every other endpoint apply (jsonrpc/message.py): one short JSON-RPC error with HTTP 400.
A well-formed message is passed on byte for byte, except a plain tools/call on a
handshake-era session, which takes the lean path (McpFrontend.lean_call) when eligible, a
plain 2026-07-28 tools/call that passes every check the SDK's transport makes (Accept, the
routing headers, `Mcp-Param-*`), served by frontends/mcp/modern_call.py, and
a request whose params hold a lone UTF-16 surrogate, answered here for both paths (-32602
naming where: forwarded, a strict upstream would drop it and the client wait for a timeout).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.runner import modern_error_data
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp_types import PROTOCOL_VERSION_META_KEY, UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_nexus.frontends.mcp.modern_call import ModernToolCall
from mcp_nexus.frontends.mcp.param_header_schemas import ParamHeaderSchemas
from mcp_nexus.jsonrpc import ParseError, decode_checked, encode, lone_surrogate
from mcp_nexus.jsonrpc.message import Invalid, Request, classify
from mcp_nexus.profiles.endpoint import PROFILE_SCOPE_KEY

SUPPORTED_VERSIONS = [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS]


LeanCall = Callable[[str, Any, dict[str, Any] | None, Any, str | None], Awaitable[bytes | None]]
"""(session id, request id, params, the scope's user, the profile of `/mcp/<profile>`) -> the JSON body of the answer, or None to
take the SDK's path."""


class McpMessageCheck:
    def __init__(
        self,
        app: ASGIApp,
        path: str,
        lean_call: LeanCall | None = None,
        modern_call: ModernToolCall | None = None,
    ) -> None:
        self.app = app
        self.path = path.rstrip("/") or "/"
        self.lean_call = lean_call
        self.modern_call = modern_call
        self._param_headers = ParamHeaderSchemas()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        body, more = await _read_body(receive)
        if more:  # an unfinished body (disconnect): let the transport say so
            await self.app(scope, _replay(body, receive), send)
            return
        try:
            value, may_hold_surrogates = decode_checked(body)
        except ParseError as exc:
            await _answer(send, None, exc.to_wire())
            return
        message = classify(value)
        if isinstance(message, Invalid):
            if not message.answer:
                await _accepted(send)  # a broken notification or stray response: nothing may answer it
                return
            await _answer(send, message.id, message.error())
            return
        if may_hold_surrogates and isinstance(message, Request):
            refused = lone_surrogate(message.params)
            if refused is not None:  # a JSON-RPC answer to a well-formed request, as the SDK gives
                await _json(
                    send, 200, encode({"jsonrpc": "2.0", "id": message.id, "error": refused.to_wire()})
                )
                return
        version = _header(scope, b"mcp-protocol-version")
        if version is not None and version not in SUPPORTED_VERSIONS and not _enveloped(message):
            # A 2026-07-28 request (with its `_meta` envelope) is the SDK's to judge; a handshake-era
            # one would otherwise hear about missing envelope keys instead of its version.
            await _answer(
                send,
                getattr(message, "id", None),
                {
                    "code": UNSUPPORTED_PROTOCOL_VERSION,
                    "message": f"Unsupported protocol version {version!r} (Mcp-Protocol-Version header); "
                    f"supported: {', '.join(SUPPORTED_VERSIONS)}",
                    "data": {"supported": SUPPORTED_VERSIONS, "requested": version},
                },
            )
            return
        if self.lean_call is not None and isinstance(message, Request) and message.method == "tools/call":
            session_id = _header(scope, b"mcp-session-id")
            if (
                session_id is not None
                and version in (None, *HANDSHAKE_PROTOCOL_VERSIONS)
                and not _enveloped(message)
            ):
                answer = await self.lean_call(
                    session_id, message.id, message.params, scope.get("user"), scope.get(PROFILE_SCOPE_KEY)
                )
                if answer is not None:
                    await _json(send, 200, answer)
                    return
        if (
            self.modern_call is not None
            and isinstance(message, Request)
            and message.method == "tools/call"
            and version in MODERN_PROTOCOL_VERSIONS
        ):
            served = await self._modern(scope, value, message)
            if served is not None:
                await _json(send, *served)
                return
        await self.app(scope, _replay(body, receive), send)

    async def _modern(self, scope: Scope, value: Any, message: Request) -> tuple[int, bytes] | None:
        """(status, body) of a plain 2026-07-28 tools/call; None when the SDK's transport must judge it.

        Every check the SDK's single-exchange transport makes before dispatch is made here in
        the same order; a request failing any of them goes on to the SDK, which answers it.
        """
        modern = self.modern_call
        assert modern is not None
        if not modern.accepts(message.params):
            return None
        # Only Accept and the MCP headers take part in the checks below (the SDK's read those alone).
        raw = [
            (key.decode("latin-1").lower(), item.decode("latin-1"))
            for key, item in scope.get("headers", ())
            if key[:4].lower() == b"mcp-" or key.lower() == b"accept"
        ]
        headers: dict[str, str] = {}
        for key, item in raw:  # the first of a repeated header, as starlette's Headers reads it
            headers.setdefault(key, item)
        if (
            not _accepts_json_and_sse(headers.get("accept", ""))
            or find_duplicated_routing_header(raw)
            # A repeated Mcp-Param-* header is the SDK's to judge (it rejects a declared one).
            or _repeated_param_header(raw)
        ):
            return None
        if isinstance(classify_inbound_request(value, headers=headers), InboundLadderRejection):
            return None
        params = message.params or {}
        arguments = params.get("arguments") or {}
        if arguments or any(key.startswith("mcp-param-") for key in headers):
            schema = modern.frontend.tool_input_schema(params["name"])
            if (
                schema is not None
                and self._param_headers.declares(schema)
                and validate_mcp_param_headers(schema, arguments, headers) is not None
            ):
                return None
        try:
            result = await modern.call(
                message.id, params, user=scope.get("user"), profile=scope.get(PROFILE_SCOPE_KEY)
            )
        except Exception as exc:  # mapped as the SDK maps a modern handler's exception
            error = modern_error_data(exc).model_dump(mode="json", by_alias=True, exclude_none=True)
            answer = encode({"jsonrpc": "2.0", "id": message.id, "error": error})
            return ERROR_CODE_HTTP_STATUS.get(error["code"], 200), answer
        return 200, encode({"jsonrpc": "2.0", "id": message.id, "result": result})


def _repeated_param_header(raw: list[tuple[str, str]]) -> bool:
    names = [key for key, _ in raw if key.startswith("mcp-param-")]
    return len(names) != len(set(names))


def _accepts_json_and_sse(accept: str) -> bool:
    """The SDK's Accept rule for a POST (mcp.server.streamable_http.check_accept_headers), on a string."""
    types = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    wildcard = "*/*" in types
    has_json = wildcard or "application/json" in types or "application/*" in types
    has_sse = wildcard or "text/event-stream" in types or "text/*" in types
    return has_json and has_sse


def _enveloped(message: Any) -> bool:
    meta = (getattr(message, "params", None) or {}).get("_meta")
    return isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks), True
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), False


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _answer(send: Send, request_id: Any, error: dict[str, Any]) -> None:
    # encode, not orjson.dumps: an id may hold a lone surrogate too (escaped, never a 500)
    await _json(send, 400, encode({"jsonrpc": "2.0", "id": request_id, "error": error}))


async def _json(send: Send, status: int, payload: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


async def _accepted(send: Send) -> None:
    await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})
