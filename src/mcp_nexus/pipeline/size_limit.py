"""The last word on size: each frontend's maximum result bytes (`result_limits`; Xiaozhi: 1024 by default).

A server's or tool's `max_result_bytes` can only lower the frontend's limit (a frontend's
limit is what its clients can take). Over the limit, with offload on for the tool, the
result is offloaded (or its preview re-rendered) to fit; otherwise the text is cut at a
UTF-8 character boundary and a marker says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import mcp_types as types

from mcp_nexus.pipeline.call import CallNext, ToolCall, ToolOutcome
from mcp_nexus.pipeline.offload import OFFLOAD_ERROR_META_KEY, Offloader
from mcp_nexus.pipeline.policy import PolicyResolver
from mcp_nexus.pipeline.preview import utf8_cut
from mcp_nexus.pipeline.replaced import replaced_is_error
from mcp_nexus.pipeline.result_size import remember_size, result_size, text_bytes

TRUNCATED_META_KEY = "nexus/truncated"


def truncate(
    result: types.CallToolResult, limit: int, size: int, *, is_error: bool | None = None
) -> types.CallToolResult:
    """The text of `result` cut to `limit` bytes in all, marker included; other items are dropped."""
    texts = [item.text for item in result.content if isinstance(item, types.TextContent)]
    dropped = len(result.content) - len(texts)
    text = "\n".join(texts)
    note = f"; {dropped} non-text item(s) dropped" if dropped else ""
    marker = f"\n[truncated by Nexus: {size} bytes over the {limit}-byte limit{note}]"
    kept = utf8_cut(text, limit - text_bytes(marker))
    answer = (kept + marker) if text_bytes(marker) <= limit else utf8_cut(marker.strip(), limit)
    meta = {**(result.meta or {}), TRUNCATED_META_KEY: {"bytes": size, "limit": limit}}
    flagged = result.is_error if is_error is None else is_error
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=answer)], is_error=flagged, _meta=meta
    )


class SizeLimitStep:
    def __init__(
        self, policies: PolicyResolver, offloader: Offloader | None, limits: Callable[[], Mapping[str, int]]
    ) -> None:
        self.policies = policies
        self.offloader = offloader
        self.limits = limits  # read per call: a reload of the settings applies at once

    def limit_for(self, call: ToolCall) -> int | None:
        policy = self.policies.resolve(call.name)
        frontend = self.limits().get(call.caller.frontend)
        own = policy.max_result_bytes if policy is not None else None
        if frontend is None or own is None:
            return frontend if own is None else own
        return min(frontend, own)

    async def __call__(self, call: ToolCall, call_next: CallNext) -> ToolOutcome:
        outcome = await call_next(call)
        if not isinstance(outcome, types.CallToolResult):
            return outcome
        limit = self.limit_for(call)
        if limit is None:
            return outcome
        size = result_size(call, outcome)
        if size <= limit:
            return outcome
        policy = self.policies.resolve(call.name)
        offload_on = (
            policy is not None and policy.offload_threshold is not None and self.offloader is not None
        )
        if offload_on and self.offloader is not None:
            fitted = await self.offloader.fit(call, outcome, limit)
            if fitted is None and OFFLOAD_ERROR_META_KEY not in (outcome.meta or {}):
                assert policy is not None and policy.offload_threshold is not None
                fitted = await self.offloader.offload(
                    call, outcome, size, threshold=policy.offload_threshold, max_bytes=limit
                )
            if fitted is not None and result_size(call, fitted) <= limit:
                return fitted
        cut = truncate(outcome, limit, size, is_error=replaced_is_error(call, outcome))
        remember_size(call, cut, text_bytes(cut.content[0].text))  # type: ignore[union-attr]
        return cut
