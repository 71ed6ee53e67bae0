"""The cache through a real gateway: TTLs per level, hits and misses, merging, invalidation, clearing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2
import pytest
from starlette.applications import Starlette
from typer.testing import CliRunner

from mcp_nexus.cli.cache import app as cache_cli
from mcp_nexus.frontends.admin.cache import cache_routes
from mcp_nexus.pipeline.call import Caller
from support.gateway import running_gateway
from support.governance_gateway import document, embedded, stdio, text
from support.polling import eventually


def cached_servers() -> dict[str, object]:
    return {
        "gov": embedded(
            cache_ttl=60,
            rate_limit=None,
            tool_config={
                "stamp_args": {"cache_ttl": 0.3},
                "fail": {"cache_ttl": 60},
                "counts": {"cache_ttl": 0},
            },
        ),
        "plain": embedded("plain", rate_limit=None),  # no cache_ttl: the global default 0
    }


async def test_ttl_levels_hits_misses_and_counters(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, cached_servers())) as gw:
        first = await gw.call_tool("gov.stamp", {"key": "k"})
        again = await gw.call_tool("gov.stamp", {"key": "k"})
        other = await gw.call_tool("gov.stamp", {"key": "other"})
        assert text(first) == text(again) == "gov:k:1" and text(other) == "gov:other:2"
        assert again.meta and again.meta["nexus/cache"] == "hit"
        # global default 0: never cached
        assert text(await gw.call_tool("plain.stamp", {"key": "k"})) == "plain:k:1"
        assert text(await gw.call_tool("plain.stamp", {"key": "k"})) == "plain:k:2"
        # the tool's own TTL (0.3 s) beats the server's 60 s
        assert text(await gw.call_tool("gov.stamp_args", {"a": "x"})) == "gov:a=x:b=:1"
        assert text(await gw.call_tool("gov.stamp_args", {"a": "x"})) == "gov:a=x:b=:1"
        await asyncio.sleep(0.4)
        assert text(await gw.call_tool("gov.stamp_args", {"a": "x"})) == "gov:a=x:b=:2"
        counters = gw.governance.cache.counters
        assert (counters["gov.stamp"].hits, counters["gov.stamp"].misses) == (1, 2)
        assert (counters["gov.stamp_args"].hits, counters["gov.stamp_args"].misses) == (1, 2)
        assert "plain.stamp" not in counters


async def test_argument_order_shares_an_entry_and_collisions_do_not(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, cached_servers())) as gw:
        ab = await gw.call_tool("gov.stamp_args", {"a": "1", "b": "2"})
        ba = await gw.call_tool("gov.stamp_args", {"b": "2", "a": "1"})
        assert text(ab) == text(ba) == "gov:a=1:b=2:1"
        # "a=1,b=2" joined naively would equal a="1,b=2": the cache must still call the server
        glued = await gw.call_tool("gov.stamp_args", {"a": "1,b=2"})
        assert text(glued) == "gov:a=1,b=2:b=:2"


async def test_error_results_are_never_cached(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, cached_servers())) as gw:
        for _ in range(3):
            result = await gw.call_tool("gov.fail", {"reason": "nope"})
            assert result.is_error and "nope" in text(result)
        assert gw.governance.cache.counters["gov.fail"].misses == 3
        assert gw.governance.cache.store.stats().entries == 0


async def test_identical_calls_in_flight_make_one_upstream_call(tmp_path: Path) -> None:
    servers = {"gov": embedded(cache_ttl=60, rate_limit=None)}
    async with running_gateway(document(tmp_path, servers)) as gw:
        results = await asyncio.gather(
            *(gw.call_tool("gov.slow_stamp", {"key": "same", "delay": 0.3}) for _ in range(5)),
            gw.call_tool("gov.slow_stamp", {"key": "different", "delay": 0.3}),
        )
        texts = [text(r) for r in results]
        assert len(set(texts[:5])) == 1  # one answer shared by the five
        assert texts[5] != texts[0]
        counters = gw.governance.cache.counters["gov.slow_stamp"]
        assert (counters.misses, counters.merged) == (2, 4)


async def test_cache_is_shared_across_frontends_and_bounded(tmp_path: Path) -> None:
    doc = document(tmp_path, {"gov": embedded(cache_ttl=60, rate_limit=None)}, cache_max_entries=3)
    async with running_gateway(doc) as gw:
        await gw.call_tool("gov.stamp", {"key": "shared"}, caller=Caller("http"))
        hit = await gw.call_tool("gov.stamp", {"key": "shared"}, caller=Caller("stdio"))
        assert hit.meta and hit.meta["nexus/cache"] == "hit"
        for i in range(5):
            await gw.call_tool("gov.stamp", {"key": str(i)})
        stats = gw.governance.cache.store.stats()
        assert stats.entries == 3 and stats.evictions == 3


async def test_server_restart_invalidates_its_entries(tmp_path: Path) -> None:
    servers = {"gov": stdio("gov", cache_ttl=60, rate_limit=None), "keep": embedded("keep", cache_ttl=60)}
    async with running_gateway(document(tmp_path, servers)) as gw:
        assert text(await gw.call_tool("gov.stamp", {"key": "k"})) == "gov:k:1"
        assert text(await gw.call_tool("keep.stamp", {"key": "k"})) == "keep:k:1"
        upstream = gw.upstreams["gov"]
        await upstream.stop()
        await upstream.start()
        # the catalog is rebuilt on the next loop turn
        await eventually(
            lambda: "gov.stamp" in gw.catalog.tools, timeout=5, what="gov.stamp back in the catalog"
        )
        # a fresh process counts from 1 again: the old answer was not served
        assert text(await gw.call_tool("gov.stamp", {"key": "k"})) == "gov:k:1"
        assert gw.governance.cache.counters["gov.stamp"].misses == 2
        hit = await gw.call_tool("keep.stamp", {"key": "k"})
        assert hit.meta and hit.meta["nexus/cache"] == "hit"  # other servers keep theirs


async def test_admin_endpoint_and_cli_clear_the_cache(tmp_path: Path, unused_tcp_port: int) -> None:
    import uvicorn

    async with running_gateway(document(tmp_path, {"gov": embedded(cache_ttl=60, rate_limit=None)})) as gw:
        for key in ("a", "b"):
            await gw.call_tool("gov.stamp", {"key": key})
        await gw.call_tool("gov.stamp_args", {"a": "x"})
        app = Starlette(routes=cache_routes(gw))
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as client:
            answer = await client.post("/api/cache/clear", json={"tool": "gov.stamp_args"})
            assert answer.status_code == 200 and answer.json()["cleared"] == 1
            bad = await client.post("/api/cache/clear", json={"tool": 5})
            assert bad.status_code == 400 and "tool" in bad.json()["error"]
        assert gw.governance.cache.store.stats().entries == 2

        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=unused_tcp_port, log_level="warning")
        )
        serving = asyncio.create_task(server.serve())
        try:
            await eventually(lambda: server.started, what="the admin app serving")
            url = f"http://127.0.0.1:{unused_tcp_port}"
            outcome = await asyncio.to_thread(
                CliRunner().invoke, cache_cli, ["clear", "gov.stamp", "--url", url, "--token", "t"]
            )
            assert outcome.exit_code == 0, outcome.output
            assert "cleared 2 cached results of gov.stamp" in outcome.output
        finally:
            server.should_exit = True
            await serving
        assert gw.governance.cache.store.stats().entries == 0


def test_cli_reports_an_unreachable_gateway(unused_tcp_port: int) -> None:
    outcome = CliRunner().invoke(cache_cli, ["clear", "--url", f"http://127.0.0.1:{unused_tcp_port}"])
    assert outcome.exit_code == 1
    assert "no gateway answers" in outcome.output


@pytest.fixture
def unused_tcp_port() -> int:
    from support.processes import free_port

    return free_port()


async def test_config_reload_invalidates_the_changed_servers_entries(tmp_path: Path) -> None:
    from mcp_nexus.config.load import config_from_document

    def doc(gov_ttl: float) -> dict[str, object]:
        return document(
            tmp_path, {"gov": embedded(cache_ttl=gov_ttl), "keep": embedded("keep", cache_ttl=60)}
        )

    async with running_gateway(doc(60)) as gw:
        await gw.call_tool("gov.stamp", {"key": "k"})
        await gw.call_tool("keep.stamp", {"key": "k"})
        new, _ = config_from_document(doc(120))
        await gw.reload(new)
        # the clearing runs as a task right after the reload
        await eventually(lambda: gw.governance.cache.store.stats().entries == 1, what="gov's entries cleared")
        assert text(await gw.call_tool("gov.stamp", {"key": "k"})) == "gov:k:2"  # called again
        hit = await gw.call_tool("keep.stamp", {"key": "k"})
        assert hit.meta and hit.meta["nexus/cache"] == "hit"
