"""The composition root: builds upstreams, catalog and pipeline from the config and owns their lifetimes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.catalog.local_tools import LocalTool
from mcp_nexus.config.schema import NexusConfig
from mcp_nexus.pipeline.call import Caller, Middleware, ToolCall, ToolOutcome
from mcp_nexus.pipeline.chain import Pipeline
from mcp_nexus.pipeline.errors import GatewayError, NotFoundError, UnavailableError
from mcp_nexus.pipeline.governance import governance_steps
from mcp_nexus.pipeline.metrics import MetricsStep
from mcp_nexus.pipeline.route import RouteStep
from mcp_nexus.upstream.upstream import (
    CAPABILITIES_OVERRIDE_KEY,
    ServerRequestForwarder,
    Upstream,
    UpstreamUnavailable,
)

logger = logging.getLogger(__name__)

ListChangeListener = Callable[[str], None]
"""Called with "tools", "resources" or "prompts" when that aggregated list changed, or
"resource_updated:<uri>" when an upstream reports a subscribed resource changed."""

StartProgress = Callable[[Upstream], None]

StateListener = Callable[[Upstream], None]
"""Called after an upstream changed state (started, stopped, crashed, ...): e.g. to drop its cache entries."""


class DownstreamForwarder(ServerRequestForwarder):
    """Sends an upstream's sampling/elicitation requests to the client whose call is in flight there."""

    @staticmethod
    def _session(upstream: Upstream) -> Any:
        for caller in reversed(upstream.active_callers):
            if getattr(caller.session, "can_send_request", False):
                return caller.session
        return None

    async def log(self, upstream: Upstream, params: types.LoggingMessageNotificationParams) -> None:
        logger.info("[%s] log %s: %s", upstream.name, params.level, params.data)
        if not upstream.active_callers:
            return
        caller = upstream.active_callers[-1]
        try:
            await caller.session.send_log_message(
                params.level, params.data, params.logger, related_request_id=caller.request_id
            )
        except Exception as exc:  # the caller may be gone; a log line is never worth an error
            logger.debug("could not relay a log message from %s: %s", upstream.name, exc)

    async def sampling(
        self, upstream: Upstream, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        session = self._session(upstream)
        if session is None:
            return await super().sampling(upstream, params)
        try:
            result: types.CreateMessageResult = await session.send_request(
                types.CreateMessageRequest(params=params), types.CreateMessageResult
            )
            return result
        except MCPError as exc:
            return exc.error

    async def elicitation(
        self, upstream: Upstream, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        session = self._session(upstream)
        if session is None:
            return await super().elicitation(upstream, params)
        try:
            result: types.ElicitResult = await session.send_request(
                types.ElicitRequest(params=params), types.ElicitResult
            )
            return result
        except MCPError as exc:
            return exc.error


@dataclass(frozen=True)
class InputRound:
    """A 2026-07-28 caller's retry state for prompts/get and resources/read (SEP-2322)."""

    input_responses: Any = None
    request_state: str | None = None
    client_capabilities: dict[str, Any] | None = None

    def meta(self) -> dict[str, Any] | None:
        if self.client_capabilities is None:
            return None
        return {CAPABILITIES_OVERRIDE_KEY: self.client_capabilities}


class Gateway:
    def __init__(self, config: NexusConfig, *, extra_steps: list[Middleware] | None = None) -> None:
        self.config = config
        self.catalog = Catalog(separator=config.gateway.name_separator)
        self.forwarder = DownstreamForwarder()
        self.upstreams: dict[str, Upstream] = {
            name: Upstream(server, on_change=self._on_upstream_change, forwarder=self.forwarder)
            for name, server in config.servers.items()
        }
        self.metrics = MetricsStep()
        self.pipeline = Pipeline(
            [self.metrics, *governance_steps(self), *(extra_steps or [])], RouteStep(self.catalog)
        )
        self._listeners: list[ListChangeListener] = []
        self._state_listeners: list[StateListener] = []
        self._rebuild_pending = False
        self._started = False

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self, on_progress: StartProgress | None = None) -> None:
        """Start every enabled, auto-starting server concurrently; a failure is recorded, never raised."""

        async def start_one(upstream: Upstream) -> None:
            if upstream.config.enabled and upstream.config.auto_start:
                await upstream.start(timeout=self.config.gateway.startup_timeout)
            if on_progress is not None:
                on_progress(upstream)

        await asyncio.gather(*(start_one(u) for u in self.upstreams.values()))
        self._started = True
        self._rebuild()

    async def stop(self) -> None:
        await asyncio.gather(*(u.stop(reason="gateway stopping") for u in self.upstreams.values()))

    async def __aenter__(self) -> Gateway:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def add_local_tool(self, tool: LocalTool) -> None:
        """Serve one of the gateway's own tools next to the aggregated ones."""
        self.catalog.local_tools[tool.name] = tool
        if self._started:
            self._rebuild()

    # -- change propagation ----------------------------------------------------------------

    def add_listener(self, listener: ListChangeListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _emit(self, kind: str) -> None:
        for listener in list(self._listeners):
            try:
                listener(kind)
            except Exception:  # one frontend's failure must not stop the others hearing it
                logger.exception("list-change listener failed")

    def add_state_listener(self, listener: StateListener) -> Callable[[], None]:
        self._state_listeners.append(listener)
        return lambda: self._state_listeners.remove(listener) if listener in self._state_listeners else None

    def _on_upstream_change(self, upstream: Upstream, kind: str) -> None:
        if kind == "state":
            for state_listener in list(self._state_listeners):
                try:
                    state_listener(upstream)
                except Exception:  # a listener's bug must not stop the state change
                    logger.exception("state listener failed")
        if kind.startswith("resource_updated:"):
            self._emit(kind)
            return
        if not self._started or self._rebuild_pending:
            return
        # Coalesce bursts (a server announcing tools, resources and prompts at once) into one rebuild.
        self._rebuild_pending = True
        asyncio.get_running_loop().call_soon(self._rebuild)

    def _rebuild(self) -> None:
        self._rebuild_pending = False
        for kind in sorted(self.catalog.rebuild(self.upstreams.values())):
            self._emit(kind)

    # -- the operations frontends use ------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        caller: Caller | None = None,
        progress: ProgressFnT | None = None,
        meta: dict[str, Any] | None = None,
        input_responses: dict[str, Any] | None = None,
        request_state: str | None = None,
    ) -> ToolOutcome:
        call = ToolCall(
            name, arguments or {}, caller or Caller("api"), progress, meta, input_responses, request_state
        )
        return await self.pipeline(call)

    async def call_tool_result(
        self, name: str, arguments: dict[str, Any] | None = None, *, caller: Caller | None = None
    ) -> types.CallToolResult:
        """For callers that cannot answer input requests (CLI, API, bridges): always a final result."""
        outcome = await self.call_tool(name, arguments, caller=caller)
        if isinstance(outcome, types.CallToolResult):
            return outcome
        raise GatewayError(f"tool {name} asked for input this caller cannot give")

    async def read_resource(
        self, uri: str, round_: InputRound | None = None
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        candidates = self.catalog.resource_candidates(uri) or self.catalog.upstreams_with_resources()
        if not candidates:
            raise NotFoundError(f"Resource not found: {uri}", data={"uri": uri})
        last: Exception | None = None
        for upstream in candidates:
            try:
                if round_ is None:
                    return await upstream.client().read_resource(uri)
                session: Any = upstream.client().session
                outcome: types.ReadResourceResult | types.InputRequiredResult = await session.read_resource(
                    uri,
                    input_responses=round_.input_responses,
                    request_state=round_.request_state,
                    meta=round_.meta(),
                    allow_input_required=True,
                )
                return outcome
            except MCPError as exc:
                last = exc
                if len(candidates) == 1:
                    raise
            except UpstreamUnavailable as exc:
                last = exc
        if isinstance(last, MCPError):
            raise last
        raise UnavailableError(f"no server could read {uri}: {last}", data={"uri": uri})

    def _prompt_route(self, name: str) -> tuple[Upstream, str]:
        routes = self.catalog.prompts.get(name)
        if not routes:
            raise NotFoundError(f"Unknown prompt: {name}", data={"prompt": name})
        for route in routes:
            if route.upstream.is_ready:
                return route.upstream, route.prompt.name
        raise UnavailableError(f"no ready server has prompt {name}", data={"prompt": name})

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, round_: InputRound | None = None
    ) -> types.GetPromptResult | types.InputRequiredResult:
        upstream, original = self._prompt_route(name)
        if round_ is None:
            return await upstream.client().get_prompt(original, arguments)
        session: Any = upstream.client().session
        outcome: types.GetPromptResult | types.InputRequiredResult = await session.get_prompt(
            original,
            arguments,
            input_responses=round_.input_responses,
            request_state=round_.request_state,
            meta=round_.meta(),
            allow_input_required=True,
        )
        return outcome

    async def complete(
        self,
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: dict[str, str],
        context_arguments: dict[str, str] | None = None,
    ) -> types.CompleteResult:
        if isinstance(ref, types.PromptReference):
            upstream, original = self._prompt_route(ref.name)
            target_ref: types.PromptReference | types.ResourceTemplateReference = ref.model_copy(
                update={"name": original}
            )
        else:
            owners = [r.upstream for r in self.catalog.templates if r.template.uri_template == ref.uri]
            if not owners:
                return types.CompleteResult(completion=types.Completion(values=[]))
            upstream, target_ref = owners[0], ref
        client = upstream.client()
        if client.server_capabilities.completions is None:
            return types.CompleteResult(completion=types.Completion(values=[]))
        return await client.complete(target_ref, argument, context_arguments)

    async def subscribe(self, uri: str) -> None:
        await self._subscription(uri, subscribe=True)

    async def unsubscribe(self, uri: str) -> None:
        await self._subscription(uri, subscribe=False)

    async def _subscription(self, uri: str, *, subscribe: bool) -> None:
        for upstream in self.catalog.resource_candidates(uri) or self.catalog.upstreams_with_resources():
            caps = upstream.capabilities
            if not (caps and caps.resources and caps.resources.subscribe):
                continue
            if upstream.protocol_version in MODERN_PROTOCOL_VERSIONS:
                # 2026-07-28 has no resources/subscribe: updates ride the upstream's listen stream.
                await upstream.watch_resource(uri, subscribe)
            elif subscribe:
                await upstream.client().subscribe_resource(uri)
            else:
                await upstream.client().unsubscribe_resource(uri)
            return
