"""OpenTelemetry spans per call (frontend -> pipeline -> upstream) and W3C trace context to upstreams.

Spans are collected by the SDK's own in-memory exporter (installed like the OTLP one, through
`tracing.install`); the OTLP path itself is tested end to end in test_tracing_otlp.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import mcp_types as types
import pytest
from mcp import Client
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from lifecycle.faults import document, faulty
from mcp_nexus import tracing
from mcp_nexus.errors import UnknownToolError
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.steps.trace import TraceStep, traced
from support.gateway import running, running_gateway
from support.http_server import serving
from support.trace_peer import create_app

CLIENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
CLIENT_SPAN = "b7ad6b7169203331"
CLIENT_TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider)
    try:
        yield exporter
    finally:
        tracing.uninstall()
        provider.shutdown()


def _hex(number: int, width: int) -> str:
    return format(number, f"0{width}x")


def by_name(finished: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in finished if s.name == name]


async def test_a_call_is_three_spans_deep_and_its_context_reaches_http_upstreams(
    spans: InMemorySpanExporter,
) -> None:
    app = create_app()
    async with serving(app) as modern_base:
        servers = {
            "peer": {"url": f"{modern_base}/mcp", "namespace": "p", "protocol": "legacy", "rate_limit": None},
            "f": faulty("f"),
        }
        async with running_gateway(document(servers)) as gw:
            assert isinstance(gw.pipeline.steps[0], TraceStep)
            app.traceparents.clear()
            caller = Caller("http", "ide")
            result = await gw.call_tool("p.meta", {}, caller=caller, meta={"traceparent": CLIENT_TRACEPARENT})
            assert isinstance(result, types.CallToolResult)
            sent = json.loads(result.content[0].text)  # type: ignore[union-attr]

            finished = spans.get_finished_spans()
            (front,) = by_name(finished, "tools/call p.meta")
            (pipe,) = by_name(finished, "nexus.pipeline p.meta")
            (upstream,) = by_name(finished, "tools/call meta")
            # The caller's trace goes on through the gateway: one trace, parent to child.
            assert _hex(front.context.trace_id, 32) == CLIENT_TRACE
            assert front.parent is not None and _hex(front.parent.span_id, 16) == CLIENT_SPAN
            assert pipe.parent is not None and pipe.parent.span_id == front.context.span_id
            assert upstream.parent is not None and upstream.parent.span_id == pipe.context.span_id
            assert upstream.context.trace_id == front.context.trace_id
            assert (front.kind, pipe.kind, upstream.kind) == (
                SpanKind.SERVER,
                SpanKind.INTERNAL,
                SpanKind.CLIENT,
            )
            assert front.attributes is not None and upstream.attributes is not None
            assert front.attributes["mcp.method.name"] == "tools/call"
            assert front.attributes["gen_ai.tool.name"] == "p.meta"
            assert front.attributes["nexus.frontend"] == "http" and front.attributes["nexus.server"] == "peer"
            assert upstream.attributes["gen_ai.tool.name"] == "meta"
            assert upstream.attributes["nexus.upstream"] == "peer"
            assert upstream.attributes["server.address"] == "127.0.0.1"
            assert upstream.attributes["mcp.protocol.version"] == "2025-11-25"
            # The upstream attempt's own context travels: in `_meta` and as the W3C header.
            expected = f"00-{CLIENT_TRACE}-{_hex(upstream.context.span_id, 16)}-01"
            assert sent["traceparent"] == expected
            assert expected in app.traceparents

            spans.clear()
            await gw.call_tool("f.echo", {"text": "x"})
            (stdio_attempt,) = by_name(spans.get_finished_spans(), "tools/call echo")
            assert stdio_attempt.attributes is not None
            assert stdio_attempt.attributes["network.transport"] == "pipe"

            spans.clear()
            failed = await gw.call_tool("p.fail", {})
            assert isinstance(failed, types.CallToolResult) and failed.is_error
            (front,) = by_name(spans.get_finished_spans(), "tools/call p.fail")
            assert front.attributes is not None and front.attributes["error.type"] == "tool_error"

            spans.clear()
            with pytest.raises(UnknownToolError):
                await gw.call_tool("p.nothing", {})
            (front,) = by_name(spans.get_finished_spans(), "tools/call p.nothing")
            assert front.attributes is not None and front.attributes["error.type"] == "unknown_tool"


async def test_modern_upstreams_get_the_context_in_meta_too(spans: InMemorySpanExporter) -> None:
    app = create_app()
    async with serving(app) as base:
        servers = {"peer": {"url": f"{base}/mcp", "namespace": "p", "rate_limit": None}}  # protocol auto
        async with running_gateway(document(servers)) as gw:
            assert gw.upstreams["peer"].protocol_version == "2026-07-28"
            result = await gw.call_tool("p.meta", {})
            assert isinstance(result, types.CallToolResult)
            sent = json.loads(result.content[0].text)  # type: ignore[union-attr]
            (attempt,) = by_name(spans.get_finished_spans(), "tools/call meta")
            assert sent["traceparent"].split("-")[2] == _hex(attempt.context.span_id, 16)


async def test_off_means_no_step_and_no_wrapper() -> None:
    assert tracing.tracer() is None

    async def send(*args: object) -> None:
        return None

    assert traced(send) is send  # type: ignore[arg-type]
    async with running_gateway(document({"f": faulty("f")})) as gw:
        assert not any(isinstance(step, TraceStep) for step in gw.pipeline.steps)


async def test_a_clients_trace_context_enters_through_the_http_frontend(spans: InMemorySpanExporter) -> None:
    async with (
        running(document({"f": faulty("f")}), http=True) as runtime,
        Client(runtime.url, mode="legacy") as client,
    ):
        result = await client.call_tool("f.echo", {"text": "hi"}, meta={"traceparent": CLIENT_TRACEPARENT})
        assert not result.is_error

        async def progress(value: float, total: float | None, message: str | None) -> None:
            pass

        # With a progress callback the call takes the SDK's request path instead of the lean one.
        result = await client.call_tool(
            "f.pid", {}, progress_callback=progress, meta={"traceparent": CLIENT_TRACEPARENT}
        )
        assert not result.is_error
    for name in ("tools/call f.echo", "tools/call f.pid"):
        (front,) = by_name(spans.get_finished_spans(), name)
        assert _hex(front.context.trace_id, 32) == CLIENT_TRACE
        assert front.parent is not None and _hex(front.parent.span_id, 16) == CLIENT_SPAN
        assert front.attributes is not None and front.attributes["nexus.frontend"] == "http"
