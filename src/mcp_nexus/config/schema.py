"""The one configuration model every accepted file format is normalised into."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, Field, PrivateAttr, field_validator, model_validator

from mcp_nexus.config.audit import AuditSettings
from mcp_nexus.config.chains import ChainConfig, check_chains
from mcp_nexus.config.control import ControlSettings, LLMSettings
from mcp_nexus.config.dashboard_login import DashboardLoginSettings
from mcp_nexus.config.identity import ResourceServerSettings
from mcp_nexus.config.oauth import OAuthSettings, parse_auth
from mcp_nexus.config.per_user_sharing import check_per_user_sharing
from mcp_nexus.config.profiles import ProfileConfig, check_named_profiles, check_profiles
from mcp_nexus.config.schema_base import Strict as _Strict
from mcp_nexus.config.schema_base import ToolFilter
from mcp_nexus.config.stores import StoresSettings
from mcp_nexus.config.tool_search import ToolSearchSettings
from mcp_nexus.config.xiaozhi import XiaozhiSettings
from mcp_nexus.plugins.builtin import BUILTIN_TRANSPORTS

Transport = str
"""A built-in transport ('stdio', 'http', 'sse', 'embedded') or one a plugin registers (docs/PLUGINS.md)."""

# Why these defaults: an in-process server cannot fail over the network, a remote one
# is usually a shared service, a stdio child is the most fragile (docs/CONFIG.md). A plugin's
# transport brings its own (`TransportSpec.priority`).
DEFAULT_PRIORITY: dict[str, int] = {"embedded": 100, "http": 50, "sse": 50, "stdio": 10}


class CallPolicy(_Strict):
    """Governance settings; set globally, per server and per tool (the most specific wins)."""

    cache_ttl: float | None = Field(default=None, ge=0, description="seconds; 0 = never cached")
    rate_limit: str | None = Field(default=None, description='e.g. "5/second", "100/minute"')
    offload_threshold: int | None = Field(default=None, ge=0, description="bytes")
    max_result_bytes: int | None = Field(default=None, ge=1)
    timeout: float | None = Field(default=None, gt=0, description="seconds")
    retries: int | None = Field(default=None, ge=0, le=10)
    idempotent: bool | None = None
    cache_scope: Literal["public", "private"] | None = Field(
        default=None,
        description="'private': cached results are kept per caller; 'public': shared by every caller; "
        "unset: per caller only when the call carries the caller's own credentials",
    )
    # the tool index's traits (docs/CONTROL.md): overrides of what annotations and names suggest
    cost: Literal["low", "medium", "high"] | None = Field(
        default=None, description="the index's cost_estimate"
    )
    blocking: bool | None = Field(default=None, description="the index's blocking flag")
    # Blocks of the pipeline steps that have settings (the built-in `redact`, plugins' steps),
    # by step name; the most specific level wins per key (docs/PLUGINS.md, docs/GOVERNANCE.md).
    steps: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="settings of pipeline steps, by step name"
    )

    @field_validator("steps")
    @classmethod
    def _check_steps(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        if not value:
            return value
        from mcp_nexus.config.step_blocks import checked_step_blocks

        return checked_step_blocks(value)

    @field_validator("rate_limit")
    @classmethod
    def _check_rate_limit(cls, value: str | None) -> str | None:
        if value is None:
            return value
        from limits import parse

        try:
            parse(value)
        except ValueError as exc:
            raise ValueError(f'expected a rate such as "5/second" or "100/minute", got {value!r}') from exc
        return value


def _check_rate(value: str | None) -> str | None:
    """The same rate syntax as `CallPolicy.rate_limit`, for the extra limits below."""
    if value is None:
        return value
    from limits import parse

    try:
        parse(value)
    except ValueError as exc:
        raise ValueError(f'expected a rate such as "5/second" or "100/minute", got {value!r}') from exc
    return value


class Timeouts(_Strict):
    connect: float = Field(default=10.0, gt=0)
    call: float = Field(default=30.0, gt=0)
    sse_read: float = Field(default=300.0, gt=0)
    stop: float = Field(
        default=5.0,
        gt=0,
        description="seconds a stopping stdio server gets before SIGKILL: stdin closes, SIGTERM after 2/5 of it",
    )


class HealthCheck(_Strict):
    """Periodic liveness probe: ping, or tools/list for servers without ping (docs/OPERATIONS.md)."""

    interval: float = Field(default=30.0, ge=0, description="seconds between probes; 0 = no health checks")
    timeout: float = Field(default=10.0, gt=0, description="seconds one probe may take")
    threshold: int = Field(default=3, ge=1, description="consecutive failures that mark the server ERROR")


class RestartPolicy(_Strict):
    """How a crashed (stdio) or disconnected (http, sse) server is brought back."""

    backoff_min: float = Field(default=1.0, gt=0, description="seconds before the first attempt")
    backoff_max: float = Field(default=60.0, gt=0, description="the delay doubles up to this")
    max_attempts: int = Field(default=10, ge=0, description="attempts before giving up; 0 = never give up")
    reset_after: float = Field(default=60.0, ge=0, description="seconds READY that reset the attempt count")

    @model_validator(mode="after")
    def _check_backoff(self) -> RestartPolicy:
        if self.backoff_max < self.backoff_min:
            raise ValueError(
                f"'backoff_max' ({self.backoff_max:g}) must not be below 'backoff_min' ({self.backoff_min:g})"
            )
        return self


class UpstreamLimits(_Strict):
    """What one server's own traffic may cost the gateway (docs/SECURITY.md, "Hostile upstream servers")."""

    list_refresh_interval: float = Field(
        default=1.0,
        ge=0,
        description="seconds between two refreshes of one list after list_changed (one runs, one waits)",
    )
    stderr_line_chars: int = Field(
        default=1000,
        ge=80,
        description="characters of one stderr line (or log record) that are logged; the rest is cut",
    )
    stderr_lines_per_second: float = Field(
        default=10.0,
        gt=0,
        description="stderr lines (and, in a bucket of their own, log records) logged per second on average; "
        "the rest are counted",
    )
    stderr_burst: int = Field(
        default=100, ge=1, description="stderr lines (and log records) logged at once before the rate applies"
    )
    notifications_per_second: float = Field(
        default=1000.0,
        gt=0,
        description="stdio, http, sse: messages a server sends unasked (notifications, its own requests; "
        "stdio: non-JSON lines) read per second on average; beyond it its stdout or event streams are read "
        "no faster (answers on the same stream wait behind)",
    )
    notification_burst: int = Field(
        default=2000,
        ge=1,
        description="stdio, http, sse: unasked messages read at once before the rate applies",
    )
    message_bytes: int = Field(
        default=512 * 1024 * 1024,
        ge=1024,
        description="the largest message read from the server, counted decoded: stdio, one line; http, one "
        "JSON answer or one event of an SSE stream. Beyond it the message is dropped unread and the call it "
        "answers fails naming this limit (over stdio when the id leads the message, as the MCP SDKs write "
        "it; else at its timeout). Its authorization server's answers (metadata, registration, tokens) are "
        "read up to 1 MiB. sse (the older transport): one event, at most 1 MiB (the SDK's). Applies from "
        "the server's next connect",
    )


class ServerConfig(CallPolicy):
    """One upstream MCP server."""

    name: str
    display_name: str | None = Field(
        default=None, description="what a user interface shows, e.g. the Lumi dialect's `name`"
    )
    transport: Transport = Field(description="'stdio', 'http', 'sse', 'embedded' or a plugin's transport")
    enabled: bool = True
    auto_start: bool = Field(
        default=True, description="start with the gateway; False = configured, started on demand"
    )
    priority: int | None = None
    namespace: str | None = Field(default=None, description="None = the server's key; '' = bare names")
    tools: ToolFilter = Field(default_factory=ToolFilter)
    shadows: list[str] = Field(
        default_factory=list,
        description="exposed names this server may offer although they land in another server's namespace "
        "or are a built-in's or the gateway's own (docs/SECURITY.md, 'Tool names from upstreams')",
    )
    integrity: Literal["quarantine", "warn", "off"] = Field(
        default="quarantine",
        description="a tool whose definition changed since first seen, or reads as hidden instructions: "
        "'quarantine' holds it until approved, 'warn' lists it flagged, 'off' does not check (docs/INTEGRITY.md)",
    )
    # stdio
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    # http / sse
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    api_key: str | None = Field(default=None, repr=False)
    auth: OAuthSettings | None = Field(
        default=None,
        description='"oauth" or OAuth settings: log in to an OAuth-protected server (docs/OAUTH.md)',
    )
    timeouts: Timeouts = Field(default_factory=Timeouts)
    protocol: Literal["auto", "latest", "legacy"] = Field(
        default="auto",
        description="'auto': 2026-07-28 when the server offers it, except that a stdio server of a gateway serving "
        "one client over stdio (`nexus serve --stdio`) speaks that client's era; 'latest': 2026-07-28 whenever "
        "offered; 'legacy': always the handshake era (docs/CONFIG.md)",
    )
    # lifecycle (docs/OPERATIONS.md); `autoReconnect` is accepted as the same switch for http/sse
    auto_restart: bool = Field(default=True, validation_alias=AliasChoices("auto_restart", "auto_reconnect"))
    health: HealthCheck = Field(default_factory=HealthCheck)
    restart: RestartPolicy = Field(default_factory=RestartPolicy)
    limits: UpstreamLimits = Field(default_factory=UpstreamLimits)
    # embedded
    module: str | None = Field(default=None, description="'package.module:attribute'")
    options: dict[str, Any] = Field(default_factory=dict)
    # per-tool governance overrides, keyed by the upstream's own tool name
    tool_config: dict[str, CallPolicy] = Field(default_factory=dict)
    # one limit shared by all of this server's tools (rate_limit above is per tool)
    server_rate_limit: str | None = Field(default=None, description='e.g. "20/second"; all tools together')

    # What `${VAR}` substitution put into the config this server came from (secrets.py masks them).
    _interpolated: frozenset[str] = PrivateAttr(default_factory=frozenset)

    @field_validator("auth", mode="before")
    @classmethod
    def _check_auth(cls, value: Any) -> Any:
        return parse_auth(value)

    @field_validator("server_rate_limit")
    @classmethod
    def _check_server_rate_limit(cls, value: str | None) -> str | None:
        return _check_rate(value)

    @field_validator("transport")
    @classmethod
    def _check_transport(cls, value: str) -> str:
        if value in BUILTIN_TRANSPORTS:
            return value
        from mcp_nexus.config.plugin_transport import check_transport_name

        return check_transport_name(value)

    @model_validator(mode="before")
    @classmethod
    def _plugin_transport_keys(cls, data: Any) -> Any:
        # A plugin transport's own fields (beyond url, headers, ...) are written in the entry:
        # kept in `options`, where its config model reads them.
        if isinstance(data, dict) and data.get("transport") not in (None, *BUILTIN_TRANSPORTS):
            from mcp_nexus.config.plugin_transport import gather_transport_keys

            return gather_transport_keys(data, frozenset(cls.model_fields))
        return data

    @model_validator(mode="after")
    def _check_transport_fields(self) -> ServerConfig:
        if self.transport not in BUILTIN_TRANSPORTS:
            from mcp_nexus.config.plugin_transport import transport_settings

            transport_settings(self)  # raises ValueError naming the plugin's fields
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio server needs 'command'")
        if self.transport in ("http", "sse") and not self.url:
            raise ValueError(f"an {self.transport} server needs 'url'")
        if self.auth is not None and self.transport not in ("http", "sse"):
            raise ValueError(f"'auth' (OAuth) applies to http and sse servers, not {self.transport!r}")
        if (
            self.transport in ("http", "sse")
            and self.url
            and not self.url.startswith(("http://", "https://"))
        ):
            raise ValueError(
                f"'url' must start with http:// or https:// (got scheme {self.url.split(':', 1)[0]!r})"
            )
        if self.transport == "embedded" and (not self.module or ":" not in self.module):
            if not self.module:
                raise ValueError(
                    "an embedded server needs 'module': 'package.module:attribute' or a registered server's name"
                )
            from mcp_nexus.config.plugin_transport import check_server_name

            check_server_name(self.module)  # a name from `mcp_nexus.servers` (docs/PLUGINS.md)
        if self.namespace and not all(c.isalnum() or c in "_-" for c in self.namespace):
            raise ValueError(
                f"'namespace' may hold letters, digits, '_' and '-' only, got {self.namespace!r}"
            )
        return self

    @property
    def interpolated_values(self) -> frozenset[str]:
        return self._interpolated

    @property
    def effective_priority(self) -> int:
        if self.priority is not None:
            return self.priority
        if self.transport in DEFAULT_PRIORITY:
            return DEFAULT_PRIORITY[self.transport]
        from mcp_nexus.config.plugin_transport import transport_priority

        return transport_priority(self.transport)

    @property
    def effective_namespace(self) -> str:
        return self.name if self.namespace is None else self.namespace

    def connection_fields(self) -> dict[str, Any]:
        """The fields whose change needs a reconnect (everything else applies live)."""
        return self.model_dump(
            include={
                "transport",
                "protocol",
                "command",
                "args",
                "env",
                "cwd",
                "url",
                "headers",
                "api_key",
                "auth",
                "module",
                "options",
            }
        )


DEFAULT_RESULT_LIMITS: dict[str, int] = {"xiaozhi": 1024}
"""What a frontend's clients can take by default: the Xiaozhi consumer reads about 1 KB of a result."""


class IndexSettings(_Strict):
    """The tool index: the saved snapshot of every server's tool list (the controller's `mcp_server.json`).

    These never touch tool results: `cache_ttl_seconds` is how long a saved tool list stays
    valid, not how long a tool's answer may be reused (that is `cache_ttl`).
    """

    cache_ttl_seconds: float = Field(
        default=3600.0, ge=0, description="seconds a saved tool list stays valid"
    )
    force_refresh_on_init: bool = Field(default=False, description="ask every server for its tools at start")
    path: str | None = Field(
        default=None,
        description="where the index is saved: a .sqlite3/.db file (default <data dir>/index/tool_index.sqlite3) "
        "or a .json file in the controller's cache format",
    )
    sync_timeout: float = Field(
        default=10.0, gt=0, description="seconds one server may take to list its tools"
    )
    persist: bool = Field(default=True, description="save the index; false: kept in memory only")
    tag_rules: dict[str, list[str]] = Field(
        default_factory=dict,
        description='extra tags: {tag: [keyword, "/regex/", ...]} matched on tool names and descriptions',
    )

    @field_validator("tag_rules")
    @classmethod
    def _check_tag_rules(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        from mcp_nexus.config.tag_rules import check_rule

        for tag, patterns in value.items():
            if not tag.strip():
                raise ValueError("a tag name must not be empty")
            for pattern in patterns:
                problem = check_rule(pattern)
                if problem:
                    raise ValueError(f"tag {tag!r}: {problem}")
        return value


class GatewaySettings(CallPolicy):
    """The gateway itself: where it listens, who may call it, global defaults."""

    host: str = "127.0.0.1"
    port: int = Field(default=8787, ge=0, le=65535)
    path: str = "/mcp"
    token: str | None = Field(default=None, repr=False, description="bearer token; required off loopback")
    # OAuth 2.1 resource server for /mcp (config/identity.py, docs/IDENTITY.md); None: the static token only
    auth: ResourceServerSettings | None = None
    # The dashboard and admin API log in through an OpenID provider, with roles (config/dashboard_login.py)
    dashboard_login: DashboardLoginSettings | None = None
    # Who did what, as a hash-chained JSON-lines file in the data folder (config/audit.py, docs/IDENTITY.md)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    allowed_origins: list[str] = Field(default_factory=list)
    allowed_hosts: list[str] = Field(default_factory=list)
    request_max_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1, description="largest HTTP request body, every route (else 413)"
    )
    request_body_budget_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1,
        description="bytes of HTTP request bodies held at once, all requests together (else 503)",
    )
    login_failures_per_minute: int = Field(
        default=10, ge=1, description="failed dashboard logins per client address a minute (then 429)"
    )
    offload_dir: str | None = None
    index: IndexSettings = Field(default_factory=IndexSettings)
    tool_search: ToolSearchSettings = Field(default_factory=ToolSearchSettings)
    startup_timeout: float = Field(default=30.0, gt=0)
    shutdown_grace: float = Field(
        default=10.0, ge=0, description="seconds in-flight calls may finish on SIGINT/SIGTERM"
    )
    name_separator: str = "."
    list_ttl: float = Field(
        default=30.0,
        ge=0,
        description="seconds 2026-07-28 clients may cache Nexus's list results (ttlMs hint)",
    )
    first_list_wait: float = Field(
        default=5.0,
        ge=0,
        description="seconds a client's first list waits for servers still in their first start",
    )
    offload_media_threshold: int | None = Field(
        default=1024 * 1024,
        ge=0,
        description="bytes of images/audio a result carries to the client before it is offloaded "
        "(media is not counted against the text offload_threshold); null: never offloaded",
    )
    # governance (docs/GOVERNANCE.md); the per-call keys come from CallPolicy
    offload_max_age: float = Field(default=86400.0, gt=0, description="seconds an offloaded file is kept")
    offload_max_bytes: int = Field(
        default=512 * 1024 * 1024, ge=1, description="total size of offloaded files"
    )
    cache_max_entries: int = Field(default=1000, ge=1)
    cache_max_bytes: int = Field(default=64 * 1024 * 1024, ge=1)
    caller_rate_limit: str | None = Field(
        default=None, description="per caller (frontend + client), all tools"
    )
    retry_backoff: float = Field(default=2.0, ge=0, description="seconds before the first retry; doubles")
    result_limits: dict[str, int] = Field(
        default_factory=lambda: dict(DEFAULT_RESULT_LIMITS),
        description="max result bytes per frontend (merged over the defaults)",
    )
    http_session_idle_timeout: float = Field(
        default=1800.0,
        gt=0,
        description="seconds an idle handshake-era HTTP session is kept before it is closed",
    )
    http_session_max: int = Field(
        default=10_000, ge=1, description="handshake-era HTTP sessions kept at once"
    )
    http_session_max_per_client: int = Field(
        default=1000,
        ge=1,
        description="HTTP sessions one client (address and credential) keeps; over it its oldest idle one closes",
    )
    http_session_handshake_timeout: float = Field(
        default=30.0,
        gt=0,
        description="seconds a session that sent nothing after initialize is kept before it is closed",
    )
    allow_unsandboxed: bool = Field(default=False, description="python_sandbox may run without a sandbox")
    sandbox_timeout: float = Field(default=10.0, gt=0, description="python_sandbox wall-clock seconds")
    sandbox_concurrency: int | None = Field(
        default=None, ge=1, description="python_sandbox runs at once; default: CPU count, at least 2"
    )
    # python_sandbox's bounds per run, and code mode's tool channel (docs/SANDBOX.md)
    sandbox_memory: int = Field(
        default=512 * 1024 * 1024, ge=16 * 1024 * 1024, description="python_sandbox address space, bytes"
    )
    sandbox_output_bytes: int = Field(
        default=64 * 1024, ge=1, description="python_sandbox output read per stream (stdout, stderr), bytes"
    )
    sandbox_tool_calls: int = Field(
        default=200, ge=0, description="tool calls one python_sandbox run may make from its code"
    )
    sandbox_answer_bytes: int = Field(
        default=16 * 1024 * 1024, ge=1024, description="largest answer sent to code over the tool channel"
    )
    sandbox_request_bytes: int = Field(
        default=1024 * 1024, ge=1024, description="largest request line code may send over the tool channel"
    )
    # metrics (docs/OPERATIONS.md, "Metrics"): per tool/server counters and latency over a window
    metrics: bool = Field(default=True, description="record per-call metrics (/metrics, /api/metrics)")
    metrics_window: int = Field(
        default=100, ge=1, le=100_000, description="calls per tool/server the latency figures cover"
    )

    @model_validator(mode="before")
    @classmethod
    def _index_keys_at_top(cls, data: Any) -> Any:
        # `force_refresh_on_init` used to sit directly under `gateway`: still accepted there.
        if isinstance(data, dict) and "force_refresh_on_init" in data:
            data = dict(data)
            index = dict(data.get("index") or {})
            index.setdefault("force_refresh_on_init", data.pop("force_refresh_on_init"))
            data["index"] = index
        # The spelling `search_mode: off|auto|on` is `tool_search.mode`.
        if isinstance(data, dict) and "search_mode" in data:
            data = dict(data)
            search = dict(data.get("tool_search") or {})
            search.setdefault("mode", data.pop("search_mode"))
            data["tool_search"] = search
        return data

    @field_validator("caller_rate_limit")
    @classmethod
    def _check_caller_rate_limit(cls, value: str | None) -> str | None:
        return _check_rate(value)

    @field_validator("result_limits")
    @classmethod
    def _check_result_limits(cls, value: dict[str, int]) -> dict[str, int]:
        for frontend, limit in value.items():
            if limit < 1:
                raise ValueError(
                    f"result limit of frontend {frontend!r} must be at least 1 byte, got {limit}"
                )
        return value

    @field_validator("path")
    @classmethod
    def _check_path(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"'path' must start with '/', got {value!r}")
        return value


class NexusConfig(_Strict):
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    servers: dict[str, ServerConfig] = Field(default_factory=dict)
    xiaozhi: XiaozhiSettings = Field(default_factory=XiaozhiSettings)
    stores: StoresSettings = Field(default_factory=StoresSettings)  # config/stores.py; chosen once at start
    # The control plane (config/control.py): built only when llm.base_url or control.enabled is set.
    llm: LLMSettings = Field(default_factory=LLMSettings)
    control: ControlSettings = Field(default_factory=ControlSettings)
    # Composite tools the operator writes (config/chains.py, docs/CHAINS.md), by tool name.
    chains: dict[str, ChainConfig] = Field(default_factory=dict)
    # Named views of the catalog bound to identities (config/profiles.py, docs/IDENTITY.md).
    profiles: dict[str, ProfileConfig] = Field(default_factory=dict)
    source_format: str = "nexus"
    # What `${VAR}` substitution put into this config: never shown, redacted from logs.
    _interpolated: frozenset[str] = PrivateAttr(default_factory=frozenset)

    @property
    def interpolated_values(self) -> frozenset[str]:
        return self._interpolated

    def remember_interpolated(self, values: frozenset[str]) -> None:
        """Record what `${VAR}` substitution produced, here and on every server (they travel alone)."""
        self._interpolated = values
        for server in self.servers.values():
            server._interpolated = values

    def result_limits(self) -> dict[str, int]:
        """Max result bytes per frontend: `gateway.result_limits`, with the Xiaozhi section's own
        spelling (`xiaozhi.result_limit_bytes`) winning for "xiaozhi" when it is set."""
        limits = {**DEFAULT_RESULT_LIMITS, **self.gateway.result_limits}
        if self.xiaozhi.result_limit_bytes is not None:
            limits["xiaozhi"] = self.xiaozhi.result_limit_bytes
        return limits

    @field_validator("chains")
    @classmethod
    def _check_chains(cls, value: dict[str, ChainConfig]) -> dict[str, ChainConfig]:
        return check_chains(value, CallPolicy) if value else value

    @field_validator("profiles")
    @classmethod
    def _check_profiles(cls, value: dict[str, ProfileConfig]) -> dict[str, ProfileConfig]:
        return check_profiles(value, CallPolicy) if value else value

    @model_validator(mode="after")
    def _check_names(self) -> NexusConfig:
        for key, server in self.servers.items():
            if server.name != key:
                raise ValueError(f"server key {key!r} and its name {server.name!r} differ")
        xiaozhi = self.xiaozhi
        named = {
            "xiaozhi.profile": xiaozhi.profile,
            "xiaozhi.envelope_server.profile": xiaozhi.envelope_server.profile,
            "xiaozhi.envelope_client.profile": xiaozhi.envelope_client.profile,
        }
        named.update({f"xiaozhi.endpoints[{i}].profile": p for i, p in enumerate(xiaozhi.endpoint_profiles)})
        check_named_profiles(self.profiles, named)
        check_per_user_sharing(self)
        return self
