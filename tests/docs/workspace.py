"""Where one document's runnable blocks run: a folder that looks like a checkout, its ports, its gateway.

The folder holds symlinks to the repository's `.venv`, `tests`, `bench`, `docs` and `scripts`,
so commands written for the repository root (`.venv/bin/nexus ...`, `tests/support/...`) run
as written, while every file a block writes (`nexus.yaml`, `saved.json`) lands in the
temporary folder. `PATH` starts with the venv's bin (where `pip install` puts `nexus` and
`mcp-server-time`), Nexus's data folder is inside the temporary folder, and `NEXUS_URL` is
the document's gateway.

The example ports of the docs (8700-8799: 8787 the default, 8799, ...) are replaced in every
runnable block of a document by free ports, one per number, the same in all its blocks: tests
may bind no fixed port. That is the only change made to a block's text.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx2

from docs.blocks import DOC_PORT, Block, ports_in
from support.polling import eventually_sync
from support.processes import ROOT, VENV_BIN, free_port, running, wait_for_http

DEFAULT_PORT = 8787
LINKED = (".venv", "tests", "bench", "docs", "scripts")
BLOCK_TIMEOUT_S = 60.0
STARTING_STATES = ("CONNECTING",)


class Workspace:
    def __init__(self, folder: Path, blocks: list[Block], stack: ExitStack) -> None:
        self.folder = folder
        self.blocks = blocks
        self._stack = stack
        for name in LINKED:
            (folder / name).symlink_to(ROOT / name)
        self.ports = {port: free_port() for port in {DEFAULT_PORT, *ports_in(blocks)}}
        self.gateway_url: str | None = None
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("NEXUS_") and k != "PYTHONPATH"}
        self.env.update(
            PATH=os.pathsep.join([str(VENV_BIN), self.env.get("PATH", "")]),
            NEXUS_DATA_DIR=str(folder / "data"),
            NEXUS_URL=f"http://127.0.0.1:{self.ports[DEFAULT_PORT]}",
        )

    def text_of(self, block: Block) -> str:
        """The block as written, its example ports replaced by this workspace's free ports."""
        return DOC_PORT.sub(lambda m: str(self.ports.get(int(m.group(0)), m.group(0))), block.text)

    # -- the document's gateway -------------------------------------------------------------

    def start_gateway(self, config: Block | None) -> str:
        """`nexus serve` as the docs say (with the saved config, when there is one), on 8787's stand-in."""
        if self.gateway_url is not None:
            return self.gateway_url
        port = self.ports[DEFAULT_PORT]
        args = [str(VENV_BIN / "nexus"), "serve", "--port", str(port), "--no-watch"]
        env = dict(self.env)
        if config is not None:
            assert config.file is not None
            args[2:2] = ["--config", config.file]
            env.update(config.env)
        log = self.folder / "gateway.log"
        proc = self._stack.enter_context(running(args, env=env, log=log, cwd=self.folder))
        url = f"http://127.0.0.1:{port}"
        wait_for_http(url + "/api/servers", timeout=60, proc=proc)

        def settled() -> bool:  # every server READY or failed: what `make run` shows a person
            rows = httpx2.get(url + "/api/servers", timeout=10).json()["servers"]
            return all(row["state"] not in STARTING_STATES for row in rows)

        eventually_sync(settled, 60, "the document's gateway to settle", interval=0.2)
        self.gateway_url = url
        return url

    # -- commands ---------------------------------------------------------------------------

    def run_bash(self, script: str, block: Block) -> subprocess.CompletedProcess[str]:
        """Run a script in the workspace; its whole process group (servers it started) ends with it."""
        path = self.folder / f"block-{block.line}.sh"
        path.write_text(script, encoding="utf-8")
        log = self.folder / f"block-{block.line}.log"
        timed_out = False
        with running(["bash", str(path)], env=self.env, log=log, cwd=self.folder) as proc:
            try:
                proc.wait(timeout=BLOCK_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                timed_out = True
        output = log.read_text(encoding="utf-8", errors="replace")
        if timed_out:
            output += f"\n(still running after {BLOCK_TIMEOUT_S:g} s: stopped)"
        return subprocess.CompletedProcess(
            ["bash", str(path)], -1 if timed_out else proc.returncode, output, ""
        )


@contextmanager
def workspace(folder: Path, blocks: list[Block]) -> Iterator[Workspace]:
    with ExitStack() as stack:
        yield Workspace(folder, blocks, stack)
