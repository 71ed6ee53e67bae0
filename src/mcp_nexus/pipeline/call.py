"""The value that travels through the pipeline: one call, who made it, and what steps learned on the way."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from pydantic import BaseModel

from mcp_nexus.identity.principal import Principal

ResultT = TypeVar("ResultT", bound=BaseModel)

Method = Literal["tools/call", "resources/read", "prompts/get", "completion/complete"]


class DownstreamPeer(Protocol):
    """The client a call came from, as far as the gateway needs to reach it back.

    The SDK's `ServerSession` has this shape; so does the stdio frontend's own peer.
    """

    @property
    def can_send_request(self) -> bool: ...

    async def send_request(self, request: Any, result_type: type[ResultT]) -> ResultT: ...

    async def send_log_message(
        self, level: Any, data: Any, logger: str | None = None, related_request_id: Any = None
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class Caller:
    """Which frontend and client a call came from (for limits, logs, ownership and relaying)."""

    frontend: str  # "stdio", "http", "xiaozhi", "api", "cli", "executor", ...
    client: str | None = None
    peer: DownstreamPeer | None = None  # where server-initiated requests can reach the caller
    request_id: Any = None  # the downstream request id, to scope forwarded notifications to it
    capabilities: dict[str, Any] | None = None  # what the downstream client declared it can do
    modern: bool = False  # the downstream speaks 2026-07-28: input requests travel back as results
    # The caller's name for a gateway tool, None when hidden from it (a frontend's tool filter);
    # unset: the caller sees every tool under the gateway's name. (E.g. whether an alert may name python_sandbox.)
    sees: Callable[[str], str | None] | None = None
    # A fingerprint (never the secret) of the caller's own upstream credentials the call carries
    # (passed-through headers, a per-user token); None when the gateway calls with its own.
    # Cached results of such calls are kept per caller (pipeline/steps/cache.py).
    own_credentials: str | None = None
    # How the call reached the pipeline besides the frontend: "sandbox" for a call made by code the
    # caller runs in python_sandbox (code mode). The identity stays the caller's (same limits,
    # cache scope, file ownership); metrics, the recent-calls log and traces show the mark.
    via: str | None = None
    # Who the caller's access token names (gateway.auth, identity/principal.py); None without one.
    principal: Principal | None = None
    # The profile (config `profiles:`) the caller's way in names (`/mcp/<profile>`, `--profile`, a
    # Xiaozhi endpoint's); None: chosen by the token's bindings (profiles/resolve.py). Once the
    # gateway has bound the caller it is the profile in force.
    profile: str | None = None
    # Whether the caller's profile lets it reach a gateway tool name; None: every tool. Set only by
    # the gateway (profiles/resolve.py), which also enforces it; listings read it.
    reaches: Callable[[str], bool] | None = None
    # The access token the caller came with (over HTTP with gateway.auth), never logged nor sent
    # upstream as is: a per-user server with token exchange trades it at the identity provider
    # for one of its own (upstream/oauth/token_exchange.py). None without one.
    access_token: str | None = field(default=None, repr=False, compare=False)

    @property
    def back_channel(self) -> bool:
        """A handshake-era caller that can answer sampling, elicitation or roots requests."""
        if self.modern or self.peer is None or not self.peer.can_send_request:
            return False
        caps = self.capabilities or {}
        return any(caps.get(key) is not None for key in ("sampling", "elicitation", "roots"))

    @property
    def identity(self) -> str:
        """Who owns what this caller causes (its offloaded files, tasks, per-caller limit and cache):
        the token's principal (`user:<sub>`, the same over every frontend), else frontend and client."""
        if self.principal is not None:
            return self.principal.key
        return f"{self.frontend}:{self.client or '-'}"


@dataclass(frozen=True, slots=True)
class InputRound:
    """A 2026-07-28 caller's answers to the input requests of an earlier round (SEP-2322)."""

    input_responses: dict[str, Any] | None = None
    request_state: str | None = None


CacheOutcome = Literal["hit", "merged", "miss"]


@dataclass(slots=True)
class ToolCall:
    """One request through the pipeline. `method` says which; `name` is the tool, URI, prompt or reference.

    The fields after `round` are what steps share on the way (typed, so a step that reads
    one finds what the step that wrote it meant).
    """

    name: str
    arguments: dict[str, Any]
    caller: Caller
    progress: ProgressFnT | None = None
    meta: dict[str, Any] | None = None
    round: InputRound | None = None
    method: Method = "tools/call"
    # -- learned on the way -----------------------------------------------------------------
    server: str | None = None  # the server that answered ("nexus" for the gateway's own tools)
    servers_tried: list[str] = field(default_factory=list)
    timeout: float | None = None  # seconds per attempt (TimeoutStep)
    candidate_timeouts: Mapping[str, float] = field(default_factory=dict)  # per server, tried in turn
    cache: CacheOutcome | None = None
    retries: int = 0
    declares_output_schema: bool = False  # replaced results must then be flagged isError
    measured: tuple[Any, int] | None = None  # (result, bytes): the size of a result, measured once
    # The tool's ToolPolicy (pipeline/policy.py), resolved once as the call enters the pipeline;
    # typed loosely because the policy module builds on this one.
    policy: Any = None


ToolOutcome = types.CallToolResult | types.InputRequiredResult
"""A call ends with the tool's result, or (2026-07-28 callers only) a request for more input."""

CallOutcome = Any
"""What a non-tool request ends with (ReadResourceResult, GetPromptResult, CompleteResult, InputRequiredResult)."""

CallNext = Callable[[ToolCall], Awaitable[Any]]


class Middleware(Protocol):
    """One step of the chain: may answer by itself or pass the call on."""

    async def __call__(self, call: ToolCall, call_next: CallNext) -> Any: ...
