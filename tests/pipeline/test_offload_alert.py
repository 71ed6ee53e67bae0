"""The offload alert names python_sandbox only to a caller that can see it, under that caller's
name for it; anyone else is told how the data can be had. Also through a cached alert."""

from __future__ import annotations

import re
from pathlib import Path

from mcp_nexus.config.schema_base import ToolFilter
from mcp_nexus.frontends.xiaozhi.tool_view import ToolView
from mcp_nexus.pipeline.call import Caller
from support.fake_xiaozhi import FakeXiaozhiEndpoint
from support.gateway import running_gateway
from support.governance_gateway import document, embedded, text
from xiaozhi.stack import running_bridge, text_of

# The seed's alert, with the size and the file it was saved to.
VISIBLE = re.compile(
    r"^SYSTEM_ALERT: Data too large \((\d+) bytes\)\. Saved to file (tool_output_[0-9a-f]{32}\.json)\. "
    r"Use python_sandbox to read and filter\.\n\nPreview: a JSON array of 400 items"
)
HIDDEN = re.compile(
    r"^SYSTEM_ALERT: Data too large \((\d+) bytes\)\. Saved to file (tool_output_[0-9a-f]{32}\.json) "
    r"on the gateway; no tool of this client can read that file, so only the preview below is shown\. "
    r"To get the data itself, call the tool again with narrower arguments \(fewer items\); "
    r"the gateway's operator can read the file in its offload folder \(setting offload_dir\)\.\n\n"
    r"Preview: a JSON array of 400 items"
)


def hides_the_sandbox(name: str) -> str | None:
    return None if name == "python_sandbox" else name


async def big(gw: object, caller: Caller) -> str:
    return text(await gw.call_tool("gov.big_list", {"items": 400}, caller=caller))  # type: ignore[attr-defined]


async def test_the_alert_follows_what_the_caller_sees(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, {"gov": embedded(rate_limit=None)})) as gw:
        assert VISIBLE.match(await big(gw, Caller("http", "a")))
        renamed = await big(gw, Caller("http", "b", sees=lambda name: f"gw_{name}"))
        assert "Use gw_python_sandbox to read and filter." in renamed.split("\n")[0]
        hidden = await big(gw, Caller("http", "c", sees=hides_the_sandbox))
        assert HIDDEN.match(hidden), hidden[:400]
        assert "python_sandbox" not in hidden


async def test_a_xiaozhi_filter_hiding_the_sandbox_changes_the_alert(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, {"gov": embedded(rate_limit=None)})) as gw:
        view = ToolView(gw.catalog, ToolFilter(deny=["python_sandbox"]), map_names=True)
        answer = await big(gw, Caller("xiaozhi", "dev", sees=view.name_for))
        assert HIDDEN.match(answer) and len(answer.encode()) <= 1024  # still within Xiaozhi's limit
        shown = ToolView(gw.catalog, ToolFilter(allow=["gov.*", "python_sandbox"]), map_names=True)
        assert VISIBLE.match(await big(gw, Caller("xiaozhi", "dev", sees=shown.name_for)))


async def test_a_cached_alert_is_reworded_for_each_caller(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, {"gov": embedded(rate_limit=None, cache_ttl=60)})) as gw:
        first = VISIBLE.match(await big(gw, Caller("http", "a")))
        hidden = HIDDEN.match(await big(gw, Caller("http", "c", sees=hides_the_sandbox)))
        again = VISIBLE.match(await big(gw, Caller("http", "a")))
        assert first and hidden and again
        assert first.group(2) == hidden.group(2) == again.group(2)  # one call upstream, one file
        # the preview under the line is the cached one, unchanged
        assert first.string.split("\n", 1)[1] == hidden.string.split("\n", 1)[1]


async def test_through_the_xiaozhi_bridge(tmp_path: Path) -> None:
    """The bridge's own tool filter decides: the endpoint that cannot call python_sandbox is not told to."""
    async with running_gateway(document(tmp_path, {"gov": embedded(rate_limit=None)})) as gw:
        for tools, expected in (
            ({"deny": ["python_sandbox"]}, HIDDEN),
            ({"allow": ["gov.*", "python_sandbox"]}, VISIBLE),
        ):
            async with FakeXiaozhiEndpoint() as fake, running_bridge(gw, endpoints=[fake.url()], tools=tools):
                session = await fake.next_session()
                names = {tool["name"] for tool in session.tools}
                assert ("python_sandbox" in names) == (expected is VISIBLE)
                answer = text_of(await session.call_tool("gov_big_list", {"items": 400}))
                assert expected.match(answer), answer[:400]
                assert len(answer.encode()) <= 1024
