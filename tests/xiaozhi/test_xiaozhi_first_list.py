"""The endpoint's first tools/list waits (bounded) for servers still in their first start (issue 20 item 1).

A Xiaozhi endpoint lists once right after the handshake and rarely again; a server that was
still starting would be missing from its list for the whole session.
"""

from __future__ import annotations

import sys
from pathlib import Path

from support.fake_xiaozhi import FakeXiaozhiEndpoint
from support.gateway import running_gateway
from support.processes import TESTS
from xiaozhi.stack import running_bridge, text_of

SLOW = {
    "command": sys.executable,
    "args": [str(TESTS / "support" / "matrix_server.py"), "--role", "main", "--start-delay", "2"],
}


def _config(tmp_path: Path, wait: float) -> dict[str, object]:
    return {
        "gateway": {"include_builtins": False, "offload_dir": str(tmp_path), "first_list_wait": wait},
        "servers": {"slow": SLOW},
    }


async def test_the_first_list_has_the_server_still_starting(tmp_path: Path) -> None:
    async with running_gateway(_config(tmp_path, 8.0), wait_ready=False) as gw:
        assert gw.first_starts_pending
        async with FakeXiaozhiEndpoint() as fake, running_bridge(gw, endpoints=[fake.url()]):
            session = await fake.next_session()
            names = {tool["name"] for tool in session.tools}
            assert {"slow_ticket", "slow_echo", "python_sandbox"} <= names, sorted(names)
            assert text_of(await session.call_tool("slow_echo", {"text": "hi"})) == "hi"


async def test_a_zero_wait_lists_only_what_is_ready(tmp_path: Path) -> None:
    """The setting is what holds the list: without it the slow server is missing (the test can fail)."""
    async with (
        running_gateway(_config(tmp_path, 0.0), wait_ready=False) as gw,
        FakeXiaozhiEndpoint() as fake,
        running_bridge(gw, endpoints=[fake.url()]),
    ):
        session = await fake.next_session()
        assert "slow_ticket" not in {tool["name"] for tool in session.tools}
