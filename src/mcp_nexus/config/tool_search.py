"""`gateway.tool_search`: list `find_tools` + `call_tool` (and pinned tools) instead of every tool.

Hundreds of tools do not fit a model's context (OpenAI caps a request at 128 functions and
choice quality drops well before that), so a client in search mode sees two gateway tools
and discovers the rest by asking. The mode is chosen per client name, then per frontend,
then globally; `auto` turns search on only when the catalog holds more than `threshold` tools.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mcp_nexus.config.schema_base import Strict

SearchMode = Literal["off", "auto", "on"]
SearchRanking = Literal["hybrid", "bm25"]

DEFAULT_SEARCH_THRESHOLD = 40
"""`auto` lists everything up to this many tools: model tool choice degrades past 30-50."""


class ToolSearchSettings(Strict):
    mode: SearchMode = Field(
        default="off",
        description="off: list every tool; on: list find_tools + call_tool; auto: on above threshold",
    )
    threshold: int = Field(
        default=DEFAULT_SEARCH_THRESHOLD, ge=0, description="auto: search mode when more tools than this"
    )
    pinned: list[str] = Field(
        default_factory=list, description="exposed tool names (fnmatch patterns) listed even in search mode"
    )
    limit: int = Field(default=10, ge=1, le=100, description="how many tools find_tools returns by default")
    ranking: SearchRanking = Field(
        default="hybrid",
        description="hybrid: BM25 and sentence vectors, Chinese glossed; bm25: words only (no model loaded)",
    )
    frontends: dict[str, SearchMode] = Field(
        default_factory=dict, description='mode per frontend, e.g. {"xiaozhi": "on", "stdio": "off"}'
    )
    clients: dict[str, SearchMode] = Field(
        default_factory=dict, description="mode per client name (clientInfo.name); wins over frontends"
    )

    def mode_for(self, frontend: str | None, client: str | None) -> SearchMode:
        """The mode in force for one caller: its client's, else its frontend's, else the global one."""
        if client is not None and client in self.clients:
            return self.clients[client]
        if frontend is not None and frontend in self.frontends:
            return self.frontends[frontend]
        return self.mode

    @property
    def ever_on(self) -> bool:
        """Some caller may be in search mode: the gateway then serves find_tools and call_tool."""
        return any(mode != "off" for mode in (self.mode, *self.frontends.values(), *self.clients.values()))
