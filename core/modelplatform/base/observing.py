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
ends. With none registered a call gets its protocol's *quiet* scope, one
shared by every call of that protocol and never written (``observed`` is
false): the edge then only sets and resets the variable, and allocates
nothing. Streams get the quiet scope too (they carry many requests and are
not traced). This module imports no transport.

Whether the statistics counted the call at all matters to the edge: a call
answered with an error that no counter saw (a body the dialect could not
decode, a model name the dialect resolved itself) is counted there as a
refusal (:func:`counted_in_call`). A quiet scope cannot remember it, being
shared; the statistics swap it, once per call, for its *counted twin*, a
second shared scope of the same protocol: one context-variable set, no
allocation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol, TypeVar

#: The protocol of requests no transport edge scoped (a plugin's own dataplane calls).
UNSCOPED = "other"


@dataclass(slots=True)
class RequestScope:
    """One call on one transport; the counters fill in what they measured."""

    protocol: str
    #: Transport metadata an observer may read (``traceparent``); empty when nobody observes.
    carrier: Mapping[str, str]
    #: Whether an observer will read this scope: only then do the counters write into it
    #: (an unobserved scope is its protocol's shared quiet one).
    observed: bool = False
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
    #: Whether the statistics counted a request of this call (a quiet scope: never).
    counted: bool = False
    #: A quiet scope's counted twin, which the statistics set in its place (None otherwise).
    twin: RequestScope | None = None

    def ended(self, model: str, version: str, batch_size: int, failure: str) -> None:
        """The statistics counted a request of this call (``failure``: "" when it succeeded)."""
        self.model, self.version, self.batch_size = model, version, batch_size
        self.ok, self.failure, self.counted = not failure, failure, True

    def note_phases(self, queue_ns: int, input_ns: int, infer_ns: int, output_ns: int) -> None:
        self.queue_ns += queue_ns
        self.compute_input_ns += input_ns
        self.compute_infer_ns += infer_ns
        self.compute_output_ns += output_ns


current_scope: ContextVar[RequestScope | None] = ContextVar("modelplatform_request_scope", default=None)


def counted_in_call() -> bool:
    """Whether the statistics counted a request since the edge set this call's scope."""
    scope = current_scope.get()
    return scope is not None and scope.counted


class RequestObserver(Protocol):
    def request_finished(self, scope: RequestScope, ended_ns: int) -> None:
        """A counted request ended (``ended_ns``: ``time.time_ns()``); must not raise or block."""
        ...


_NO_CARRIER: Mapping[str, str] = {}
_Source = TypeVar("_Source")


class ScopeOpener:
    """Opens and closes scopes for one edge; observers are read per call (added at start-up, or
    while running on the event loop: the tracing plugin's settings switch its writer)."""

    def __init__(self, observers: Sequence[RequestObserver]) -> None:
        self.observers = observers
        self._quiet: dict[str, RequestScope] = {}

    def open(
        self, protocol: str, metadata: Callable[[_Source], Mapping[str, str]], source: _Source
    ) -> RequestScope:
        """A scope for a call now starting; ``metadata(source)`` is read only when someone observes."""
        if self.observers:
            return RequestScope(protocol, metadata(source), True, time.time_ns())
        scope = self._quiet.get(protocol)  # looked up here first: one frame less per call
        return scope if scope is not None else self.quiet(protocol)

    def quiet(self, protocol: str) -> RequestScope:
        """The shared, never-written scope of ``protocol``: it only names the protocol."""
        scope = self._quiet.get(protocol)
        if scope is None:
            twin = RequestScope(protocol, _NO_CARRIER, counted=True)
            scope = self._quiet[protocol] = RequestScope(protocol, _NO_CARRIER, twin=twin)
        return scope

    def close(self, scope: RequestScope) -> None:
        if scope.observed and scope.counted:
            ended = time.time_ns()
            for observer in self.observers:
                observer.request_finished(scope, ended)
