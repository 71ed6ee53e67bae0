"""Tool-integrity pins shared through a real redis-server by two replicas (stores/redis_pins.py).

Each replica here is what a gateway builds: a ToolIntegrity over a SharedPinStore with a local
pin file of its own (separate data folders: only Redis connects them) and a RedisEventBus.
The upstream is a real `Upstream` object whose tool list the test sets, as the catalog would
hand it over after a tools/list.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import mcp_types as types
import pytest

from mcp_nexus.catalog.tool_integrity import ToolIntegrity
from mcp_nexus.catalog.tool_pins import PinStore
from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.stores.redis_events import RedisEventBus
from mcp_nexus.stores.redis_link import RedisLink
from mcp_nexus.stores.redis_pins import SharedPinStore
from mcp_nexus.upstream.upstream import Upstream
from support.polling import eventually
from support.redis_server import RedisServer, redis_server

HONEST = "Adds numbers."
CHANGED = "Adds numbers, and keeps a copy of them."  # changed, yet nothing the scan flags


@dataclass
class Replica:
    integrity: ToolIntegrity
    store: SharedPinStore
    bus: RedisEventBus
    link: RedisLink
    calc: Upstream
    changes: list[float] = field(default_factory=list)  # when another replica's change arrived

    def screen(self, *tools: types.Tool) -> list[str]:
        self.calc.tools = list(tools)
        kept = self.integrity.screen(self.calc, [(f"calc.{t.name}", t) for t in tools])
        return [name for name, _tool in kept]


def _tool(name: str = "add", description: str = HONEST) -> types.Tool:
    schema = {"type": "object", "properties": {"a": {"type": "number"}}}
    return types.Tool(name=name, description=description, input_schema=schema)


def _calc() -> Upstream:
    # The same command on every replica: the same server identity, so the same pins.
    return Upstream(ServerConfig(name="calc", transport="stdio", command=sys.executable, args=["-m", "calc"]))


@asynccontextmanager
async def replica(url: str, prefix: str, folder: Path, *, interval: float = 5.0) -> AsyncIterator[Replica]:
    link = RedisLink(url, timeout=0.5, retry_after=0.3)
    bus = RedisEventBus(link, prefix=prefix, replica=folder.name)
    changes: list[float] = []
    store = SharedPinStore(
        link,
        prefix=prefix,
        local=PinStore(folder / "integrity" / "tool_pins.json"),
        bus=bus,
        on_change=lambda: changes.append(time.monotonic()),
        sync_interval=interval,
    )
    await bus.start()
    await store.start()
    try:
        yield Replica(ToolIntegrity(store), store, bus, link, _calc(), changes)
    finally:
        await store.close()
        await bus.close()
        await link.close()


@asynccontextmanager
async def pair(
    url: str, prefix: str, tmp_path: Path, *, interval: float = 5.0
) -> AsyncIterator[tuple[Replica, Replica]]:
    """Replicas A and B on one Redis, each with its own data folder."""
    async with (
        replica(url, prefix, tmp_path / "a", interval=interval) as a,
        replica(url, prefix, tmp_path / "b", interval=interval) as b,
    ):
        yield a, b


async def test_a_definition_pinned_by_one_replica_is_the_pin_another_compares_against(
    redis: RedisServer, prefix: str, tmp_path: Path
) -> None:
    async with replica(redis.url, prefix, tmp_path / "a") as a:
        assert a.screen(_tool()) == ["calc.add"]
        assert await a.store.sync()
    async with replica(redis.url, prefix, tmp_path / "b") as b:
        # B never saw the honest definition: alone it would pin the changed one at first sight.
        assert b.screen(_tool(description=CHANGED)) == []
        hold = b.integrity.quarantined("calc.add")
        assert hold is not None and hold.reason == "changed" and hold.changed == ["description"]
        assert hold.pinned is not None and hold.pinned["description"] == HONEST
        assert not hold.findings  # held because of the shared pin, not because of the scan
        assert b.store.status()["unpushed"] == 1  # the held digest, pushed next
        assert await b.store.sync() and b.store.status()["unpushed"] == 0


async def test_an_approval_on_one_replica_releases_the_tool_on_the_other_at_once(
    redis: RedisServer, prefix: str, tmp_path: Path
) -> None:
    # A poll every 60 s: what arrives sooner came through the events channel.
    async with pair(redis.url, prefix, tmp_path, interval=60) as (a, b):
        a.screen(_tool())
        await a.store.sync()
        await b.store.sync()
        assert a.screen(_tool(description=CHANGED)) == [] and b.screen(_tool(description=CHANGED)) == []
        await b.store.sync()
        approved_at = time.monotonic()
        assert [hold.tool for hold in b.integrity.approve({"calc": b.calc}, "calc", "add")] == ["add"]
        assert b.screen(_tool(description=CHANGED)) == ["calc.add"]
        await eventually(lambda: a.changes, 3, "replica A told of B's approval")
        assert a.changes[-1] - approved_at < 2
        assert a.screen(_tool(description=CHANGED)) == ["calc.add"]
        assert a.integrity.quarantined("calc.add") is None
        pin = a.store.get("calc", a.store.pins()[0].identity, "add")
        assert pin is not None and pin.approved and pin.definition is not None
        assert pin.definition["description"] == CHANGED
        assert CHANGED in (tmp_path / "a" / "integrity" / "tool_pins.json").read_text()  # the local copy


async def test_two_replicas_first_seeing_different_definitions_agree_on_the_first_written(
    redis: RedisServer, prefix: str, tmp_path: Path
) -> None:
    async with pair(redis.url, prefix, tmp_path) as (a, b):
        assert a.screen(_tool()) == ["calc.add"]
        assert b.screen(_tool(description=CHANGED)) == ["calc.add"]  # first sight here too
        await a.store.sync()
        await b.store.sync()  # B's first-sight pin loses to A's: B adopts it and is told
        assert b.changes
        assert b.screen(_tool(description=CHANGED)) == []
        hold = b.integrity.quarantined("calc.add")
        assert hold is not None and hold.pinned is not None and hold.pinned["description"] == HONEST


async def test_a_tool_renamed_on_another_replica_stays_held(
    redis: RedisServer, prefix: str, tmp_path: Path
) -> None:
    async with pair(redis.url, prefix, tmp_path) as (a, b):
        a.screen(_tool())
        assert a.screen(_tool(description=CHANGED)) == []  # held on A
        await a.store.sync()
        await b.store.sync()
        # B first sees the held definition under a new name (and the old name gone).
        assert b.screen(_tool("add_v2", description=CHANGED)) == []
        hold = b.integrity.quarantined("calc.add_v2")
        assert hold is not None and hold.reason == "renamed" and hold.like == "calc.add"
        # An approval (on A) forgets the held definition everywhere: the name it now has is free.
        a.integrity.approve({"calc": a.calc}, "calc", "add")
        await a.store.sync()
        await b.store.sync()
        assert b.screen(_tool("add_v2", description=CHANGED)) == ["calc.add_v2"]


async def test_a_redis_outage_holds_and_releases_nothing_by_itself(
    tmp_path: Path, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Own redis-server: it is stopped and comes back empty (no persistence), as a restart would."""
    caplog.set_level(logging.WARNING, logger="mcp_nexus.stores.redis_pins")
    with redis_server(tmp_path / "redis") as own:
        async with pair(own.url, prefix, tmp_path, interval=0.3) as (a, b):
            a.screen(_tool(), _tool("sub", "Subtracts numbers."))
            await a.store.sync()
            await b.store.sync()
            assert b.changes  # A's pins reached B
            b.changes.clear()
            own.stop()
            # Down: each replica judges by its copy. What matched still passes; a change is held.
            assert not await b.store.sync()
            assert b.screen(_tool(), _tool("sub", "Subtracts numbers.")) == ["calc.add", "calc.sub"]
            assert a.screen(_tool(description=CHANGED), _tool("sub", "Subtracts numbers.")) == ["calc.sub"]
            assert b.screen(_tool(description=CHANGED), _tool("sub", "Subtracts numbers.")) == ["calc.sub"]
            assert "judging by this replica's copy" in caplog.text
            # An approval on A while Redis is away counts on A at once, and on B only once shared.
            a.integrity.approve({"calc": a.calc}, "calc", "add")
            assert a.screen(_tool(description=CHANGED)) == ["calc.add"]
            await asyncio.sleep(0.8)  # several failed polls on both: nothing changes by itself
            assert b.screen(_tool(description=CHANGED)) == []
            assert not b.changes
            # A replica restarted meanwhile reads its local copy: still held there.
            async with replica(own.url, prefix, tmp_path / "b") as b_restarted:
                assert b_restarted.screen(_tool(description=CHANGED)) == []

            own.start()  # back, and empty: written again from the replicas' copies
            await eventually(lambda: b.changes, 10, "B hears A's approval once Redis is back")
            assert b.screen(_tool(description=CHANGED)) == ["calc.add"]
            assert "shared through redis again" in caplog.text
            # The pins written back are shared again: a third replica compares against them.
            async with replica(own.url, prefix, tmp_path / "c") as c:
                assert c.screen(_tool(description=CHANGED), _tool("sub", "Subtracts twice.")) == ["calc.add"]
