"""Fixtures for the cortex tests (helpers live in cortex_support.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cortex_support import NEXUS, child_env

from support.polling import eventually_sync
from support.ports import free_port
from support.processes import port_open


@pytest.fixture
def knowledge_dir(tmp_path: Path) -> Path:
    return tmp_path / "knowledge"


@pytest.fixture
def http_server(knowledge_dir: Path, tmp_path: Path) -> Iterator[str]:
    """`nexus cortex serve --http` on a free loopback port; yields its MCP URL."""
    port = free_port()
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [str(NEXUS), "cortex", "serve", "--http", "--host", "127.0.0.1", "--port", str(port),
             "--dir", str(knowledge_dir)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=child_env(),
        )  # fmt: skip
        try:

            def listening() -> bool:
                assert process.poll() is None, log_path.read_text()
                return port_open(port)

            eventually_sync(listening, 30, "the HTTP server to start", interval=0.1)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
