"""Health checks against real processes: a frozen server (SIGSTOP) degrades, fails, and recovers."""

from __future__ import annotations

import os
import signal

from lifecycle.faults import document, faulty, text
from mcp_nexus.events import ListChanged
from mcp_nexus.upstream.state import UpstreamState
from support.gateway import running_gateway
from support.polling import eventually

HEALTH = {"interval": 0.1, "timeout": 0.2, "threshold": 3}


async def test_failing_checks_degrade_then_remove_tools_and_recovery_puts_them_back() -> None:
    servers = {"frozen": faulty("frozen", health=HEALTH, auto_restart=False), "other": faulty("other")}
    async with running_gateway(document(servers)) as gw:
        changes: list[str] = []
        gw.events.subscribe(ListChanged, lambda event: changes.append(event.kind))
        upstream = gw.upstreams["frozen"]
        pid = upstream.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        try:
            await eventually(lambda: upstream.state == UpstreamState.DEGRADED, what="DEGRADED")
            assert "frozen.echo" in gw.catalog.tools  # under the threshold it keeps serving
            await eventually(lambda: upstream.state == UpstreamState.ERROR, what="ERROR")
            assert "3 times in a row" in (upstream.last_error or "")
            await eventually(lambda: "frozen.echo" not in gw.catalog.tools, what="tools removed")
            assert "tools" in changes  # list_changed goes downstream
            assert text(await gw.call_tool("other.echo", {"text": "x"})) == "other: x"
        finally:
            os.kill(pid, signal.SIGCONT)
        changes.clear()
        await eventually(lambda: upstream.state == UpstreamState.READY, what="recovery")
        await eventually(lambda: "frozen.echo" in gw.catalog.tools, what="tools back")
        assert "tools" in changes
        assert upstream.pid == pid  # the same process: it recovered, nothing restarted it
        assert text(await gw.call_tool("frozen.echo", {"text": "back"})) == "frozen: back"
        reasons = [c.reason for c in upstream.history]
        assert any("1 of 3" in r for r in reasons) and "health check passed again" in reasons


async def test_an_unhealthy_server_is_restarted_when_auto_restart_is_on() -> None:
    async with running_gateway(document({"frozen": faulty("frozen", health=HEALTH)})) as gw:
        upstream = gw.upstreams["frozen"]
        pid = upstream.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)  # stop() must still get rid of it: SIGKILL works on a stopped process
        await eventually(lambda: upstream.state == UpstreamState.ERROR, what="ERROR")
        await eventually(lambda: upstream.state == UpstreamState.READY, timeout=15, what="restart")
        assert upstream.pid not in (None, pid)
        assert text(await gw.call_tool("frozen.echo", {"text": "new"})) == "frozen: new"
        await eventually(lambda: not _alive(pid), what="the frozen process reaped")


async def test_servers_without_ping_are_checked_with_tools_list() -> None:
    async with running_gateway(document({"noping": faulty("noping", "--no-ping", health=HEALTH)})) as gw:
        supervisor = gw.supervisors["noping"]
        await eventually(lambda: supervisor.health.checks >= 4, what="several checks")
        assert supervisor.health.failures == 0
        assert gw.upstreams["noping"].state == UpstreamState.READY
        assert not supervisor.health._use_ping  # learned after the first "Method not found"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
