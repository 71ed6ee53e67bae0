"""Installed plugins, found by entry point (`importlib.metadata`) and loaded once per process.

Each group is read when first asked for (validating a config with built-in transports only
never reads any). A plugin that fails to import or declares the wrong thing is logged once, by
name, kept in `records()` with its error for `nexus plugins`, and left out: the gateway runs
without it. A plugin may not take a built-in's name, and a name taken twice keeps the first.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from pydantic import BaseModel

from mcp_nexus.plugins.builtin import (
    BUILTIN_ENTRY_POINTS,
    DISTRIBUTION,
    GROUPS,
    SERVERS_GROUP,
    STEPS_GROUP,
    TRANSPORTS_GROUP,
)
from mcp_nexus.plugins.specs import LoadedPlugin, StepSpec, TransportSpec, import_target

logger = logging.getLogger(__name__)

EntryPointSource = Callable[[str], Iterable[EntryPoint]]


def installed_entry_points(group: str) -> Iterable[EntryPoint]:
    return entry_points(group=group)


def _origin(ep: EntryPoint) -> tuple[str | None, str | None]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None, None
    return dist.metadata["Name"], dist.version


def _check_transport(name: str, obj: Any) -> dict[str, Any]:
    if not isinstance(obj, TransportSpec):
        raise TypeError(f"expected a mcp_nexus.plugins.TransportSpec, got {type(obj).__name__}")
    if obj.name != name:
        raise ValueError(f"its TransportSpec is named {obj.name!r}, its entry point {name!r}")
    if obj.config_model is not None and not (
        isinstance(obj.config_model, type) and issubclass(obj.config_model, BaseModel)
    ):
        raise TypeError("'config_model' must be a pydantic BaseModel subclass")
    return {"kind": obj.kind, "fields": sorted(obj.config_model.model_fields) if obj.config_model else []}


def _check_step(name: str, obj: Any) -> dict[str, Any]:
    if not isinstance(obj, StepSpec):
        raise TypeError(f"expected a mcp_nexus.plugins.StepSpec, got {type(obj).__name__}")
    if obj.name != name:
        raise ValueError(f"its StepSpec is named {obj.name!r}, its entry point {name!r}")
    if obj.before and obj.after:
        raise ValueError("give 'before' or 'after', not both")
    model = obj.config_model
    if model is not None:
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise TypeError("'config_model' must be a pydantic BaseModel subclass")
        required = [field for field, info in model.model_fields.items() if info.is_required()]
        if required:
            raise ValueError(f"every field of its config block needs a default: {required}")
    place = f"before {obj.before}" if obj.before else f"after {obj.after}" if obj.after else "innermost"
    return {"chains": list(obj.chains), "place": place if obj.order is None else f"built-in #{obj.order}"}


def _check_server(name: str, obj: Any) -> dict[str, Any]:
    if not callable(obj) and type(obj).__name__ not in ("Server", "MCPServer"):
        raise TypeError(f"expected an MCP server object or a factory returning one, got {type(obj).__name__}")
    return {}


_CHECKS: dict[str, Callable[[str, Any], dict[str, Any]]] = {
    TRANSPORTS_GROUP: _check_transport,
    STEPS_GROUP: _check_step,
    SERVERS_GROUP: _check_server,
}


class Registry:
    """The plugins of the three groups, each group read and loaded on first use."""

    def __init__(self, source: EntryPointSource = installed_entry_points) -> None:
        self._source = source
        self._lock = threading.Lock()
        self._loaded: dict[str, dict[str, Any]] = {}  # group -> name -> the loaded object
        self._records: dict[str, list[LoadedPlugin]] = {}
        self._imported: set[str] = set()  # groups whose entry points were imported (not only read)
        self._warned_stale = False

    # -- what the gateway asks --------------------------------------------------------------

    def transports(self) -> dict[str, TransportSpec]:
        return self._group(TRANSPORTS_GROUP)

    def transport(self, name: str) -> TransportSpec | None:
        return self.transports().get(name)

    def steps(self) -> dict[str, StepSpec]:
        return self._group(STEPS_GROUP)

    def servers(self) -> dict[str, str]:
        """Embedded servers by name: their `package.module:attribute` (imported when started)."""
        self._group(SERVERS_GROUP, load=False)
        return {record.name: record.value for record in self._records[SERVERS_GROUP] if record.error is None}

    def records(self, *, import_servers: bool = True) -> list[LoadedPlugin]:
        """Every entry point of every group, loaded (servers imported too, unless told not to)."""
        for group in GROUPS:
            self._group(group, load=group != SERVERS_GROUP or import_servers)
        return [record for group in GROUPS for record in self._records[group]]

    def record(self, group: str, name: str) -> LoadedPlugin | None:
        """Where the loaded plugin `name` of `group` came from (None: no such plugin loaded)."""
        self._group(group, load=group != SERVERS_GROUP)
        return next((r for r in self._records[group] if r.name == name and r.error is None), None)

    def errors(self) -> list[LoadedPlugin]:
        return [record for group in GROUPS for record in self._records.get(group, []) if record.error]

    # -- loading ------------------------------------------------------------------------------

    def _group(self, group: str, *, load: bool = True) -> dict[str, Any]:
        with self._lock:
            if group not in self._loaded or (load and group not in self._imported):
                self._read(group, load=load)
            return self._loaded[group]

    def _read(self, group: str, *, load: bool) -> None:
        loaded: dict[str, Any] = {}
        records: list[LoadedPlugin] = []
        by_name: dict[str, str] = {}  # name -> the distribution that took it
        for ep, from_table in self._entry_points(group):
            dist, version = _origin(ep)
            if from_table:
                dist = DISTRIBUTION
            where = dist or "an unknown distribution"
            error: str | None = None
            details: dict[str, Any] = {}
            own = dist == DISTRIBUTION
            if not own and ep.name in BUILTIN_ENTRY_POINTS[group]:
                error = f"the name {ep.name!r} is a built-in's"
            elif ep.name in by_name:
                error = f"the name {ep.name!r} is taken by {by_name[ep.name]}"
            elif load:
                try:
                    obj = import_target(ep.value) if from_table else ep.load()
                    details = _CHECKS[group](ep.name, obj)
                    loaded[ep.name] = obj
                except Exception as exc:  # a plugin's import may fail in any way: report it, go on
                    error = f"{type(exc).__name__}: {exc}"
            else:
                loaded[ep.name] = ep.value
            if error is not None:
                logger.warning("plugin %r (%s, from %s) not loaded: %s", ep.name, group, where, error)
            else:
                by_name[ep.name] = where
            records.append(LoadedPlugin(group, ep.name, ep.value, dist, version, error, own, details))
        self._loaded[group] = loaded
        self._records[group] = records
        if load:
            self._imported.add(group)

    def _entry_points(self, group: str) -> list[tuple[EntryPoint, bool]]:
        """Nexus's own first (they win a name), then the others by distribution and name."""
        found = list(self._source(group))
        own = [ep for ep in found if _origin(ep)[0] == DISTRIBUTION]
        others = sorted(
            (ep for ep in found if _origin(ep)[0] != DISTRIBUTION),
            key=lambda ep: (str(_origin(ep)[0]), ep.name),
        )
        declared = {ep.name for ep in own}
        missing = [
            EntryPoint(name, value, group)
            for name, value in BUILTIN_ENTRY_POINTS[group].items()
            if name not in declared
        ]
        if missing and not self._warned_stale:
            self._warned_stale = True
            logger.warning(
                "the installed %s metadata lacks its own entry points (%s): using the built-in table; "
                "reinstall it (pip install -e .) to refresh",
                DISTRIBUTION,
                ", ".join(ep.name for ep in missing),
            )
        return [(ep, False) for ep in own] + [(ep, True) for ep in missing] + [(ep, False) for ep in others]


_registry: Registry | None = None
_registry_lock = threading.Lock()


def registry() -> Registry:
    """The process's registry (entry points are read once: installing a plugin needs a restart)."""
    global _registry
    with _registry_lock:
        if _registry is None:
            _registry = Registry()
        return _registry


def use_registry(new: Registry | None) -> Registry | None:
    """Replace the process's registry (tests); returns the old one. None: read entry points anew."""
    global _registry
    with _registry_lock:
        old, _registry = _registry, new
        return old
