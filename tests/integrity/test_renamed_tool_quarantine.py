"""A renamed tool whose definition matches a quarantined one stays quarantined: a real stdio server
(tests/support/rug_pull_server.py) changes a tool, then offers the changed definition under a new
name. The text reads as harmless (the scan finds nothing), so only the held digest keeps it out.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcp_nexus.errors import PermissionDeniedError
from support.gateway import running
from support.polling import eventually
from support.processes import TESTS

CHANGED = "Return the notes saved under a title, newest first."


def _set_tool(path: Path, description: str, name: str = "notes") -> None:
    path.write_text(json.dumps({"name": name, "description": description}), encoding="utf-8")


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))  # pins of this test only


async def test_a_held_definition_renamed_stays_held_until_approved(tmp_path: Path) -> None:
    tool_file = tmp_path / "notes-tool.json"
    _set_tool(tool_file, "Return the notes saved under a title.")
    server = {
        "command": sys.executable,
        "args": ["-m", "support.rug_pull_server"],
        "env": {"PYTHONPATH": str(TESTS), "RUG_PULL_TOOL_FILE": str(tool_file)},
        "health": {"interval": 1, "timeout": 2},
        "rate_limit": None,
    }
    document = {"gateway": {"include_builtins": False}, "servers": {"notes": server}}
    async with running(document) as runtime:
        gateway = runtime.gateway
        catalog = gateway.catalog
        assert "notes.notes" in catalog.tools
        _set_tool(tool_file, CHANGED)
        await eventually(lambda: catalog.quarantined("notes.notes"), 6, "the change held")
        held = catalog.quarantined("notes.notes")
        assert held is not None and held.reason == "changed" and not held.findings

        _set_tool(tool_file, CHANGED, "notes_v2")
        await eventually(lambda: catalog.quarantined("notes.notes_v2"), 6, "the rename held")
        renamed = catalog.quarantined("notes.notes_v2")
        assert renamed is not None and renamed.reason == "renamed" and renamed.like == "notes.notes"
        assert not renamed.findings  # held for its digest alone
        assert "notes.notes_v2" not in catalog.tools and "notes.clock" in catalog.tools
        assert catalog.quarantined("notes.notes") is None  # the old name is gone, not held twice
        with pytest.raises(PermissionDeniedError) as refused:
            await gateway.call_tool("notes.notes_v2", {"title": "a"})
        assert "it has the definition of held tool 'notes.notes'" in str(refused.value)

        (approved,) = catalog.integrity.approve(gateway.upstreams, "notes", "notes_v2")
        assert approved.tool == "notes_v2"
        gateway._rebuild()  # as the admin API does after an approval
        assert "notes.notes_v2" in catalog.tools
        # The approval forgot the held digest: the same definition under yet another name is new.
        _set_tool(tool_file, CHANGED, "notes_v3")
        await eventually(lambda: "notes.notes_v3" in catalog.tools, 6, "a fresh name, pinned")
