"""Warns about `tool_config` entries naming tools their server does not have (typos, renamed tools).

The tool list is only known once a server is up, so the check runs when a server becomes ready.
"""

from __future__ import annotations

import logging

from mcp_nexus.upstream.state import UpstreamState
from mcp_nexus.upstream.upstream import Upstream

logger = logging.getLogger(__name__)


def unknown_tool_config(upstream: Upstream) -> list[str]:
    """The `tool_config` keys of `upstream` that match none of its tools, sorted."""
    offered = {tool.name for tool in upstream.tools}
    return sorted(name for name in upstream.config.tool_config if name not in offered)


class ToolConfigChecker:
    def __init__(self) -> None:
        self._warned: set[tuple[str, str]] = set()  # once per server and tool, not at every restart

    def check(self, upstream: Upstream) -> list[str]:
        if upstream.state != UpstreamState.READY:
            return []
        unknown = unknown_tool_config(upstream)
        for tool in unknown:
            if (upstream.name, tool) in self._warned:
                continue
            self._warned.add((upstream.name, tool))
            offered = ", ".join(sorted(t.name for t in upstream.tools)) or "none"
            logger.warning(
                "config: servers.%s.tool_config.%s names a tool server %r does not have "
                "(its settings are ignored); the server's tools are: %s",
                upstream.name,
                tool,
                upstream.name,
                offered,
            )
        return unknown
