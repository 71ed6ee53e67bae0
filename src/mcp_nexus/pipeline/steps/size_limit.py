"""The last word on size: each frontend's maximum result bytes (`result_limits`; Xiaozhi: 1024 by default).

A server's or tool's `max_result_bytes` can only lower the frontend's limit (a frontend's
limit is what its clients can take). Over the limit, with offload on for the tool, the
result is offloaded (or its preview re-rendered) to fit; otherwise the text is cut at a
UTF-8 character boundary and a note says how much is shown, of how much, and what was cut:
`[truncated by Nexus: showing 1000 of 5999 bytes; 4999 bytes cut; limit 1024]`.

Being outside the cache, this step is also where an offloaded result meets the caller it is
served to (`Offloader.for_caller`: ownership of the file, the alert line for that caller).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import mcp_types as types

from mcp_nexus.pipeline.call import CallNext, ToolCall, ToolOutcome
from mcp_nexus.pipeline.policy import PolicyResolver, call_policy
from mcp_nexus.pipeline.preview import utf8_cut
from mcp_nexus.pipeline.replaced import replaced_is_error
from mcp_nexus.pipeline.result_size import remember_size, result_size, text_bytes
from mcp_nexus.pipeline.steps.offload import OFFLOAD_ERROR_META_KEY, Offloader

TRUNCATED_META_KEY = "nexus/truncated"


def cut_note(shown: int, size: int, limit: int, dropped: int = 0, *, cut: int | None = None) -> str:
    """The line that ends a cut result: what is shown of how much, what was cut, and the limit."""
    items = f"; {dropped} non-text item(s) dropped" if dropped else ""
    cut = size - shown if cut is None else cut
    return f"[truncated by Nexus: showing {shown} of {size} bytes; {cut} bytes cut{items}; limit {limit}]"


def truncate(
    result: types.CallToolResult, limit: int, size: int, *, is_error: bool | None = None
) -> types.CallToolResult:
    """The text of `result` cut to `limit` bytes in all, note included; other items are dropped.

    `size` is the full result's size (text, other items and structured content), so "cut"
    counts everything the caller does not get.
    """
    texts = [item.text for item in result.content if isinstance(item, types.TextContent)]
    dropped = len(result.content) - len(texts)
    text = "\n".join(texts)
    # The note's numbers are at most `size`: reserve room for their widest form, then fill it in.
    widest = "\n" + cut_note(size, size, limit, dropped, cut=size)
    kept = utf8_cut(text, limit - text_bytes(widest))
    shown = text_bytes(kept)
    note = cut_note(shown, size, limit, dropped)
    answer = f"{kept}\n{note}" if text_bytes(widest) <= limit else utf8_cut(note, limit)
    meta = {**(result.meta or {}), TRUNCATED_META_KEY: {"bytes": size, "shown": shown, "limit": limit}}
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
        policy = call_policy(call, self.policies)
        frontend = self.limits().get(call.caller.frontend)
        own = policy.max_result_bytes if policy is not None else None
        if frontend is None or own is None:
            return frontend if own is None else own
        return min(frontend, own)

    async def __call__(self, call: ToolCall, call_next: CallNext) -> ToolOutcome:
        outcome = await call_next(call)
        if not isinstance(outcome, types.CallToolResult):
            return outcome
        if self.offloader is not None:
            outcome = await self.offloader.for_caller(call, outcome)
        limit = self.limit_for(call)
        if limit is None:
            return outcome
        size = result_size(call, outcome)
        if size <= limit:
            return outcome
        policy = call_policy(call, self.policies)
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
