"""What `nexus config check` finds in a valid config: a verdict, one row per server, the settings
that differ from the defaults, and the problems that would stop a server at start.

A problem (exit 1) is something the schema accepts but the gateway will trip on: a stdio
`command` it will not find (config/command_lookup.py), a `cwd` that is not a folder. An invalid
document is another matter (a ConfigError, exit 2). Disabled servers are listed, never checked.
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mcp_nexus.config.builtins import builtin_servers
from mcp_nexus.config.command_lookup import lookup_command
from mcp_nexus.config.errors import ConfigProblem
from mcp_nexus.config.masking import MASK, Masker
from mcp_nexus.config.overrides import overrides
from mcp_nexus.config.policy_defaults import POLICY_DEFAULTS
from mcp_nexus.config.schema import NexusConfig, ServerConfig
from mcp_nexus.config.stores import KINDS

# Shown in their own columns, so not repeated among a server's overrides.
_SERVER_COLUMNS = ("name", "transport", "command", "args", "url", "module")
# The top-level sections whose non-default settings are listed (servers have their own rows).
SECTIONS = ("gateway", "stores", "xiaozhi", "llm", "control")
# Where each format keeps its servers: how a problem names the entry as the user wrote it.
_SERVERS_KEY = {
    "nexus": "servers",
    "vscode": "servers",
    "mcpServers": "mcpServers",
    "lumi": "mcpServers",
    "bridge": "services",
    "seed": "servers",
    "controller": "mcp_servers",
}
_LISTED_FORMATS = ("seed", "controller")  # servers are a list there: named by their name, not an index


@dataclass
class ServerRow:
    name: str
    transport: str
    target: str  # the command line, the URL or the module, masked
    found: str  # stdio: "yes", "NO"; disabled servers: "disabled"; other transports: "-"
    resolved: str | None  # where the command was found
    builtin: bool
    enabled: bool
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class CheckReport:
    source: str
    format: str
    servers: list[ServerRow]
    settings: dict[str, dict[str, Any]]  # section -> its non-default settings
    stores: str
    problems: list[ConfigProblem] = field(default_factory=list)
    warnings: list[ConfigProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def verdict(self) -> str:
        if self.problems:
            count = len(self.problems)
            return f"config has {count} problem{'s' if count != 1 else ''}:"
        transports: dict[str, int] = {}
        for row in self.servers:
            transports[row.transport] = transports.get(row.transport, 0) + 1
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(transports.items()))
        builtins = sum(row.builtin for row in self.servers)
        detail = f" ({kinds}{f'; {builtins} built-in' if builtins else ''})" if self.servers else ""
        count = len(self.servers)
        return (
            f"config OK: {count} server{'s' if count != 1 else ''}{detail}, "
            f"{self.format} format, stores: {self.stores}"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "verdict": self.verdict(),
            "source": self.source,
            "format": self.format,
            "problems": [asdict(p) for p in self.problems],
            "warnings": [asdict(w) for w in self.warnings],
            "servers": [asdict(row) for row in self.servers],
            "settings": self.settings,
            "stores": self.stores,
        }


def _stores_summary(config: NexusConfig) -> str:
    remote = [kind for kind in KINDS if config.stores.url_for(kind) != "memory"]
    if not remote:
        return "memory"
    return "redis for " + ", ".join(remote) + (", memory for the rest" if len(remote) < len(KINDS) else "")


def _policy_in_force(config: NexusConfig) -> dict[str, Any]:
    """The governance values a server inherits: the gateway's, or the built-in defaults."""
    gateway = config.gateway
    return {
        key: getattr(gateway, key) if key in gateway.model_fields_set else default
        for key, default in POLICY_DEFAULTS.items()
    }


def _is_builtin(server: ServerConfig) -> bool:
    entry = builtin_servers().get(server.name)
    return entry is not None and server.transport == "embedded" and server.module == entry.get("module")


def server_path(name: str, source_format: str, builtin: bool) -> str:
    """How a problem names a server: its entry as written in the user's file."""
    if builtin:
        return f"(built-in) servers.{name}"
    key = _SERVERS_KEY.get(source_format, "servers")
    return f"{key}[{name}]" if source_format in _LISTED_FORMATS else f"{key}.{name}"


def _target(server: ServerConfig, masker: Masker) -> str:
    if server.transport == "stdio":
        words = [server.command or "", *map(str, masker.arguments(list(server.args)))]
        return " ".join(word if word == MASK else shlex.quote(word) for word in words)
    if server.transport in ("http", "sse"):
        return str(masker.value("url", server.url or ""))
    return server.module or ""


def _row(
    server: ServerConfig, config: NexusConfig, masker: Masker, folder: Path | None
) -> tuple[ServerRow, list[ConfigProblem]]:
    builtin = _is_builtin(server)
    row = ServerRow(
        name=server.name,
        transport=server.transport,
        target=_target(server, masker),
        found="-",
        resolved=None,
        builtin=builtin,
        enabled=server.enabled,
        overrides=overrides(server, masker, leave_out=_SERVER_COLUMNS, in_force=_policy_in_force(config)),
    )
    if not server.enabled:
        row.found = "disabled"
        return row, []
    if builtin:
        row.found = "built-in"
    if server.transport != "stdio" or server.command is None:
        return row, []
    where = server_path(server.name, config.source_format, builtin)
    problems: list[ConfigProblem] = []
    if server.cwd is not None and not Path(server.cwd).is_dir():
        problems.append(
            ConfigProblem(f"{where}.cwd", f"{server.cwd!r} is not a folder: the server cannot start")
        )
    lookup = lookup_command(server.command, env=server.env, cwd=server.cwd, config_folder=folder)
    row.found = "yes" if lookup.found else "NO"
    row.resolved = lookup.path if lookup.found else None
    if lookup.problem:
        problems.append(ConfigProblem(f"{where}.command", f"{lookup.problem}: the server cannot start"))
    return row, problems


def build_report(
    config: NexusConfig,
    source: str,
    warnings: list[ConfigProblem],
    *,
    config_path: Path | None = None,
    show_secrets: bool = False,
) -> CheckReport:
    """The report for a config that loaded; `config_path` is its file (for hints about relative commands)."""
    masker = Masker(config.interpolated_values, reveal=show_secrets)
    folder = config_path.resolve().parent if config_path is not None else None
    rows: list[ServerRow] = []
    problems: list[ConfigProblem] = []
    for server in config.servers.values():
        row, found = _row(server, config, masker, folder)
        rows.append(row)
        problems.extend(found)
    settings = {
        name: overrides(
            getattr(config, name), masker, in_force=POLICY_DEFAULTS if name == "gateway" else None
        )
        for name in SECTIONS
    }
    return CheckReport(
        source=source,
        format=config.source_format,
        servers=rows,
        settings={name: values for name, values in settings.items() if values},
        stores=_stores_summary(config),
        problems=problems,
        warnings=list(warnings),
    )
