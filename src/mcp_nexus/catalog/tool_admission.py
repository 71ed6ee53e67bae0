"""Which of a server's tools may be exposed: valid names, in the server's own territory.

An upstream chooses its tool names; the config chooses where they land. A name is refused
(not listed, not routed, not a fallback candidate, not in the tool index) when:

- it is not a usable name at all (`tool_names.name_problem`: empty, over 128 characters,
  control/format/whitespace characters), whatever the config says;
- it lands in another server's namespace (`good.fast` from a bare-named server, while
  `good` is configured), or in the gateway's own `nexus.` namespace: the longest namespace
  a name starts with owns it. Only `shadows: ["good.fast"]` on the offering server allows it;
- it is a name a built-in server offers (`device`'s `get_system_info`) or one of the
  gateway's own tools (`python_sandbox`, `find_tools`, `call_tool`, `nexus.*`), offered by
  another server. The server's `tools` allow-list naming the tool exactly (the Lumi
  design's external servers list their tools by name) or `shadows` allows it; it then
  takes its place among the candidates by priority, as configured.

Two ordinary servers sharing a bare name (`primary` and `backup` both offering `lookup`)
are a configured fallback and stay allowed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache

import mcp_types as types

from mcp_nexus.catalog.names import exposed_name, is_allowed
from mcp_nexus.catalog.tool_names import name_problem
from mcp_nexus.config.builtins import builtin_servers
from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.upstream.upstream import Upstream

GATEWAY_PREFIX = "nexus."
"""The control plane's tools are `nexus.<tool>` (always with a dot): no upstream name may land there."""
GATEWAY_OWNER = "the gateway"

GATEWAY_TOOL_NAMES = frozenset(
    {
        "python_sandbox",
        "find_tools",
        "call_tool",
        "nexus.run_goal",
        "nexus.task_status",
        "nexus.cancel_task",
        "nexus.list_tasks",
    }
)
"""The gateway's own tools, served or not (tests/catalog checks the list against their modules)."""

_GLOB = frozenset("*?[")


@cache
def builtin_modules() -> frozenset[str]:
    """`package.module:attribute` of every server that ships with Nexus (builtin.json)."""
    return frozenset(str(entry["module"]) for entry in builtin_servers().values() if "module" in entry)


def is_builtin(config: ServerConfig) -> bool:
    """A server running Nexus's own code (device, cortex), under whatever key the config gives it."""
    return config.transport == "embedded" and config.module in builtin_modules()


def listed_by_name(config: ServerConfig, tool_name: str) -> bool:
    """The server's `tools` allow-list names this tool exactly (a pattern such as `get_*` does not count)."""
    allow = config.tools.allow or ()
    return any(entry == tool_name and not (_GLOB & set(entry)) for entry in allow)


@dataclass(frozen=True, slots=True)
class Refusal:
    server: str
    tool_name: str  # the server's own name, as it sent it (show it through tool_names.printable)
    reason: str


@dataclass(slots=True)
class Admitted:
    """One server's tools split: what may be exposed (exposed name, tool) and what is refused."""

    tools: list[tuple[str, types.Tool]] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


class ToolAdmission:
    """The rules above for one moment of the config: every configured server's namespace and built-in names."""

    def __init__(
        self, upstreams: Iterable[Upstream], separator: str, local_names: Iterable[str] = ()
    ) -> None:
        self.separator = separator
        every = list(upstreams)
        self.namespaces: dict[str, str] = {}  # "namespace<sep>" -> the server owning it
        for upstream in every:
            namespace = upstream.config.effective_namespace
            if namespace:
                self.namespaces.setdefault(namespace + separator, upstream.name)
        self.gateway_names = GATEWAY_TOOL_NAMES | frozenset(local_names)
        # What built-in servers offer (or offered when they last ran): exposed name -> server.
        self.builtin_names: dict[str, str] = {}
        for upstream in every:
            config = upstream.config
            if not is_builtin(config):
                continue
            for tool in upstream.tools:
                if name_problem(tool.name) is None and is_allowed(tool.name, config.tools):
                    name = exposed_name(config.effective_namespace, tool.name, separator)
                    self.builtin_names.setdefault(name, upstream.name)

    def _namespace_owner(self, exposed: str, own_prefix: str) -> tuple[str, str] | None:
        """The longest configured namespace `exposed` lands in, when it is longer than the server's own."""
        best: tuple[str, str] | None = None
        separator = self.separator
        at = exposed.find(separator)
        while at >= 0:  # a name has few separators: cheaper than trying every namespace
            prefix = exposed[: at + len(separator)]
            owner = self.namespaces.get(prefix)
            if owner is not None and len(prefix) > len(own_prefix):
                best = (prefix, owner)  # later prefixes are longer
            at = exposed.find(separator, at + 1)
        if (
            best is None
            and exposed.startswith(GATEWAY_PREFIX)
            and len(GATEWAY_PREFIX) > len(own_prefix)
            and GATEWAY_PREFIX not in self.namespaces
        ):
            best = (GATEWAY_PREFIX, GATEWAY_OWNER)
        return best

    def refusal(self, config: ServerConfig, tool_name: str, exposed: str) -> str | None:
        """Why `config`'s server may not expose its `tool_name` as `exposed`; None when it may."""
        problem = name_problem(tool_name)
        if problem is not None:
            return f"invalid tool name: {problem}"
        shadows = exposed in config.shadows
        namespace = config.effective_namespace
        own_prefix = namespace + self.separator if namespace else ""
        landed = self._namespace_owner(exposed, own_prefix)
        if landed is not None and landed[1] != config.name and not shadows:
            prefix, owner = landed
            whose = owner if owner == GATEWAY_OWNER else f"server {owner!r}"
            return f'lands in the namespace {prefix!r} of {whose} (allow it with "shadows": [{exposed!r}])'
        if shadows or listed_by_name(config, tool_name):
            return None
        if exposed in self.gateway_names:
            return (
                "shadows the gateway's own tool of that name "
                f'(allow it by naming it in "tools" or "shadows": [{exposed!r}])'
            )
        builtin = self.builtin_names.get(exposed)
        if builtin is not None and builtin != config.name and not is_builtin(config):
            return (
                f"shadows built-in server {builtin!r}'s tool of that name "
                f'(allow it as a fallback by naming it in "tools" or "shadows": [{exposed!r}])'
            )
        return None

    def admit(self, upstream: Upstream) -> Admitted:
        """The server's tools its filter exposes, split into admitted and refused."""
        config = upstream.config
        result = Admitted()
        for tool in upstream.tools:
            if not is_allowed(tool.name, config.tools):
                continue
            name = exposed_name(config.effective_namespace, tool.name, self.separator)
            reason = self.refusal(config, tool.name, name)
            if reason is None:
                result.tools.append((name, tool))
            else:
                result.refused.append(Refusal(upstream.name, tool.name, reason))
        return result
