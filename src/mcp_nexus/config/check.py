"""`nexus config check`: the effective config of a file, secrets masked, or every problem in it.

Effective: what is in force, not what was written. Governance keys nobody set show the
built-in default (`rate_limit: "5/second"`, not `null`), a server's unset keys show what it
inherits from the gateway, and `priority`/`namespace` show the values routing uses.

Masked unless `--show-secrets`: every header value, every env value, the userinfo and every
query value of any URL, the values of secret-named arguments (`--api-key X`), any field whose
name says it is a secret, and every value that came from a `${VAR}`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import load_config
from mcp_nexus.config.policy_defaults import POLICY_DEFAULTS
from mcp_nexus.config.schema import NexusConfig
from mcp_nexus.config.secrets import MIN_SECRET_CHARS, is_secret_flag, mask_url_credentials
from mcp_nexus.paths import data_dir

MASK = "***"

# Keys whose values are all masked, whatever they hold.
_MASK_ALL_VALUES = ("headers", "env")
# A field is a secret when its name holds one of these.
_SECRET_NAMES = ("token", "api_key", "apikey", "authorization", "password", "secret", "cookie", "credential")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)


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


def masked_config(data: Any, interpolated: frozenset[str]) -> Any:
    """`data` with every secret replaced by `***` (see the module docstring)."""
    parts = sorted((v for v in interpolated if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True)
    pattern = re.compile("|".join(map(re.escape, parts))) if parts else None

    def scalar(value: Any) -> Any:
        if isinstance(value, bool) or value is None:
            return value
        if str(value) in interpolated:
            return MASK
        if not isinstance(value, str):
            return value
        if pattern is not None:
            value = pattern.sub(MASK, value)
        if _URL.match(value):
            value = mask_url_credentials(value)
        return value

    def arguments(args: list[Any]) -> list[Any]:
        shown: list[Any] = []
        secret_next = False
        for arg in args:
            if secret_next:
                shown.append(MASK)
                secret_next = False
                continue
            if isinstance(arg, str) and arg.startswith("-") and "=" in arg:
                flag, _value = arg.split("=", 1)
                if is_secret_flag(flag):
                    shown.append(f"{flag}={MASK}")
                    continue
            elif isinstance(arg, str) and is_secret_flag(arg):
                secret_next = True
            shown.append(walk(arg, ""))
        return shown

    def walk(value: Any, key: str) -> Any:
        lowered = key.lower()
        if isinstance(value, dict):
            if lowered in _MASK_ALL_VALUES:
                return {k: MASK for k in value}
            return {k: walk(v, str(k)) for k, v in value.items()}
        if isinstance(value, list):
            if lowered == "args":
                return arguments(value)
            return [walk(v, key) for v in value]
        if isinstance(value, str) and value and any(word in lowered for word in _SECRET_NAMES):
            return MASK
        return scalar(value)

    return walk(data, "")


def render(config: NexusConfig, *, show_secrets: bool = False) -> str:
    """What `nexus config check` prints on stdout for a valid config."""
    data = effective_config(config)
    if not show_secrets:
        data = masked_config(data, config.interpolated_values)
    return json.dumps(data, indent=2, ensure_ascii=False)


def check_command(path: Path, *, show_secrets: bool = False) -> int:
    """Run `nexus config check PATH`: print the effective config or the problems; the exit status."""
    err = Console(stderr=True, highlight=False)
    try:
        config, warnings = load_config(path)
    except ConfigError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]")
        return 2
    for warning in warnings:
        err.print(f"[yellow]warning: {escape(str(warning))}[/yellow]")
    print(render(config, show_secrets=show_secrets))
    if show_secrets:
        err.print("[yellow]secrets are shown in clear (--show-secrets)[/yellow]")
    return 0
