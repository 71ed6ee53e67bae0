"""The built-in `python_sandbox` tool: Python over offloaded results, in the sandbox.

Listed whenever offload is on. When no sandbox backend works it stays listed and each call
answers with an error naming why (e.g. bubblewrap is not installed), so the model learns
why its plan cannot work instead of the tool silently missing. Its output is a tool result
like any other: the offload and size steps apply to it.

At most `sandbox_concurrency` runs execute at once; a call that had to wait for a slot says
so (a note line and `queued_s` in `_meta`), so a slow answer is not mistaken for slow code.

Which files a call mounts (those it names, only the caller's own): sandbox_files.py.

With code mode (`run_code`, pipeline/code_mode.py) the code can also call the tools its caller
sees; what reaches the model is still only what the code prints, plus what a top-level `return`
gives (as JSON unless it is a string), and that answer is offloaded like any large result.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import mcp_types as types

from mcp_nexus.catalog.code_form import code_path
from mcp_nexus.catalog.local_tools import LocalTool
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.code_run import CodeRun, RunCode
from mcp_nexus.pipeline.offload_folder import OffloadFolder
from mcp_nexus.pipeline.sandbox_files import FileChoiceError, choose_files, unlisted_named_files
from mcp_nexus.sandbox import Sandbox, SandboxError, SandboxRequest, SandboxResult, SandboxUnavailableError

SANDBOX_TOOL_NAME = "python_sandbox"
SANDBOX_META_KEY = "nexus/sandbox"
_STDERR_TAIL_CHARS = 2000

DESCRIPTION = """Run Python over files the gateway saved (large tool results, named tool_output_<uuid>.json).
Name the files to read in `files` (or leave `files` out and write their names in the code);
they are mounted read-only under /data, the code's working folder. With one file, `data`
holds its parsed JSON (its text if it is not JSON); `files` maps each name to its content;
`json` is imported. Print the answer: stdout is returned (at most 64 KB).
Example: code="print([x for x in data if 'light' in x['id']])", files=["tool_output_<uuid>.json"].
No network, no writes to /data, a fresh /tmp, {timeout:g} s wall-clock limit."""

CODE_MODE_LINES = """The code can call tools: call_tool("<tool name>", {{...}}) or {stub} return the tool's data (errors raise ToolError); find_tools("what it should do") searches them; `return <value>` also answers.
Example: code="lights = {stub_example}; return [l['id'] for l in lights if l['state'] == 'on']"."""


def code_mode_lines(separator: str = ".") -> str:
    """How to call tools from code, in two lines; the example names a tool as the stubs and
    find_tools do (catalog/code_form.py)."""
    example = "tools." + ".".join(code_path(f"home{separator}list_lights", separator)) + "()"
    return CODE_MODE_LINES.format(stub="tools.<namespace>.<tool>(**arguments)", stub_example=example)


INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "description": "Python source; print the answer to stdout."},
        "files": {
            "type": "array",
            "items": {"type": "string"},
            "description": (
                "Names of files from SYSTEM_ALERT messages. Optional: when left out, the file "
                "names written in the code are used."
            ),
        },
    },
    # `code` is checked by the handler, not the schema: a call without it gets a tool error that
    # explains what to pass (a model can act on that), rather than a protocol error.
    "additionalProperties": False,
}


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def returned_text(value: Any) -> str:
    """A top-level `return` value as the model reads it: a string as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def sandbox_tool(
    sandbox: Sandbox, folder: OffloadFolder, run_code: RunCode | None = None, separator: str = "."
) -> LocalTool:
    """The python_sandbox tool; with `run_code` (code mode) its code can call tools."""
    description = DESCRIPTION.format(timeout=sandbox.timeout_s)
    if run_code is not None:
        description += "\n" + code_mode_lines(separator)
    tool = types.Tool(
        name=SANDBOX_TOOL_NAME,
        description=description,
        input_schema=INPUT_SCHEMA,
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )

    async def run(arguments: dict[str, Any], caller: Caller | None = None) -> types.CallToolResult:
        # No caller (a direct call, not through the gateway): it owns no file.
        owner = caller.identity if caller is not None else ""
        code = arguments.get("code", "")
        try:
            await asyncio.to_thread(folder.ensure)
            files = await asyncio.to_thread(choose_files, folder, owner, code, arguments.get("files"))
            if run_code is not None:
                run = await run_code(code, files, caller if caller is not None else Caller("api"))
            else:
                run = CodeRun(await sandbox.run(SandboxRequest(code, files)))
        except FileChoiceError as exc:
            return _error(str(exc))
        except SandboxUnavailableError as exc:
            return _error(f"python_sandbox cannot run code here: {exc}")
        except SandboxError as exc:
            return _error(f"python_sandbox: {exc}")
        except OSError as exc:
            return _error(
                f"python_sandbox: the data folder {folder.path} is not usable: {exc.strerror or exc}"
            )
        return sandbox_answer(run, sandbox, code, arguments.get("files"))

    return LocalTool(tool, run)


def sandbox_answer(run: CodeRun, sandbox: Sandbox, code: str = "", files: Any = None) -> types.CallToolResult:
    """What the model gets of a run: its output (and returned value), with notes on how it ended.

    Public for other tools that run code (a chain with a Python body) and answer the same way."""
    result: SandboxResult = run.result
    text = result.stdout
    if run.returned and run.value is not None:
        text += ("\n" if text and not text.endswith("\n") else "") + returned_text(run.value)
    failed = False
    if result.timed_out:
        failed = True
        text += f"\n[python_sandbox: stopped after {sandbox.timeout_s:g} s (setting sandbox_timeout)]"
    elif result.exit_code != 0:
        failed = True
        text += f"\n[python_sandbox: exit code {result.exit_code}]\n{result.stderr[-_STDERR_TAIL_CHARS:]}"
        if "MemoryError" in result.stderr[-_STDERR_TAIL_CHARS:]:
            text += f"\n[python_sandbox: memory is limited to {sandbox.limits.memory_bytes} bytes (setting sandbox_memory)]"
        left_out = unlisted_named_files(code, files)
        if left_out:
            text += f"\n[python_sandbox: the code names {', '.join(left_out)}, not in `files`: add it there]"
    if result.truncated:
        text += f"\n[python_sandbox: output cut at {sandbox.output_cap_bytes} bytes (setting sandbox_output_bytes)]"
    if result.queued_s > 0:
        text += (
            f"\n[python_sandbox: waited {result.queued_s:.1f} s for a free slot "
            f"({sandbox.max_concurrent} runs at once, setting sandbox_concurrency)]"
        )
    if not result.sandboxed:
        text = "[UNSANDBOXED: this code ran without isolation (allow_unsandboxed is on)]\n" + text
    meta = {
        SANDBOX_META_KEY: {
            "backend": result.backend,
            "sandboxed": result.sandboxed,
            "exit_code": result.exit_code,
            "duration_s": round(result.duration_s, 3),
            "queued_s": round(result.queued_s, 3),
            "tool_calls": run.tool_calls,
        }
    }
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], is_error=failed, _meta=meta
    )
