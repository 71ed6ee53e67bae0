"""What one code-mode run produced: the sandbox's result, the code's returned value, its tool calls.

Plain data shared by the runner (code_mode.py) and the tools that present a run (python_sandbox,
code chains), so neither has to import the other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_nexus.pipeline.call import Caller
from mcp_nexus.sandbox import SandboxResult


@dataclass(frozen=True)
class CodeRun:
    """One run of Python with the tool channel.

    `result`: the process's outcome (stdout, stderr, exit code, timed out, truncated, backend);
    `value`: what a top-level `return` gave (`returned` says whether there was one: None is a
    value); `tool_calls`: calls and searches the code made through the channel.
    """

    result: SandboxResult
    value: Any = None
    returned: bool = False
    tool_calls: int = 0

    @property
    def ok(self) -> bool:
        return self.result.ok


RunCode = Callable[[str, Sequence[str] | None, Caller], Awaitable[CodeRun]]
"""`(code, files, caller)`: how python_sandbox runs its code with the tool channel."""
