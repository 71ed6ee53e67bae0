"""One data folder, `mcp-nexus`, for everything Nexus writes (issue 11 item 8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_nexus.builtin.cortex.settings import default_knowledge_dir
from mcp_nexus.paths import data_dir, data_subdir
from mcp_nexus.pipeline.offload_folder import default_offload_dir


@pytest.fixture
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The platform's user data folder moved under tmp_path (Linux reads XDG_DATA_HOME)."""
    for name in ("NEXUS_DATA_DIR", "NEXUS_CORTEX_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    return tmp_path / "share"


def test_every_part_writes_under_one_folder_named_mcp_nexus(xdg: Path) -> None:
    assert data_dir() == xdg / "mcp-nexus"
    assert default_offload_dir() == xdg / "mcp-nexus" / "offload"
    assert default_knowledge_dir() == xdg / "mcp-nexus" / "cortex"


def test_the_operator_may_choose_the_folder(
    xdg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "elsewhere"))
    assert default_offload_dir() == tmp_path / "elsewhere" / "offload"
    assert default_knowledge_dir() == tmp_path / "elsewhere" / "cortex"
    monkeypatch.setenv("NEXUS_CORTEX_DIR", str(tmp_path / "kb"))  # the Cortex-only override still wins
    assert default_knowledge_dir() == tmp_path / "kb"


def test_knowledge_left_under_the_old_name_moves_over(xdg: Path) -> None:
    old = xdg / "nexus" / "cortex"
    (old / "entities").mkdir(parents=True)
    (old / "entities" / "tech_stack.jsonl").write_text('{"id": "starlette"}\n')
    moved = data_subdir("cortex")
    assert moved == xdg / "mcp-nexus" / "cortex"
    assert (moved / "entities" / "tech_stack.jsonl").read_text() == '{"id": "starlette"}\n'
    assert not old.exists()
    # once moved, the new folder is used as is
    assert data_subdir("cortex") == moved
