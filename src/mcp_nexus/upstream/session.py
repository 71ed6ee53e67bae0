"""One open connection to one server in one protocol era, behind one interface for every transport.

A `Session` is chosen once, at connect, by the server's transport (stdio.py, http.py,
sse.py, embedded.py); the `Upstream` above it never looks at the transport again. All
sessions share the typed MCP layer of the SDK (`ClientSession`: era negotiation, list
paging, result models, `subscriptions/listen`), each on its own `Dispatcher`: our
JSON-RPC core for stdio, the SDK's HTTP/SSE transports, the SDK's in-process pair.

The SDK's `ClientSession` enters a task group that must be exited by the task that
entered it, so each session lives in a task of its own (`_lifetime`): `start()` waits
until it is negotiated (or failed), `close()` ends it, and `ended` tells the upstream
when the connection dies on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, ClassVar, Protocol

import mcp_types as types
from mcp import ClientSession
from mcp.client.session import ClientRequestContext, IncomingMessage
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter

from mcp_nexus._sdk_seams import CAPABILITIES_OVERRIDE_KEY, forward_client_capabilities
from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.upstream.budgeted_stream import BudgetedReceiveStream, ReceiveStream
from mcp_nexus.upstream.input_required import InputAnswerer, drive_input_required
from mcp_nexus.upstream.negotiate import Era, negotiate
from mcp_nexus.upstream.notification_budget import NotificationBudget

logger = logging.getLogger(__name__)

ToolOutcome = types.CallToolResult | types.InputRequiredResult

_TOOL_OUTCOME: TypeAdapter[ToolOutcome] = TypeAdapter(types.CallToolResult | types.InputRequiredResult)
_PROMPT_OUTCOME: TypeAdapter[types.GetPromptResult | types.InputRequiredResult] = TypeAdapter(
    types.GetPromptResult | types.InputRequiredResult
)
_READ_OUTCOME: TypeAdapter[types.ReadResourceResult | types.InputRequiredResult] = TypeAdapter(
    types.ReadResourceResult | types.InputRequiredResult
)


class SessionEvents(Protocol):
    """What a session tells its upstream: server-initiated requests, notifications, its end."""

    async def sampling(
        self, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData: ...

    async def elicitation(
        self, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData: ...

    async def list_roots(self) -> types.ListRootsResult | types.ErrorData: ...

    async def log(self, params: types.LoggingMessageNotificationParams) -> None: ...

    def notification(self, message: types.ServerNotification) -> None: ...

    def transport_error(self, error: Exception) -> None: ...

    def refresh_waiting(self, lists: str) -> bool:
        """A refresh of `lists` ("tools", "resources", "prompts") is already waiting to start:
        one more list_changed of that kind adds nothing (a transport may drop it unread)."""
        ...

    def lost(self, session: Session, reason: str) -> None:
        """The connection died on its own (a crashed child): said at once, before the session winds down."""


class CallRound(Protocol):
    """A 2026-07-28 caller's answers to earlier input requests (SEP-2322), if any."""

    @property
    def input_responses(self) -> dict[str, Any] | None: ...

    @property
    def request_state(self) -> str | None: ...


class Session:
    """Base of every transport's session; subclasses say how to reach the server (`_dispatcher`)."""

    transport: ClassVar[str] = "?"

    def __init__(self, config: ServerConfig, events: SessionEvents, *, era: Era) -> None:
        self.config = config
        self.events = events
        self.era = era  # what to negotiate (negotiate.py)
        self.ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._sdk: ClientSession | None = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self.exit_reason: str | None = None  # set by a transport that knows why the connection ended
        # Set when the server refused for want of an operator's OAuth login (upstream/oauth/):
        # a connect that fails so is NEEDS_AUTH, not ERROR.
        self.login_needed: str | None = None
        self._closing = False  # close() was asked: the end is ours, not a loss
        # What the server sends unasked is read within this budget (notification_budget.py);
        # set by a transport that reads a server which may flood (stdio, HTTP, SSE).
        self.notifications: NotificationBudget | None = None

    # -- the part a transport provides ----------------------------------------------------

    async def _dispatcher(self, stack: AsyncExitStack) -> Any:
        """Connect and return the SDK `Dispatcher` the typed layer runs on."""
        raise NotImplementedError

    async def _connect(self, stack: AsyncExitStack) -> ClientSession:
        """The typed session on this transport's dispatcher, with the era negotiated."""
        sdk = ClientSession(dispatcher=await self._dispatcher(stack), **self.callbacks())
        await stack.enter_async_context(sdk)
        await negotiate(sdk, self.era)
        return sdk

    def callbacks(self) -> dict[str, Any]:
        """How the server's requests and notifications reach this session's upstream."""
        return {
            "sampling_callback": self._on_sampling,
            "elicitation_callback": self._on_elicitation,
            "list_roots_callback": self._on_list_roots,
            "logging_callback": self.events.log,
            "message_handler": self._on_message,
            "client_info": types.Implementation(name="mcp-nexus", version=_version()),
            # Opt in to log messages on 2026-07-28 requests so they can be relayed to callers.
            "log_level": "debug",
        }

    def refused_for_login(self, why: str) -> None:
        """The server's OAuth client found no usable login (told by upstream/oauth/manager.py)."""
        self.login_needed = why

    def budgeted(
        self, read: ReceiveStream, stack: AsyncExitStack, *, answers_apart: bool = True
    ) -> BudgetedReceiveStream:
        """The transport's stream of what the server sends, read within the server's notification
        budget; `answers_apart`: its answers come on streams of their own (see BudgetedReceiveStream)."""
        stream = BudgetedReceiveStream(
            read, self.config.name, self.config.limits, answers_apart=answers_apart
        )
        stack.callback(stream.budget.close)
        self.notifications = stream.budget
        return stream

    def chatter(self) -> dict[str, Any]:
        """What this transport counts of the server's unasked traffic: its notification budget (stdio,
        HTTP, SSE; stdio adds its stderr lines)."""
        budget = self.notifications
        if budget is None:
            return {}
        return {
            "notifications": {
                "floods": budget.episodes,  # times its output was held back (one warning each)
                "delayed": budget.delayed,
                "paused_seconds": round(budget.paused_seconds, 3),
                "paused": budget.paused,
            }
        }

    def describe_failure(self, exc: BaseException) -> str:
        """Why the session failed, as operators should read it (a transport may know better)."""
        return describe_error(exc)

    # -- lifetime -------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect and negotiate; raises what went wrong (the session is then ended)."""
        self._task = asyncio.create_task(self._lifetime(), name=f"session-{self.config.name}")
        ready = asyncio.ensure_future(self._ready.wait())
        try:
            await asyncio.wait({self._task, ready}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            # Given up while connecting (a timeout, a stop): end whatever was started, now.
            await asyncio.shield(self.close(grace=0.2))
            raise
        finally:
            ready.cancel()
        if not self._ready.is_set():
            if self.exit_reason:  # the transport knows better (e.g. the child's exit code and last words)
                raise ConnectionError(self.exit_reason)
            raise self._failure or ConnectionError("the session ended before it was ready")

    async def _lifetime(self) -> None:
        reason = "closed"
        try:
            async with AsyncExitStack() as stack:
                sdk = await self._connect(stack)
                forward_client_capabilities(sdk)
                self._sdk = sdk
                self._ready.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            reason = "cancelled"
            raise
        except BaseException as exc:  # the SDK raises ExceptionGroups from its task groups
            self._failure = exc
            reason = self.describe_failure(exc)
        finally:
            self._sdk = None
            if not self.ended.done():
                self.ended.set_result(self.exit_reason or reason)
            if self._ready.is_set() and not self._closing:
                self.events.lost(self, self.exit_reason or reason)

    async def close(self, grace: float = 5.0) -> None:
        """End the session (and whatever it started); safe to call twice."""
        self._closing = True
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), grace)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    def mark_lost(self, reason: str) -> None:
        """The transport saw the connection die: say so now, then let the session end."""
        if self.exit_reason is None:
            self.exit_reason = reason
        self._stop.set()
        if self._ready.is_set():
            self.events.lost(self, reason)

    @property
    def open(self) -> bool:
        return self._sdk is not None and not self.ended.done() and not self._stop.is_set()

    def sdk(self) -> ClientSession:
        sdk = self._sdk
        if sdk is None:
            raise ConnectionError(f"the session to {self.config.name!r} is not open")
        return sdk

    # -- what was negotiated ----------------------------------------------------------------

    @property
    def protocol_version(self) -> str | None:
        return self._sdk.protocol_version if self._sdk is not None else None

    @property
    def modern(self) -> bool:
        return self.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def capabilities(self) -> types.ServerCapabilities:
        caps = self._sdk.server_capabilities if self._sdk is not None else None
        return caps if caps is not None else types.ServerCapabilities()

    @property
    def server_info(self) -> types.Implementation | None:
        return self._sdk.server_info if self._sdk is not None else None

    @property
    def pid(self) -> int | None:
        return None

    # -- requests -----------------------------------------------------------------------

    @staticmethod
    def _meta(meta: dict[str, Any] | None, capabilities: dict[str, Any] | None) -> dict[str, Any] | None:
        if capabilities is None:
            return meta
        return {**(meta or {}), CAPABILITIES_OVERRIDE_KEY: capabilities}

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        meta: dict[str, Any] | None = None,
        timeout: float | None = None,
        progress: ProgressFnT | None = None,
        capabilities: dict[str, Any] | None = None,
        round_: CallRound | None = None,
        answer_input: InputAnswerer | None = None,
    ) -> ToolOutcome:
        """tools/call — the one way out for a call, whatever the transport.

        Without `answer_input` an `InputRequiredResult` is returned to the caller as is; with it,
        the questions are answered through it and the call retried until it ends. The params are
        built here, once per round; the transport only sends them (`_send_call`).
        """

        async def send(responses: dict[str, Any] | None, state: str | None) -> ToolOutcome:
            params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
            if meta:
                params["_meta"] = dict(meta)
            if responses is not None:
                params["inputResponses"] = {
                    key: value.model_dump(mode="json", by_alias=True, exclude_none=True)
                    if isinstance(value, types.Result | types.ErrorData)
                    else value
                    for key, value in responses.items()
                }
            if state is not None:
                params["requestState"] = state
            return await self._send_call(params, capabilities, timeout, progress)

        return await in_rounds(send, round_, answer_input)

    async def _send_call(
        self,
        params: dict[str, Any],
        capabilities: dict[str, Any] | None,
        timeout: float | None,
        progress: ProgressFnT | None,
    ) -> ToolOutcome:
        """Send one tools/call round. Here through the SDK's session, which stamps the
        2026-07-28 envelope itself (with the caller's capabilities: `_meta`)."""
        params["_meta"] = self._meta(params.get("_meta"), capabilities)
        request = types.CallToolRequest(
            params=types.CallToolRequestParams.model_validate(params, by_name=False)
        )
        # send_request, not ClientSession.call_tool: a relay does not re-validate results
        # against output schemas (the downstream client does), which costs time and would
        # hide the upstream's own answer behind a gateway error.
        return await self._send(request, _TOOL_OUTCOME, timeout, progress)  # type: ignore[no-any-return]

    async def _send(
        self, request: Any, result_type: Any, timeout: float | None, progress: ProgressFnT | None
    ) -> Any:
        """One typed request on the session (a transport may add what its dispatcher lacks)."""
        return await self.sdk().send_request(
            request, result_type, request_read_timeout_seconds=timeout, progress_callback=progress
        )

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None,
        *,
        timeout: float | None = None,
        capabilities: dict[str, Any] | None = None,
        round_: CallRound | None = None,
        answer_input: InputAnswerer | None = None,
    ) -> types.GetPromptResult | types.InputRequiredResult:
        async def send(
            responses: dict[str, Any] | None, state: str | None
        ) -> types.GetPromptResult | types.InputRequiredResult:
            request = types.GetPromptRequest(
                params=types.GetPromptRequestParams(
                    name=name,
                    arguments=arguments,
                    input_responses=responses,
                    request_state=state,
                    _meta=self._meta(None, capabilities),  # type: ignore[arg-type]
                )
            )
            return await self._send(request, _PROMPT_OUTCOME, timeout, None)

        return await in_rounds(send, round_, answer_input)

    async def read_resource(
        self,
        uri: str,
        *,
        timeout: float | None = None,
        capabilities: dict[str, Any] | None = None,
        round_: CallRound | None = None,
        answer_input: InputAnswerer | None = None,
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        async def send(
            responses: dict[str, Any] | None, state: str | None
        ) -> types.ReadResourceResult | types.InputRequiredResult:
            request = types.ReadResourceRequest(
                params=types.ReadResourceRequestParams(
                    uri=uri,
                    input_responses=responses,
                    request_state=state,
                    _meta=self._meta(None, capabilities),  # type: ignore[arg-type]
                )
            )
            return await self._send(request, _READ_OUTCOME, timeout, None)

        return await in_rounds(send, round_, answer_input)

    async def complete(
        self,
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: dict[str, str],
        context_arguments: dict[str, str] | None,
        *,
        timeout: float | None = None,
    ) -> types.CompleteResult:
        async with asyncio.timeout(timeout):
            return await self.sdk().complete(ref=ref, argument=argument, context_arguments=context_arguments)

    async def subscribe(self, uri: str, subscribe: bool) -> None:
        sdk = self.sdk()
        if subscribe:
            await sdk.subscribe_resource(uri)
        else:
            await sdk.unsubscribe_resource(uri)

    async def ping(self) -> None:
        await self.sdk().send_ping()

    async def list_tools(self) -> list[types.Tool]:
        sdk = self.sdk()
        return await _collect(
            lambda c: sdk.list_tools(params=types.PaginatedRequestParams(cursor=c)), "tools"
        )

    async def list_resources(self) -> list[types.Resource]:
        sdk = self.sdk()
        return await _collect(
            lambda c: sdk.list_resources(params=types.PaginatedRequestParams(cursor=c)), "resources"
        )

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        sdk = self.sdk()
        return await _collect(
            lambda c: sdk.list_resource_templates(params=types.PaginatedRequestParams(cursor=c)),
            "resource_templates",
        )

    async def list_prompts(self) -> list[types.Prompt]:
        sdk = self.sdk()
        return await _collect(
            lambda c: sdk.list_prompts(params=types.PaginatedRequestParams(cursor=c)), "prompts"
        )

    # -- what the server sends us ---------------------------------------------------------------

    async def _on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        return await self.events.sampling(params)

    async def _on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return await self.events.elicitation(params)

    async def _on_list_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        return await self.events.list_roots()

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, Exception):
            self.events.transport_error(message)
            return
        self.events.notification(message)  # type: ignore[arg-type]


async def in_rounds(
    send: Callable[[dict[str, Any] | None, str | None], Awaitable[Any]],
    round_: CallRound | None,
    answer_input: InputAnswerer | None,
) -> Any:
    """Send a request with the caller's answers so far; when the server asks for input and the
    caller cannot take the question back (`answer_input` given), answer it and send again."""
    first = await send(round_.input_responses if round_ else None, round_.request_state if round_ else None)
    if answer_input is None or not isinstance(first, types.InputRequiredResult):
        return first
    return await drive_input_required(first, send, answer_input)


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
