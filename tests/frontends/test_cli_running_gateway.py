"""`nexus tools`, `nexus call` and `nexus servers` talk to the running gateway (--url / NEXUS_URL)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lifecycle.faults import document, faulty
from support.processes import VENV_BIN, child_env, free_port, running, wait_for_http


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("cli-running")
    port = free_port()
    config = tmp / "nexus.json"
    doc = document({"f": faulty("f")}, port=port, offload_dir=str(tmp / "offload"))
    doc["gateway"]["include_builtins"] = True  # Cortex: descriptions with [brackets]
    config.write_text(json.dumps(doc))
    args = [str(VENV_BIN / "nexus"), "serve", "--wait-ready", "--no-watch", "-c", str(config)]
    with running(args, env=child_env(NEXUS_DATA_DIR=str(tmp / "data")), log=tmp / "gateway.log") as proc:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
        yield f"http://127.0.0.1:{port}"


def nexus(*args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = child_env(COLUMNS="200", **({"NEXUS_URL": url} if url else {}))
    return subprocess.run(
        [str(VENV_BIN / "nexus"), *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_tools_and_call_use_the_running_gateway(base_url: str) -> None:
    listed = nexus("tools", "--json", "--url", base_url)
    assert listed.returncode == 0, listed.stderr
    assert "f.echo" in {row["name"] for row in json.loads(listed.stdout)}
    called = nexus("call", "f.echo", "--arg", "text=hi", url=base_url)  # NEXUS_URL
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["content"][0]["text"] == "f: hi"


def test_call_errors_come_from_the_running_gateway(base_url: str) -> None:
    done = nexus("call", "f.ecko", "--url", base_url)
    assert done.returncode == 1
    assert "error -32602" in done.stderr and "did you mean f.echo" in done.stderr


def test_no_running_gateway_says_what_to_do(tmp_path: Path) -> None:
    done = nexus("tools", "--url", f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 1
    assert "no gateway answers" in done.stderr and "--config" in done.stderr


def test_tables_show_brackets_as_written(base_url: str) -> None:
    """Rich markup must not eat text like `[entity_exists]` (Cortex's add_entity description)."""
    done = nexus("tools", "--url", base_url)
    assert done.returncode == 0, done.stderr
    assert "[entity_exists]" in done.stdout
