"""Clear errors for tools whose server is down, and for names nobody offers."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lifecycle.faults import document, faulty
from mcp_nexus.errors import UnavailableError, UnknownToolError
from support.gateway import running_gateway
from support.polling import eventually
from support.processes import VENV_BIN, child_env


async def test_a_crashed_servers_tool_is_unavailable_naming_server_state_and_retry() -> None:
    no_restart = {"backoff_min": 5, "backoff_max": 5, "max_attempts": 3, "reset_after": 1}
    async with running_gateway(document({"f": faulty("f", restart=no_restart)})) as gw:
        with pytest.raises(UnavailableError):
            await gw.call_tool("f.crash", {"code": 3})
        await eventually(lambda: gw.upstreams["f"].next_attempt_at is not None, what="a planned restart")
        with pytest.raises(UnavailableError) as caught:
            await gw.call_tool("f.echo", {"text": "x"})
        message = caught.value.message
        assert caught.value.code == -32003
        assert "'f'" in message and ("CRASHED" in message or "ERROR" in message) and "code 3" in message
        assert "tried again in" in message
        assert caught.value.data["server"] == "f"


async def test_a_stopped_servers_tool_names_the_state() -> None:
    async with running_gateway(document({"f": faulty("f")})) as gw:
        await gw.servers.stop("f")
        with pytest.raises(UnavailableError) as caught:
            await gw.call_tool("f.echo", {"text": "x"})
        assert "'f'" in caught.value.message and "STOPPED" in caught.value.message


async def test_an_unknown_tool_is_invalid_params_with_the_closest_names() -> None:
    async with running_gateway(document({"f": faulty("f")})) as gw:
        with pytest.raises(UnknownToolError) as caught:
            await gw.call_tool("f.ecko", {})
        assert caught.value.code == -32602
        assert "did you mean f.echo" in caught.value.message


def test_nexus_call_shows_the_same_errors(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(document({"f": faulty("f")})))
    done = subprocess.run(
        [str(VENV_BIN / "nexus"), "call", "f.ecko", "--config", str(path)],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
    )
    assert done.returncode == 1
    assert "error -32602" in done.stderr and "did you mean f.echo" in done.stderr
