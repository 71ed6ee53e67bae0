"""Backend selection: real probes, clear errors when nothing works, the unsandboxed opt-in."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_nexus.sandbox import (
    BwrapBackend,
    ProbeResult,
    Sandbox,
    SandboxRequest,
    SandboxResult,
    SandboxUnavailableError,
    UnsandboxedBackend,
)
from mcp_nexus.sandbox.backend import SandboxBackend
from mcp_nexus.sandbox.bwrap import NOT_INSTALLED


@pytest.fixture
def fake_bwrap() -> Iterator[Path]:
    """A `bwrap` that fails like one blocked from creating user namespaces (world-executable)."""
    folder = Path(tempfile.mkdtemp(prefix="nexus-fake-bwrap-"))
    script = folder / "bwrap"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--help" ]; then echo "usage: bwrap --disable-userns --size --perms"; exit 0; fi\n'
        'echo "bwrap: setting up uid map: Permission denied" >&2\n'
        "exit 1\n"
    )
    script.chmod(0o755)
    folder.chmod(0o755)
    yield script
    shutil.rmtree(folder)


async def test_the_real_bubblewrap_probe_passes() -> None:
    result = await BwrapBackend().probe()
    assert result.ok, result.reason
    assert "bubblewrap works" in result.reason


async def test_missing_bwrap_gives_an_install_hint(data_dir: Path) -> None:
    box = Sandbox(data_dir, backends=[BwrapBackend(bwrap_path="/nonexistent/bwrap")])
    with pytest.raises(SandboxUnavailableError) as caught:
        await box.run(SandboxRequest("print(1)"))
    assert "apt-get install bubblewrap" in str(caught.value)
    assert caught.value.reasons == {"bubblewrap": NOT_INSTALLED}
    assert "dnf install bubblewrap" in NOT_INSTALLED  # not only Debian's package is named


async def test_default_backends_explain_that_unsandboxed_needs_an_opt_in(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # the default BwrapBackend finds no bwrap
    box = Sandbox(data_dir)
    with pytest.raises(SandboxUnavailableError) as caught:
        await box.run(SandboxRequest("print(1)"))
    message = str(caught.value)
    assert "bubblewrap (bwrap) is not installed" in message
    assert "unsandboxed: not allowed" in message and "opt-in" in message


async def test_bwrap_that_cannot_create_namespaces_is_reported_with_its_error(
    data_dir: Path, fake_bwrap: Path
) -> None:
    box = Sandbox(data_dir, backends=[BwrapBackend(bwrap_path=str(fake_bwrap))])
    status = await box.status()
    assert status.backend is None
    reason = status.probes["bubblewrap"].reason
    assert "setting up uid map: Permission denied" in reason
    assert "user namespaces" in reason
    with pytest.raises(SandboxUnavailableError, match="uid map"):
        await box.run(SandboxRequest("print(1)"))


async def test_system_python_outside_usr_is_refused() -> None:
    result = await BwrapBackend(python_path="/opt/python/bin/python3").probe()
    assert not result.ok and "only sees /usr" in result.reason


async def test_unsandboxed_opt_in_runs_and_says_so(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    box = Sandbox(data_dir, allow_unsandboxed=True, timeout_s=5)
    status = await box.status()
    assert status.backend == "unsandboxed" and not status.sandboxed
    assert not status.probes["bubblewrap"].ok
    result = await box.run(SandboxRequest("print(len(data))", ["devices.json"]))
    assert result.stdout == "2\n"
    assert result.sandboxed is False and result.backend == "unsandboxed"


async def test_unsandboxed_backend_still_enforces_the_timeout_and_cap(data_dir: Path) -> None:
    backend = UnsandboxedBackend()
    timed = await backend.run(
        SandboxRequest("while True: pass"), data_dir=data_dir, timeout_s=1, output_cap_bytes=100
    )
    assert timed.timed_out and not timed.sandboxed
    capped = await backend.run(
        SandboxRequest("print('z' * 5000)"), data_dir=data_dir, timeout_s=5, output_cap_bytes=100
    )
    assert capped.truncated and capped.stdout == "z" * 100


async def test_bubblewrap_is_preferred_over_the_opt_in(data_dir: Path) -> None:
    box = Sandbox(data_dir, allow_unsandboxed=True)
    result = await box.run(SandboxRequest("print('hi')"))
    assert result.backend == "bubblewrap" and result.sandboxed


class CountingBackend:
    """A stand-in backend that counts probes and concurrent runs (for the facade's own logic)."""

    name = "counting"

    def __init__(self) -> None:
        self.probes = 0
        self.running = 0
        self.peak = 0

    async def probe(self) -> ProbeResult:
        self.probes += 1
        return ProbeResult(True, "fine")

    async def run(
        self, request: SandboxRequest, *, data_dir: Path, timeout_s: float, output_cap_bytes: int
    ) -> SandboxResult:
        self.running += 1
        self.peak = max(self.peak, self.running)
        await asyncio.sleep(0.05)
        self.running -= 1
        return SandboxResult("ok\n", "", 0, False, False, self.name, True, 0.05)


def test_counting_backend_satisfies_the_protocol() -> None:
    assert isinstance(CountingBackend(), SandboxBackend)
    assert isinstance(BwrapBackend(), SandboxBackend)


async def test_probe_runs_once_and_concurrency_is_limited(data_dir: Path) -> None:
    backend = CountingBackend()
    box = Sandbox(data_dir, backends=[backend], max_concurrent=2)
    results = await asyncio.gather(*(box.run(SandboxRequest("print(1)")) for _ in range(6)))
    assert all(r.stdout == "ok\n" for r in results)
    assert backend.probes == 1
    assert backend.peak == 2
    box.reset()
    await box.run(SandboxRequest("print(1)"))
    assert backend.probes == 2


async def test_a_crashing_probe_does_not_hide_the_next_backend(data_dir: Path) -> None:
    class Exploding(CountingBackend):
        name = "exploding"

        async def probe(self) -> ProbeResult:
            raise RuntimeError("kaboom")

    box = Sandbox(data_dir, backends=[Exploding(), CountingBackend()])
    status = await box.status()
    assert status.backend == "counting"
    assert "kaboom" in status.probes["exploding"].reason


def test_fake_bwrap_is_really_executable(fake_bwrap: Path) -> None:
    assert fake_bwrap.stat().st_mode & stat.S_IXOTH and os.access(fake_bwrap, os.X_OK)
