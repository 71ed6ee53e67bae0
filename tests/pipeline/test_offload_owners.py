"""The offload folder's owner records: written with the file, shared, listed, removed with it."""

from __future__ import annotations

import os
import time
from pathlib import Path

from mcp_nexus.pipeline.offload_folder import OffloadFolder


def owner_file_name(name: str) -> str:
    return f".{name}.owner"


def test_a_file_is_owned_by_its_writer_and_those_it_is_shared_with(tmp_path: Path) -> None:
    folder = OffloadFolder(tmp_path, max_age=3600, max_bytes=1 << 20)
    name = folder.write(["[1]"], owner="http:alice")
    assert folder.owners(name) == {"http:alice"}
    assert folder.owned_by(name, "http:alice") and not folder.owned_by(name, "http:bob")
    assert folder.share(name, "http:bob") and folder.owned_by(name, "http:bob")
    # the record is on disk: a new folder object (a restart, another gateway) reads the same
    again = OffloadFolder(tmp_path, max_age=3600, max_bytes=1 << 20)
    assert again.owners(name) == {"http:alice", "http:bob"}
    # names that are not offloads, or paths, own nobody
    for other in ("../" + name, "devices.json", owner_file_name(name), "tool_output_x.json"):
        assert again.owners(other) == frozenset()


def test_owned_files_lists_the_owners_newest_first(tmp_path: Path) -> None:
    folder = OffloadFolder(tmp_path, max_age=3600, max_bytes=1 << 20)
    first = folder.write(["a" * 10], owner="stdio:-")
    os.utime(tmp_path / first, (time.time() - 300, time.time() - 300))
    folder.write(["b" * 20], owner="http:bob")
    second = folder.write(["c" * 30], owner="stdio:-")
    listed = folder.owned_files("stdio:-")
    assert [(f.name, f.bytes) for f in listed] == [(second, 30), (first, 10)]
    assert 299 <= listed[1].age_s < 400
    assert folder.owned_files("stdio:-", limit=1)[0].name == second
    assert folder.owned_files("http:carol") == []


def test_retention_removes_the_record_with_its_file(tmp_path: Path) -> None:
    folder = OffloadFolder(tmp_path, max_age=100, max_bytes=1 << 20)
    old = folder.write(["o"], owner="http:alice")
    os.utime(tmp_path / old, (time.time() - 200, time.time() - 200))
    new = folder.write(["n"], owner="http:alice")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([new, owner_file_name(new)])
    assert folder.owners(old) == frozenset() and not folder.share(old, "http:bob")
    # a record left without its file (removed by hand) goes once it is older than a write takes
    (tmp_path / new).unlink()
    os.utime(tmp_path / owner_file_name(new), (time.time() - 120, time.time() - 120))
    latest = folder.write(["l"], owner="http:alice")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([latest, owner_file_name(latest)])
    assert folder.owners(new) == frozenset()
