"""Spans per call when tracing is on (mcp_nexus/tracing.py): frontend -> pipeline -> each upstream attempt.

    tools/call <name>          SERVER   the caller's request as the frontend received it; parent:
                                        the caller's `_meta.traceparent`, when it sent one
      nexus.pipeline <name>    INTERNAL governance: cache outcome, retries, servers tried
        tools/call <tool>      CLIENT   one per upstream attempt (fallbacks and retries each get one);
                                        its trace context travels in the request's `_meta`
                                        (traceparent, tracestate) and, to HTTP servers, as headers

Attributes follow OpenTelemetry's MCP semantic conventions (`mcp.method.name`,
`gen_ai.tool.name`, `gen_ai.operation.name`, `mcp.protocol.version`, `network.transport`,
`error.type`, `mcp.resource.uri`, `gen_ai.prompt.name`), plus `nexus.*` for the gateway's own
facts. Never arguments or results: they may hold secrets.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcp.shared.exceptions import MCPError

from mcp_nexus import tracing
from mcp_nexus.pipeline.call import CallNext, ToolCall
from mcp_nexus.pipeline.steps.metrics import error_class
from mcp_nexus.pipeline.steps.offload import OFFLOAD_META_KEY

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

    from mcp_nexus.upstream.upstream import Upstream

_TRANSPORT = {"stdio": "pipe", "http": "tcp", "sse": "tcp", "embedded": "inproc"}
_FRONTEND_TRANSPORT = {"stdio": "pipe", "http": "tcp", "xiaozhi": "tcp"}

Send = Callable[[ToolCall, "Upstream", Any, float], Awaitable[Any]]


def _target_attributes(method: str, name: str) -> dict[str, Any]:
    if method == "tools/call":
        return {"gen_ai.tool.name": name, "gen_ai.operation.name": "execute_tool"}
    if method == "resources/read":
        return {"mcp.resource.uri": name}
    if method == "prompts/get":
        return {"gen_ai.prompt.name": name}
    return {}


def _mark_outcome(span: Span, outcome: Any) -> None:
    if getattr(outcome, "is_error", False):
        span.set_attribute("error.type", "tool_error")


class TraceStep:
    """The outermost step when tracing is on: the frontend's and the pipeline's spans of a call."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    async def __call__(self, call: ToolCall, call_next: CallNext) -> Any:
        from opentelemetry.trace import SpanKind

        caller = call.caller
        attributes: dict[str, Any] = {
            "mcp.method.name": call.method,
            **_target_attributes(call.method, call.name),
            "nexus.frontend": caller.frontend,
        }
        if caller.client:
            attributes["nexus.client"] = caller.client
        if caller.via:
            attributes["nexus.via"] = caller.via  # "sandbox": made by code in python_sandbox
        if caller.frontend in _FRONTEND_TRANSPORT:
            attributes["network.transport"] = _FRONTEND_TRANSPORT[caller.frontend]
        if caller.request_id is not None:
            attributes["jsonrpc.request.id"] = str(caller.request_id)
        parent = tracing.extract(call.meta)
        with (
            self.tracer.start_as_current_span(
                f"{call.method} {call.name}", context=parent, kind=SpanKind.SERVER, attributes=attributes
            ) as front,
            self.tracer.start_as_current_span(f"nexus.pipeline {call.name}", kind=SpanKind.INTERNAL) as pipe,
        ):
            try:
                outcome = await call_next(call)
            except BaseException as exc:
                kind = error_class(exc)
                front.set_attribute("error.type", kind)
                pipe.set_attribute("error.type", kind)
                raise
            finally:
                if call.cache is not None:
                    pipe.set_attribute("nexus.cache", call.cache)
                if call.retries:
                    pipe.set_attribute("nexus.retries", call.retries)
                if call.servers_tried:
                    pipe.set_attribute("nexus.servers_tried", list(call.servers_tried))
                if call.server is not None:
                    front.set_attribute("nexus.server", call.server)
            meta = getattr(outcome, "meta", None)
            if meta and OFFLOAD_META_KEY in meta:
                pipe.set_attribute("nexus.offloaded", True)
            _mark_outcome(front, outcome)
            return outcome


def traced(send: Send) -> Send:
    """`send` (one upstream attempt of the route) inside a CLIENT span whose context travels upstream."""
    tracer = tracing.tracer()
    if tracer is None:
        return send

    async def attempt(call: ToolCall, upstream: Upstream, target: Any, timeout: float) -> Any:
        from opentelemetry.trace import SpanKind

        assert tracer is not None
        config = upstream.config
        remote = target if isinstance(target, str) else call.name
        attributes: dict[str, Any] = {
            "mcp.method.name": call.method,
            **_target_attributes(call.method, remote),
            "nexus.upstream": upstream.name,
            "network.transport": _TRANSPORT.get(config.transport, config.transport),
        }
        if upstream.protocol_version:
            attributes["mcp.protocol.version"] = upstream.protocol_version
        if config.url:
            from urllib.parse import urlsplit

            parts = urlsplit(str(config.url))
            if parts.hostname:
                attributes["server.address"] = parts.hostname
            if parts.port:
                attributes["server.port"] = parts.port
        with tracer.start_as_current_span(
            f"{call.method} {remote}", kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            original = call.meta
            if call.method == "tools/call":
                meta = dict(original or {})
                tracing.inject(meta)  # ours replaces a caller's traceparent: this span is the parent now
                call.meta = meta
            try:
                result = await send(call, upstream, target, timeout)
            except MCPError as exc:
                span.set_attribute("error.type", str(exc.error.code))
                span.set_attribute("rpc.jsonrpc.error_code", exc.error.code)
                raise
            except BaseException as exc:
                span.set_attribute("error.type", type(exc).__name__)
                raise
            finally:
                call.meta = original
            _mark_outcome(span, result)
            return result

    return attempt
