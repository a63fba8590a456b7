"""What one request is, as the counters and the tracers see it: its :class:`RequestScope`.

The transport edges (the HTTP router's routes, the gRPC server's handlers)
open a scope per call, naming the protocol it came in on (``oip_http``,
``tfserving_grpc``, ...). The statistics (stats.py) read it once per counted
request, to count the request under its protocol, and write into it what
they measured (model, version, batch size, queue and compute time), so a
tracer reads the same numbers the statistics keep: nothing is measured twice.

A scope lives in a context variable: the edge sets it in the request's own
task, so the dataplane and a direct scheduler, which run in that task, see
it. A dynamic batch runs in a worker task; its scheduler writes each
request's share through the scope it captured when the request arrived.

Observers (a tracing plugin) are called when a scope that reached a model
ends. With none registered the edge only sets and resets the variable.
This module imports no transport.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

#: The label of requests that no edge scoped (none today; kept for plugins' own calls).
UNSCOPED = "other"


@dataclass(slots=True)
class RequestScope:
    """One call on one transport; the counters fill in what they measured."""

    protocol: str
    #: Transport metadata an observer may read (``traceparent``); empty when nobody observes.
    carrier: Mapping[str, str]
    #: Wall-clock start (``time.time_ns()``), only taken when someone observes.
    started_ns: int = 0
    model: str = ""
    version: str = ""
    batch_size: int = 0
    ok: bool = False
    #: Triton's failure reason when the request failed ("" when it succeeded).
    failure: str = ""
    queue_ns: int = 0
    compute_input_ns: int = 0
    compute_infer_ns: int = 0
    compute_output_ns: int = 0

    @property
    def counted(self) -> bool:
        """Whether the request reached a model's counters (health and metadata calls do not)."""
        return bool(self.model) or bool(self.failure)

    def note_phases(self, queue_ns: int, input_ns: int, infer_ns: int, output_ns: int) -> None:
        self.queue_ns += queue_ns
        self.compute_input_ns += input_ns
        self.compute_infer_ns += infer_ns
        self.compute_output_ns += output_ns


current_scope: ContextVar[RequestScope | None] = ContextVar("modelplatform_request_scope", default=None)


class RequestObserver(Protocol):
    def request_finished(self, scope: RequestScope, ended_ns: int) -> None:
        """A counted request ended (``ended_ns``: ``time.time_ns()``); must not raise or block."""
        ...


_NO_CARRIER: Mapping[str, str] = {}


class ScopeOpener:
    """Opens and closes scopes for one edge; observers are read per call (added at start-up)."""

    def __init__(self, observers: list[RequestObserver]) -> None:
        self.observers = observers

    def open(self, protocol: str, metadata: Callable[[], Mapping[str, str]]) -> RequestScope:
        """A scope for a call now starting; ``metadata`` is read only when someone observes."""
        if self.observers:
            return RequestScope(protocol, metadata(), time.time_ns())
        return RequestScope(protocol, _NO_CARRIER)

    def close(self, scope: RequestScope) -> None:
        if self.observers and scope.counted:
            ended = time.time_ns()
            for observer in self.observers:
                observer.request_finished(scope, ended)
