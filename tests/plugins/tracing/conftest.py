"""The local OTLP/HTTP collector the tracing tests export to."""

from __future__ import annotations

import gzip
import http.server
import threading
import time
from collections.abc import Iterator

import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from modelplatform.testing import free_port


class Receiver(http.server.ThreadingHTTPServer):
    """An OTLP/HTTP trace collector: keeps every exported span, by trace id."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", free_port()), _Handler)
        self.spans: list = []
        self.lock = threading.Lock()

    def find(self, trace_id: str, timeout: float = 30) -> list:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                found = [s for s in self.spans if s.trace_id.hex() == trace_id]
            if found:
                return found
            time.sleep(0.1)
        return []


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        export = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        with self.server.lock:  # type: ignore[attr-defined]  # set on the server by the fixture
            for resource in export.resource_spans:
                for scope in resource.scope_spans:
                    self.server.spans.extend(scope.spans)  # type: ignore[attr-defined]  # set on the server by the fixture
        reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    collector = Receiver()
    thread = threading.Thread(target=collector.serve_forever, daemon=True)
    thread.start()
    yield collector
    collector.shutdown()
