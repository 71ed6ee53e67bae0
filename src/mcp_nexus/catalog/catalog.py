"""The aggregated view clients see: namespaced tools, resources, templates and prompts.

Rebuilt from the upstreams' own lists whenever one changes (cheap: a few dict inserts per
item); each exposed name keeps its ordered candidates so the router can fall back by
priority when several servers share a bare name. A tool with an unusable name, or whose name
lands in another server's namespace or shadows a built-in's or the gateway's own tool, is
refused (tool_admission.py): logged once, kept on its upstream as `refused_tools`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from mcp_nexus.catalog.local_tools import LocalTool
from mcp_nexus.catalog.names import exposed_name, is_allowed
from mcp_nexus.catalog.tool_admission import Admitted, ToolAdmission
from mcp_nexus.catalog.tool_integrity import Hold, ToolIntegrity
from mcp_nexus.catalog.tool_names import name_warning, printable
from mcp_nexus.events import ListKind
from mcp_nexus.upstream.upstream import Upstream

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ToolRoute:
    """One server that can answer an exposed tool name, under its own name for it."""

    upstream: Upstream
    tool: types.Tool

    @property
    def priority(self) -> int:
        return self.upstream.config.effective_priority


@dataclass(frozen=True, slots=True)
class CatalogTool:
    name: str
    tool: types.Tool  # what clients see: the winning candidate's tool under the exposed name
    candidates: tuple[ToolRoute, ...]  # highest priority first
    local: LocalTool | None = None  # set for the gateway's own tools (no upstream)


@dataclass(frozen=True, slots=True)
class PromptRoute:
    upstream: Upstream
    prompt: types.Prompt


@dataclass(frozen=True, slots=True)
class TemplateRoute:
    upstream: Upstream
    template: types.ResourceTemplate
    matcher: UriTemplate | None


def _by_priority(upstreams: Iterable[Upstream]) -> list[Upstream]:
    # Highest priority first; the name breaks ties so the order never depends on start timing.
    return sorted(upstreams, key=lambda u: (-u.config.effective_priority, u.name))


class Catalog:
    def __init__(self, separator: str = ".") -> None:
        self.separator = separator
        self.tools: dict[str, CatalogTool] = {}
        self.tool_list: list[types.Tool] = []
        self.resources: dict[str, list[Upstream]] = {}
        self.resource_list: list[types.Resource] = []
        self.templates: list[TemplateRoute] = []
        self.template_list: list[types.ResourceTemplate] = []
        self.prompts: dict[str, list[PromptRoute]] = {}
        self.prompt_list: list[types.Prompt] = []
        self.local_tools: dict[str, LocalTool] = {}
        self.upstreams: list[Upstream] = []  # every configured server, ready or not
        self.offline: dict[str, Upstream] = {}  # exposed tool names of servers that are down now
        self.tools_signature = ""
        self.resources_signature = ""
        self.prompts_signature = ""
        self.admission = ToolAdmission((), separator)
        self._admitted: dict[str, Admitted] = {}  # by server name, as of the last rebuild
        self._reported: set[tuple[str, str, str]] = set()  # (server, tool, reason) already logged
        # Pins and quarantine of changed or hostile tool definitions (tool_integrity.py).
        self.integrity = ToolIntegrity()

    def rebuild(self, upstreams: Iterable[Upstream]) -> set[ListKind]:
        """Recompute everything from the ready upstreams; returns which lists changed."""
        self.upstreams = _by_priority(upstreams)
        ready = [u for u in self.upstreams if u.is_ready]
        self._admit()
        self._build_tools(ready)
        self._build_offline()
        self._build_resources(ready)
        self._build_prompts(ready)
        changed: set[ListKind] = set()
        lists: tuple[tuple[ListKind, list[Any]], ...] = (
            ("tools", self.tool_list),
            ("resources", [*self.resource_list, *self.template_list]),
            ("prompts", self.prompt_list),
        )
        for kind, items in lists:
            signature = _signature(items)
            if signature != getattr(self, f"{kind}_signature"):
                setattr(self, f"{kind}_signature", signature)
                changed.add(kind)
        return changed

    def _admit(self) -> None:
        """Split every server's tools into admitted and refused; record and log the refusals."""
        self.admission = ToolAdmission(self.upstreams, self.separator, self.local_tools)
        admitted: dict[str, Admitted] = {}
        for upstream in self.upstreams:
            result = admitted[upstream.name] = self.admission.admit(upstream)
            result.tools = self.integrity.screen(upstream, result.tools)
            refused: dict[str, str] = {
                printable(hold.tool): f"quarantined: {hold.what}"
                for hold in self.integrity.pending()
                if hold.server == upstream.name and hold.quarantined
            }
            for refusal in result.refused:
                shown = printable(refusal.tool_name)
                refused[shown] = refusal.reason
                self._report(upstream.name, shown, refusal.reason, logging.WARNING, "refused")
            for name, tool in result.tools:
                warning = name_warning(tool.name)
                if warning is not None:
                    self._report(upstream.name, printable(name), warning, logging.INFO, "kept")
            # Shown by /api/servers and the dashboard: the names are printable, never raw.
            upstream.refused_tools = refused
        self._admitted = admitted

    def _report(self, server: str, shown: str, reason: str, level: int, verdict: str) -> None:
        key = (server, shown, reason)
        if key in self._reported:
            return
        self._reported.add(key)
        logger.log(level, "server %s: tool '%s' %s: %s", server, shown, verdict, reason)

    def admitted_tools(self, upstream: Upstream) -> list[tuple[str, types.Tool]]:
        """(exposed name, tool) for each tool of `upstream` that may be exposed, as of the last rebuild."""
        found = self._admitted.get(upstream.name)
        return found.tools if found is not None else []

    def _build_tools(self, ready: list[Upstream]) -> None:
        routes: dict[str, list[ToolRoute]] = {}
        for upstream in ready:
            for name, tool in self.admitted_tools(upstream):
                routes.setdefault(name, []).append(ToolRoute(upstream, tool))
        tools: dict[str, CatalogTool] = {}
        # The gateway's own tools come first and keep their names: an upstream tool with the
        # same exposed name is shadowed (and reachable under its namespace if it has one).
        for name, local in self.local_tools.items():
            tools[name] = CatalogTool(name, local.tool, (), local)
        for name, candidates in routes.items():
            if name in tools:
                continue
            top = candidates[0].tool
            exposed = top if top.name == name else top.model_copy(update={"name": name})
            tools[name] = CatalogTool(name, exposed, tuple(candidates))
        self.tools = tools
        self.tool_list = [entry.tool for entry in tools.values()]

    def _build_offline(self) -> None:
        offline: dict[str, Upstream] = {}
        for upstream in self.upstreams:
            if upstream.is_ready:
                continue
            for name, _tool in self.admitted_tools(upstream):  # what it offered when it last ran
                if name not in self.tools:
                    offline.setdefault(name, upstream)
        self.offline = offline

    def quarantined(self, name: str) -> Hold | None:
        """Why `name` is not listed when its tool is held by the integrity check (None: it is not)."""
        return self.integrity.quarantined(name)

    def offline_owner(self, name: str) -> Upstream | None:
        """The down server that offered `name` when it last ran (for a clear "unavailable" answer)."""
        return self.offline.get(name)

    def connecting_owners(self, name: str) -> list[Upstream]:
        """Servers still connecting that may turn out to offer `name` (by namespace or declared tools)."""
        owners = []
        for upstream in self.upstreams:
            if not upstream.connecting:
                continue
            config = upstream.config
            namespace = config.effective_namespace
            if namespace:
                if name.startswith(namespace + self.separator):
                    owners.append(upstream)
            elif is_allowed(name, config.tools) and self.admission.refusal(config, name, name) is None:
                owners.append(upstream)
        return owners

    async def wait_for_tool(self, name: str, timeout: float) -> CatalogTool | None:
        """The entry for `name`, waiting up to `timeout` s for the servers still connecting that may offer it.

        Why: a call made in the first second after start names a tool whose server is still
        starting; it must run under that tool's own policy (its TTL, its rate limit), not
        under the defaults of a name nobody lists yet.
        """
        entry = self.tools.get(name)
        waiting = self.connecting_owners(name) if entry is None else []
        if waiting:
            deadline = time.monotonic() + timeout
            for upstream in waiting:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                await upstream.wait_ready(left)
                entry = self.tools.get(name)
                if entry is not None:
                    break
        return entry

    def _build_resources(self, ready: list[Upstream]) -> None:
        by_uri: dict[str, list[Upstream]] = {}
        listed: dict[str, types.Resource] = {}
        templates: list[TemplateRoute] = []
        seen_templates: set[str] = set()
        for upstream in ready:
            for resource in upstream.resources:
                uri = str(resource.uri)
                by_uri.setdefault(uri, []).append(upstream)
                listed.setdefault(uri, resource)
            for template in upstream.resource_templates:
                try:
                    matcher: UriTemplate | None = UriTemplate.parse(template.uri_template)
                except (InvalidUriTemplate, ValueError):
                    matcher = None
                templates.append(TemplateRoute(upstream, template, matcher))
                seen_templates.add(template.uri_template)
        self.resources = by_uri
        self.resource_list = list(listed.values())
        self.templates = templates
        unique: dict[str, types.ResourceTemplate] = {}
        for route in templates:
            unique.setdefault(route.template.uri_template, route.template)
        self.template_list = list(unique.values())

    def _build_prompts(self, ready: list[Upstream]) -> None:
        prompts: dict[str, list[PromptRoute]] = {}
        for upstream in ready:
            namespace = upstream.config.effective_namespace
            for prompt in upstream.prompts:
                prompts.setdefault(exposed_name(namespace, prompt.name, self.separator), []).append(
                    PromptRoute(upstream, prompt)
                )
        self.prompts = prompts
        self.prompt_list = [
            routes[0].prompt
            if routes[0].prompt.name == name
            else routes[0].prompt.model_copy(update={"name": name})
            for name, routes in prompts.items()
        ]

    def resource_candidates(self, uri: str) -> list[Upstream]:
        """Servers that may answer `uri`: exact listings first, then matching templates."""
        found = list(self.resources.get(uri, ()))
        for route in self.templates:
            if route.upstream in found:
                continue
            if route.matcher is not None and route.matcher.match(uri) is not None:
                found.append(route.upstream)
        return found

    def upstreams_with_resources(self) -> list[Upstream]:
        seen: dict[str, Upstream] = {}
        for candidates in self.resources.values():
            for upstream in candidates:
                seen.setdefault(upstream.name, upstream)
        for route in self.templates:
            seen.setdefault(route.upstream.name, route.upstream)
        return _by_priority(seen.values())


def _signature(items: list[Any]) -> str:
    dumped = [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items]
    return hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()
