"""The last step: send the call to the best candidate server, falling back by priority.

One rule for every method (tools/call, resources/read, prompts/get, completion/complete):
a candidate is skipped when it is not ready, its transport fails or it times out; an
answer from the server itself, even an error or `isError`, is final (it is that server's
own verdict). Only where no server claimed the request (a resource URI nobody lists)
is every server with resources asked in turn, and there "not found" passes it on.

A name nobody offers gets -32602 with the closest known names; a name whose server is
down gets -32003 naming the server and its state; a name whose server is still
connecting waits for it, up to the call's timeout.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from rapidfuzz import process

from mcp_nexus.catalog.catalog import Catalog, CatalogTool
from mcp_nexus.errors import (
    GatewayError,
    NotFoundError,
    PermissionDeniedError,
    ToolTimeoutError,
    UnavailableError,
    UnknownToolError,
)
from mcp_nexus.pipeline.call import Caller, ToolCall
from mcp_nexus.pipeline.held_calls import HeldCalls, asks_back, held_state
from mcp_nexus.pipeline.policy import DEFAULT_TIMEOUT
from mcp_nexus.pipeline.steps.trace import traced
from mcp_nexus.upstream.input_required import InputAnswerer
from mcp_nexus.upstream.oauth.per_user import is_per_user, is_user
from mcp_nexus.upstream.session import Session
from mcp_nexus.upstream.state import UpstreamState
from mcp_nexus.upstream.upstream import CallerEra, Upstream, UpstreamUnavailable
from mcp_nexus.upstream.user_sessions import as_user, call_tool_as_user

logger = logging.getLogger(__name__)

SERVER_META_KEY = "nexus/server"
UPSTREAM_STAMP = "io.modelcontextprotocol/serverInfo"  # a 2026-07-28 server's stamp on each result
_PASS_ON_CODES = (types.METHOD_NOT_FOUND, types.INVALID_PARAMS, -32002)  # "not mine" from a broadcast
# ...and, in a broadcast only, "not now" from a server that may not even hold the URI: down, or a
# per-user server this user has not logged in to (its login URL is the answer if no one else has it).
_BROADCAST_NOT_NOW = (UnavailableError.code, types.URL_ELICITATION_REQUIRED)


class RouteStep:
    def __init__(
        self,
        catalog: Catalog,
        answer_input: Callable[[ToolCall], InputAnswerer | None],
        held: HeldCalls | None = None,
    ) -> None:
        self.catalog = catalog
        self.answer_input = answer_input  # how a caller that cannot take input requests gets them answered
        # 2026-07-28 callers' calls on handshake-era servers, held between rounds (held_calls.py)
        self.held = held if held is not None else HeldCalls()

    async def __call__(self, call: ToolCall) -> Any:
        if call.method == "tools/call":
            return await self._tool(call)
        if call.method == "resources/read":
            candidates = self.catalog.resource_candidates(call.name)
            broadcast = not candidates
            upstreams = candidates or self.catalog.upstreams_with_resources()
            if not upstreams:
                raise NotFoundError(f"Resource not found: {call.name}", data={"uri": call.name})
            pairs = self._held_server_first(call, [(u, call.name) for u in upstreams])
            return await self._try_each(call, pairs, broadcast, self._read)
        if call.method == "prompts/get":
            routes = self.catalog.prompts.get(call.name)
            if not routes:
                raise NotFoundError(f"Unknown prompt: {call.name}", data={"prompt": call.name})
            pairs = self._held_server_first(call, [(r.upstream, r.prompt.name) for r in routes])
            return await self._try_each(call, pairs, False, self._prompt)
        return await self._complete(call)

    # -- tools ------------------------------------------------------------------------------

    async def _tool(self, call: ToolCall) -> Any:
        entry = self.catalog.tools.get(call.name)
        if entry is None:
            entry = await self._await_connecting(call)
        if entry.tool.output_schema is not None:
            call.declares_output_schema = True
        if entry.local is not None:
            call.server = "nexus"
            if entry.local.progress_handler is not None:
                return await entry.local.progress_handler(call.arguments, call.caller, call.progress)
            return await entry.local.handler(call.arguments, call.caller)
        pairs = self._held_server_first(
            call, [(route.upstream, route.tool.name) for route in entry.candidates]
        )
        return await self._try_each(call, pairs, False, self._call_tool)

    async def _await_connecting(self, call: ToolCall) -> CatalogTool:
        """An unknown name: wait for a server still connecting that may offer it, else say why not."""
        timeout = call.timeout if call.timeout is not None else DEFAULT_TIMEOUT
        entry = await self.catalog.wait_for_tool(call.name, timeout)
        if entry is not None:
            return entry
        held = self.catalog.quarantined(call.name)
        if held is not None:  # held by the integrity check (catalog/tool_integrity.py): say why
            raise PermissionDeniedError(
                held.message, data={"server": held.server, "tool": call.name, "changed": held.changed}
            )
        owner = self.catalog.offline_owner(call.name)
        if owner is not None:
            raise _unavailable(call.name, owner)
        close = [match for match, _score, _i in process.extract(call.name, list(self.catalog.tools), limit=3)]
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise UnknownToolError(
            f"Unknown tool: {call.name}{hint}", data={"tool": call.name, "suggestions": close}
        )

    async def _call_tool(self, call: ToolCall, upstream: Upstream, original: str, timeout: float) -> Any:
        if held_state(call.round) is not None:
            return _with_server_meta(await self._resume(call), upstream.name)

        async def send(caller: Caller, progress: Any) -> Any:
            if _as_user(caller, upstream):  # the user's own login, own session
                return await call_tool_as_user(
                    upstream,
                    caller.identity,
                    original,
                    call.arguments,
                    capabilities=caller.capabilities,
                    modern=caller.modern,
                    progress=progress,
                    timeout=timeout,
                    meta=call.meta,
                    round_=call.round,
                    answer_input=self.answer_input(call),
                    subject_token=caller.access_token,
                )
            return await upstream.call_tool(
                original,
                call.arguments,
                era=_era(caller),
                progress=progress,
                timeout=timeout,
                meta=call.meta,
                capabilities=caller.capabilities,
                round_=call.round,
                answer_input=self.answer_input(call),
            )

        if self._holds(call.caller, upstream):
            return _with_server_meta(await self._hold(call, upstream, send), upstream.name)
        return _with_server_meta(await send(call.caller, call.progress), upstream.name)

    # -- resources, prompts, completions ------------------------------------------------------

    async def _read(self, call: ToolCall, upstream: Upstream, uri: str, timeout: float) -> Any:
        if held_state(call.round) is not None:
            return _without_upstream_stamp(await self._resume(call))

        async def read(session: Session) -> Any:
            return await session.read_resource(
                uri,
                timeout=timeout,
                capabilities=call.caller.capabilities if call.caller.modern else None,
                round_=call.round,
                answer_input=None if call.caller.modern else self.answer_input(call),
            )

        return _without_upstream_stamp(await self._over_session_or_held(call, upstream, read))

    async def _prompt(self, call: ToolCall, upstream: Upstream, original: str, timeout: float) -> Any:
        if held_state(call.round) is not None:
            return _without_upstream_stamp(await self._resume(call))

        async def get(session: Session) -> Any:
            return await session.get_prompt(
                original,
                call.arguments or None,
                timeout=timeout,
                capabilities=call.caller.capabilities if call.caller.modern else None,
                round_=call.round,
                answer_input=None if call.caller.modern else self.answer_input(call),
            )

        return _without_upstream_stamp(await self._over_session_or_held(call, upstream, get))

    async def _complete(self, call: ToolCall) -> Any:
        ref = call.arguments["ref"]
        if isinstance(ref, types.PromptReference):
            routes = self.catalog.prompts.get(ref.name) or []
            pairs: list[tuple[Upstream, Any]] = [
                (r.upstream, ref.model_copy(update={"name": r.prompt.name})) for r in routes
            ]
        else:
            pairs = [(r.upstream, ref) for r in self.catalog.templates if r.template.uri_template == ref.uri]
        pairs = [
            (u, target) for u, target in pairs if u.capabilities is not None and u.capabilities.completions
        ]
        if not pairs:
            return types.CompleteResult(completion=types.Completion(values=[]))

        async def complete(call: ToolCall, upstream: Upstream, target: Any, timeout: float) -> Any:
            async def ask(session: Session) -> Any:
                return await session.complete(
                    target, call.arguments["argument"], call.arguments.get("context"), timeout=timeout
                )

            # Not the caller's era's session (a completion asks nothing back): the primary, or the user's own.
            if _as_user(call.caller, upstream):
                result = await _over_callers_session(call.caller, upstream, ask)
            else:
                result = await ask(upstream.session())
            return _without_upstream_stamp(result)

        return await self._try_each(call, pairs, False, complete)

    # -- held calls (held_calls.py) ----------------------------------------------------------------

    @staticmethod
    def _holds(caller: Caller, upstream: Upstream) -> bool:
        """A 2026-07-28 caller that answers questions, on a handshake-era session: the server asks
        mid-call, and this caller answers only in a next round of its own."""
        return asks_back(caller) and not upstream.session().modern

    async def _hold(
        self, call: ToolCall, upstream: Upstream, send: Callable[[Caller, Any], Awaitable[Any]]
    ) -> Any:
        async def run(held_caller: Caller, progress: Any) -> Any:
            upstream.active_callers.append(held_caller)  # where the relay finds whom to ask
            try:
                return await send(held_caller, progress)
            finally:
                _remove_last(upstream.active_callers, held_caller)

        return await self.held.start(call.caller, (call.method, call.name), upstream.name, call.progress, run)

    async def _over_session_or_held(
        self, call: ToolCall, upstream: Upstream, send: Callable[[Session], Awaitable[Any]]
    ) -> Any:
        """`send` over the caller's session (`_over_callers_session`), held when the server may ask."""
        if self._holds(call.caller, upstream):

            async def held(caller: Caller, progress: Any) -> Any:
                return await _over_callers_session(caller, upstream, send)

            return await self._hold(call, upstream, held)
        return await _over_callers_session(call.caller, upstream, send)

    async def _resume(self, call: ToolCall) -> Any:
        assert call.round is not None
        return await self.held.resume(call.caller, (call.method, call.name), call.round, call.progress)

    def _held_server_first(
        self, call: ToolCall, pairs: list[tuple[Upstream, Any]]
    ) -> list[tuple[Upstream, Any]]:
        """The next round of a held call goes to the server it runs on, and only there."""
        if held_state(call.round) is None:
            return pairs
        server = self.held.server_of(call.round)
        return [pair for pair in pairs if pair[0].name == server][:1] or pairs[:1]

    # -- the one fallback rule -------------------------------------------------------------------

    async def _try_each(
        self,
        call: ToolCall,
        candidates: list[tuple[Upstream, Any]],
        broadcast: bool,
        send: Callable[[ToolCall, Upstream, Any, float], Awaitable[Any]],
    ) -> Any:
        last_error: Exception | None = None
        send = traced(send)  # a CLIENT span per attempt when tracing is on; `send` itself when off
        for upstream, target in candidates:
            call.servers_tried.append(upstream.name)
            if not upstream.is_ready:
                last_error = _unavailable(call.name, upstream)
                continue
            timeout = (
                call.candidate_timeouts.get(upstream.name) or call.timeout or upstream.config.timeouts.call
            )
            tracked = call.caller.peer is not None
            if tracked:
                upstream.active_callers.append(call.caller)
            try:
                result = await send(call, upstream, target, timeout)
            except MCPError as exc:
                code = exc.error.code
                if upstream.state == UpstreamState.NEEDS_AUTH:
                    # Its login was refused during the call (upstream/oauth/): the error the
                    # server's refusal made is not its verdict; say what every later call hears.
                    last_error = _unavailable(call.name, upstream)
                    continue
                if code == types.CONNECTION_CLOSED:
                    last_error = UpstreamUnavailable(
                        exc.error.message or f"server {upstream.name!r} closed the connection"
                    )
                    continue
                if code == types.REQUEST_TIMEOUT:
                    last_error = ToolTimeoutError(
                        f"{_what(call)} did not answer within {timeout:g} s on server {upstream.name!r};"
                        " the call was cancelled",
                        data={"server": upstream.name, _key(call): call.name, "timeout": timeout},
                    )
                    logger.info("%s: server %s timed out, trying the next", call.name, upstream.name)
                    continue
                if broadcast and (code in _PASS_ON_CODES or code in _BROADCAST_NOT_NOW):
                    last_error = exc
                    continue
                raise  # the server's own answer
            except (UpstreamUnavailable, ConnectionError, OSError, TimeoutError) as exc:
                last_error = exc
                logger.info("%s: server %s failed (%s), trying the next", call.name, upstream.name, exc)
                continue
            finally:
                if tracked:
                    _remove_last(upstream.active_callers, call.caller)
            call.server = upstream.name
            return result
        if isinstance(last_error, MCPError):
            raise last_error
        if isinstance(last_error, GatewayError):
            last_error.data["servers_tried"] = list(call.servers_tried)
            raise last_error
        raise UnavailableError(
            f"no server could answer {call.name}: {last_error} (tried {', '.join(call.servers_tried)})",
            data={"servers_tried": list(call.servers_tried), _key(call): call.name},
        )


def _as_user(caller: Caller, upstream: Upstream) -> bool:
    """Whether this caller's request goes over their own session: a user, on a per-user server."""
    return is_per_user(upstream.config) and is_user(caller.identity)


async def _over_callers_session(
    caller: Caller, upstream: Upstream, send: Callable[[Session], Awaitable[Any]]
) -> Any:
    """`send` over the session this caller's request belongs on: a user's own on a per-user server
    (never the operator's login: it would read as the operator), else the one of the caller's era."""
    if _as_user(caller, upstream):
        return await as_user(
            upstream,
            caller.identity,
            send,
            capabilities=caller.capabilities,
            subject_token=caller.access_token,
        )
    return await send(await upstream.session_for(_era(caller)))


def _era(caller: Caller) -> CallerEra:
    """What the caller needs from the session that carries its request."""
    return CallerEra.of(caller.modern, caller.back_channel)


def _unavailable(name: str, upstream: Upstream) -> UnavailableError:
    """-32003 for a server that cannot answer now: its state, why, and when it is tried again."""
    reason = f" ({upstream.last_error})" if upstream.last_error else ""
    retry = upstream.next_attempt_at
    when = (
        f"; it will be tried again in {max(0.0, retry - time.monotonic()):.1f} s" if retry is not None else ""
    )
    return UnavailableError(
        f"server {upstream.name!r} of {name} is {upstream.state}{reason}{when}",
        data={"server": upstream.name, "state": str(upstream.state), "tool": name},
    )


def _what(call: ToolCall) -> str:
    return {"tools/call": "tool", "resources/read": "resource", "prompts/get": "prompt"}.get(
        call.method, "completion for"
    ) + f" {call.name}"


def _key(call: ToolCall) -> str:
    return {"tools/call": "tool", "resources/read": "uri", "prompts/get": "prompt"}.get(call.method, "ref")


def _remove_last(items: list[Any], value: Any) -> None:
    for index in range(len(items) - 1, -1, -1):
        if items[index] is value:
            del items[index]
            return


def _with_server_meta(result: Any, server: str) -> Any:
    meta = dict(result.meta or {})
    # The upstream's identity stamp would contradict ours: the SDK stamps Nexus's own serverInfo.
    meta.pop(UPSTREAM_STAMP, None)
    meta[SERVER_META_KEY] = server
    result.meta = meta
    return result


def _without_upstream_stamp(result: Any) -> Any:
    """A read's, prompt's or completion's result without the 2026-07-28 upstream's `serverInfo`
    stamp: passed on, it told a caller the gateway's answer came from another server."""
    meta = getattr(result, "meta", None)
    if isinstance(meta, dict) and UPSTREAM_STAMP in meta:
        result.meta = {key: value for key, value in meta.items() if key != UPSTREAM_STAMP} or None
    return result
