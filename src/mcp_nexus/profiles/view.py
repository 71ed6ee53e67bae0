"""One profile as a predicate over the catalog: which tools, resources and prompts it lets a caller reach.

A tool is in the view when its name matches `tools` (a name or glob, or `tag:<tag>` against the
tool index's tags) or the server that answers it (its first candidate, the one the router tries
first) is in `servers`; then anything matching `exclude` is taken out. The search tools
(`find_tools`, `call_tool`) are always in: they only ever reach what the view lets in.
"""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.catalog.tool_listing import SEARCH_TOOL_NAMES
from mcp_nexus.config.profiles import TAG_PREFIX, ProfileConfig


def _split(patterns: list[str]) -> tuple[tuple[str, ...], frozenset[str]]:
    """(name patterns, tags)."""
    names = tuple(p for p in patterns if not p.startswith(TAG_PREFIX))
    tags = frozenset(p[len(TAG_PREFIX) :] for p in patterns if p.startswith(TAG_PREFIX))
    return names, tags


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(name == pattern or fnmatchcase(name, pattern) for pattern in patterns)


class ProfileView:
    """What one profile's callers may reach; built once per profile and config, asked per name."""

    def __init__(
        self,
        name: str,
        config: ProfileConfig | None,
        catalog: Catalog,
        tags_of: Callable[[str], frozenset[str]],
    ) -> None:
        self.name = name
        self.config = config or ProfileConfig()  # an unknown profile name: an empty view (fail closed)
        self.catalog = catalog
        self._tags_of = tags_of
        self._servers = frozenset(self.config.servers)
        self._tool_names, self._tool_tags = _split(self.config.tools)
        self._excluded_names, self._excluded_tags = _split(self.config.exclude)
        self._resources = tuple(self.config.resources)
        self._prompts = tuple(self.config.prompts)

    def _server_of(self, name: str) -> str | None:
        entry = self.catalog.tools.get(name)
        if entry is not None:
            return entry.candidates[0].upstream.name if entry.candidates else "nexus"
        owner = self.catalog.offline_owner(name)
        if owner is not None:
            return owner.name
        for upstream in self.catalog.connecting_owners(name):
            return upstream.name
        return None

    def reaches_tool(self, name: str) -> bool:
        if name in SEARCH_TOOL_NAMES:
            return True
        tags: frozenset[str] | None = None
        if self._excluded_names and _matches(name, self._excluded_names):
            return False
        if self._excluded_tags:
            tags = self._tags_of(name)
            if tags & self._excluded_tags:
                return False
        if _matches(name, self._tool_names):
            return True
        if self._servers and self._server_of(name) in self._servers:
            return True
        if self._tool_tags:
            tags = self._tags_of(name) if tags is None else tags
            return bool(tags & self._tool_tags)
        return False

    def reaches_resource(self, uri: str) -> bool:
        if _matches(uri, self._resources):
            return True
        if not self._servers:
            return False
        candidates = self.catalog.resource_candidates(uri)
        return bool(candidates) and all(upstream.name in self._servers for upstream in candidates)

    def reaches_prompt(self, name: str) -> bool:
        if _matches(name, self._prompts):
            return True
        routes = self.catalog.prompts.get(name) or []
        return bool(routes) and all(route.upstream.name in self._servers for route in routes)
