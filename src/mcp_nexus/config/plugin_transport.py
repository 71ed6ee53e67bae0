"""A server entry whose transport a plugin registers: its name, its own fields and their check.

Read only when an entry names a transport that is not built in, so validating an ordinary
config never reads the installed plugins.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from mcp_nexus.plugins.builtin import BUILTIN_TRANSPORTS, TRANSPORTS_GROUP
from mcp_nexus.plugins.registry import registry
from mcp_nexus.plugins.specs import TransportSpec


class ServerConfig(Protocol):
    """What is read of a server entry (config/schema.py's ServerConfig, which calls this module:
    named by its shape so the two do not import each other)."""

    transport: str
    options: dict[str, Any]

    @property
    def model_fields_set(self) -> set[str]: ...


def _plugin_names() -> list[str]:
    return sorted(name for name in registry().transports() if name not in BUILTIN_TRANSPORTS)


def expected_transports() -> str:
    """'stdio', 'http', 'sse', 'embedded' and the installed plugins' transports, for messages."""
    return ", ".join(repr(name) for name in [*BUILTIN_TRANSPORTS, *_plugin_names()])


def expected_plugin_transports() -> str:
    """The installed plugins' transports, quoted ('' when none is installed)."""
    return ", ".join(repr(name) for name in _plugin_names())


def broken_transport(name: str) -> str | None:
    """Why no transport `name` is loaded when a plugin declares it but failed (None: none declares it)."""
    for record in registry().errors():
        if record.group == TRANSPORTS_GROUP and record.name == name:
            where = record.distribution or "an unknown distribution"
            return f"the transport {name!r} comes from a plugin that did not load ({where}): {record.error}"
    return None


def check_transport_name(name: str) -> str:
    if registry().transport(name) is None:
        raise ValueError(broken_transport(name) or f"expected one of {expected_transports()}, got {name!r}")
    return name


def plugin_transport(given: str) -> str | None:
    """`given` when an installed plugin registers that transport (names are exact, case and all)."""
    spec = registry().transport(given)
    return spec.name if spec is not None and given not in BUILTIN_TRANSPORTS else None


def _spec(name: str) -> TransportSpec:
    spec = registry().transport(name)
    if spec is None:  # the field validator said so already; kept for direct callers
        raise ValueError(f"expected one of {expected_transports()}, got {name!r}")
    return spec


def gather_transport_keys(data: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """Move the entry's keys that the plugin's config model declares (and Nexus does not) to `options`."""
    spec = registry().transport(str(data.get("transport")))
    if spec is None or spec.config_model is None:
        return data
    own = [key for key in data if key not in known and key in spec.config_model.model_fields]
    if not own:
        return data
    data = dict(data)
    options = dict(data.get("options") or {})
    for key in own:
        options[key] = data.pop(key)
    data["options"] = options
    return data


def _model_input(config: ServerConfig, model: type[BaseModel]) -> dict[str, Any]:
    entry_fields: dict[str, Any] = getattr(type(config), "model_fields", {})
    given = {
        name: getattr(config, name)
        for name in model.model_fields
        if name in entry_fields and name in config.model_fields_set
    }
    return {**given, **config.options}


def transport_settings(config: ServerConfig) -> BaseModel | None:
    """The plugin's config model, filled from the server entry (None when the plugin has none).

    A bad value raises ValueError naming the transport, where it comes from and each field.
    """
    spec = _spec(config.transport)
    model = spec.config_model
    if model is None:
        return None
    try:
        return model.model_validate(_model_input(config, model))
    except ValidationError as exc:
        origin = _origin(config.transport)
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(entry)'!r}: {_message(err)}" for err in exc.errors()
        )
        raise ValueError(f"the {config.transport!r} transport{origin} rejects {problems}") from None


def _message(err: Any) -> str:
    if err["type"] == "missing":
        return "required"
    if err["type"] == "extra_forbidden":
        return "unknown field"
    return str(err["msg"]).removeprefix("Value error, ")


def _origin(name: str) -> str:
    record = registry().record(TRANSPORTS_GROUP, name)
    return f" (from {record.distribution})" if record is not None and record.distribution else ""


def transport_priority(name: str) -> int:
    spec = registry().transport(name)
    return spec.priority if spec is not None else 50


def url_transport(url: str) -> str | None:
    """The plugin transport whose `url_schemes` has this URL's scheme (`ws://...` -> 'websocket')."""
    scheme = url.strip().split(":", 1)[0].lower()
    if not scheme or scheme in ("http", "https"):
        return None
    for spec in registry().transports().values():
        if spec.name not in BUILTIN_TRANSPORTS and scheme in spec.url_schemes:
            return spec.name
    return None


def check_server_name(name: str) -> str:
    """`module: <name>` of an embedded server: a name some plugin registers in `mcp_nexus.servers`."""
    servers = registry().servers()
    if name not in servers:
        known = ", ".join(repr(n) for n in sorted(servers)) or "none"
        raise ValueError(
            f"'module' must be 'package.module:attribute' or a registered server's name ({known}), got {name!r}"
        )
    return name


def server_target(module: str) -> str:
    """`package.module:attribute` for an embedded server's `module` (a registered name resolved)."""
    return module if ":" in module else registry().servers().get(module, module)
