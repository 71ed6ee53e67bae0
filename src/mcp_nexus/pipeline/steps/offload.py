"""The data governor: a result above its threshold goes to a file; the caller gets an alert and a preview.

The file holds the payload python_sandbox should read: the single text item as is (most
tools answer JSON text), else the structured content, else the content items as JSON.
If the folder cannot be written the full result goes through unchanged (no data is ever
lost), marked `nexus/offloadError` in `_meta` and logged; see docs/GOVERNANCE.md.

The file belongs to the caller that caused it (`Caller.identity`); a caller later served the
same alert from the cache becomes an owner too (`Offloader.for_caller`, run by the size step,
which sits outside the cache). The alert names python_sandbox only to a caller that can see
that tool (under its name for it) and whose profile reaches it; any other caller is told how the data can be had instead.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import mcp_types as types

from mcp_nexus.pipeline.call import Caller, CallNext, ToolCall, ToolOutcome
from mcp_nexus.pipeline.offload_folder import OffloadFolder
from mcp_nexus.pipeline.policy import PolicyResolver, ToolPolicy, call_policy
from mcp_nexus.pipeline.preview import Shape, render, scan_shape, utf8_cut
from mcp_nexus.pipeline.replaced import replaced_is_error
from mcp_nexus.pipeline.result_size import remember_size, result_size, text_bytes
from mcp_nexus.pipeline.sandbox_tool import SANDBOX_TOOL_NAME

logger = logging.getLogger(__name__)

OFFLOAD_META_KEY = "nexus/offload"
OFFLOAD_ERROR_META_KEY = "nexus/offloadError"
MAX_PREVIEW_BYTES = 2048
MIN_PREVIEW_BYTES = 128
_SHAPES_KEPT = 256


def alert_text(size: int, name: str, sandbox: str | None = SANDBOX_TOOL_NAME) -> str:
    """The alert line (one line: it is swapped per caller). `sandbox`: the caller's name for
    python_sandbox, None when the caller cannot see it."""
    if sandbox is not None:
        return f"SYSTEM_ALERT: Data too large ({size} bytes). Saved to file {name}. Use {sandbox} to read and filter."
    return (
        f"SYSTEM_ALERT: Data too large ({size} bytes). Saved to file {name} on the gateway; "
        "no tool of this client can read that file, so only the preview below is shown. "
        "To get the data itself, call the tool again with narrower arguments (fewer items); "
        "the gateway's operator can read the file in its offload folder (setting offload_dir)."
    )


def sandbox_name_for(caller: Caller) -> str | None:
    """The caller's name for python_sandbox, None when a tool filter or its profile hides it from the caller."""
    if caller.reaches is not None and not caller.reaches(SANDBOX_TOOL_NAME):
        return None  # its profile (profiles/resolve.py) leaves python_sandbox out: calling it is refused
    return SANDBOX_TOOL_NAME if caller.sees is None else caller.sees(SANDBOX_TOOL_NAME)


def preview_budget(threshold: int) -> int:
    """Bytes for the preview under a threshold: half of it at most, so the answer stays well under."""
    return max(MIN_PREVIEW_BYTES, min(MAX_PREVIEW_BYTES, threshold // 2))


def payload_of(result: types.CallToolResult) -> str:
    content = result.content
    if len(content) == 1 and isinstance(content[0], types.TextContent):
        return content[0].text
    if result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False, default=str)
    if all(isinstance(item, types.TextContent) for item in content):
        return json.dumps([item.text for item in content], ensure_ascii=False)  # type: ignore[union-attr]
    return json.dumps(
        [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in content],
        ensure_ascii=False,
    )


def offloaded_file(result: types.CallToolResult) -> str | None:
    """The file an offloaded result points at, or None for any other result."""
    info = (result.meta or {}).get(OFFLOAD_META_KEY)
    return info.get("file") if isinstance(info, dict) else None


def offloaded_success(result: types.CallToolResult) -> bool:
    """An offloaded result whose tool answered without error, though the alert standing in for it may be
    flagged `isError` (a tool with an output schema cannot be answered with text alone): code and chains
    read such a result back as data."""
    info = (result.meta or {}).get(OFFLOAD_META_KEY)
    return isinstance(info, dict) and info.get("error") is False


class Offloader:
    """Writes payloads to the folder and builds the alert results; shared by the offload and size steps."""

    def __init__(self, folder: OffloadFolder) -> None:
        self.folder = folder
        self._shapes: OrderedDict[str, Shape] = OrderedDict()  # recent files' shapes, to re-render smaller

    def _write_and_scan(self, payload: str, owner: str) -> tuple[str, Shape]:
        name = self.folder.write([payload], owner=owner)
        return name, scan_shape(payload)

    def _remember(self, name: str, shape: Shape) -> None:
        self._shapes[name] = shape
        self._shapes.move_to_end(name)
        while len(self._shapes) > _SHAPES_KEPT:
            self._shapes.popitem(last=False)

    async def offload(
        self,
        call: ToolCall,
        result: types.CallToolResult,
        size: int,
        *,
        threshold: int = 5120,
        max_bytes: int | None = None,
    ) -> types.CallToolResult:
        """The alert result for `result`: its preview within `max_bytes` in all, else well under `threshold`."""
        payload = payload_of(result)
        try:
            name, shape = await asyncio.to_thread(self._write_and_scan, payload, call.caller.identity)
        except OSError as exc:
            reason = f"cannot write to the offload folder {self.folder.path}: {exc.strerror or exc}"
            logger.warning("tool %s: %s; passing the full result (%d bytes) through", call.name, reason, size)
            meta = {**(result.meta or {}), OFFLOAD_ERROR_META_KEY: reason}
            failed = result.model_copy(update={"meta": meta})
            remember_size(call, failed, size)
            return failed
        self._remember(name, shape)
        budget = preview_budget(threshold) if max_bytes is None else None
        return self._alert(call, result, size, name, shape, max_bytes, budget)

    async def fit(
        self, call: ToolCall, result: types.CallToolResult, max_bytes: int
    ) -> types.CallToolResult | None:
        """Re-render an already offloaded result's preview within `max_bytes`; None if it was not offloaded."""
        name = offloaded_file(result)
        if name is None:
            return None
        info: dict[str, Any] = (result.meta or {})[OFFLOAD_META_KEY]
        shape = self._shapes.get(name)
        if shape is None:
            try:
                shape = await asyncio.to_thread(lambda: scan_shape(self.folder.read_text(name)))
            except OSError:
                shape = Shape("text", 0)
            self._remember(name, shape)
        return self._alert(call, result, int(info.get("bytes", 0)), name, shape, max_bytes, None)

    async def for_caller(self, call: ToolCall, result: types.CallToolResult) -> types.CallToolResult:
        """An offloaded result as this caller may receive it: the caller owns the file (it was
        served the alert, perhaps from the cache), and the alert line is the one for this caller.
        Any other result is returned as is."""
        name = offloaded_file(result)
        if name is None:
            return result
        owner = call.caller.identity
        if not self.folder.known_owner(name, owner):
            try:
                await asyncio.to_thread(self.folder.share, name, owner)
            except OSError as exc:
                logger.warning("could not record %s as an owner of %s: %s", owner, name, exc)
        content = result.content
        if len(content) != 1 or not isinstance(content[0], types.TextContent):
            return result
        info: dict[str, Any] = (result.meta or {})[OFFLOAD_META_KEY]
        alert = alert_text(int(info.get("bytes", 0)), name, sandbox_name_for(call.caller))
        head, newline, rest = content[0].text.partition("\n")
        if head == alert or not head.startswith("SYSTEM_ALERT:"):
            return result
        text = (
            alert + newline + rest
        )  # a cached alert written for another caller: same preview, this caller's line
        answer = result.model_copy(update={"content": [types.TextContent(type="text", text=text)]})
        remember_size(call, answer, text_bytes(text))
        return answer

    def _alert(
        self,
        call: ToolCall,
        result: types.CallToolResult,
        size: int,
        name: str,
        shape: Shape,
        max_bytes: int | None,
        preview_bytes: int | None,
    ) -> types.CallToolResult:
        alert = alert_text(size, name, sandbox_name_for(call.caller))
        budget = preview_bytes if preview_bytes is not None else (max_bytes or 0) - text_bytes(alert) - 2
        text = alert if budget < 16 else f"{alert}\n\n{render(shape, budget)}"
        if max_bytes is not None:
            text = utf8_cut(text, max_bytes)
        meta = {key: value for key, value in (result.meta or {}).items() if key != OFFLOAD_ERROR_META_KEY}
        # "error": the tool's own answer was an error (the alert may be flagged one for its output schema alone).
        meta[OFFLOAD_META_KEY] = {"file": name, "bytes": size, "error": bool(result.is_error)}
        answer = types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            is_error=replaced_is_error(call, result),
            _meta=meta,
        )
        remember_size(call, answer, text_bytes(text))
        return answer


def media_items(result: types.CallToolResult) -> tuple[list[types.ImageContent | types.AudioContent], int]:
    """The image and audio items of `result` and the bytes of their (base64) data."""
    items = [item for item in result.content if isinstance(item, types.ImageContent | types.AudioContent)]
    return items, sum(len(item.data) for item in items)


class OffloadStep:
    """Keeps large data out of the model's context; media is judged by its own limit.

    Why media differs: offload exists because the model would read text rows it does not
    need, and python_sandbox can filter them. A picture or a sound is the answer itself: no
    sandbox can show it, and an alert in its place loses it. So image and audio items are not
    counted against the text threshold; they pass through up to `offload_media_threshold`
    bytes (base64) per result, and only above that is the whole result offloaded like text.
    A result whose text is large beside small media has its text offloaded, media kept.
    """

    def __init__(
        self,
        policies: PolicyResolver,
        offloader: Offloader,
        media_threshold: Callable[[], int | None] = lambda: None,
    ) -> None:
        self.policies = policies
        self.offloader = offloader
        self.media_threshold = media_threshold  # read per call: a reload applies at once

    def applies_to(self, policy: ToolPolicy) -> bool:
        """Only a tool with an offload threshold has results kept out of the context here."""
        return policy.offload_threshold is not None

    async def __call__(self, call: ToolCall, call_next: CallNext) -> ToolOutcome:
        outcome = await call_next(call)
        if not isinstance(outcome, types.CallToolResult):
            return outcome  # an input request is a question to the caller, never data to offload
        policy = call_policy(call, self.policies)
        threshold = policy.offload_threshold if policy is not None else None
        if threshold is None:
            return outcome
        size = result_size(call, outcome)
        if size <= threshold:
            return outcome
        media, media_bytes = media_items(outcome)
        media_limit = self.media_threshold()
        if not media or (media_limit is not None and media_bytes > media_limit):
            return await self.offloader.offload(call, outcome, size, threshold=threshold)
        text_size = size - media_bytes
        if text_size <= threshold:
            return outcome
        rest = outcome.model_copy(
            update={
                "content": [
                    i for i in outcome.content if not isinstance(i, types.ImageContent | types.AudioContent)
                ]
            }
        )
        alert = await self.offloader.offload(call, rest, text_size, threshold=threshold)
        kept = alert.model_copy(update={"content": [*alert.content, *media]})
        remember_size(call, kept, result_size(call, alert) + media_bytes)
        return kept
