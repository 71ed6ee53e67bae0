"""The middleware chain every call runs through, whatever frontend it came from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_nexus.pipeline.call import CallNext, Middleware, ToolCall


class Pipeline:
    """Composes the steps once, so a call costs one closure hop per step and no allocation for the chain."""

    def __init__(self, steps: Sequence[Middleware], terminal: CallNext) -> None:
        self.steps = list(steps)
        self.terminal = terminal
        self._entry = self._compose()

    def _compose(self) -> CallNext:
        handler = self.terminal
        for step in reversed(self.steps):
            handler = _bind(step, handler)
        return handler

    async def __call__(self, call: ToolCall) -> Any:
        return await self._entry(call)


def _bind(step: Middleware, call_next: CallNext) -> CallNext:
    async def run(call: ToolCall) -> Any:
        return await step(call, call_next)

    return run
