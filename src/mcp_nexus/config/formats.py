"""Normalisers: each accepted file format becomes the native shape `{"gateway", "servers"}`.

Accepted, unchanged (docs/CONFIG.md):
- native Nexus: `{"gateway": {...}, "servers": {name: {...}}}`
- desktop MCP clients: `{"mcpServers": {name: {command, args, env, cwd, type|transport, url, headers, disabled}}}`
- seed gateway: `{"servers": [{name, type: embedded|external, transport, enabled, autoStart, priority, ...}]}`
- controller: `{"mcp_servers": [{id, url, timeout, headers}], "cache_ttl_seconds", "force_refresh_on_init"}`
- bridge: `{"services": {name: {type, command, args, env, url, headers, namespace, ...}}}`

Each normaliser also returns, per server, the path of its entry in the original file so
validation errors can point at what the user wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp_nexus.config.errors import ConfigProblem

_TRANSPORT_ALIASES = {
    "stdio": "stdio",
    "http": "http",
    "streamablehttp": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "sse": "sse",
    "embedded": "embedded",
}

# camelCase spellings users already have, mapped to the model's field names.
_KEY_ALIASES = {
    "autoStart": "auto_start",
    "autoRestart": "auto_restart",
    "autoReconnect": "auto_reconnect",
    "apiKey": "api_key",
    "toolConfig": "tool_config",
    "cacheTtl": "cache_ttl",
    "rateLimit": "rate_limit",
    "offloadThreshold": "offload_threshold",
    "maxResultBytes": "max_result_bytes",
}

# Top-level sections of Nexus's own that may sit beside any foreign format's servers.
_NEXUS_SECTIONS = ("gateway", "xiaozhi")

# Keys other clients put in their entries that mean nothing to a gateway: accepted and ignored.
_IGNORED_FOREIGN_KEYS = {"description", "alwaysAllow", "autoApprove", "icon", "note", "notes", "comment"}


@dataclass
class Normalised:
    data: dict[str, Any]
    format: str
    origin: dict[str, str] = field(default_factory=dict)  # server name -> path in the original file
    warnings: list[ConfigProblem] = field(default_factory=list)


def _transport_of(entry: dict[str, Any], path: str, problems: list[ConfigProblem]) -> str | None:
    raw = entry.pop("transport", None) or entry.pop("type", None)
    if raw is None:
        if "module" in entry:
            return "embedded"
        if "command" in entry:
            return "stdio"
        if "url" in entry:
            url = str(entry["url"]).rstrip("/")
            return "sse" if url.endswith("/sse") else "http"
        problems.append(ConfigProblem(path, "cannot tell the transport: give 'command', 'url' or 'type'"))
        return None
    transport = _TRANSPORT_ALIASES.get(str(raw).lower())
    if transport is None:
        problems.append(
            ConfigProblem(
                f"{path}.type", f"expected one of stdio, sse, http, streamableHttp, embedded; got {raw!r}"
            )
        )
    return transport


def _server_entry(
    name: str,
    raw: Any,
    path: str,
    problems: list[ConfigProblem],
    warnings: list[ConfigProblem],
    *,
    strict: bool,
) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        problems.append(
            ConfigProblem(path, f"expected an object describing the server, got {type(raw).__name__}")
        )
        return None
    entry: dict[str, Any] = {_KEY_ALIASES.get(str(k), str(k)): v for k, v in raw.items()}
    if not strict:
        for key in list(entry):
            if key in _IGNORED_FOREIGN_KEYS:
                entry.pop(key)
        if "timeout" in entry and isinstance(entry["timeout"], int | float) and "timeouts" not in entry:
            # Foreign formats give one number: the per-call timeout in seconds.
            entry.setdefault("timeouts", {})["call"] = entry.pop("timeout")
        if "disabledTools" in entry:
            entry.setdefault("tools", {}).setdefault("deny", []).extend(entry.pop("disabledTools"))
    if "disabled" in entry:
        entry["enabled"] = not bool(entry.pop("disabled"))
    transport = _transport_of(entry, path, problems)
    if transport is None:
        return None
    entry["transport"] = transport
    entry["name"] = name
    if isinstance(entry.get("tools"), list):
        entry["tools"] = {"allow": entry["tools"]}
    return entry


def _add_servers(
    out: Normalised,
    entries: list[tuple[str, Any, str]],
    problems: list[ConfigProblem],
    *,
    strict: bool,
) -> None:
    """Normalise `(name, raw entry, path in the file)` triples into `out.data["servers"]`."""
    servers: dict[str, Any] = {}
    for name, raw, path in entries:
        if name in servers:
            problems.append(ConfigProblem(path, f"duplicate server name {name!r}"))
            continue
        entry = _server_entry(name, raw, path, problems, out.warnings, strict=strict)
        if entry is not None:
            servers[name] = entry
            out.origin[name] = path
    out.data["servers"] = servers


def _mapping(
    doc: dict[str, Any], key: str, problems: list[ConfigProblem], what: str
) -> list[tuple[str, Any, str]]:
    """The `{name: entry}` object under `key` as triples; anything else is a problem."""
    raw = doc.get(key) or {}
    if not isinstance(raw, dict):
        problems.append(ConfigProblem(key, f"expected an object mapping {what} names to entries"))
        return []
    return [(str(name), entry, f"{key}.{name}") for name, entry in raw.items()]


def _listed(
    doc: dict[str, Any], key: str, id_key: str, problems: list[ConfigProblem], shape: str
) -> list[tuple[str, Any, str]]:
    """The list under `key`, each entry named by its `id_key` (removed from the entry)."""
    raw_list = doc[key]
    if not isinstance(raw_list, list):
        problems.append(ConfigProblem(key, f"expected a list of {shape}"))
        return []
    entries = []
    for index, raw in enumerate(raw_list):
        path = f"{key}[{index}]"
        if not isinstance(raw, dict) or not isinstance(raw.get(id_key), str) or not raw[id_key]:
            problems.append(
                ConfigProblem(f"{path}.{id_key}", f"each server needs a non-empty string '{id_key}'")
            )
            continue
        entry = dict(raw)
        entries.append((entry.pop(id_key), entry, path))
    return entries


def _native(doc: dict[str, Any], problems: list[ConfigProblem]) -> Normalised:
    out = Normalised(data={k: v for k, v in doc.items() if k != "servers"}, format="nexus")
    _add_servers(out, _mapping(doc, "servers", problems, "server"), problems, strict=True)
    return out


def _desktop(doc: dict[str, Any], problems: list[ConfigProblem]) -> Normalised:
    out = Normalised(data={key: doc[key] for key in _NEXUS_SECTIONS if key in doc}, format="mcpServers")
    _add_servers(out, _mapping(doc, "mcpServers", problems, "server"), problems, strict=False)
    for key in doc:
        if key != "mcpServers" and key not in _NEXUS_SECTIONS:
            out.warnings.append(ConfigProblem(key, "not a gateway setting; ignored"))
    return out


def _seed(doc: dict[str, Any], problems: list[ConfigProblem]) -> Normalised:
    out = Normalised(data={k: v for k, v in doc.items() if k != "servers"}, format="seed")
    entries = []
    for name, raw, path in _listed(doc, "servers", "name", problems, "{name, type, ...}"):
        kind = raw.pop("type", None)
        if kind == "embedded":
            raw["transport"] = "embedded"
        elif kind not in (None, "external"):
            problems.append(ConfigProblem(f"{path}.type", f"expected 'embedded' or 'external', got {kind!r}"))
            continue
        entries.append((name, raw, path))
    _add_servers(out, entries, problems, strict=False)
    return out


def _controller(doc: dict[str, Any], problems: list[ConfigProblem]) -> Normalised:
    gateway = dict(doc.get("gateway") or {})
    if "cache_ttl_seconds" in doc:
        gateway["cache_ttl"] = doc["cache_ttl_seconds"]
    if "force_refresh_on_init" in doc:
        gateway["force_refresh_on_init"] = doc["force_refresh_on_init"]
    out = Normalised(data={"gateway": gateway}, format="controller")
    if "xiaozhi" in doc:
        out.data["xiaozhi"] = doc["xiaozhi"]
    entries = _listed(doc, "mcp_servers", "id", problems, "{id, url, timeout, headers}")
    _add_servers(out, entries, problems, strict=False)
    return out


def _bridge(doc: dict[str, Any], problems: list[ConfigProblem]) -> Normalised:
    out = Normalised(data={k: v for k, v in doc.items() if k != "services"}, format="bridge")
    _add_servers(out, _mapping(doc, "services", problems, "service"), problems, strict=False)
    return out


def normalise(doc: Any, problems: list[ConfigProblem]) -> Normalised:
    """Detect the format of a parsed document and normalise it."""
    if not isinstance(doc, dict):
        problems.append(
            ConfigProblem("", f"expected a JSON/YAML object at the top level, got {type(doc).__name__}")
        )
        return Normalised(data={}, format="unknown")
    if "mcpServers" in doc:
        return _desktop(doc, problems)
    if "mcp_servers" in doc:
        return _controller(doc, problems)
    if "services" in doc:
        return _bridge(doc, problems)
    if isinstance(doc.get("servers"), list):
        return _seed(doc, problems)
    return _native(doc, problems)
