"""The attack suite (test_sandbox_attacks.py) again, with the tool channel present in every run.

Every attack there that runs through the `sandbox` fixture runs here through the real `CodeMode`:
descriptor 3 is a live tool channel and the code has `call_tool`, `tools` and `find_tools`. Each
must stay blocked exactly as without the channel. The one attack whose expectation names the
descriptors a run has is replaced by test_channel_attacks.py's
`test_the_channel_is_the_only_descriptor_added` (descriptor 3 is now the channel).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from mcp_nexus.pipeline.call import Caller
from mcp_nexus.sandbox import BwrapBackend, Sandbox, SandboxRequest, SandboxResult

from . import test_sandbox_attacks as suite
from .channel_bench import ToolBench, code_mode
from .conftest import TEST_TIMEOUT_S

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

REPLACED = {"test_no_host_file_descriptor_reaches_the_code"}


class ChannelSandbox(Sandbox):
    """A Sandbox whose runs all go through code mode, so each one has the tool channel."""

    def __init__(self, data_dir: Path, backend: BwrapBackend) -> None:
        super().__init__(data_dir, backends=[backend], timeout_s=TEST_TIMEOUT_S)
        self.bench = ToolBench()
        self.mode = code_mode(self, self.bench)
        self.runs_with_channel = 0

    async def run(self, request: SandboxRequest, *, timeout_s: float | None = None) -> SandboxResult:
        if request.channel_fd is not None:  # code mode's own run, with its channel
            self.runs_with_channel += 1
            return await super().run(request, timeout_s=timeout_s)
        run = await self.mode.run(
            request.code, Caller("stdio", "attacker"), files=request.files, timeout_s=timeout_s
        )
        return run.result


@pytest.fixture
async def sandbox(data_dir: Path, bwrap_backend: BwrapBackend) -> AsyncIterator[Sandbox]:
    box = ChannelSandbox(data_dir, bwrap_backend)
    status = await box.status()
    assert status.backend == "bubblewrap", status.probes
    yield box
    assert box.runs_with_channel, "no run of this attack had the tool channel"


@pytest.fixture
def loopback_listener() -> Iterator[object]:
    yield from suite.loopback_listener.__wrapped__()  # type: ignore[attr-defined]


async def test_the_channel_is_there_in_these_runs(sandbox: Sandbox) -> None:
    result = await sandbox.run(SandboxRequest("print(tools.t.echo(ok=1), callable(call_tool))"))
    assert result.stdout.strip() == "{'ok': 1} True", result.stderr


for _name, _test in vars(suite).items():
    if (
        _name.startswith("test_")
        and _name not in REPLACED
        and "sandbox" in inspect.signature(_test).parameters
    ):
        globals()[_name] = _test
