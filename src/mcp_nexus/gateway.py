"""The composition root: builds upstreams, catalog and pipeline from the config and owns their lifetimes."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_nexus import tracing
from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.catalog.index import ToolIndex
from mcp_nexus.catalog.index_sync import IndexSync
from mcp_nexus.catalog.local_tools import LocalTool
from mcp_nexus.catalog.tool_integrity import Hold
from mcp_nexus.catalog.tool_listing import CALL_TOOL
from mcp_nexus.chains.code_chain import code_chain_runner
from mcp_nexus.chains.serving import ChainTools, chain_context
from mcp_nexus.config.config_applied import ConfigApplied
from mcp_nexus.config.schema import NexusConfig
from mcp_nexus.config.watch import ConfigSource
from mcp_nexus.errors import GatewayError, UnavailableError
from mcp_nexus.events import (
    EventBus,
    ListChanged,
    ServerAnnouncedChange,
    ServerListRead,
    ServerStateChanged,
)
from mcp_nexus.index_fanout import IndexSavedFanout
from mcp_nexus.pipeline.call import Caller, InputRound, Method, Middleware, ToolCall, ToolOutcome
from mcp_nexus.pipeline.call_finished import CallFinished
from mcp_nexus.pipeline.chain import Pipeline
from mcp_nexus.pipeline.code_mode import serve_code_mode
from mcp_nexus.pipeline.governance import Governance
from mcp_nexus.pipeline.held_calls import HeldCalls
from mcp_nexus.pipeline.search_tools import search_tools, unwrap_call_tool
from mcp_nexus.pipeline.steps.metrics import MetricsStep
from mcp_nexus.pipeline.steps.route import RouteStep
from mcp_nexus.pipeline.steps.trace import TraceStep
from mcp_nexus.profiles.resolve import Profiles
from mcp_nexus.relay import CallerRelay, input_answerer
from mcp_nexus.reload_report import ReloadReport, plan_report
from mcp_nexus.replica_sync import ListChangeFanout
from mcp_nexus.server_set import ServerSet, StartProgress
from mcp_nexus.stores.shared import Stores
from mcp_nexus.upstream.client_era import ClientEra
from mcp_nexus.upstream.config_diff import diff_configs

logger = logging.getLogger(__name__)

EMBEDDED_START_WAIT_S = 2.0


class Gateway:
    """Upstreams, catalog, governance and pipelines of one configuration, and the operations frontends use."""

    def __init__(self, config: NexusConfig) -> None:
        self.config = config
        self.catalog = Catalog(separator=config.gateway.name_separator)
        self.relay = CallerRelay()
        # Every change anyone may want to hear of, typed (events.py): servers publish their
        # own; the gateway's handlers come first, so the catalog is current for the rest.
        self.events = EventBus()
        self.events.subscribe(ServerStateChanged, self._on_server_state)
        self.events.subscribe(ServerListRead, self._on_server_list)
        # The era of the one client a `--stdio` gateway serves (told by its stdio frontend), which
        # its `protocol: auto` stdio servers follow (upstream/client_era.py).
        self.client_era = ClientEra()
        # Which servers run, their supervisors, first starts, control and reload (server_set.py).
        self.servers = ServerSet(config, self.events, self.relay, self.client_era)
        self.upstreams = self.servers.upstreams
        self.supervisors = self.servers.supervisors
        self.config_source: ConfigSource | None = (
            None  # the file `POST /api/reload` reads (set by the runtime)
        )
        # Frontends that keep connections of their own (the Xiaozhi bridge) report them here,
        # by name, for the admin API and `nexus servers`; the gateway never imports them.
        self.status_providers: dict[str, Callable[[], Any]] = {}
        # The control plane (control/control_plane.py) when configured: set by it, read by the
        # admin API and the CLI; the gateway itself never uses it.
        self.control: Any = None
        self._rebuild_pending = False
        self._started = False
        # Where shared state lives (stores:), chosen once: memory, or Redis shared by replicas.
        self.stores = Stores(config.stores)
        # Tool pins in the data folder, or in Redis shared by every replica (stores.pins): a pin or
        # an approval another replica wrote judges this replica's tools again.
        self.catalog.integrity.store = self.stores.tool_pins(on_change=self._on_pins_changed)
        if (logins := self.stores.oauth_vault()) is not None:
            # OAuth logins in Redis (stores.oauth), told before the first connect reads one.
            from mcp_nexus.upstream.oauth.manager import manager_for

            manager_for(self.events).configure(upstreams=self.upstreams, vault=logins)
        self.governance = Governance.build(
            config, self.catalog, lambda: self.config, self.upstreams, self.stores
        )
        self.fanout = ListChangeFanout(self.stores.events(), self.upstreams)
        self.events.subscribe(ServerAnnouncedChange, self.fanout.heard)
        for tool in self.governance.local_tools:
            self.catalog.local_tools[tool.name] = tool
        self.events.subscribe(ServerStateChanged, self.governance.on_upstream_state)
        self.events.subscribe(ConfigApplied, self.governance.on_config)
        # The tool index (docs/CONTROL.md): a saved snapshot of every server's tools, kept in step
        # with the catalog; find_tools/call_tool serve clients in search mode from it.
        self.index = ToolIndex()
        self.index_sync = IndexSync(
            self.index,
            self.stores.index_store(config.gateway.index.path) if config.gateway.index.persist else None,
            lambda: self.config,
            lambda: self.upstreams,
        )
        self.index_fanout: IndexSavedFanout | None = None
        if self.stores.link("index") is not None:  # a snapshot shared in Redis: tell the other replicas
            self.index_fanout = IndexSavedFanout(self.stores.events(), self.index_sync)
        self.events.subscribe(ListChanged, self.index_sync.on_list_change)
        # Profiles (config `profiles:`, docs/IDENTITY.md): which tools each caller may reach,
        # enforced here, in call_tool and _request, the one way in of every frontend.
        self.profiles = Profiles(lambda: self.config, self.catalog, self.index)
        self.governance.policies.profile_levels = self.profiles.policies.level  # a profile's tool_config
        self.events.subscribe(ConfigApplied, self.index_sync.on_config)
        self._search_tools = search_tools(
            self.index,
            self.catalog,
            lambda: self.config.gateway.tool_search,
            lambda name, arguments, caller: self.call_tool(name, arguments, caller=caller),
        )
        self._serve_search_tools(config)
        self.events.subscribe(ConfigApplied, lambda event: self._serve_search_tools(event.new))
        # The config's chains (docs/CHAINS.md): composite tools served beside the gateway's own,
        # each inner call through this pipeline as the chain's caller.
        self.chains = ChainTools(
            self.catalog.local_tools,
            chain_context(
                self.catalog,
                lambda name, arguments, caller: self.call_tool(name, arguments, caller=caller),
                self.governance.offloader,
            ),
        )
        self.chains.serve(config.chains)
        # Code mode (docs/SANDBOX.md): python_sandbox's code calls tools through this pipeline, as its caller.
        self.code_mode = serve_code_mode(
            self.governance,
            self.catalog,
            self.index,
            lambda: self.config,
            lambda name, arguments, caller: self.call_tool(name, arguments, caller=caller),
        )
        if self.code_mode is not None:  # chains with a Python body run there (chains/code_chain.py)
            self.chains.run_code = code_chain_runner(self.code_mode)
        self.metrics = MetricsStep(config.gateway.metrics_window)
        self.events.subscribe(
            ConfigApplied, lambda event: self.metrics.resize(event.new.gateway.metrics_window)
        )
        # With `gateway.metrics: false` the step is left out entirely (bench/metrics_cost.py compares).
        measured: list[Middleware] = [self.metrics] if config.gateway.metrics else []
        tracer = tracing.tracer()  # set by the runtime when OTEL_EXPORTER_OTLP_ENDPOINT is configured
        if tracer is not None:
            measured.insert(0, TraceStep(tracer))
        # 2026-07-28 callers' calls held between rounds on handshake-era servers (held_calls.py)
        self.held_calls = HeldCalls()
        route = RouteStep(self.catalog, input_answerer, self.held_calls)
        self.pipeline = Pipeline([*measured, *self.governance.tool_steps], route, self.governance.policies)
        self.requests = Pipeline([*measured, *self.governance.request_steps], route)
        self._reload_lock = asyncio.Lock()
        self._draining = False
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.started_at = time.time()

    @property
    def first_starts_pending(self) -> bool:
        """Some server is still in its first start (at launch, or added by a reload)."""
        return self.servers.first_starts_pending

    async def wait_first_starts(self, timeout: float) -> bool:
        """Wait (bounded) for the servers still in their first start (ServerSet.wait_first_starts)."""
        return await self.servers.wait_first_starts(timeout)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self, on_progress: StartProgress | None = None, *, wait: bool = True) -> None:
        """Start every enabled, auto-starting server concurrently; a failure is recorded, never raised.

        With `wait=False` this returns at once: each server joins the catalog when it is READY
        (announced as tools/list_changed), so serving never waits for a slow server. A server
        that fails is retried in the background by its supervisor when its policy allows.
        """
        self._started = True
        await self.stores.start()
        self._rebuild()

        starts = self.servers.start_all(on_progress)
        await self.index_sync.start(asyncio.gather(*starts.values(), return_exceptions=True))
        in_process = [
            task for name, task in starts.items() if self.upstreams[name].config.transport == "embedded"
        ]
        if in_process and not wait:
            # Servers inside the gateway are READY in milliseconds: serve with them from the start.
            await asyncio.wait(in_process, timeout=EMBEDDED_START_WAIT_S)
        if wait:
            await asyncio.gather(*starts.values())
            self._rebuild()

    async def stop(self) -> None:
        """Stop every server (children reaped, sessions closed); starts in progress are cancelled first."""
        await self.index_sync.stop()
        await self.held_calls.close()
        await self.servers.close()
        await self.stores.close()

    async def drain(self, grace: float | None = None) -> int:
        """Refuse new calls and wait up to `grace` seconds for those in flight; returns how many remain."""
        grace = self.config.gateway.shutdown_grace if grace is None else grace
        self._draining = True
        if self._in_flight:
            logger.info("waiting up to %g s for %d call(s) in flight", grace, self._in_flight)
            try:
                await asyncio.wait_for(self._idle.wait(), grace)
            except TimeoutError:
                logger.warning("%d call(s) still in flight after %g s: cut short", self._in_flight, grace)
        return self._in_flight

    async def shutdown(self, grace: float | None = None) -> None:
        """Graceful shutdown: drain the calls in flight, then stop every server."""
        await self.drain(grace)
        await self.stop()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def draining(self) -> bool:
        return self._draining

    # -- hot reload --------------------------------------------------------------------------

    async def reload(self, new: NexusConfig) -> ReloadReport:
        """Apply `new` as a diff: added servers start, removed ones stop, a server restarts only
        when a connection field changed; everything else (priority, namespace, filters,
        governance, health and restart settings) applies live."""
        async with self._reload_lock:
            old = self.config
            diff = diff_configs(old, new)
            report = plan_report(diff)
            for name in report.needs_process_restart:
                logger.warning("config reload: gateway.%s only changes when nexus serve restarts", name)
                setattr(new.gateway, name, getattr(old.gateway, name))
            for name in diff.unchanged:  # keep the same objects: memoised policies stay valid
                new.servers[name] = self.upstreams[name].config
            new.stores = self.stores.keep_on_reload(new.stores)
            self.config = new
            self.catalog.separator = new.gateway.name_separator

            await self.servers.apply(diff, report, new)
            report.chains = self.chains.serve(new.chains)
            self._rebuild()
            # Each subscriber's failure is its own (EventBus): it cannot undo the reload for the others.
            self.events.publish(ConfigApplied(old, new))
            logger.info("config reloaded: %s", report.summary())
            return report

    async def __aenter__(self) -> Gateway:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def _serve_search_tools(self, config: NexusConfig) -> None:
        """find_tools and call_tool are served while some frontend or client may be in search mode."""
        wanted = config.gateway.tool_search.ever_on or any(
            mode != "off" for mode in (p.tool_search for p in config.profiles.values()) if mode is not None
        )
        for tool in self._search_tools:
            if wanted:
                self.catalog.local_tools[tool.name] = tool
            else:
                self.catalog.local_tools.pop(tool.name, None)
        if self._started:
            self._rebuild()

    def add_local_tool(self, tool: LocalTool) -> None:
        """Serve one of the gateway's own tools next to the aggregated ones."""
        self.catalog.local_tools[tool.name] = tool
        if self._started:
            self._rebuild()

    # -- change propagation ----------------------------------------------------------------

    def _on_server_state(self, event: ServerStateChanged) -> None:
        if self._started:
            # At once: a caller waiting for this server to become READY looks its tools up next.
            self._rebuild()

    def approve_tools(self, server: str | None = None, tool: str | None = None) -> list[Hold]:
        """An operator's approval of held definitions (one tool, a server's, or all): pinned, and the
        catalog rebuilt (clients told) exactly as when a server's list changes."""
        approved = self.catalog.integrity.approve(self.upstreams, server, tool)
        if approved:
            self._rebuild()
        return approved

    def _on_pins_changed(self) -> None:
        if self._started:
            self._rebuild()

    def _on_server_list(self, event: ServerListRead) -> None:
        if not self._started or self._rebuild_pending:
            return
        # Coalesce bursts (a server announcing tools, resources and prompts at once) into one rebuild.
        self._rebuild_pending = True
        asyncio.get_running_loop().call_soon(self._rebuild)

    def _rebuild(self) -> None:
        self._rebuild_pending = False
        for kind in sorted(self.catalog.rebuild(self.upstreams.values())):
            self.events.publish(ListChanged(kind))

    # -- the operations frontends use ------------------------------------------------------

    async def _run(self, pipeline: Pipeline, call: ToolCall) -> Any:
        if self._draining:
            raise UnavailableError("the gateway is shutting down: no new calls", data={"name": call.name})
        self._in_flight += 1
        self._idle.clear()
        try:
            return await pipeline(call)
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.set()

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        caller: Caller | None = None,
        progress: ProgressFnT | None = None,
        meta: dict[str, Any] | None = None,
        round_: InputRound | None = None,
    ) -> ToolOutcome:
        if name == CALL_TOOL and CALL_TOOL in self.catalog.local_tools:
            # Search mode's call_tool(name, arguments) is the named call itself, through the whole pipeline.
            name, arguments = unwrap_call_tool(arguments)
        caller = self.profiles.bind(caller or Caller("api"))
        self.profiles.check_tool(caller, name)  # outside the caller's profile: as unknown as a missing tool
        call = ToolCall(name, arguments or {}, caller, progress, meta, round_)
        if not self.events.wants(CallFinished):  # the common case: no per-call event to pay for
            outcome: ToolOutcome = await self._run(self.pipeline, call)
            return outcome
        started, error, error_type, result = time.perf_counter(), None, None, None
        try:
            outcome = result = await self._run(self.pipeline, call)
            return outcome
        except Exception as exc:
            error = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            error_type = type(exc).__name__
            raise
        finally:
            seconds = time.perf_counter() - started
            finished = CallFinished(
                name, call.caller, seconds, error, call=call, outcome=result, error_type=error_type
            )
            self.events.publish(finished)

    async def call_tool_result(
        self, name: str, arguments: dict[str, Any] | None = None, *, caller: Caller | None = None
    ) -> types.CallToolResult:
        """For callers that cannot answer input requests (CLI, API, bridges): always a final result."""
        outcome = await self.call_tool(name, arguments, caller=caller)
        if isinstance(outcome, types.CallToolResult):
            return outcome
        raise GatewayError(f"tool {name} asked for input this caller cannot give")

    async def _request(
        self,
        method: Method,
        name: str,
        arguments: dict[str, Any],
        caller: Caller | None,
        round_: InputRound | None,
    ) -> Any:
        caller = self.profiles.bind(caller or Caller("api"))
        self.profiles.check_request(caller, method, name)
        call = ToolCall(name, arguments, caller, round=round_, method=method)
        return await self._run(self.requests, call)

    async def read_resource(
        self, uri: str, *, caller: Caller | None = None, round_: InputRound | None = None
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        result: types.ReadResourceResult | types.InputRequiredResult = await self._request(
            "resources/read", uri, {}, caller, round_
        )
        return result

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None = None,
        *,
        caller: Caller | None = None,
        round_: InputRound | None = None,
    ) -> types.GetPromptResult | types.InputRequiredResult:
        result: types.GetPromptResult | types.InputRequiredResult = await self._request(
            "prompts/get", name, dict(arguments or {}), caller, round_
        )
        return result

    async def complete(
        self,
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: dict[str, str],
        context_arguments: dict[str, str] | None = None,
        *,
        caller: Caller | None = None,
    ) -> types.CompleteResult:
        name = ref.name if isinstance(ref, types.PromptReference) else ref.uri
        arguments = {"ref": ref, "argument": argument, "context": context_arguments}
        result: types.CompleteResult = await self._request(
            "completion/complete", name, arguments, caller, None
        )
        return result

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
            else:
                await upstream.session().subscribe(uri, subscribe)
            return
