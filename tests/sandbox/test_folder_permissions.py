"""Private data stays private on disk: the offload folder and the Cortex folder are 0700, files 0600."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from mcp_nexus.builtin.cortex.store import KnowledgeStore
from mcp_nexus.pipeline.offload_folder import OffloadFolder


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def folder(path: Path) -> OffloadFolder:
    return OffloadFolder(path, max_age=3600, max_bytes=1 << 20)


def test_a_new_offload_folder_is_0700_and_its_files_0600(tmp_path: Path) -> None:
    offload = folder(tmp_path / "new" / "offload")
    name = offload.write(["[1, 2, 3]"])
    assert mode(offload.path) == 0o700
    assert mode(offload.path / name) == 0o600


def test_an_existing_0777_offload_folder_is_fixed_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "offload"
    path.mkdir()
    path.chmod(0o777)
    with caplog.at_level(logging.WARNING, logger="mcp_nexus.pipeline.offload_folder"):
        folder(path).write(["{}"])
    assert mode(path) == 0o700
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert warnings == [
        f"offload_dir {path} was open to other users (mode 0777): changed to 0700, as "
        "offloaded results may hold private data"
    ]
    caplog.clear()
    folder(path).write(["{}"])  # already private: nothing more to say
    assert not caplog.records


def test_group_readable_offload_folder_is_made_private_too(tmp_path: Path) -> None:
    path = tmp_path / "offload"
    path.mkdir()
    path.chmod(0o750)
    folder(path).ensure()
    assert mode(path) == 0o700


def test_a_shared_sticky_folder_is_refused_not_changed(tmp_path: Path) -> None:
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: making it 0700 would break everyone else
    with pytest.raises(PermissionError) as caught:
        folder(shared).write(["{}"])
    assert "shared sticky folder" in str(caught.value) and str(shared) in str(caught.value)
    assert mode(shared) == 0o1777
    assert list(shared.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can create a folder owned by another user")
def test_a_world_writable_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    os.chown(foreign, 65534, 65534)
    foreign.chmod(0o777)
    with pytest.raises(PermissionError, match="owned by uid 65534"):
        folder(foreign).ensure()
    assert mode(foreign) == 0o777


def test_the_cortex_folder_is_0700_with_0600_files(tmp_path: Path) -> None:
    root = tmp_path / "cortex"
    store = KnowledgeStore(root)
    store.add_entity("concepts", "alpha", "concept", "Alpha", "first")
    store.add_entity("concepts", "beta", "concept", "Beta", "second")
    store.connect("alpha", "relates_to", "beta")
    folders = [root, *(path for path in root.rglob("*") if path.is_dir())]
    files = [path for path in root.rglob("*") if path.is_file()]
    assert {str(path.relative_to(root)) for path in folders} >= {".", "entities", "relations"}
    assert any(path.name == ".lock" for path in files) and any(path.suffix == ".jsonl" for path in files)
    assert {str(path.relative_to(root)): mode(path) for path in folders} == {
        str(path.relative_to(root)): 0o700 for path in folders
    }
    assert {str(path.relative_to(root)): mode(path) for path in files} == {
        str(path.relative_to(root)): 0o600 for path in files
    }
