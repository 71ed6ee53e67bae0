"""Nexus as one MCP server: the aggregated catalog served over stdio or streamable HTTP.

Built on the SDK's low-level `Server`, so both protocol eras are spoken downstream; every
tools/call goes through `Gateway.call_tool` (the pipeline), never to an upstream directly.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from dataclasses import dataclass
from typing import Any, cast

import mcp_types as types
from mcp.server import Server
from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.shared.dispatcher import ProgressFnT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_nexus import __version__, events
from mcp_nexus._sdk_seams import (
    caller_wants_progress,
    connection_of,
    http_session_owned_by,
    touch_http_session,
)
from mcp_nexus.catalog.tool_listing import listed_tools
from mcp_nexus.errors import GatewayError
from mcp_nexus.events import ListChanged, ListKind
from mcp_nexus.frontends.mcp.first_list import settle_first_list
from mcp_nexus.frontends.tool_call_entry import as_mcp_error, call_tool, client_caller, encodable
from mcp_nexus.gateway import Gateway
from mcp_nexus.identity.principal import scope_user
from mcp_nexus.jsonrpc import encode, error_body
from mcp_nexus.pipeline.call import Caller, InputRound
from mcp_nexus.profiles.endpoint import scope_profile

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _UpdatedUri:
    """A resource's URI queued for `notifications/resources/updated` (beside list kinds, never equal to one)."""

    uri: str


_LIST_CHANGED: dict[str, tuple[str, type[ToolsListChanged | ResourcesListChanged | PromptsListChanged]]] = {
    "tools": ("notifications/tools/list_changed", ToolsListChanged),
    "resources": ("notifications/resources/list_changed", ResourcesListChanged),
    "prompts": ("notifications/prompts/list_changed", PromptsListChanged),
}


class _NexusServer(Server[Any]):
    """Advertises listChanged for tools, resources and prompts: the aggregate changes as servers come and go."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(True, True, True),
            experimental_capabilities,
            extensions,
        )


def _list_cache_hints(ttl_seconds: float) -> dict[CacheableMethod, CacheHint]:
    """Freshness hints on our own list results (2026-07-28 clients cache by them).

    Private scope: what a client sees may depend on who it is. List changes still reach
    clients at once through subscriptions/listen, so the TTL only bounds staleness for
    clients that do not listen. resources/read is not hinted here: the upstream's own
    `ttlMs`/`cacheScope` travel with the result it returns.
    """
    hint = CacheHint(ttl_ms=int(ttl_seconds * 1000), scope="private")
    return {
        "tools/list": hint,
        "prompts/list": hint,
        "resources/list": hint,
        "resources/templates/list": hint,
    }


class McpFrontend:
    """Adapts the gateway to the SDK server and fans list changes out to every connected client."""

    def __init__(self, gateway: Gateway, frontend: str, *, profile: str | None = None) -> None:
        self.gateway = gateway
        self.frontend = frontend
        # The profile every caller of this frontend gets (`nexus serve --stdio --profile`); over HTTP
        # `/mcp/<profile>` names one per request instead (profiles/endpoint.py).
        self.profile = profile
        self.bus = InMemorySubscriptionBus()
        # Handshake-era connections, to push list_changed on their standalone channel.
        self._connections: weakref.WeakSet[Any] = weakref.WeakSet()
        # Handshake-era HTTP sessions by Mcp-Session-Id, for the lean tools/call (lean_call).
        self._sessions: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
        self._tasks: set[asyncio.Task[None]] = set()
        # Changes waiting to be told to clients, in order, each at most once (see _queue): a
        # list kind, or the URI of an updated resource.
        self._changes: dict[ListKind | _UpdatedUri, None] = {}
        self._broadcaster: asyncio.Task[None] | None = None
        self.server = _NexusServer(
            "mcp-nexus",
            version=__version__,
            title="Nexus MCP gateway",
            instructions="Tools from several MCP servers, namespaced as <server>.<tool>.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_completion=self._complete,
            on_subscriptions_listen=ListenHandler(self.bus),
            cache_hints=_list_cache_hints(gateway.config.gateway.list_ttl),
            # Without it the SDK checks a 2026-07-28 HTTP call's Mcp-Param-* headers against a whole
            # tools/list run per call (docs/PERFORMANCE.md): the catalog answers in one lookup.
            get_tool_input_schema=self.tool_input_schema,
        )
        # The logging capability is deprecated at 2026-07-28 but handshake-era clients still send setLevel.
        self.server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self._set_level)
        # Replaces the SDK's default OpenTelemetry middleware: it costs time on every call and we
        # keep our own metrics in the pipeline.
        self.server.middleware = [self._track_connection]
        self._unsubscribe_gateway = [
            gateway.events.subscribe(ListChanged, lambda event: self._queue(event.kind)),
            gateway.events.subscribe(
                events.ResourceUpdated, lambda event: self._queue(_UpdatedUri(event.uri))
            ),
        ]

    def close(self) -> None:
        for unsubscribe in self._unsubscribe_gateway:
            unsubscribe()
        for task in list(self._tasks):
            task.cancel()

    # -- connection tracking and notifications ---------------------------------------------

    async def _track_connection(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            connection = connection_of(ctx.session)
            self._connections.add(connection)
            if connection.session_id is not None and connection.session_id not in self._sessions:
                self._sessions[connection.session_id] = connection
        return await call_next(ctx)

    async def lean_call(
        self,
        session_id: str,
        request_id: Any,
        params: dict[str, Any] | None,
        user: Any = None,
        profile: str | None = None,
    ) -> bytes | None:
        """tools/call on a handshake-era HTTP session, answered as one JSON body; None when not eligible.

        Why: the SDK's transport answers every POST on an SSE stream it opens, stores and tears
        down, and builds a request context per call; for a plain tools/call that costs more than
        the relay itself. Eligible: an initialized handshake-era session still open in the SDK's
        session manager, no progress token (progress needs the stream), and a client that
        declared no sampling, elicitation or roots (their requests need the stream too).
        Everything else — and every other method — takes the SDK's path unchanged.
        """
        connection = self._sessions.get(session_id)
        if connection is None or not connection.initialized.is_set():
            return None
        meta = (params or {}).get("_meta")
        if isinstance(meta, dict) and meta.get("progressToken") is not None:
            return None
        capabilities = connection.client_capabilities
        if capabilities is not None and (
            capabilities.sampling or capabilities.elicitation or capabilities.roots
        ):
            return None
        if not touch_http_session(self.server.session_manager, session_id):
            return None  # closed (idle, deleted): the SDK answers as it should
        if not http_session_owned_by(self.server.session_manager, session_id, user):
            return None  # another credential's session: the SDK answers it as unknown (404)
        client_params = connection.client_params
        caller = client_caller(
            self.frontend,
            client_params.client_info.name if client_params is not None else None,
            capabilities,
            request_id=request_id,
            user=user,
            profile=profile or self.profile,
        )
        try:
            outcome = encodable(await call_tool(self.gateway, params, caller))
        except Exception as exc:
            return encode({"jsonrpc": "2.0", "id": request_id, "error": error_body(exc)})
        result = outcome.model_dump_json(by_alias=True, exclude_none=True).encode()
        return b'{"jsonrpc":"2.0","id":' + encode(request_id) + b',"result":' + result + b"}"

    def _queue(self, change: ListKind | _UpdatedUri) -> None:
        # Coalesced: one broadcast of a kind running and one waiting, so a burst of changes (an
        # upstream flooding list_changed) is a bounded number of notifications, and one task.
        self._changes[change] = None
        if self._broadcaster is None or self._broadcaster.done():
            task = self._broadcaster = asyncio.ensure_future(self._broadcast_changes())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _broadcast_changes(self) -> None:
        while self._changes:
            kind = next(iter(self._changes))
            del self._changes[kind]
            try:
                await self._broadcast(kind)
            except Exception as exc:  # one failed broadcast must not stop the next ones
                logger.warning("telling clients that %s changed failed: %s", kind, exc)

    async def _broadcast(self, kind: ListKind | _UpdatedUri) -> None:
        if isinstance(kind, _UpdatedUri):
            uri = kind.uri
            await self.bus.publish(ResourceUpdated(uri=uri))
            for connection in list(self._connections):
                if uri in connection.state.get("nexus_subscriptions", ()):
                    await connection.outbound.notify("notifications/resources/updated", {"uri": uri})
            return
        method, event = _LIST_CHANGED[kind]
        await self.bus.publish(event())
        for connection in list(self._connections):
            try:
                await connection.outbound.notify(method, None)
            except Exception as exc:  # a closed client must not block the others
                logger.debug("list_changed to a closed connection: %s", exc)

    # -- handlers --------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # Search mode (gateway.tool_search) may list find_tools + call_tool instead, per frontend and client.
        settled = await self._first_list(ctx, "tools")
        session = ctx.session
        client = session.client_params.client_info.name if session.client_params else None
        # Only the caller's profile's tools (profiles/resolve.py), in its search mode when it sets one.
        caller = self.caller(ctx)
        profiles = self.gateway.profiles
        settings = profiles.search_settings(caller, self.gateway.config.gateway.tool_search)
        tools = profiles.tools(caller, listed_tools(self.gateway.catalog, settings, self.frontend, client))
        return types.ListToolsResult(tools=tools) if settled else types.ListToolsResult(tools=tools, ttl_ms=0)

    def tool_input_schema(self, name: str) -> dict[str, Any] | None:
        """The exposed tool's input schema (None: unknown; the call itself then says so)."""
        entry = self.gateway.catalog.tools.get(name)
        return entry.tool.input_schema if entry is not None else None

    async def _first_list(self, ctx: ServerRequestContext[Any, Any], kind: str) -> bool:
        """The first list of `kind` on this session waits (bounded) for servers in their first start.

        False when some are still starting: the result then says `ttlMs: 0`, so a 2026-07-28
        client that caches lists by their hint asks again instead of keeping a partial list.
        """
        gateway = self.gateway
        if not gateway.first_starts_pending:
            return True
        listed = None
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            listed = connection_of(ctx.session).state.setdefault("nexus_listed", set())
        return await settle_first_list(gateway, gateway.config.gateway.first_list_wait, kind, listed)

    def caller(self, ctx: ServerRequestContext[Any, Any]) -> Caller:
        """Who is calling: this frontend, the client's name and capabilities, its session for relays."""
        session = ctx.session
        client_info = session.client_params.client_info.name if session.client_params else None
        return client_caller(
            self.frontend,
            client_info,
            session.client_capabilities,
            peer=session,
            request_id=ctx.request_id,
            modern=ctx.protocol_version in MODERN_PROTOCOL_VERSIONS,
            user=scope_user(ctx.request),
            profile=scope_profile(ctx.request) or self.profile,
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        session = ctx.session

        async def progress(value: float, total: float | None, message: str | None) -> None:
            await session.report_progress(value, total, message)

        outcome = await call_tool(
            self.gateway,
            {"name": params.name, "arguments": params.arguments, "_meta": params.meta},
            self.caller(ctx),
            progress=cast(ProgressFnT, progress) if caller_wants_progress(ctx) else None,
            round_=_round(ctx, params),
        )
        return encodable(outcome)

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        settled = await self._first_list(ctx, "resources")
        resources = self.gateway.profiles.resources(self.caller(ctx), self.gateway.catalog.resource_list)
        if settled:
            return types.ListResourcesResult(resources=resources)
        return types.ListResourcesResult(resources=resources, ttl_ms=0)

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        settled = await self._first_list(ctx, "resource_templates")
        templates = self.gateway.profiles.templates(self.caller(ctx), self.gateway.catalog.template_list)
        if settled:
            return types.ListResourceTemplatesResult(resource_templates=templates)
        return types.ListResourceTemplatesResult(resource_templates=templates, ttl_ms=0)

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        try:
            return await self.gateway.read_resource(
                str(params.uri), caller=self.caller(ctx), round_=_round(ctx, params)
            )
        except GatewayError as exc:
            raise as_mcp_error(exc) from exc

    async def _subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        connection_of(ctx.session).state.setdefault("nexus_subscriptions", set()).add(str(params.uri))
        await self.gateway.subscribe(str(params.uri))
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        connection_of(ctx.session).state.setdefault("nexus_subscriptions", set()).discard(str(params.uri))
        await self.gateway.unsubscribe(str(params.uri))
        return types.EmptyResult()

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        settled = await self._first_list(ctx, "prompts")
        prompts = self.gateway.profiles.prompts(self.caller(ctx), self.gateway.catalog.prompt_list)
        if settled:
            return types.ListPromptsResult(prompts=prompts)
        return types.ListPromptsResult(prompts=prompts, ttl_ms=0)

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        try:
            return await self.gateway.get_prompt(
                params.name, params.arguments, caller=self.caller(ctx), round_=_round(ctx, params)
            )
        except GatewayError as exc:
            raise as_mcp_error(exc) from exc

    async def _complete(
        self, ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = params.context.arguments if params.context else None
        try:
            return await self.gateway.complete(params.ref, argument, context, caller=self.caller(ctx))
        except GatewayError as exc:
            raise as_mcp_error(exc) from exc

    async def _set_level(
        self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        return types.EmptyResult()


def _round(ctx: ServerRequestContext[Any, Any], params: Any) -> InputRound | None:
    """A 2026-07-28 caller's answers so far (SEP-2322); None on a first call or a handshake-era one."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return None
    responses = getattr(params, "input_responses", None)
    state = getattr(params, "request_state", None)
    if responses is None and state is None:
        return None
    return InputRound(cast(dict[str, Any] | None, responses), state)
