"""Normalisers: each accepted file format becomes the native shape `{"gateway", "servers"}`.

Accepted, unchanged (docs/CONFIG.md):
- native Nexus: `{"gateway": {...}, "servers": {name: {...}}}`
- desktop MCP clients: `{"mcpServers": {name: {command, args, env, cwd, type|transport, url, headers, disabled}}}`
- Lumi (unified manager): the same `mcpServers` object where an entry has `type: embedded|external`
  (`name` a display name, `command` may hold an HTTP server's URL, `apiKey`, `autoStart`, `priority`,
  `tools`); its tools keep bare names
- seed gateway: `{"servers": [{name, type: embedded|external, transport, enabled, autoStart, priority, ...}]}`
  (the Lumi vocabulary as a list; bare names too)
- controller: `{"mcp_servers": [{id, url, timeout, headers}], "cache_ttl_seconds", "force_refresh_on_init"}`
  (the last two are the tool index's settings: `gateway.index`)
- bridge: `{"services": {name: {type, command, args, env, url, headers, namespace, ...}}}`

Each normaliser also returns, per server, the path of its entry in the original file so
validation errors can point at what the user wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp_nexus.config.builtins import device_module
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

# `type` in the Lumi (unified manager) dialect; any other value is a desktop transport name.
LUMI_KINDS = ("embedded", "external")
TYPE_EXPECTED = "expected 'embedded' or 'external' (Lumi) or 'stdio'|'http'|'sse' (desktop)"
TRANSPORT_EXPECTED = "expected 'stdio', 'streamableHttp' (also 'http') or 'sse'"

# The controller format's top-level keys for its tool index (docs/CONFIG.md).
INDEX_KEYS = ("cache_ttl_seconds", "force_refresh_on_init")

# Top-level sections of Nexus's own that may sit beside any foreign format's servers.
_NEXUS_SECTIONS = ("gateway", "xiaozhi", "llm", "control")

# Keys other clients put in their entries that mean nothing to a gateway: accepted and ignored.
_IGNORED_FOREIGN_KEYS = {"description", "alwaysAllow", "autoApprove", "icon", "note", "notes", "comment"}


@dataclass
class Normalised:
    data: dict[str, Any]
    format: str
    origin: dict[str, str] = field(default_factory=dict)  # server name -> path in the original file
    warnings: list[ConfigProblem] = field(default_factory=list)


def _is_url(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower().startswith(("http://", "https://"))


def _inferred_transport(entry: dict[str, Any]) -> str | None:
    if "module" in entry:
        return "embedded"
    if _is_url(entry.get("command")):
        url = str(entry["command"]).rstrip("/")
        return "sse" if url.endswith("/sse") else "http"
    if "command" in entry:
        return "stdio"
    if "url" in entry:
        url = str(entry["url"]).rstrip("/")
        return "sse" if url.endswith("/sse") else "http"
    return None


def _transport_of(entry: dict[str, Any], path: str, problems: list[ConfigProblem]) -> str | None:
    """The transport an entry asks for, from `type` (either dialect), `transport`, or its other keys.

    Also moves a URL written in `command` (the Lumi dialect does that for HTTP servers) to `url`.
    """
    kind = entry.pop("type", None)
    given = entry.pop("transport", None)
    kind_name = str(kind).lower() if kind is not None else None
    if kind is not None and kind_name not in LUMI_KINDS and kind_name not in _TRANSPORT_ALIASES:
        problems.append(ConfigProblem(f"{path}.type", f"{TYPE_EXPECTED}, got {kind!r}"))
        return None
    transport: str | None = None
    if given is not None:
        transport = _TRANSPORT_ALIASES.get(str(given).lower())
        if transport is None:
            problems.append(ConfigProblem(f"{path}.transport", f"{TRANSPORT_EXPECTED}, got {given!r}"))
            return None
    if kind_name == "embedded":
        if transport not in (None, "embedded"):
            problems.append(
                ConfigProblem(
                    f"{path}.transport",
                    f"an embedded server runs inside Nexus and has no transport, got {given!r}",
                )
            )
            return None
        return "embedded"
    if kind_name is not None and kind_name != "external":
        from_type = _TRANSPORT_ALIASES[kind_name]
        if transport is not None and transport != from_type:
            problems.append(
                ConfigProblem(path, f"'type' says {kind!r} but 'transport' says {given!r}: give one")
            )
            return None
        transport = from_type
    if transport is None:
        transport = _inferred_transport(entry)
    if transport is None:
        problems.append(ConfigProblem(path, "cannot tell the transport: give 'command', 'url' or 'type'"))
        return None
    if kind_name == "external" and transport == "embedded":
        problems.append(
            ConfigProblem(f"{path}.transport", "'type': 'external' needs 'stdio', 'streamableHttp' or 'sse'")
        )
        return None
    if _is_url(entry.get("command")):
        if transport == "stdio":
            problems.append(
                ConfigProblem(
                    f"{path}.command",
                    "holds a URL but the transport is 'stdio': set 'transport' to 'streamableHttp' or 'sse'",
                )
            )
            return None
        if transport in ("http", "sse"):
            if "url" in entry:
                problems.append(
                    ConfigProblem(f"{path}.command", "a URL in both 'command' and 'url': give it once")
                )
                return None
            entry["url"] = str(entry.pop("command")).strip()
    return transport


def is_lumi_entry(raw: Any) -> bool:
    """An entry in the Lumi (unified manager) dialect: `type` is 'embedded' or 'external'."""
    return isinstance(raw, dict) and str(raw.get("type", "")).lower() in LUMI_KINDS


def _server_entry(
    name: str,
    raw: Any,
    path: str,
    problems: list[ConfigProblem],
    *,
    strict: bool,
    bare_names: bool = False,
) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        problems.append(
            ConfigProblem(path, f"expected an object describing the server, got {type(raw).__name__}")
        )
        return None
    embedded_by_type = str(raw.get("type", "")).lower() == "embedded"
    entry: dict[str, Any] = {_KEY_ALIASES.get(str(k), str(k)): v for k, v in raw.items()}
    if not strict:
        for key in list(entry):
            if key in _IGNORED_FOREIGN_KEYS:
                entry.pop(key)
        if "timeout" in entry and isinstance(entry["timeout"], int | float) and "timeouts" not in entry:
            # Foreign formats give one number: the per-call timeout in seconds.
            entry.setdefault("timeouts", {})["call"] = entry.pop("timeout")
        if isinstance(entry.get("tools"), list):
            entry["tools"] = {"allow": entry["tools"]}
        if "disabledTools" in entry and isinstance(entry.get("tools", {}), dict):
            entry.setdefault("tools", {}).setdefault("deny", []).extend(entry.pop("disabledTools"))
        if "name" in entry:
            # `name` inside an entry is what a user interface shows ("天气服务"); the key stays the id.
            display = entry.pop("name")
            if display != name and "display_name" not in entry:
                entry["display_name"] = display
    if "disabled" in entry:
        entry["enabled"] = not bool(entry.pop("disabled"))
    transport = _transport_of(entry, path, problems)
    if transport is None:
        return None
    entry["transport"] = transport
    entry["name"] = name
    if not strict and transport == "embedded" and embedded_by_type and "module" not in entry:
        # The Lumi dialect's embedded server is the built-in device control server.
        entry["module"] = device_module()
    if bare_names:
        entry.setdefault("namespace", "")
    if isinstance(entry.get("tools"), list):
        entry["tools"] = {"allow": entry["tools"]}
    return entry


def _add_servers(
    out: Normalised,
    entries: list[tuple[str, Any, str]],
    problems: list[ConfigProblem],
    *,
    strict: bool,
    bare_names: bool = False,
) -> None:
    """Normalise `(name, raw entry, path in the file)` triples into `out.data["servers"]`."""
    servers: dict[str, Any] = {}
    for name, raw, path in entries:
        if name in servers:
            problems.append(ConfigProblem(path, f"duplicate server name {name!r}"))
            continue
        entry = _server_entry(name, raw, path, problems, strict=strict, bare_names=bare_names)
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
    raw_servers = doc.get("mcpServers")
    lumi = isinstance(raw_servers, dict) and any(is_lumi_entry(e) for e in raw_servers.values())
    out = Normalised(
        data={key: doc[key] for key in _NEXUS_SECTIONS if key in doc}, format="lumi" if lumi else "mcpServers"
    )
    # The Lumi dialect routes by bare tool name and priority: its tools keep their own names.
    entries = _mapping(doc, "mcpServers", problems, "server")
    _add_servers(out, entries, problems, strict=False, bare_names=lumi)
    for key in doc:
        if key != "mcpServers" and key not in _NEXUS_SECTIONS:
            out.warnings.append(ConfigProblem(key, "not a gateway setting; ignored"))
    return out


def _seed(doc: dict[str, Any], problems: list[ConfigProblem]) -> Normalised:
    """The Lumi vocabulary (`type: embedded|external`, priorities) written as a list: bare names too."""
    out = Normalised(data={k: v for k, v in doc.items() if k != "servers"}, format="seed")
    entries = _listed(doc, "servers", "name", problems, "{name, type, ...}")
    _add_servers(out, entries, problems, strict=False, bare_names=True)
    return out


def _controller(doc: dict[str, Any], problems: list[ConfigProblem]) -> Normalised:
    gateway = dict(doc.get("gateway") or {})
    # These two keys are the tool index's settings (how long a saved tool list stays valid),
    # never a result-cache TTL: a write tool must not answer from a cache because of them.
    index = {key: doc[key] for key in INDEX_KEYS if key in doc}
    if index:
        gateway["index"] = {**(gateway.get("index") or {}), **index}
    out = Normalised(data={"gateway": gateway}, format="controller")
    for section in _NEXUS_SECTIONS[1:]:
        if section in doc:
            out.data[section] = doc[section]
    entries = _listed(doc, "mcp_servers", "id", problems, "{id, url, timeout, headers}")
    _add_servers(out, entries, problems, strict=False)
    for key in doc:
        if key not in ("mcp_servers", *_NEXUS_SECTIONS, *INDEX_KEYS):
            out.warnings.append(ConfigProblem(key, "not a gateway setting; ignored"))
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
