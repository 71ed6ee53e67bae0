"""One configured MCP server: its single long-lived session and what it offers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext, IncomingMessage
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.upstream.child_process import StopGrace
from mcp_nexus.upstream.state import StateHistory, UpstreamState
from mcp_nexus.upstream.stderr_log import StderrForwarder
from mcp_nexus.upstream.stdio_process import JsonRpcError, ProcessExited, StdioProcess
from mcp_nexus.upstream.targets import child_environment, http_target, load_embedded, sse_target

logger = logging.getLogger(__name__)

CAPABILITIES_OVERRIDE_KEY = "nexus/clientCapabilities"
"""Private `_meta` key: the downstream client's capabilities, stamped in place of ours (see `_forward_capabilities`)."""

ChangeListener = Callable[["Upstream", str], None]
"""Called with the kind of change: "tools", "resources", "prompts", "state", "resource_updated:<uri>"."""


class UpstreamUnavailable(Exception):
    """The upstream cannot take calls now (not connected, crashed, stopped)."""


class ServerRequestForwarder:
    """Where an upstream's sampling/elicitation/roots requests go: set by the gateway."""

    async def sampling(
        self, upstream: Upstream, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        return types.ErrorData(
            code=types.INVALID_REQUEST, message="no client connected that supports sampling"
        )

    async def elicitation(
        self, upstream: Upstream, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return types.ErrorData(
            code=types.INVALID_REQUEST, message="no client connected that supports elicitation"
        )

    async def list_roots(self, upstream: Upstream) -> types.ListRootsResult | types.ErrorData:
        return types.ListRootsResult(roots=[])

    async def log(self, upstream: Upstream, params: types.LoggingMessageNotificationParams) -> None:
        logger.info("[%s] log %s: %s", upstream.name, params.level, params.data)


class Upstream:
    """Holds ONE session to one server, opened at start and reused by every call."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        on_change: ChangeListener | None = None,
        forwarder: ServerRequestForwarder | None = None,
    ) -> None:
        self.config = config
        self.state = UpstreamState.STOPPED if config.enabled else UpstreamState.DISABLED
        self.history = StateHistory()
        self.last_error: str | None = None
        self.ready_since: float | None = None
        self.tools: list[types.Tool] = []
        self.resources: list[types.Resource] = []
        self.resource_templates: list[types.ResourceTemplate] = []
        self.prompts: list[types.Prompt] = []
        self.capabilities: types.ServerCapabilities | None = None
        self.protocol_version: str | None = None
        self.server_info: types.Implementation | None = None
        self._on_change = on_change
        self._watchers: list[ChangeListener] = []  # e.g. the supervisor; told after `on_change`
        self.started_at: float | None = None  # when the current session became READY (monotonic)
        self.sessions_opened = 0  # successful connects since creation: restarts = this - 1
        self.forwarder = forwarder or ServerRequestForwarder()
        self._client: Client | None = None
        self._runner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._stderr: StderrForwarder | None = None
        self._process: StdioProcess | None = None
        self._background: set[asyncio.Task[Any]] = set()
        # Callers (pipeline `Caller`s) of the calls in flight here, newest last: where this
        # server's sampling/elicitation requests and log messages go (the SDK gives no link
        # from such a request back to the call that caused it).
        self.active_callers: list[Any] = []
        self._watched_resources: set[str] = set()
        self._listen_task: asyncio.Future[None] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def __repr__(self) -> str:
        return f"Upstream({self.name!r}, {self.config.transport}, {self.state})"

    # -- state -------------------------------------------------------------------------

    def _set_state(self, state: UpstreamState, reason: str) -> None:
        if state == self.state:
            return
        previous = self.state
        self.history.record(previous, state, reason)
        self.state = state
        if state == UpstreamState.READY:
            self.ready_since = time.time()
            if self.started_at is None:
                self.started_at = time.monotonic()
        elif state not in (UpstreamState.DEGRADED, UpstreamState.ERROR) or self._client is None:
            # DEGRADED and a health-check ERROR keep the session (and its uptime); anything else ends it.
            self.ready_since = None
            self.started_at = None
        log = logger.warning if state in (UpstreamState.ERROR, UpstreamState.CRASHED) else logger.info
        log("server %s: %s -> %s (%s)", self.name, previous, state, reason)
        self._notify("state")

    def mark(self, state: UpstreamState, reason: str) -> None:
        """Record a state decided outside the session (health checks, the restart policy)."""
        if state == UpstreamState.ERROR:
            self.last_error = reason
        self._set_state(state, reason)

    def add_watcher(self, listener: ChangeListener) -> Callable[[], None]:
        """Also tell `listener` about every change (after the gateway heard it)."""
        self._watchers.append(listener)
        return lambda: self._watchers.remove(listener) if listener in self._watchers else None

    def _notify(self, kind: str) -> None:
        for listener in [self._on_change, *self._watchers]:
            if listener is None:
                continue
            try:
                listener(self, kind)
            except Exception:  # a listener's bug must not take the upstream down
                logger.exception("change listener failed for %s", self.name)

    @property
    def uptime(self) -> float | None:
        """Seconds since the current session became READY, or None when there is none."""
        return None if self.started_at is None else time.monotonic() - self.started_at

    @property
    def has_session(self) -> bool:
        """A session is open (whatever health checks think of it)."""
        return self._client is not None

    @property
    def is_ready(self) -> bool:
        return self.state in (UpstreamState.READY, UpstreamState.DEGRADED) and self._client is not None

    @property
    def pid(self) -> int | None:
        """The stdio child's process id while it runs (None for other transports)."""
        process = self._process
        return process.pid if process is not None and not process.exited.is_set() else None

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self, timeout: float | None = None, reason: str = "starting") -> None:
        """Connect and list what the server offers; on failure the state is ERROR with the reason."""
        if not self.config.enabled:
            self._set_state(UpstreamState.DISABLED, "disabled in config")
            return
        if self._runner is not None and not self._runner.done():
            return
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._set_state(UpstreamState.CONNECTING, reason)
        self._runner = asyncio.create_task(self._run(), name=f"upstream-{self.name}")
        wait_for = timeout if timeout is not None else self.config.timeouts.connect + 20
        ready = asyncio.ensure_future(self._ready.wait())
        try:
            await asyncio.wait({self._runner, ready}, timeout=wait_for, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()  # left pending it would be reported as destroyed at exit
        if not self._ready.is_set() and not self._runner.done():
            error = f"did not become ready within {wait_for:g} s"
            await self.stop(reason="start timed out", keep_error=True)
            self.last_error = error
            self._set_state(UpstreamState.ERROR, error)

    async def stop(self, reason: str = "stopped", *, keep_error: bool = False) -> None:
        """End the session (and the stdio child); the state becomes STOPPED (DISABLED when disabled).

        With `keep_error`, an ERROR or CRASHED state stays as it is so the reason stays visible
        (the restart policy stops what is left of a failed server this way).
        """
        self._stop.set()
        runner, self._runner = self._runner, None
        if runner is not None and not runner.done():
            try:
                await asyncio.wait_for(asyncio.shield(runner), timeout=10)
            except (TimeoutError, asyncio.CancelledError):
                runner.cancel()
                with contextlib.suppress(BaseException):
                    await runner
        for task in list(self._background):
            task.cancel()
        self._client = None
        self._process = None
        if keep_error and self.state in (UpstreamState.ERROR, UpstreamState.CRASHED):
            return
        self._set_state(UpstreamState.STOPPED if self.config.enabled else UpstreamState.DISABLED, reason)

    def _build_client(self, stack: AsyncExitStack) -> Client:
        config = self.config
        target: Any
        self._process = None
        if config.transport == "stdio":
            assert config.command is not None
            self._stderr = StderrForwarder(self.name)
            stack.callback(self._stderr.close_parent_end)
            self._process = target = StdioProcess(
                self.name,
                config.command,
                config.args,
                child_environment(config),
                config.cwd,
                self._stderr.writer,
                on_exit=self._on_process_exit,
                after_exit=self._after_process_exit,
                stop_grace=StopGrace.within(config.timeouts.stop),
            )
        elif config.transport == "http":
            target, http_client = http_target(config)
            stack.push_async_callback(http_client.aclose)
        elif config.transport == "sse":
            target = sse_target(config)
        else:
            target = load_embedded(config)
        return Client(
            target,
            mode=config.protocol,
            cache=None,
            # Opt in to log messages on 2026-07-28 connections so they can be relayed to callers.
            log_level="debug",
            read_timeout_seconds=None,
            message_handler=self._on_message,
            sampling_callback=self._on_sampling,
            elicitation_callback=self._on_elicitation,
            list_roots_callback=self._on_list_roots,
            logging_callback=self._on_log,
            client_info=types.Implementation(name="mcp-nexus", version=_version()),
        )

    async def _run(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                client = self._build_client(stack)
                await stack.enter_async_context(client)
                if self._stderr is not None:
                    self._stderr.close_parent_end()
                _forward_capabilities(client)
                _skip_result_validation(client)
                self._client = client
                self.protocol_version = client.protocol_version
                self.capabilities = client.server_capabilities
                self.server_info = client.server_info
                await self._refresh_all()
                self.last_error = None
                self.sessions_opened += 1
                self._set_state(UpstreamState.READY, f"connected ({self.protocol_version})")
                self._ready.set()
                if self.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    self._restart_listen()
                await self._stop.wait()
                self._client = None
        except asyncio.CancelledError:
            self._client = None
            raise
        except BaseException as exc:  # the SDK raises ExceptionGroups from its task groups
            self._client = None
            process = self._process
            if process is not None and process.exited.is_set():
                # The child died: its exit (and last stderr line) says more than "Connection closed".
                await self._drain_stderr()
                self.last_error = self._exit_description(process.returncode)
            else:
                self.last_error = describe_error(exc)
            crashed = self._ready.is_set()
            if crashed and self.state == UpstreamState.CRASHED:
                return  # `_on_process_exit` already said so
            self._set_state(UpstreamState.CRASHED if crashed else UpstreamState.ERROR, self.last_error)
            self._notify("tools")
        finally:
            self._client = None

    def _on_process_exit(self, code: int | None) -> None:
        """The stdio child died: say so now (pending calls already failed), and end the session."""
        self._client = None
        self.last_error = self._exit_description(code)
        if self._ready.is_set():
            self._set_state(UpstreamState.CRASHED, self.last_error)
        # Before READY the session's own failure (initialize cut short) reports it as ERROR.
        self._stop.set()

    async def _drain_stderr(self) -> None:
        """Wait briefly for the dead child's last stderr lines: they usually say why it died."""
        forwarder = self._stderr
        if forwarder is not None:
            await forwarder.wait_drained(0.3)

    async def _after_process_exit(self, code: int | None) -> None:
        """The crash was reported at once; now add what the child last said on stderr, if late."""
        await self._drain_stderr()
        if self.state in (UpstreamState.CRASHED, UpstreamState.ERROR) and self.last_error == (
            f"process exited with code {code}"
        ):
            self.last_error = self._exit_description(code)

    def _exit_description(self, code: int | None) -> str:
        words = self._stderr.last_words() if self._stderr is not None else ""
        return f"process exited with code {code}" + (f"; its last stderr line: {words}" if words else "")

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- what the server offers ------------------------------------------------------------

    async def _refresh_all(self) -> None:
        await asyncio.gather(self.refresh_tools(), self.refresh_resources(), self.refresh_prompts())

    async def refresh_tools(self) -> None:
        client = self._client
        if client is None or client.server_capabilities.tools is None:
            self.tools = []
            return
        self.tools = await _collect(lambda cursor: client.list_tools(cursor=cursor), "tools")
        self._notify("tools")

    async def refresh_resources(self) -> None:
        client = self._client
        if client is None or client.server_capabilities.resources is None:
            self.resources, self.resource_templates = [], []
            return
        self.resources = await _collect(lambda cursor: client.list_resources(cursor=cursor), "resources")
        self.resource_templates = await _collect(
            lambda cursor: client.list_resource_templates(cursor=cursor), "resource_templates"
        )
        self._notify("resources")

    async def refresh_prompts(self) -> None:
        client = self._client
        if client is None or client.server_capabilities.prompts is None:
            self.prompts = []
            return
        self.prompts = await _collect(lambda cursor: client.list_prompts(cursor=cursor), "prompts")
        self._notify("prompts")

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, Exception):
            logger.warning("server %s: transport error: %s", self.name, message)
            return
        root = message
        if isinstance(root, types.ToolListChangedNotification):
            self._spawn(self.refresh_tools())
        elif isinstance(root, types.ResourceListChangedNotification):
            self._spawn(self.refresh_resources())
        elif isinstance(root, types.PromptListChangedNotification):
            self._spawn(self.refresh_prompts())
        elif isinstance(root, types.ResourceUpdatedNotification):
            self._notify(f"resource_updated:{root.params.uri}")

    async def watch_resource(self, uri: str, watch: bool) -> None:
        """Follow (or stop following) updates of one resource on a 2026-07-28 server."""
        if watch:
            self._watched_resources.add(uri)
        else:
            self._watched_resources.discard(uri)
        self._restart_listen()

    def _restart_listen(self) -> None:
        # One listen stream carries every kind of change; its filter is fixed when it opens,
        # so a new resource watch replaces the stream.
        if self._listen_task is not None:
            self._listen_task.cancel()
        client = self._client
        if client is None:
            return
        self._listen_task = asyncio.ensure_future(
            self._listen_modern(client, sorted(self._watched_resources))
        )
        self._background.add(self._listen_task)
        self._listen_task.add_done_callback(self._background.discard)

    async def _listen_modern(self, client: Client, resources_watched: list[str]) -> None:
        caps = client.server_capabilities
        tools = bool(caps.tools and caps.tools.list_changed)
        prompts = bool(caps.prompts and caps.prompts.list_changed)
        resources = bool(caps.resources and caps.resources.list_changed)
        if not (tools or prompts or resources or resources_watched):
            return
        try:
            async with client.listen(
                tools_list_changed=tools,
                prompts_list_changed=prompts,
                resources_list_changed=resources,
                resource_subscriptions=resources_watched,
            ) as subscription:
                async for event in subscription:
                    kind = type(event).__name__
                    if kind == "ToolsListChanged":
                        await self.refresh_tools()
                    elif kind == "PromptsListChanged":
                        await self.refresh_prompts()
                    elif kind == "ResourcesListChanged":
                        await self.refresh_resources()
                    elif kind == "ResourceUpdated":
                        self._notify(f"resource_updated:{getattr(event, 'uri', '')}")
        except Exception as exc:  # a lost listen stream only costs freshness, never the session
            logger.info("server %s: subscriptions/listen ended: %s", self.name, exc)

    # -- server-initiated requests, forwarded downstream -----------------------------------

    async def _on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        return await self.forwarder.sampling(self, params)

    async def _on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return await self.forwarder.elicitation(self, params)

    async def _on_list_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        return await self.forwarder.list_roots(self)

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        await self.forwarder.log(self, params)

    # -- calls ------------------------------------------------------------------------------

    def client(self) -> Client:
        client = self._client
        if client is None or not self.is_ready:
            reason = f": {self.last_error}" if self.last_error else ""
            raise UpstreamUnavailable(f"server {self.name!r} is {self.state}{reason}")
        return client

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        progress: ProgressFnT | None = None,
        timeout: float | None = None,
        meta: dict[str, Any] | None = None,
        input_responses: dict[str, Any] | None = None,
        request_state: str | None = None,
        client_capabilities: dict[str, Any] | None = None,
        pass_input_required: bool = False,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Call `name` on this server.

        With `pass_input_required` (a 2026-07-28 caller), an `InputRequiredResult` is returned
        as is for the caller to answer; otherwise the SDK answers it through our callbacks,
        which forward the questions to the caller's session.
        """
        client = self.client()
        if client_capabilities is not None:
            meta = {**(meta or {}), CAPABILITIES_OVERRIDE_KEY: client_capabilities}
        read_timeout = timeout or self.config.timeouts.call
        if self._process is not None:
            return await self._fast_call_tool(
                client,
                name,
                arguments,
                meta,
                read_timeout,
                progress,
                input_responses,
                request_state,
                pass_input_required,
            )
        if pass_input_required:
            session: Any = client.session  # its overloads are too many for mypy to resolve
            outcome: types.CallToolResult | types.InputRequiredResult = await session.call_tool(
                name,
                arguments,
                read_timeout_seconds=read_timeout,
                progress_callback=progress,
                input_responses=input_responses,
                request_state=request_state,
                meta=meta,
                allow_input_required=True,
            )
            return outcome
        return await client.call_tool(
            name,
            arguments,
            read_timeout_seconds=read_timeout,
            progress_callback=progress,
            meta=meta,  # type: ignore[arg-type]
        )

    async def _fast_call_tool(
        self,
        client: Client,
        name: str,
        arguments: dict[str, Any] | None,
        meta: dict[str, Any] | None,
        timeout: float,
        progress: ProgressFnT | None,
        input_responses: dict[str, Any] | None,
        request_state: str | None,
        pass_input_required: bool,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """tools/call over the stdio fast lane (see stdio_process.py), with the SDK's own stamping."""
        process = self._process
        assert process is not None

        async def send(responses: Any, state: str | None) -> types.CallToolResult | types.InputRequiredResult:
            params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
            if meta:
                params["_meta"] = dict(meta)
            if responses is not None:
                params["inputResponses"] = {
                    key: value.model_dump(mode="json", by_alias=True, exclude_none=True)
                    if isinstance(value, BaseModel)
                    else value
                    for key, value in responses.items()
                }
            if state is not None:
                params["requestState"] = state
            data: dict[str, Any] = {"method": "tools/call", "params": params}
            stamp = getattr(client.session, "_stamp", None)
            if stamp is not None:  # era envelope: protocol version, client info, capabilities
                stamp(data, {})
            try:
                raw = await process.request(data, timeout=timeout, progress=progress)
            except JsonRpcError as exc:
                error = exc.error
                raise MCPError(
                    error.get("code", types.INTERNAL_ERROR), error.get("message", ""), error.get("data")
                ) from exc
            except ProcessExited as exc:
                raise UpstreamUnavailable(str(exc)) from exc
            except TimeoutError as exc:
                raise MCPError(
                    types.REQUEST_TIMEOUT, f"Timed out after {timeout:g} s waiting for {name}"
                ) from exc
            if raw.get("resultType") == "input_required":
                return types.InputRequiredResult.model_validate(raw, by_name=False)
            return types.CallToolResult.model_validate(raw, by_name=False)

        first = await send(input_responses, request_state)
        if isinstance(first, types.CallToolResult) or pass_input_required:
            return first
        # The caller cannot take questions back: answer them here through our callbacks,
        # exactly as the SDK's own client would.
        drive = client._drive_input_required  # the SDK's own driver, reused rather than copied
        final: types.CallToolResult = await drive(first, send)
        return final

    async def ping(self) -> None:
        await self.client().session.send_ping()

    async def probe(self, timeout: float, *, use_ping: bool = True) -> bool:
        """One health probe on the open session, whatever the state: ping, or tools/list.

        Returns whether ping is supported (False once a server answered "Method not found",
        which 2026-07-28 servers do: ping left the protocol there). Raises on failure.
        """
        client = self._client
        if client is None:
            raise UpstreamUnavailable(f"server {self.name!r} has no open session ({self.state})")
        session = client.session
        async with asyncio.timeout(timeout):
            if use_ping:
                try:
                    await session.send_ping()
                    return True
                except MCPError as exc:
                    if exc.error.code != types.METHOD_NOT_FOUND:
                        raise
            await session.list_tools()
        return False


def _forward_capabilities(client: Client) -> None:
    """Let each 2026-07-28 request carry the *downstream* client's capabilities, not the gateway's.

    Why: a server must not rely on capabilities its caller lacks (SEP-2575); the gateway
    declares everything it can relay, so without this an upstream would ask a client that
    cannot answer. The SDK stamps capabilities per request with no per-call option, so we
    wrap its stamp: our private `_meta` key, when present, replaces the SDK's value.
    """
    session = client.session
    original = getattr(session, "_stamp", None)
    if original is None:  # an SDK without the seam: fall back to the gateway's own capabilities
        return

    def stamp(data: dict[str, Any], opts: Any) -> None:
        meta = (data.get("params") or {}).get("_meta")
        override = meta.pop(CAPABILITIES_OVERRIDE_KEY, None) if isinstance(meta, dict) else None
        original(data, opts)
        if override is not None and data["params"]["_meta"].get(CLIENT_CAPABILITIES_META_KEY) is not None:
            data["params"]["_meta"][CLIENT_CAPABILITIES_META_KEY] = override

    session._stamp = stamp


def _skip_result_validation(client: Client) -> None:
    """A relay does not judge results against output schemas: the downstream client does.

    The SDK would re-validate every structured result (and re-list tools to find schemas),
    which costs time on the hot path and would turn an upstream's schema slip into a
    gateway error that hides the upstream's actual answer.
    """

    async def accept(name: str, result: types.CallToolResult) -> None:
        return None

    client.session.validate_tool_result = accept  # type: ignore[method-assign]


async def _collect(fetch: Callable[[str | None], Awaitable[Any]], field: str) -> list[Any]:
    """Follow `nextCursor` to the end (bounded: a server that pages forever cannot hang us).

    A server that declares a capability but not every list method of it (older SDKs have no
    resources/templates/list) answers Method not found: that is an empty list, not a failure.
    """
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(1000):
        try:
            page = await fetch(cursor)
        except MCPError as exc:
            if exc.error.code == types.METHOD_NOT_FOUND:
                return items
            raise
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def describe_error(exc: BaseException) -> str:
    """The innermost useful message of what may be a nested ExceptionGroup."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text


def _version() -> str:
    from mcp_nexus import __version__

    return __version__
