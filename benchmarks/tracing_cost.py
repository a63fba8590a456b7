"""Micro-benchmark: what the request scope and tracing add to one HTTP route call.

Times the core's route wrapper (``modelplatform.testing.scoped_route``, the one
both HTTP paths serve every route through) around a handler that
counts one success in a ModelStats, as a real inference does, with: no
wrapper (the handler alone), the wrapper and tracing off (no observers, the
default), tracing on at Triton's default rate (1 in 1000), and tracing every
request (rate 1; spans go to the batch processor, exported on its thread).

    python benchmarks/tracing_cost.py
"""

from __future__ import annotations

import asyncio
import time

from modelplatform import HttpReply, HttpRequest, HttpRoute
from modelplatform.statistics import ModelStats
from modelplatform.testing import free_port, scoped_route
from modelplatform_tracing.settings import TraceSetting, TraceSettings
from modelplatform_tracing.spans import SpanWriter

CALLS = 50_000
REPLY = HttpReply(200, b"{}")


def main() -> None:
    stats = ModelStats("simple", "1")

    async def handler(request: HttpRequest) -> HttpReply:
        stats.record_success(1000, 0, 1)
        return REPLY

    route = HttpRoute(("POST",), "/v2/models/{model}/infer", handler, model_param="model")
    request = HttpRequest("POST", route.path, {}, {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-00"})
    endpoint = f"http://127.0.0.1:{free_port()}/v1/traces"  # nobody listens: export fails off the loop
    cases = {
        "handler alone": route,
        "scoped, tracing off": scoped_route(route, "oip_http"),
        "tracing on, rate 1000": scoped_route(
            route, "oip_http", [SpanWriter(endpoint, _settings(1000), "bench")]
        ),
        "tracing on, rate 1": scoped_route(route, "oip_http", [SpanWriter(endpoint, _settings(1), "bench")]),
    }
    for label, case in cases.items():
        print(f"{label:24s} {asyncio.run(_time(case, request)):7.2f} us/call")


def _settings(rate: int) -> TraceSettings:
    return TraceSettings(TraceSetting(("TIMESTAMPS",), rate, -1), True, lambda on: None)


async def _time(route: HttpRoute, request: HttpRequest) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(CALLS):
            await route.handler(request)
        best = min(best, (time.perf_counter() - started) / CALLS * 1e6)
    return best


if __name__ == "__main__":
    main()
