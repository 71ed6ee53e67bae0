"""The config's chains as tools the gateway serves beside its own (catalog.local_tools), kept in
step with the config: a reload adds, replaces and removes them, and the gateway's rebuild then
announces tools/list_changed.

Each chain is a `LocalTool` carrying its own governance (`tool_config`, the tool level of its
policy) and what the dashboard shows of it (`details["chain"]`: its steps, or that it is code).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.catalog.local_tools import LocalTool
from mcp_nexus.chains.runner import CallThrough, ChainContext, run_chain
from mcp_nexus.config.chains import ChainConfig
from mcp_nexus.config.schema import CallPolicy
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.steps.offload import Offloader

logger = logging.getLogger(__name__)

CodeRunner = Callable[[str, ChainConfig, dict[str, Any], Caller], Awaitable[types.CallToolResult]]
"""Runs a chain with a Python body (code mode) for a caller: `(name, chain, arguments, caller)`."""


def chain_context(catalog: Catalog, call: CallThrough, offloader: Offloader | None) -> ChainContext:
    """A running chain's view of the gateway: its pipeline (`call`), its catalog, its offload folder."""

    def callable_now(name: str) -> bool:
        # Listed, or a server still in its first start may list it (the call then waits for it).
        return name in catalog.tools or bool(catalog.connecting_owners(name))

    return ChainContext(
        call, callable_now, lambda: list(catalog.tools), offloader.folder.read_text if offloader else None
    )


def chain_details(chain: ChainConfig) -> dict[str, Any]:
    """What the admin API and the dashboard show of a chain (never its arguments' values: they may hold secrets)."""
    if chain.code is not None:
        return {"kind": "code", "steps": []}
    ids = chain.step_ids()
    return {"kind": "steps", "steps": [{"id": ids[i], "tool": s.tool} for i, s in enumerate(chain.steps)]}


class ChainTools:
    """The chains the gateway serves now, by name."""

    def __init__(
        self,
        local_tools: dict[str, LocalTool],
        context: ChainContext,
        run_code: CodeRunner | None = None,
    ) -> None:
        self.local_tools = local_tools  # the catalog's: chains are served beside the gateway's own tools
        self.context = context
        self.run_code = run_code
        self.chains: dict[str, ChainConfig] = {}

    def serve(self, chains: Mapping[str, ChainConfig]) -> list[str]:
        """Serve exactly `chains`; returns the names added, changed or removed (empty: nothing to announce)."""
        changed: list[str] = []
        for name in list(self.chains):
            if name not in chains:
                self.local_tools.pop(name, None)
                del self.chains[name]
                changed.append(name)
        for name, chain in chains.items():
            if self.chains.get(name) == chain and name in self.local_tools:
                continue  # the same definition: the same tool object, so its policy stays memoised
            if name in self.local_tools and name not in self.chains:
                # The config refuses the gateway's own names; another local tool (a plugin's) wins.
                logger.warning("chain %s not served: a gateway tool of that name exists", name)
                continue
            self.local_tools[name] = self._tool(name, chain)
            self.chains[name] = chain
            changed.append(name)
        return changed

    def _tool(self, name: str, chain: ChainConfig) -> LocalTool:
        tool = types.Tool(name=name, description=chain.description, input_schema=chain.input_schema)

        async def handler(arguments: dict[str, Any], caller: Any = None) -> types.CallToolResult:
            who = caller if isinstance(caller, Caller) else Caller("api")
            if chain.code is not None:
                if self.run_code is None:
                    return types.CallToolResult(
                        content=[
                            types.TextContent(
                                type="text",
                                text=f"chain {name}: its body is Python (code), and code mode is not available here",
                            )
                        ],
                        is_error=True,
                    )
                return await self.run_code(name, chain, arguments, who)
            return await run_chain(name, chain, arguments, who, self.context)

        policy = CallPolicy.model_validate(chain.tool_config)
        return LocalTool(tool, handler, policy=policy, details={"chain": chain_details(chain)})
