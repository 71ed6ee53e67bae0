"""What a new config changes for the running servers, sorted by what it takes to apply."""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_nexus.config.schema import GatewaySettings, NexusConfig, ServerConfig

# Gateway settings that only take effect when `nexus serve` starts (the socket and its guard).
RESTART_ONLY_SETTINGS = (
    "host",
    "port",
    "path",
    "token",
    "http_session_idle_timeout",
    "http_session_max",
    "allowed_origins",
    "allowed_hosts",
    "request_max_bytes",
    "request_body_budget_bytes",  # the HTTP app's limits are built once, when it starts
    "http_session_handshake_timeout",
    "http_session_max_per_client",
    "login_failures_per_minute",
    "metrics",  # the pipeline is built with or without its metrics step (metrics_window applies live)
)


@dataclass
class ServerChange:
    name: str
    old: ServerConfig
    new: ServerConfig
    fields: list[str]  # the top-level fields that differ

    @property
    def needs_restart(self) -> bool:
        """A field the connection depends on changed (command, args, env, cwd, transport, url, ...)."""
        return self.old.connection_fields() != self.new.connection_fields()

    @property
    def enabled_changed(self) -> bool:
        return self.old.enabled != self.new.enabled


@dataclass
class ConfigDiff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[ServerChange] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    gateway_fields: list[str] = field(default_factory=list)  # gateway settings that differ

    @property
    def restart_only_fields(self) -> list[str]:
        return [f for f in self.gateway_fields if f in RESTART_ONLY_SETTINGS]

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.gateway_fields)


def _differing(old: GatewaySettings | ServerConfig, new: GatewaySettings | ServerConfig) -> list[str]:
    before, after = old.model_dump(), new.model_dump()
    fields = [key for key in after if before.get(key) != after.get(key)]
    # "set explicitly" matters to governance (a key present as null turns a default off).
    fields += sorted((old.model_fields_set ^ new.model_fields_set) - set(fields))
    return fields


def diff_configs(old: NexusConfig, new: NexusConfig) -> ConfigDiff:
    diff = ConfigDiff()
    for name, server in new.servers.items():
        previous = old.servers.get(name)
        if previous is None:
            diff.added.append(name)
            continue
        fields = _differing(previous, server)
        if fields:
            diff.changed.append(ServerChange(name, previous, server, fields))
        else:
            diff.unchanged.append(name)
    diff.removed = [name for name in old.servers if name not in new.servers]
    diff.gateway_fields = _differing(old.gateway, new.gateway)
    if old.xiaozhi != new.xiaozhi:
        diff.gateway_fields.append("xiaozhi")
    return diff
