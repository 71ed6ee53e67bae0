"""Fixtures for the python_sandbox tests: a real bubblewrap sandbox over a private data folder."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from mcp_nexus.sandbox import BwrapBackend, ResourceLimits, Sandbox, SandboxRequest, SandboxResult
from support.polling import eventually_sync

TEST_TIMEOUT_S = 3.0


def _stat(pid: int) -> tuple[str, int]:
    """(state, parent pid) of a process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def _started_elsewhere(pid: int, own_ns: str) -> bool:
    """True when the sandbox `pid` belongs to another live test run (another xdist worker, another
    pytest on this machine): its first ancestor in our pid namespace is a live bwrap whose parent
    is not this process. A leaked process (its bwrap gone, reparented to init or a subreaper)
    belongs to nobody and still counts."""
    seen = 0
    while pid > 1 and seen < 64:
        seen += 1
        try:
            _state, parent = _stat(pid)
            if os.readlink(f"/proc/{parent}/ns/pid") == own_ns:
                name = Path(f"/proc/{parent}/comm").read_text().strip()
                if name != "bwrap":
                    return False
                return _stat(parent)[1] != os.getpid()
        except OSError:
            return False
        pid = parent
    return False


def sandbox_namespace_pids() -> set[int]:
    """Live processes in a pid namespace other than ours: sandboxed ones (ours are never there),
    less those another test run on this machine started and still holds (`_started_elsewhere`).

    Zombies are left out: they are dead, and the sandbox's init, orphaned when bwrap exits,
    waits as one until the host's init reaps it.
    """
    own = os.readlink("/proc/self/ns/pid")
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                foreign = os.readlink(f"/proc/{entry}/ns/pid") != own
                state = _stat(int(entry))[0]
            except OSError:
                continue
            if foreign and state not in ("Z", "X") and not _started_elsewhere(int(entry), own):
                found.add(int(entry))
    return found


def wait_for_no_new_sandbox_processes(before: set[int], within_s: float = 3.0) -> set[int]:
    """The sandbox processes that appeared after `before` and are still alive after `within_s`."""
    with contextlib.suppress(AssertionError):  # what is left is the answer, not a failure here
        eventually_sync(lambda: not sandbox_namespace_pids() - before, within_s, "sandbox processes to end")
    return sandbox_namespace_pids() - before


def snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under `folder` with its mode and content, to prove nothing changed."""
    return {
        str(path.relative_to(folder)): (path.stat().st_mode, path.read_bytes() if path.is_file() else b"")
        for path in sorted(folder.rglob("*"))
    }


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data folder like the offload step creates (0700), holding one small JSON file."""
    folder = tmp_path / "data"
    folder.mkdir(mode=0o700)
    (folder / "devices.json").write_text(json.dumps([{"id": "light.kitchen"}, {"id": "switch.fan"}]))
    return folder


@pytest.fixture
def limits() -> ResourceLimits:
    return ResourceLimits(memory_bytes=256 * 1024 * 1024, tmp_bytes=8 * 1024 * 1024)


@pytest.fixture
def bwrap_backend(limits: ResourceLimits) -> BwrapBackend:
    assert shutil.which("bwrap"), "bubblewrap must be installed for these tests: apt-get install bubblewrap"
    return BwrapBackend(limits=limits)


@pytest.fixture
async def sandbox(data_dir: Path, bwrap_backend: BwrapBackend) -> AsyncIterator[Sandbox]:
    """A Sandbox whose bubblewrap backend passed its real probe."""
    box = Sandbox(data_dir, backends=[bwrap_backend], timeout_s=TEST_TIMEOUT_S)
    status = await box.status()
    assert status.backend == "bubblewrap", status.probes
    yield box


@pytest.fixture
def no_leftover_processes() -> Iterator[None]:
    """Fail the test if any sandboxed process outlives it."""
    before = sandbox_namespace_pids()
    yield
    leftover = wait_for_no_new_sandbox_processes(before)
    assert not leftover, f"sandboxed processes survived the call: {sorted(leftover)}"


async def run_code(
    box: Sandbox, code: str, files: list[str] | None = None, timeout_s: float | None = None
) -> SandboxResult:
    """Run `code` through the facade, with an outer bound so a broken kill cannot hang the suite."""
    return await asyncio.wait_for(box.run(SandboxRequest(code, files), timeout_s=timeout_s), 30)
