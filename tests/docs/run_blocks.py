"""Run one document's runnable blocks, in order, in its workspace; return what failed.

config   written to its file, ports replaced; loaded by the gateway's own loader (`load_config`,
         what `nexus serve` runs); `start`: run in a gateway, every server must be READY;
         `serve`: the gateway the document's shell blocks talk to is `nexus serve --config FILE`.
shell    one bash script, `set -euo pipefail`: any failing command fails the block.
console  the `$ ` lines run as one bash script (the rest is sample output, not compared: ids,
         times and sizes change); each command must exit 0 (`cmd; echo "exit $?"` shows a failure
         on purpose and exits 0). After a line ending in `&` (a server started in the
         background) the script waits until a server answers on one of the document's ports,
         as a person waits for its banner.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from docs.blocks import Block
from docs.workspace import DEFAULT_PORT, Workspace
from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import load_config
from mcp_nexus.config.schema import NexusConfig
from mcp_nexus.upstream.state import UpstreamState
from support.gateway import running

START_TIMEOUT_S = 30.0
_BACKGROUND = re.compile(r"&\s*(#.*)?$")  # `cmd &`, `cmd &   # a comment`

_WAIT_FOR_SERVER = """
__docs_wait_for_server() {  # a server just started in the background: wait until it answers
  for _ in $(seq 1 300); do
    for port in $__DOCS_PORTS; do
      curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && return 0
    done
    sleep 0.2
  done
  echo "docs: no server answered on ports $__DOCS_PORTS within 60 s" >&2; exit 1
}
__docs_failed() { echo "docs: the command of line $1 failed (exit $2)" >&2; exit 1; }
"""


@contextmanager
def _environment(workspace: Workspace, extra: dict[str, str]) -> Iterator[None]:
    """The workspace's PATH, folder and variables for an in-process gateway (its stdio children inherit them)."""
    saved_env, saved_cwd = dict(os.environ), Path.cwd()
    os.environ.update({"PATH": workspace.env["PATH"], **extra})
    os.chdir(workspace.folder)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


async def _start(config: NexusConfig) -> list[str]:
    async with asyncio.timeout(START_TIMEOUT_S), running(config) as runtime:
        return [
            f"{name}: {supervisor.upstream.state} ({supervisor.upstream.last_error or 'no error'})"
            for name, supervisor in runtime.gateway.supervisors.items()
            if supervisor.upstream.config.enabled and supervisor.upstream.state != UpstreamState.READY
        ]


def run_config(block: Block, workspace: Workspace) -> str | None:
    text = workspace.text_of(block)
    if "fragment" in block.options:
        text = "{" + text + "}"
    suffix = ".yaml" if block.language in ("yaml", "yml") else ".json"
    path = workspace.folder / (block.file or f"block-{block.line}{suffix}")
    path.write_text(text, encoding="utf-8")
    for name in block.touch:
        (workspace.folder / name).touch()
    try:
        config, _warnings = load_config(path, {**workspace.env, **block.env})
    except ConfigError as exc:
        return f"the config loader refused it:\n{exc}"
    if "start" in block.options:
        with _environment(workspace, block.env):
            not_ready = asyncio.run(_start(config))
        if not_ready:
            return "servers not READY once started:\n" + "\n".join(not_ready)
    return None


def console_script(text: str) -> str:
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("$ "):
            continue
        command = line[2:].rstrip()
        if _BACKGROUND.search(command):
            lines.append(f"{command}\n__docs_wait_for_server")
        else:
            # the status on a line of its own: a trailing `# comment` on the command cannot hide it
            lines.append(
                f'{command}\n__docs_status=$?; [ "$__docs_status" = 0 ] || __docs_failed {number} "$__docs_status"'
            )
    return "\n".join(lines) + "\n"


def run_commands(block: Block, workspace: Workspace) -> str | None:
    text = workspace.text_of(block)
    if block.kind == "shell":
        script = "set -euo pipefail\n" + text
    else:
        others = [port for docs, port in workspace.ports.items() if docs != DEFAULT_PORT]
        script = f"__DOCS_PORTS='{' '.join(map(str, others))}'\n{_WAIT_FOR_SERVER}\n{console_script(text)}"
    done = workspace.run_bash(script, block)
    if done.returncode != 0:
        return f"exit {done.returncode}; output:\n{done.stdout[-3000:]}"
    return None


def run_document(workspace: Workspace) -> list[str]:
    """Every runnable block of the document, in order; one line per failure, naming the block."""
    failures = []
    serve: Block | None = None
    for block in workspace.blocks:
        if not block.runnable:
            continue
        if block.kind == "config":
            problem = run_config(block, workspace)
            if "serve" in block.options:
                serve = block
        else:
            if block.kind == "shell":
                workspace.start_gateway(serve)
            problem = run_commands(block, workspace)
        if problem:
            failures.append(f"{block.where} ({block.kind}): {problem}")
    return failures
