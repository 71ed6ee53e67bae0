"""Code mode: Python in python_sandbox that calls the gateway's tools, as the caller that runs it.

`CodeMode.run(code, caller, inputs=..., files=...)` is the one way to run such code: the
python_sandbox tool uses it, and so can anything else that has a caller (a chain with a Python
body). Each run gets a fresh socketpair: one end is inherited by the sandboxed process as its
descriptor 3 (its only way out: the sandbox still has no network and sees no host files beyond
those given), the other is served by a `ToolChannel` (code_channel.py) for the run's length.

Every tool call the code makes runs through the gateway's whole pipeline as `caller` (validation,
cache, rate limits, timeouts, retries, fallback, metrics, tracing), marked `via="sandbox"`.
A run cannot start another run: python_sandbox named on the channel is refused there, and any
other way back in (a chain with a Python body, a tool that runs code) finds this run in the
task's context and is refused here.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import socket
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.catalog.index import ToolIndex
from mcp_nexus.config.schema import GatewaySettings, NexusConfig
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.code_channel import NO_RESULT, CallThrough, ChannelLimits, ToolChannel, ToolReach
from mcp_nexus.pipeline.code_run import CodeRun
from mcp_nexus.pipeline.governance import Governance
from mcp_nexus.pipeline.sandbox_tool import SANDBOX_TOOL_NAME, sandbox_tool
from mcp_nexus.sandbox import Sandbox, SandboxError, SandboxRequest

# A run in progress in this task (inner calls are awaited in tasks created inside it, which copy it).
_RUNNING: contextvars.ContextVar[bool] = contextvars.ContextVar("nexus_code_run", default=False)
_CHANNEL_DRAIN_S = 0.2
"""After the process ended, how long the channel may finish a request it already read."""


class NestedRunError(SandboxError):
    """Code running in python_sandbox reached the code runner again (directly or through a tool)."""


def inside_code_run() -> bool:
    """True while the current task serves a code-mode run's tool calls."""
    return _RUNNING.get()


class CodeMode:
    """Runs Python with the tool channel for a caller; see the module's docstring."""

    def __init__(
        self,
        sandbox: Sandbox,
        reach: ToolReach,
        settings: Callable[[], GatewaySettings],
        prepare: Callable[[], object] | None = None,
    ) -> None:
        """`prepare` (blocking, run in a thread before each run) makes the sandbox's data folder
        exist: the offload folder's `ensure`, since a run may come before any result was offloaded."""
        self.sandbox = sandbox
        self.reach = reach
        self.settings = settings  # read per run: a reload's new bounds apply to the next run
        self.prepare = prepare

    def limits(self) -> ChannelLimits:
        settings = self.settings()
        return ChannelLimits(
            tool_calls=settings.sandbox_tool_calls,
            answer_bytes=settings.sandbox_answer_bytes,
            request_bytes=settings.sandbox_request_bytes,
        )

    async def run(
        self,
        code: str,
        caller: Caller,
        *,
        inputs: Mapping[str, Any] | None = None,
        files: Sequence[str] | None = None,
        timeout_s: float | None = None,
    ) -> CodeRun:
        """Run `code` in the sandbox for `caller`; the code finds `inputs` as `input`, and `files`
        (bare names of the caller's offloaded files, already checked by the caller of this) under /data.
        `timeout_s`: the run's wall-clock limit when not the sandbox's own (`sandbox_timeout`).

        Returns the run whatever the code did (its failures are in `result`: exit code, stderr,
        timed out). Raises SandboxInputError for a bad request, SandboxUnavailableError when no
        sandbox works here, NestedRunError when called from inside a run.
        """
        if _RUNNING.get():
            raise NestedRunError(
                f"{SANDBOX_TOOL_NAME} code cannot start another {SANDBOX_TOOL_NAME} run (directly, "
                "through call_tool or through a tool that runs code): do the work in this code instead"
            )
        if self.prepare is not None:
            await asyncio.to_thread(self.prepare)
        channel = ToolChannel(self.reach, caller, self.limits(), inputs)
        ours, theirs = socket.socketpair()
        token = _RUNNING.set(True)
        try:
            ours.setblocking(False)
            serving = asyncio.create_task(channel.serve(ours))  # copies the context: inner calls see the run
            try:
                result = await self.sandbox.run(
                    SandboxRequest(code, list(files) if files is not None else None, theirs.fileno()),
                    timeout_s=timeout_s,
                )
            finally:
                theirs.close()
                await _finish(serving)
        finally:
            _RUNNING.reset(token)
            ours.close()
        returned = channel.result is not NO_RESULT
        return CodeRun(
            result=result,
            value=channel.result if returned else None,
            returned=returned,
            tool_calls=channel.tool_calls,
        )


async def _finish(serving: asyncio.Task[None]) -> None:
    """Let the channel end by itself (the code's end is closed), else stop it: nobody is listening."""
    done, _ = await asyncio.wait({serving}, timeout=_CHANNEL_DRAIN_S)
    if not done:
        serving.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await serving


def serve_code_mode(
    governance: Governance,
    catalog: Catalog,
    index: ToolIndex,
    current: Callable[[], NexusConfig],
    call: CallThrough,
) -> CodeMode | None:
    """Code mode for the gateway whose parts these are, and python_sandbox served with it (in place
    of the plain one governance built); None when offload, hence python_sandbox, is off."""
    sandbox, offloader = governance.sandbox, governance.offloader
    if sandbox is None or offloader is None:
        return None
    reach = ToolReach(
        call=call,
        tools=lambda: catalog.tool_list,
        search=lambda query, limit: index.search(query, None, limit),
        read_offloaded=offloader.folder.read_text,
        separator=lambda: catalog.separator,
    )
    mode = CodeMode(sandbox, reach, lambda: current().gateway, offloader.folder.ensure)

    async def run_for_tool(code: str, files: Sequence[str] | None, caller: Caller) -> CodeRun:
        return await mode.run(code, caller, files=files)

    catalog.local_tools[SANDBOX_TOOL_NAME] = sandbox_tool(sandbox, offloader.folder, run_for_tool)
    governance.local_tools[:] = [
        catalog.local_tools[SANDBOX_TOOL_NAME] if tool.name == SANDBOX_TOOL_NAME else tool
        for tool in governance.local_tools
    ]
    return mode
