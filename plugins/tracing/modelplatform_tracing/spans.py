"""One span per traced request, written from the request's scope when it ends.

The scope (``modelplatform.RequestScope``) already holds what the statistics
measured for the request: model, version, batch size, queue and compute
time. The span is started after the fact with the request's own start time,
under the caller's trace when its ``traceparent`` (W3C trace context, from
HTTP headers or gRPC metadata) names one, and handed to OpenTelemetry's
batch processor, which exports over OTLP/HTTP on its own thread.
"""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from modelplatform import RequestScope

from .settings import TraceSettings


class SpanWriter:
    """A RequestObserver: writes the requests the live trace settings sample as spans."""

    def __init__(self, endpoint: str, settings: TraceSettings, server_name: str) -> None:
        resource = Resource.create({"service.name": server_name})
        # The settings decide which requests are traced; OpenTelemetry's default sampler would
        # drop again a request the rate picked whose caller's traceparent is not sampled.
        self._provider = TracerProvider(resource=resource, sampler=ALWAYS_ON)
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        self._tracer = self._provider.get_tracer("modelplatform")
        self._propagator = TraceContextTextMapPropagator()
        self.settings = settings

    def request_finished(self, scope: RequestScope, ended_ns: int) -> None:
        # The flags' sampled bit is read off the header's text first: a request left out
        # by the rate costs no parsing. A malformed header is then ignored by extract().
        forced = _sampled_by_caller(scope.carrier.get("traceparent", ""))
        if not self.settings.sampler(scope.model).sample(forced):
            return
        parent = self._propagator.extract(scope.carrier)
        span = self._tracer.start_span(
            f"infer {scope.model}",
            context=parent,
            kind=SpanKind.SERVER,
            start_time=scope.started_ns,
            attributes=_attributes(scope),
        )
        if not scope.ok:
            span.set_status(Status(StatusCode.ERROR, scope.failure))
        span.end(end_time=ended_ns)

    def close(self) -> None:
        """Exports what is still buffered, then stops the exporter (blocks: call on a thread)."""
        self._provider.shutdown()


def _sampled_by_caller(traceparent: str) -> bool:
    """Whether a W3C ``traceparent`` (``00-<trace>-<span>-<flags>``) has its sampled flag set."""
    flags = traceparent[53:55]
    return len(traceparent) >= 55 and flags in _SAMPLED_FLAGS


#: Every two-hex-digit flags value with the sampled bit (0x01) set.
_SAMPLED_FLAGS = frozenset(f"{value:02x}" for value in range(1, 256, 2))


def _attributes(scope: RequestScope) -> dict[str, str | int]:
    found: dict[str, str | int] = {
        "modelplatform.protocol": scope.protocol,
        "modelplatform.model": scope.model,
        "modelplatform.model_version": scope.version,
        "modelplatform.batch_size": scope.batch_size,
        "modelplatform.queue_us": scope.queue_ns // 1000,
        "modelplatform.compute_input_us": scope.compute_input_ns // 1000,
        "modelplatform.compute_infer_us": scope.compute_infer_ns // 1000,
        "modelplatform.compute_output_us": scope.compute_output_ns // 1000,
    }
    if scope.failure:
        found["modelplatform.failure_reason"] = scope.failure
    return found
