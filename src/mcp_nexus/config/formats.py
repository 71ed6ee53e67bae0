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
- VS Code: `{"inputs": [...], "servers": {name: {type: stdio|http|sse, command, args, env, envFile, url,
  headers}}}` (told from the native format by `inputs`, or an entry with `type` or `envFile`);
  `${input:ID}` is resolved before normalisation (interpolate.py)

Claude Code's `.mcp.json` and Cursor's `mcp.json` are the desktop format. Every format also
carries Nexus's own top-level sections (`NEXUS_SECTIONS`: every section of `NexusConfig`)
beside its servers; any other top-level key is named, with the closest known key.

Each normaliser also returns, per server, the path of its entry in the original file so
validation errors can point at what the user wrote.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, process, utils

from mcp_nexus.config.builtins import device_module
from mcp_nexus.config.envfile import read_env_file
from mcp_nexus.config.errors import ConfigProblem
from mcp_nexus.config.schema import NexusConfig

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
    "envFile": "env_file",
}

# `type` in the Lumi (unified manager) dialect; any other value is a desktop transport name.
LUMI_KINDS = ("embedded", "external")
TYPE_EXPECTED = "expected 'embedded' or 'external' (Lumi) or 'stdio'|'http'|'sse' (desktop)"
TRANSPORT_EXPECTED = "expected 'stdio', 'streamableHttp' (also 'http') or 'sse'"

# The controller format's top-level keys for its tool index (docs/CONFIG.md).
INDEX_KEYS = ("cache_ttl_seconds", "force_refresh_on_init")

# Nexus's own top-level sections, accepted beside every format's servers: every section of the
# model but the servers themselves (each format has its own key for those).
NEXUS_SECTIONS: tuple[str, ...] = tuple(
    name for name in NexusConfig.model_fields if name not in ("servers", "source_format")
)

# Consumed before normalisation, in every format: VS Code's declarations of `${input:ID}`.
_VARIABLE_KEYS = ("inputs",)

# Keys other clients put in their entries that mean nothing to a gateway: accepted and ignored.
# (`gallery` and `version` are VS Code's marks on a server installed from its gallery, `dev` its
# debug/watch settings for a server under development.)
_IGNORED_FOREIGN_KEYS = {
    "description", "alwaysAllow", "autoApprove", "icon", "note", "notes", "comment", "gallery", "version", "dev",
}  # fmt: skip

# An entry key only VS Code's `servers` has (the native format says `transport`).
_VSCODE_ENTRY_KEYS = ("type", "envFile")


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
        if isinstance(entry["url"], str) and not _is_url(url):
            from mcp_nexus.config.plugin_transport import url_transport

            plugin = url_transport(url)  # e.g. ws:// when a plugin registers that scheme
            if plugin is not None:
                return plugin
        return "sse" if url.endswith("/sse") else "http"
    return None


def _alias(given: Any) -> str | None:
    """The transport a `transport`/`type` value names: a built-in's spelling, else a plugin's name."""
    found = _TRANSPORT_ALIASES.get(str(given).lower())
    if found is None and isinstance(given, str) and given:
        from mcp_nexus.config.plugin_transport import plugin_transport

        found = plugin_transport(given)
    return found


def _unknown(template: str, given: Any) -> str:
    """`TRANSPORT_EXPECTED`/`TYPE_EXPECTED` naming the plugins' transports too, or why a plugin's is missing."""
    from mcp_nexus.config.plugin_transport import broken_transport, expected_plugin_transports

    broken = broken_transport(given) if isinstance(given, str) else None
    if broken is not None:
        return broken
    plugins = expected_plugin_transports()
    return f"{template}, got {given!r}" + (f" (installed plugins add {plugins})" if plugins else "")


def _transport_of(entry: dict[str, Any], path: str, problems: list[ConfigProblem]) -> str | None:
    """The transport an entry asks for, from `type` (either dialect), `transport`, or its other keys.

    Also moves a URL written in `command` (the Lumi dialect does that for HTTP servers) to `url`.
    """
    kind = entry.pop("type", None)
    given = entry.pop("transport", None)
    kind_name = str(kind).lower() if kind is not None else None
    from_type: str | None = None
    if kind is not None and kind_name not in LUMI_KINDS:
        from_type = _alias(kind)
        if from_type is None:
            problems.append(ConfigProblem(f"{path}.type", _unknown(TYPE_EXPECTED, kind)))
            return None
    transport: str | None = None
    if given is not None:
        transport = _alias(given)
        if transport is None:
            problems.append(ConfigProblem(f"{path}.transport", _unknown(TRANSPORT_EXPECTED, given)))
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
    if from_type is not None:
        if transport is not None and transport != from_type:
            problems.append(
                ConfigProblem(path, f"'type' says {kind!r} but 'transport' says {given!r}: give one")
            )
            return None
        transport = from_type
    if transport is None:
        transport = _inferred_transport(entry)
    if transport is None:
        problems.append(_no_transport(path, entry))
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


def _no_transport(path: str, entry: dict[str, Any]) -> ConfigProblem:
    """No key says the transport: a misspelt `comand` or `ulr` is likelier than a missing one, so name it.

    difflib rather than closest_key: among four short names a transposition (`ulr`) is still clear.
    """
    for key in entry:
        closest = difflib.get_close_matches(str(key).lower(), ("command", "url", "type", "transport"), 1, 0.6)
        if closest:
            return ConfigProblem(f"{path}.{key}", f"unknown field; did you mean {closest[0]!r}?")
    return ConfigProblem(path, "cannot tell the transport: give 'command', 'url' or 'type'")


def closest_key(key: str, known: tuple[str, ...]) -> str | None:
    """The known key `key` most likely misspells (case aside), if any is close enough."""
    match = process.extractOne(
        key, known, scorer=fuzz.ratio, processor=utils.default_process, score_cutoff=75
    )
    return None if match is None else match[0]


def _sections(
    doc: dict[str, Any], out: Normalised, problems: list[ConfigProblem], *, own: tuple[str, ...], strict: bool
) -> None:
    """Copy Nexus's own sections (the same list for every format) into `out`; name every other key.

    `own` are the format's own top-level keys (handled by its normaliser). Any other key is an
    error in a strict format; in a format other programs read too it is a warning (their files
    carry their own settings, e.g. `globalShortcut`), unless it looks like a misspelt Nexus
    section: then scale-out or the control plane would silently stay off, so it is an error.
    """
    for raw_key, value in doc.items():
        key = str(raw_key)
        if key in own or key in _VARIABLE_KEYS:
            continue
        if key in NEXUS_SECTIONS:
            out.data[key] = value
            continue
        known = tuple(k for k in (*own, *NEXUS_SECTIONS, *_VARIABLE_KEYS) if k != "source_format")
        closest = closest_key(key, known)
        hint = f"; did you mean {closest!r}?" if closest else ""
        if strict or closest in NEXUS_SECTIONS:
            expected = ", ".join(repr(k) for k in known)
            problems.append(ConfigProblem(key, f"unknown top-level key (expected {expected}){hint}"))
        else:
            out.warnings.append(ConfigProblem(key, f"not a gateway setting; ignored{hint}"))


def _native(doc: dict[str, Any], problems: list[ConfigProblem]) -> Normalised:
    out = Normalised(data={}, format="nexus")
    # `source_format` is what `nexus config check` prints: accepted back (and recomputed).
    _sections(doc, out, problems, own=("servers", "source_format"), strict=True)
    _add_servers(out, _mapping(doc, "servers", problems, "server"), problems, strict=True)
    return out


def _vscode(doc: dict[str, Any], problems: list[ConfigProblem]) -> Normalised:
    """VS Code's `mcp.json`: `servers` with `type: stdio|http|sse`; its `inputs` are resolved already."""
    out = Normalised(data={}, format="vscode")
    _sections(doc, out, problems, own=("servers",), strict=True)
    _add_servers(out, _mapping(doc, "servers", problems, "server"), problems, strict=False)
    return out


def _desktop(doc: dict[str, Any], problems: list[ConfigProblem]) -> Normalised:
    raw_servers = doc.get("mcpServers")
    lumi = isinstance(raw_servers, dict) and any(is_lumi_entry(e) for e in raw_servers.values())
    out = Normalised(data={}, format="lumi" if lumi else "mcpServers")
    _sections(doc, out, problems, own=("mcpServers",), strict=False)
    # The Lumi dialect routes by bare tool name and priority: its tools keep their own names.
    entries = _mapping(doc, "mcpServers", problems, "server")
    _add_servers(out, entries, problems, strict=False, bare_names=lumi)
    return out


def _seed(doc: dict[str, Any], problems: list[ConfigProblem]) -> Normalised:
    """The Lumi vocabulary (`type: embedded|external`, priorities) written as a list: bare names too."""
    out = Normalised(data={}, format="seed")
    _sections(doc, out, problems, own=("servers",), strict=True)
    entries = _listed(doc, "servers", "name", problems, "{name, type, ...}")
    _add_servers(out, entries, problems, strict=False, bare_names=True)
    return out


def _controller(doc: dict[str, Any], problems: list[ConfigProblem]) -> Normalised:
    out = Normalised(data={}, format="controller")
    _sections(doc, out, problems, own=("mcp_servers", *INDEX_KEYS), strict=False)
    # These two keys are the tool index's settings (how long a saved tool list stays valid),
    # never a result-cache TTL: a write tool must not answer from a cache because of them.
    index = {key: doc[key] for key in INDEX_KEYS if key in doc}
    gateway = out.data.get("gateway") or {}
    if index and isinstance(gateway, dict):
        out.data["gateway"] = {**gateway, "index": {**(gateway.get("index") or {}), **index}}
    entries = _listed(doc, "mcp_servers", "id", problems, "{id, url, timeout, headers}")
    _add_servers(out, entries, problems, strict=False)
    return out


def _bridge(doc: dict[str, Any], problems: list[ConfigProblem]) -> Normalised:
    out = Normalised(data={}, format="bridge")
    _sections(doc, out, problems, own=("services",), strict=True)
    _add_servers(out, _mapping(doc, "services", problems, "service"), problems, strict=False)
    return out


def _is_vscode(doc: dict[str, Any]) -> bool:
    servers = doc.get("servers")
    if "inputs" in doc:
        return servers is None or isinstance(servers, dict)
    return isinstance(servers, dict) and any(
        isinstance(entry, dict) and any(key in entry for key in _VSCODE_ENTRY_KEYS)
        for entry in servers.values()
    )


def _env_files(out: Normalised, workspace: Path, problems: list[ConfigProblem]) -> None:
    """Merge each entry's `envFile` into its `env` (a variable in `env` wins, as in VS Code)."""
    for name, entry in out.data.get("servers", {}).items():
        if "env_file" not in entry:
            continue
        path = f"{out.origin[name]}.envFile"
        given = entry.pop("env_file")
        if not isinstance(given, str) or not given:
            problems.append(ConfigProblem(path, "expected the path of a KEY=VALUE file"))
            continue
        values = read_env_file(workspace / Path(given).expanduser(), path, problems)
        if values is not None:
            env = entry.get("env") or {}
            entry["env"] = {**values, **env} if isinstance(env, dict) else env


def normalise(doc: Any, problems: list[ConfigProblem], *, workspace: Path | None = None) -> Normalised:
    """Detect the format of a parsed document and normalise it.

    `workspace` is the folder a relative `envFile` is found in (`${workspaceFolder}`).
    """
    if not isinstance(doc, dict):
        problems.append(
            ConfigProblem("", f"expected a JSON/YAML object at the top level, got {type(doc).__name__}")
        )
        return Normalised(data={}, format="unknown")
    if "mcpServers" in doc:
        out = _desktop(doc, problems)
    elif "mcp_servers" in doc:
        out = _controller(doc, problems)
    elif "services" in doc:
        out = _bridge(doc, problems)
    elif isinstance(doc.get("servers"), list):
        out = _seed(doc, problems)
    elif _is_vscode(doc):
        out = _vscode(doc, problems)
    else:
        out = _native(doc, problems)
    _env_files(out, Path.cwd() if workspace is None else workspace, problems)
    return out
