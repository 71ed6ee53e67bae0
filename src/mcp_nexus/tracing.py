"""OpenTelemetry tracing, off unless configured: spans per call, OTLP export, W3C trace context.

On when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set and
`OTEL_SDK_DISABLED` is not "true": spans go over OTLP/HTTP through the SDK's own exporter,
which reads the other standard variables itself (headers, timeout, protocol details), and
the resource takes `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` (default service name
"nexus"). Off, nothing of the SDK is imported, no step is added to the pipeline, and the
route checks one module-level value per call: free.

This module is the one place that knows whether tracing is on (`tracer()`); the pipeline's
trace step and the upstream HTTP session ask it. Tests install a provider of their own
(`install`) with an in-memory exporter.
"""

from __future__ import annotations

import logging
import os
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Tracer

logger = logging.getLogger(__name__)

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")

_tracer: Tracer | None = None
_provider: TracerProvider | None = None


def tracer() -> Tracer | None:
    """The gateway's tracer, or None when tracing is off (the common case: callers skip all work)."""
    return _tracer


def configured_endpoint() -> str | None:
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    for name in _ENDPOINT_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def configure_from_env() -> bool:
    """Turn tracing on when an OTLP endpoint is configured (once per process); True when on."""
    if _tracer is not None:
        return True
    endpoint = configured_endpoint()
    if endpoint is None:
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from mcp_nexus import __version__

    attributes = {"service.version": __version__}
    if not os.environ.get("OTEL_SERVICE_NAME"):
        attributes["service.name"] = "nexus"
    provider = TracerProvider(resource=Resource.create(attributes))  # flushed at exit (shutdown_on_exit)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    install(provider)
    logger.info("tracing: exporting spans over OTLP/HTTP (endpoint from the environment)")
    return True


def install(provider: TracerProvider) -> None:
    """Trace with `provider` (not made the process-global provider: the gateway's own spans only)."""
    global _tracer, _provider
    from mcp_nexus import __version__

    _provider = provider
    _tracer = provider.get_tracer("mcp_nexus", __version__)


def uninstall() -> None:
    global _tracer, _provider
    _tracer = _provider = None


def flush(timeout_ms: int = 5000) -> None:
    if _provider is not None:
        _provider.force_flush(timeout_ms)


def shutdown() -> None:
    """Flush and stop the exporter (the runtime calls this on its way out)."""
    if _provider is not None:
        _provider.shutdown()
    uninstall()


def caller_context(meta: Any) -> dict[str, str] | None:
    """The trace context a caller sent in a request's `_meta`, for `Gateway.call_tool(meta=...)`;
    None when tracing is off (the frontends then pass nothing on, as without tracing)."""
    if _tracer is None or not isinstance(meta, dict) or TRACEPARENT not in meta:
        return None
    return {key: str(meta[key]) for key in (TRACEPARENT, TRACESTATE) if isinstance(meta.get(key), str)}


def extract(carrier: MutableMapping[str, Any] | None) -> Context | None:
    """The W3C trace context a caller sent in `_meta` (traceparent, tracestate), if any."""
    if not carrier or TRACEPARENT not in carrier:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract(
        {k: str(carrier[k]) for k in (TRACEPARENT, TRACESTATE) if k in carrier}
    )


def inject(carrier: MutableMapping[str, Any]) -> None:
    """Write the current span's W3C trace context (traceparent, tracestate) into `carrier`."""
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    TraceContextTextMapPropagator().inject(carrier)
