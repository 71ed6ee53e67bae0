"""`Upstream` is a facade over its parts: its attributes are the parts' values, and no part imports it back.

The split of issue 23 keeps `Upstream`'s public surface (callers and tests read and set
`upstream.state`, `upstream.tools`) while each value lives in one part (forwarded.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import mcp_types as types
import pytest

import mcp_nexus.upstream as upstream_package
from mcp_nexus.upstream.state import UpstreamState
from mcp_nexus.upstream.upstream import Upstream
from support.gateway import server_config

DEMO = {"transport": "embedded", "module": "support.demo_server:create_server"}
PARTS = (
    "background_tasks",
    "connection",
    "downstream_relay",
    "era_bridge",
    "forwarded",
    "offered_lists",
    "server_changes",
    "session_reports",
    "status",
)


async def test_the_facade_reads_and_writes_the_parts_values() -> None:
    upstream = Upstream(server_config("demo", DEMO))
    await upstream.start()
    try:
        assert upstream.state is UpstreamState.READY and upstream.status.state is UpstreamState.READY
        assert upstream.tools is upstream.lists.tools and "echo" in {tool.name for tool in upstream.tools}
        assert upstream.has_session and upstream.connection.session is not None
        assert upstream.protocol_version == upstream.connection.session.protocol_version

        upstream.tools = [types.Tool(name="only", input_schema={"type": "object"})]
        assert [tool.name for tool in upstream.lists.tools] == ["only"]
        upstream.state = UpstreamState.DEGRADED  # as tests and the catalog's stubs do
        assert upstream.status.state is UpstreamState.DEGRADED and upstream.is_ready

        with pytest.raises(AttributeError, match=r"Upstream\.has_session is read-only"):
            upstream.has_session = False  # type: ignore[misc]
        assert "has_session" not in vars(upstream)  # nothing hides the part's value
    finally:
        await upstream.stop()
    assert upstream.state is UpstreamState.STOPPED and not upstream.has_session


def test_no_part_imports_the_facade() -> None:
    folder = Path(upstream_package.__file__).parent
    for part in PARTS:
        tree = ast.parse((folder / f"{part}.py").read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {
            alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
        }
        assert "mcp_nexus.upstream.upstream" not in imported, f"{part}.py imports the facade back"
