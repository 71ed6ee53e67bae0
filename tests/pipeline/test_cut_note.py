"""The note that ends a cut result states the full size, what is shown, what was cut and the limit."""

from __future__ import annotations

import re

import mcp_types as types
import pytest

from mcp_nexus.pipeline.result_size import measure
from mcp_nexus.pipeline.steps.size_limit import truncate

NOTE = re.compile(
    r"\n\[truncated by Nexus: showing (\d+) of (\d+) bytes; (\d+) bytes cut(; \d+ non-text item\(s\) dropped)?; "
    r"limit (\d+)\]$"
)


def only_text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    return result.content[0].text


@pytest.mark.parametrize("limit", [200, 1024, 4000])
def test_the_note_adds_up(limit: int) -> None:
    original = types.CallToolResult(content=[types.TextContent(type="text", text="x" * 5999)])
    cut = only_text(truncate(original, limit, measure(original)))
    match = NOTE.search(cut)
    assert match, cut[-200:]
    shown, full, gone, dropped, said_limit = match.groups()
    assert int(full) == 5999 and int(said_limit) == limit and dropped is None
    assert int(shown) == len(cut) - len(match.group(0)) and int(shown) + int(gone) == 5999
    assert limit - 3 <= len(cut.encode()) <= limit  # the whole room is used, and never more


def test_dropped_items_and_structured_content_count_as_cut() -> None:
    image = types.ImageContent(type="image", data="A" * 3000, mime_type="image/png")
    original = types.CallToolResult(
        content=[types.TextContent(type="text", text="é" * 2000), image],
        structured_content={"rows": list(range(300))},
    )
    size = measure(original)
    cut = truncate(original, 1024, size)
    match = NOTE.search(only_text(cut))
    assert match
    shown, full, gone = (int(match.group(n)) for n in (1, 2, 3))
    assert full == size > 4000 + 3000  # text, image and structured content
    assert match.group(4) == "; 1 non-text item(s) dropped"
    assert shown + gone == size and shown % 2 == 0  # whole two-byte characters
    assert cut.meta == {"nexus/truncated": {"bytes": size, "shown": shown, "limit": 1024}}


def test_a_limit_too_small_for_the_note_still_holds() -> None:
    original = types.CallToolResult(content=[types.TextContent(type="text", text="y" * 500)])
    cut = only_text(truncate(original, 40, 500))
    assert len(cut.encode()) <= 40 and cut.startswith("[truncated by Nexus: showing 0 of 500")
