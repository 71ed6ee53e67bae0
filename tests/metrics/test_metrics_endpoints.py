"""`/metrics` (parsed by prometheus-client's own parser), `/api/metrics`, `/api/calls` and `nexus stats`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from typing import Any

import httpx2
from prometheus_client.parser import text_string_to_metric_families

from lifecycle.faults import document, faulty
from support.gateway import running
from support.processes import VENV_BIN, child_env

TOKEN = "metrics-t0ken-5b1f"


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def value(found: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    for sample_labels, number in found.get(name, []):
        if all(sample_labels.get(k) == v for k, v in labels.items()):
            return number
    raise AssertionError(f"no {name} with {labels}; have {sorted(found)}")


async def nexus(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        str(VENV_BIN / "nexus"),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(COLUMNS="220"),
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_scrape_json_and_stats_name_every_figure_behind_the_token() -> None:
    doc = document({"f": faulty("f", tool_config={"pid": {"cache_ttl": 60}})}, token=TOKEN)
    async with running(doc, http=True) as runtime:
        base = runtime.url.removesuffix("/mcp")
        gw = runtime.gateway
        await gw.call_tool("f.echo", {"text": "a"})
        await gw.call_tool("f.pid", {})
        await gw.call_tool("f.pid", {})
        await gw.call_tool("f.fail", {})
        pid = gw.upstreams["f"].pid
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(timeout=30) as client:
            for path in ("/metrics", "/api/metrics", "/api/calls"):
                assert (await client.get(base + path)).status_code == 401, path
            scrape = await client.get(base + "/metrics", headers=auth)
            assert scrape.status_code == 200
            assert scrape.headers["content-type"].startswith("text/plain; version=")
            found = samples(scrape.text)
            assert value(found, "nexus_tool_calls_total", tool="f.echo") == 1
            assert value(found, "nexus_tool_errors_total", tool="f.fail", **{"class": "tool_error"}) == 1
            assert value(found, "nexus_tool_cache_hits_total", tool="f.pid") == 1
            assert value(found, "nexus_tool_cache_misses_total", tool="f.pid") == 1
            assert value(found, "nexus_tool_latency_seconds_count", tool="f.echo") == 1
            assert value(found, "nexus_tool_latency_seconds", tool="f.echo", quantile="0.99") > 0
            assert value(found, "nexus_server_calls_total", server="f") == 3  # the cache hit reached none
            assert value(found, "nexus_frontend_calls_total", frontend="api") == 4
            assert value(found, "nexus_upstream_pid", server="f") == pid
            assert value(found, "nexus_upstream_rss_bytes", server="f") > 1_000_000
            assert value(found, "nexus_upstream_state", server="f", state="READY") == 1
            assert value(found, "nexus_upstream_state", server="f", state="CRASHED") == 0
            assert value(found, "nexus_gateway_rss_bytes") > 10_000_000
            assert value(found, "nexus_info", version=__import__("mcp_nexus").__version__) == 1
            assert TOKEN not in scrape.text

            as_json: dict[str, Any] = (await client.get(base + "/api/metrics", headers=auth)).json()
            assert as_json["tools"]["f.echo"]["latency"]["count"] == 1
            assert as_json["upstreams"]["f"]["pid"] == pid
            calls = (await client.get(base + "/api/calls?limit=2", headers=auth)).json()["calls"]
            assert [c["tool"] for c in calls] == ["f.pid", "f.fail"]
            bad = await client.get(base + "/api/calls?limit=lots", headers=auth)
            assert bad.status_code == 400 and "'limit'" in bad.json()["error"]
            odd = await client.get(base + "/api/calls?limt=3", headers=auth)
            assert odd.status_code == 400 and "'limt'" in odd.json()["error"]

        code, out, err = await nexus("stats", "--url", base, "--token", TOKEN)
        assert code == 0, err
        for text in ("f.echo", "f.pid", "tool_error 1", "p95", "upstreams", "READY"):
            assert text in out
        code, out, err = await nexus("stats", "--json", "--url", base, "--token", TOKEN)
        assert code == 0 and json.loads(out)["tools"]["f.pid"]["cache_hits"] == 1
        code, out, err = await nexus("stats", "--url", base)
        assert code == 1 and "token" in err
        code, out, err = await nexus("stats", "--watch", "0", "--url", base, "--token", TOKEN)
        assert code == 2 and "--watch" in err

        # --watch redraws until Ctrl-C, which ends it cleanly (exit status 130). FORCE_COLOR makes rich draw as on a
        # terminal, so every redraw reaches the pipe and the test sees the new figures arrive.
        watch = await asyncio.create_subprocess_exec(
            str(VENV_BIN / "nexus"),
            "stats",
            "--watch",
            "0.2",
            "--url",
            base,
            "--token",
            TOKEN,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=child_env(COLUMNS="220", FORCE_COLOR="1"),
        )
        assert watch.stdout is not None
        seen = b""

        async def until(text: bytes) -> None:
            nonlocal seen
            while text not in seen:
                chunk = await watch.stdout.read(65536)  # type: ignore[union-attr]
                assert chunk, f"nexus stats --watch ended early: {seen[-2000:]!r}"
                seen += chunk

        await asyncio.wait_for(until(b"f.echo"), 60)  # the first table is drawn
        await gw.call_tool("f.slow", {"seconds": 0})
        await asyncio.wait_for(until(b"f.slow"), 30)  # ...and redrawn with the new call
        watch.send_signal(signal.SIGINT)
        _, err_b = await asyncio.wait_for(watch.communicate(), 30)
        assert watch.returncode == 130 and b"Traceback" not in err_b, err_b.decode()  # 128 + SIGINT


async def test_an_open_event_stream_ends_when_the_gateway_stops() -> None:
    """A dashboard left open must not hold the shutdown: its stream ends when the gateway drains."""
    import time

    async with contextlib.AsyncExitStack() as stack:
        runtime = await stack.enter_async_context(running(document({"f": faulty("f")}), http=True))
        base = runtime.url.removesuffix("/mcp")
        client = await stack.enter_async_context(httpx2.AsyncClient(timeout=30))
        lines: list[str] = []

        async def listen() -> None:
            async with client.stream("GET", base + "/api/events") as response:
                assert response.status_code == 200
                async for line in response.aiter_lines():
                    lines.append(line)

        listener = asyncio.create_task(listen())
        while "event: hello" not in lines:
            await asyncio.sleep(0.05)
        await runtime.gateway.servers.stop("f")
        while not any('"STOPPED"' in line for line in lines):
            await asyncio.sleep(0.05)
        started = time.monotonic()
        await runtime.__aexit__(None, None, None)
        await asyncio.wait_for(listener, 5)
        assert time.monotonic() - started < 2.0
