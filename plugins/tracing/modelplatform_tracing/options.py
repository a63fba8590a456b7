"""The tracing plugin's options, declared once (``register_options``) and read at start-up.

Both keep their top-level names (``--trace-otlp-endpoint``, ``--trace-rate``,
``MODELPLATFORM_TRACE_RATE``, ``trace_rate = 1000``) from before options moved
into plugins.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplatform import InvalidArgument, Option, Settings

PLUGIN = "tracing"


def _check_rate(rate: int) -> None:
    if not 1 <= rate <= 2**31 - 1:
        raise InvalidArgument("trace_rate must be 1 or more (one request traced in every trace_rate)")


def _check_endpoint(endpoint: str) -> None:
    if endpoint and not endpoint.startswith(("http://", "https://")):
        raise InvalidArgument("trace_otlp_endpoint must be an http:// or https:// URL (OTLP/HTTP)")


OPTIONS = (
    Option("trace_otlp_endpoint", str, "", "Send OpenTelemetry spans to this OTLP/HTTP endpoint "
           "(default: no tracing).", _check_endpoint, top_level=True),
    Option("trace_rate", int, 1000, "Trace one request in every N (default 1000); sampled "
           "traceparents always.", _check_rate, top_level=True),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class TracingOptions:
    #: OTLP/HTTP traces endpoint (``http://collector:4318/v1/traces``); "" traces nothing.
    trace_otlp_endpoint: str
    #: Trace one request in every ``trace_rate`` (Triton's rate); a sampled ``traceparent`` always.
    trace_rate: int

    @classmethod
    def from_settings(cls, settings: Settings) -> TracingOptions:
        return cls(**settings.options_for(PLUGIN, OPTIONS))
