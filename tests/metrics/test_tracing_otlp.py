"""`nexus serve` with OTEL_EXPORTER_OTLP_ENDPOINT set exports its spans over OTLP/HTTP to a receiver
on 127.0.0.1 (a plain HTTP server here that decodes the protobuf with opentelemetry-proto)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from lifecycle.faults import document, faulty
from support.polling import eventually_sync
from support.processes import free_port
from support.served_gateway import gateway_env, served


class Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []

    def span_names(self) -> list[str]:
        return [
            span.name
            for request in self.requests
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        self.server.paths.append(self.path)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.requests.append(request)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_spans_reach_an_otlp_receiver(receiver: Receiver, tmp_path: Path) -> None:
    config = tmp_path / "nexus.json"
    config.write_text(json.dumps(document({"f": faulty("f")}, port=free_port())))
    env = gateway_env(
        tmp_path,
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{receiver.server_address[1]}",
        OTEL_BSP_SCHEDULE_DELAY="100",
        OTEL_SERVICE_NAME="nexus-under-test",
    )
    with served(config, tmp_path, env=env) as gateway:
        gateway.wait_state("f", "READY")
        answer = gateway.call("f.echo", {"text": "traced"})
        assert answer.status_code == 200, answer.text
        eventually_sync(
            lambda: "tools/call echo" in receiver.span_names(), 20, "the upstream span at the receiver"
        )
    names = receiver.span_names()
    assert {"tools/call f.echo", "nexus.pipeline f.echo", "tools/call echo"} <= set(names)
    assert set(receiver.paths) == {"/v1/traces"}
    resource = receiver.requests[0].resource_spans[0].resource
    attributes = {a.key: a.value.string_value for a in resource.attributes}
    assert attributes["service.name"] == "nexus-under-test"
    assert "exporting spans over OTLP" in gateway.log.read_text()
