"""Which governance settings apply to a call: the most specific level wins (tool > server > gateway).

A level "sets" a key when the key appears in it, even as `null`: that is how `offload_threshold:
null` turns offload off for one tool while the gateway default stays on. Resolved policies are
memoised per exposed tool name and dropped when the catalog or the configs they came from change.

One exception to "the most specific level wins": a `cache_ttl` from the server or gateway level
only applies to read-only tools (`readOnlyHint: true`, no `destructiveHint: true`). A write must
never be answered from the cache (a second `add_entity` with the same id must fail, not repeat
the first success); a tool's own `tool_config` entry, naming it, may still ask for a TTL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from mcp_nexus.catalog.catalog import Catalog, CatalogTool, ToolRoute
from mcp_nexus.config.policy_defaults import (
    DEFAULT_CACHE_TTL,
    DEFAULT_OFFLOAD_THRESHOLD,
    DEFAULT_RATE_LIMIT,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    POLICY_DEFAULTS,
)
from mcp_nexus.config.schema import CallPolicy, GatewaySettings, ServerConfig
from mcp_nexus.pipeline.call import ToolCall

__all__ = [
    "DEFAULT_CACHE_TTL",
    "DEFAULT_OFFLOAD_THRESHOLD",
    "DEFAULT_RATE_LIMIT",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT",
    "PolicyResolver",
    "ToolPolicy",
    "call_policy",
    "is_read_only",
    "resolve_policy",
]


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """Everything the governance steps need to know about one exposed tool."""

    tool: str  # the exposed (namespaced) name
    server: str | None  # the top-priority candidate's server; None for the gateway's own tools
    upstream_tool: str | None  # that server's own name for the tool (the tool_config key)
    cache_ttl: float
    rate_limit: str | None
    server_rate_limit: str | None
    offload_threshold: int | None
    max_result_bytes: int | None
    timeout: float
    retries: int
    idempotent: bool
    input_schema: dict[str, Any] | None
    cache_scope: str | None = None  # "public", "private", or None: by the caller's credentials
    # The gateway-wide per-caller window in force when this policy was resolved: read from the
    # policy, a reload's new limit and the steps a call needs change together.
    caller_rate_limit: str | None = None
    # Each configurable step's settings for this tool (its `steps.<name>` blocks merged, the most
    # specific level winning per key), validated by the step's config model: read per call.
    steps: Mapping[str, Any] = field(default_factory=dict)
    # The profile (config `profiles:`) whose `tool_config` entry overrode keys of this policy for
    # its callers, and those keys: its `rate_limit` counts that profile's calls in a window of its
    # own, its `timeout` bounds every candidate server (profiles/policy.py).
    profile: str | None = None
    profile_keys: frozenset[str] = frozenset()


def _pick(key: str, levels: list[CallPolicy | None]) -> Any:
    for level in levels:
        if level is not None and key in level.model_fields_set:
            return getattr(level, key)
    return POLICY_DEFAULTS[key]


def step_settings(levels: list[CallPolicy | None]) -> dict[str, Any]:
    """Every registered step's settings from the `steps` blocks of `levels` (most specific first).

    A step no level configures gets its model's defaults (one instance per step, shared)."""
    from mcp_nexus.plugins.registry import registry

    out: dict[str, Any] = {}
    for name, spec in registry().steps().items():
        model = spec.config_model
        if model is None:
            continue
        merged: dict[str, Any] = {}
        for level in reversed(levels):
            if level is not None and name in level.steps:
                merged.update(level.steps[name])
        out[name] = model.model_validate(merged) if merged else _defaults(model)
    return out


_DEFAULTS: dict[type[Any], Any] = {}


def _defaults(model: type[Any]) -> Any:
    found = _DEFAULTS.get(model)
    if found is None:
        found = _DEFAULTS[model] = model()
    return found


def _server_timeout(server: ServerConfig | None) -> CallPolicy | None:
    """A server's `timeouts.call`, when set explicitly, counts as its `timeout` (foreign formats write it there)."""
    if server is None or "timeout" in server.model_fields_set or "timeouts" not in server.model_fields_set:
        return None
    if "call" not in server.timeouts.model_fields_set:
        return None
    return CallPolicy(timeout=server.timeouts.call)


def is_read_only(tool: types.Tool) -> bool:
    """The server says the tool only reads: `readOnlyHint: true` and not `destructiveHint: true`."""
    hints = tool.annotations
    return bool(hints and hints.read_only_hint is True and hints.destructive_hint is not True)


def _cache_ttl(tool: types.Tool, tool_level: CallPolicy | None, levels: list[CallPolicy | None]) -> float:
    """The tool's own TTL if its tool_config entry sets one; a wider TTL only for read-only tools."""
    if tool_level is not None and "cache_ttl" in tool_level.model_fields_set:
        return float(tool_level.cache_ttl or 0.0)
    if not is_read_only(tool):
        return 0.0
    return float(_pick("cache_ttl", levels) or 0.0)


def _hinted_idempotent(tool: types.Tool) -> bool:
    hints = tool.annotations
    return bool(hints and (hints.read_only_hint or hints.idempotent_hint))


def candidate_timeout(route: ToolRoute, settings: GatewaySettings) -> float:
    """The call timeout of one candidate server, from its own tool_config, server entry or the default."""
    server = route.upstream.config
    levels = [server.tool_config.get(route.tool.name), server, _server_timeout(server), settings]
    timeout = _pick("timeout", levels)
    return float(timeout if timeout is not None else DEFAULT_TIMEOUT)


def resolve_policy(
    entry: CatalogTool,
    settings: GatewaySettings,
    profile_level: CallPolicy | None = None,
    profile: str | None = None,
) -> ToolPolicy:
    """The tool's policy; `profile_level`: the `tool_config` entry of the caller's profile
    naming it, the most specific level of all (like the tool's own, it may set a TTL on any tool)."""
    server: ServerConfig | None = None
    upstream_tool: str | None = None
    tool_level: CallPolicy | None = None
    if entry.candidates:
        route = entry.candidates[0]
        server = route.upstream.config
        upstream_tool = route.tool.name
        tool_level = server.tool_config.get(upstream_tool)
    elif entry.local is not None:
        tool_level = entry.local.policy  # a gateway tool's own level (a chain's tool_config)
    # A level naming the tool may ask for a TTL whatever its hints: the profile's entry, else its own.
    own_level = (
        profile_level
        if profile_level is not None and "cache_ttl" in profile_level.model_fields_set
        else tool_level
    )
    levels: list[CallPolicy | None] = [profile_level, tool_level, server, settings]
    timeout_levels: list[CallPolicy | None] = [
        profile_level,
        tool_level,
        server,
        _server_timeout(server),
        settings,
    ]
    explicit_idempotent = next(
        (level.idempotent for level in levels if level is not None and level.idempotent is not None), None
    )
    timeout = _pick("timeout", timeout_levels)
    retries = _pick("retries", levels)
    return ToolPolicy(
        tool=entry.name,
        server=server.name if server else None,
        upstream_tool=upstream_tool,
        cache_ttl=_cache_ttl(entry.tool, own_level, levels),
        rate_limit=_pick("rate_limit", levels),
        server_rate_limit=server.server_rate_limit if server else None,
        offload_threshold=None
        if entry.local is not None and entry.local.sized_by_gateway
        else _pick("offload_threshold", levels),
        max_result_bytes=_pick("max_result_bytes", levels),
        timeout=float(timeout if timeout is not None else DEFAULT_TIMEOUT),
        retries=int(retries if retries is not None else DEFAULT_RETRIES),
        idempotent=explicit_idempotent if explicit_idempotent is not None else _hinted_idempotent(entry.tool),
        input_schema=entry.tool.input_schema,
        cache_scope=_pick("cache_scope", levels),
        caller_rate_limit=settings.caller_rate_limit,
        steps=step_settings(levels),
        profile=profile if profile_level is not None else None,
        profile_keys=frozenset(profile_level.model_fields_set) if profile_level is not None else frozenset(),
    )


class PolicyResolver:
    """Memoised `resolve_policy` per exposed name; one dict lookup and three identity checks per call."""

    def __init__(self, catalog: Catalog, settings: Callable[[], GatewaySettings]) -> None:
        self.catalog = catalog
        self._settings = settings  # read per call: a reloaded config takes effect at once
        self._memo: dict[str, tuple[CatalogTool, ServerConfig | None, GatewaySettings, ToolPolicy]] = {}
        # The `tool_config` entry of a profile for an exposed name (profiles/policy.py), set by the
        # gateway; policies with one are memoised per (name, profile) beside the plain ones.
        self.profile_levels: Callable[[str, str], CallPolicy | None] | None = None
        self._profile_memo: dict[
            tuple[str, str], tuple[CatalogTool, ServerConfig | None, GatewaySettings, CallPolicy, ToolPolicy]
        ] = {}
        self._timeouts_memo: dict[str, tuple[CatalogTool, tuple[Any, ...], dict[str, float]]] = {}

    def default_timeout(self) -> float:
        """The gateway-wide call timeout in force (a tool not listed yet has no level of its own)."""
        timeout = self._settings().timeout
        return float(timeout if timeout is not None else DEFAULT_TIMEOUT)

    def candidate_timeouts(self, entry: CatalogTool) -> dict[str, float]:
        """Each candidate server's own call timeout, by server name (fallback gives each its full time).

        Memoised like `resolve`: recomputed only when the entry, a candidate's config or the
        gateway settings object changed (a reload replaces them, so identity is enough).
        """
        settings = self._settings()
        configs = (settings, *(route.upstream.config for route in entry.candidates))
        memo = self._timeouts_memo.get(entry.name)
        if (
            memo is not None
            and memo[0] is entry
            and all(a is b for a, b in zip(memo[1], configs, strict=True))
        ):
            return memo[2]
        timeouts = {route.upstream.name: candidate_timeout(route, settings) for route in entry.candidates}
        self._timeouts_memo[entry.name] = (entry, configs, timeouts)
        return timeouts

    def resolve(self, name: str, profile: str | None = None) -> ToolPolicy | None:
        """The policy of exposed tool `name` (for a caller in `profile`), or None when no such tool is listed now."""
        entry = self.catalog.tools.get(name)
        if entry is None:
            return None
        settings = self._settings()
        server = entry.candidates[0].upstream.config if entry.candidates else None
        if profile is not None and self.profile_levels is not None:
            level = self.profile_levels(profile, name)
            if level is not None:
                return self._resolve_in_profile(entry, server, settings, level, profile)
        memo = self._memo.get(name)
        if memo is not None and memo[0] is entry and memo[1] is server and memo[2] is settings:
            return memo[3]
        policy = resolve_policy(entry, settings)
        self._memo[name] = (entry, server, settings, policy)
        return policy

    def _resolve_in_profile(
        self,
        entry: CatalogTool,
        server: ServerConfig | None,
        settings: GatewaySettings,
        level: CallPolicy,
        profile: str,
    ) -> ToolPolicy:
        memo = self._profile_memo.get((entry.name, profile))
        if (
            memo is not None
            and memo[0] is entry
            and memo[1] is server
            and memo[2] is settings
            and memo[3] is level
        ):
            return memo[4]
        policy = resolve_policy(entry, settings, level, profile)
        self._profile_memo[(entry.name, profile)] = (entry, server, settings, level, policy)
        return policy


def call_policy(call: ToolCall, policies: PolicyResolver) -> ToolPolicy | None:
    """The policy the pipeline resolved when `call` entered it (one lookup per call), else resolved now."""
    policy = call.policy
    if isinstance(policy, ToolPolicy) and policy.tool == call.name:
        return policy
    return policies.resolve(call.name, call.caller.profile)
