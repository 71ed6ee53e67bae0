"""`nexus config check FILE`: a verdict, a short table of the servers and the settings that differ
from the defaults; `--full` the whole effective document; `--json` the same as data.

Exit status: 0 the config is fine; 1 it loads but has problems a server would trip on at
start (a `command` not found, a `cwd` that is not a folder: config/check_report.py); 2 the
document is invalid (every error named by its field path, as today).

Effective (`--full`): what is in force, not what was written. Governance keys nobody set show
the built-in default (`rate_limit: "5/second"`, not `null`), a server's unset keys show what
it inherits from the gateway, and `priority`/`namespace` show the values routing uses.

Secrets are masked unless `--show-secrets`, and only secrets: by key and by shape
(config/masking.py), plus every value a `${VAR}` supplied.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console

from mcp_nexus.cli.table import Column, Listing, print_json, print_line, print_listing, print_note
from mcp_nexus.config.check_report import CheckReport, build_report
from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import load_config
from mcp_nexus.config.masking import Masker
from mcp_nexus.config.policy_defaults import POLICY_DEFAULTS
from mcp_nexus.config.schema import NexusConfig
from mcp_nexus.paths import data_dir

EXIT_OK, EXIT_PROBLEMS, EXIT_INVALID = 0, 1, 2

# found: "yes: <path>" or "NO" for a stdio command; "built-in", "disabled" or "-" otherwise
_SERVER_TABLE = tuple(
    Column(header, key=header == "server")
    for header in ("server", "transport", "command / url / module", "found", "overrides")
)


def effective_config(config: NexusConfig) -> dict[str, Any]:
    """The config as JSON data with the values in force filled in where the file left them out."""
    data: dict[str, Any] = config.model_dump(mode="json")
    gateway = data["gateway"]
    for key, default in POLICY_DEFAULTS.items():
        if key not in config.gateway.model_fields_set:
            gateway[key] = default
    if gateway.get("offload_dir") is None:
        gateway["offload_dir"] = str(data_dir() / "offload")
    if gateway.get("index", {}).get("path") is None:
        gateway["index"]["path"] = str(
            data_dir() / "index" / "tool_index.sqlite3"
        )  # stores/index_location.py
    for name, server in config.servers.items():
        shown = data["servers"][name]
        shown["priority"] = server.effective_priority
        shown["namespace"] = server.effective_namespace
        for key in POLICY_DEFAULTS:
            if key not in server.model_fields_set:
                shown[key] = gateway[key]  # inherited (a wide cache_ttl only caches read-only tools)
        if "timeout" not in server.model_fields_set and "call" in server.timeouts.model_fields_set:
            shown["timeout"] = server.timeouts.call  # foreign formats' one number is the call timeout
    return data


def render(config: NexusConfig, *, show_secrets: bool = False) -> str:
    """The effective document as JSON (`--full`), secrets masked unless `show_secrets`."""
    masker = Masker(config.interpolated_values, reveal=show_secrets)
    return json.dumps(masker.value("", effective_config(config)), indent=2, ensure_ascii=False)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) and value else json.dumps(value, ensure_ascii=False)


def _overrides_cell(values: dict[str, Any]) -> str:
    return ", ".join(f"{key}={_shown(value)}" for key, value in values.items())


def print_report(report: CheckReport, out: Console) -> None:
    """The verdict, each problem, the servers' table, then the non-default settings of each section."""
    print_note(report.verdict(), out, style=None if report.ok else "red")
    for problem in report.problems:
        print_note(f"  - {problem}", out, style="red")
    servers = Listing(_SERVER_TABLE, "servers")
    for row in report.servers:
        found = row.found if row.resolved is None else f"{row.found}: {row.resolved}"
        servers.add(row.name, row.transport, row.target, found, _overrides_cell(row.overrides))
    print_listing(servers, out, section=True)
    if report.settings:
        settings = Listing(
            (Column("setting", key=True), Column("value")), "settings that differ from the defaults"
        )
        for section, values in report.settings.items():
            for key, value in values.items():
                settings.add(f"{section}.{key}", _shown(value))
        print_listing(settings, out, section=True)


def check_command(
    path: Path, *, show_secrets: bool = False, full: bool = False, as_json: bool = False
) -> int:
    """Run `nexus config check PATH`: print what it finds; the exit status (see the module docstring)."""
    out = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        config, warnings = load_config(path)
    except ConfigError as exc:
        if as_json:
            print_json(
                {
                    "ok": False,
                    "verdict": f"invalid config {exc.source}",
                    "source": exc.source,
                    "problems": [{"path": p.path, "message": p.message} for p in exc.problems],
                }
            )
        err.print(str(exc), style="red", markup=False)
        return EXIT_INVALID
    report = build_report(config, str(path), warnings, config_path=path, show_secrets=show_secrets)
    if as_json:
        data = report.as_json()
        if full:
            data["document"] = json.loads(render(config, show_secrets=show_secrets))
        print_json(data)
    elif full:
        print(render(config, show_secrets=show_secrets))
        print_line(report.verdict(), err, style=None if report.ok else "red")
        for problem in report.problems:
            print_line(f"  - {problem}", err, style="red")
    else:
        print_report(report, out)
    for warning in warnings:
        print_line(f"warning: {warning}", err, style="yellow")
    if show_secrets:
        print_line("secrets are shown in clear (--show-secrets)", err, style="yellow")
    return EXIT_OK if report.ok else EXIT_PROBLEMS
