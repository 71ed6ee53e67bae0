"""Which `Session` class connects a server, by its transport's name: every transport, built-in or
a plugin's, is found through the plugin registry (pyproject.toml's `mcp_nexus.transports`)."""

from __future__ import annotations

from mcp_nexus.plugins.registry import registry
from mcp_nexus.plugins.specs import TransportKind, TransportSpec
from mcp_nexus.upstream.session import Session


class UnknownTransportError(LookupError):
    """No loaded plugin registers this transport (it was uninstalled, or failed to load)."""


def transport_spec(name: str) -> TransportSpec:
    spec = registry().transport(name)
    if spec is None:
        raise UnknownTransportError(f"no installed plugin registers the transport {name!r}")
    return spec


def session_type(name: str) -> type[Session]:
    cls = transport_spec(name).session_class()
    if not (isinstance(cls, type) and issubclass(cls, Session)):
        raise TypeError(f"the {name!r} transport's session is {cls!r}, not a Session subclass")
    return cls


def transport_kind(name: str) -> TransportKind:
    """'process' (restarted), 'network' (reconnected, bounded by the connect timeout) or 'in_process'."""
    return transport_spec(name).kind
