"""The `call_tag` step: appends a line naming the tag and how many calls it saw to each result.

    {"gateway": {"steps": {"call_tag": {"tag": "seen"}}}}          every tool
    {"servers": {"robot": {"steps": {"call_tag": {"tag": "robot"}}}}}  one server's tools

Placed directly inside the cache (`after: cache`): a result answered from the cache does not
reach it, so its count says how many calls went on to the server. Without a tag it is left out
of a tool's chain entirely (`applies_to`).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from pydantic import BaseModel, ConfigDict

from mcp_nexus.plugin_api import StepContext, StepSpec


class CallTagSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tag: str | None = None  # None: the step does nothing for that tool


def _settings(policy: Any) -> CallTagSettings | None:
    found = getattr(policy, "steps", {}).get("call_tag") if policy is not None else None
    return found if isinstance(found, CallTagSettings) and found.tag else None


class CallTagStep:
    def __init__(self) -> None:
        self.calls = 0

    def applies_to(self, policy: Any) -> bool:
        return _settings(policy) is not None

    async def __call__(self, call: Any, call_next: Any) -> Any:
        settings = _settings(call.policy)
        outcome = await call_next(call)
        if settings is None or not isinstance(outcome, types.CallToolResult):
            return outcome
        self.calls += 1
        line = types.TextContent(type="text", text=f"[call_tag {settings.tag} #{self.calls}]")
        return outcome.model_copy(update={"content": [*outcome.content, line]})


def _build(context: StepContext) -> CallTagStep:
    return CallTagStep()


CALL_TAG = StepSpec(
    "call_tag",
    _build,
    config_model=CallTagSettings,
    after="cache",
    description="tags results and counts the calls that reached past the cache",
)
