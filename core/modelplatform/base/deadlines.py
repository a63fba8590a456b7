"""When a request stops being worth running: its deadline, computed in one place.

Two things bound how long a client waits. The client's own ``timeout``
request parameter (Triton's: microseconds, 0 = none; for a model with
``dynamic_batching`` its priority level's queue policy decides) and the transport's: a gRPC
deadline, or the HTTP response timeout. The transport enters its bound with
:func:`transport_deadline` around the handler; :func:`deadline_for` (called
once per request by the dataplane) takes the earlier of the two and puts it
on the request. Schedulers then never hand a request past its deadline to a
backend, and stop waiting for it when it passes.

The answers differ as the reference servers' do: an expired ``timeout``
parameter is Triton's UNAVAILABLE ``Request timeout expired`` (HTTP 503); a
transport deadline is DEADLINE_EXCEEDED (gRPC's own code; HTTP 504 in every
dialect that has a table for it).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from modelplatform.base.errors import DeadlineExceeded, InvalidArgument, ModelPlatformError, RequestTimedOut
from modelplatform.base.model_config import DELAY, DynamicBatching, QueuePolicy

#: The transport's deadline for the request being handled in this task, if any.
_transport: ContextVar[Deadline | None] = ContextVar("modelplatform_transport_deadline", default=None)


@dataclass(frozen=True, slots=True)
class Deadline:
    """A ``time.monotonic_ns()`` instant and what to answer once it has passed."""

    at_ns: int
    #: True when the client's ``timeout`` parameter set it, False for the transport's.
    from_parameter: bool = False
    #: How the transport names itself in its error ("gRPC deadline", "HTTP response timeout").
    source: str = ""

    @classmethod
    def after(cls, seconds: float, source: str = "") -> Deadline:
        return cls(time.monotonic_ns() + int(seconds * 1e9), False, source)

    def passed(self) -> bool:
        return time.monotonic_ns() >= self.at_ns

    def remaining_s(self) -> float:
        """Seconds left, never negative."""
        return max(0.0, (self.at_ns - time.monotonic_ns()) / 1e9)

    def error(self) -> ModelPlatformError:
        if self.from_parameter:
            return RequestTimedOut()
        return DeadlineExceeded(f"{self.source or 'deadline'} expired before the request ran")


@contextlib.contextmanager
def transport_deadline(seconds: float | None, source: str) -> Iterator[None]:
    """Requests handled inside this block must be answered within ``seconds`` (None: no bound).

    For a dialect's gRPC handler not wrapped by ``grpc_guard`` (which does it):
    ``with transport_deadline(context.time_remaining(), "gRPC deadline"):``.
    """
    if seconds is None:
        yield
        return
    token = _transport.set(Deadline.after(seconds, source))
    try:
        yield
    finally:
        _transport.reset(token)


def current_transport_deadline() -> Deadline | None:
    return _transport.get()


def deadline_for(parameters: Mapping[str, Any], batching: DynamicBatching | None) -> Deadline | None:
    """The earlier of the transport's deadline and the ``timeout`` parameter (or policy default).

    For a model with ``dynamic_batching`` the queue policy of the request's
    priority level decides, as Triton's does (:func:`queue_timeout_us`); a
    level whose ``timeout_action`` is DELAY never fails a request for its
    timeout (the batcher serves it later instead), so only the transport's
    deadline applies there. Other models take the parameter as it is.
    """
    transport = _transport.get()
    if not parameters and batching is None:  # most requests: nothing asked, no policy to apply
        return transport
    timeout_us = _timeout_us(parameters, batching)
    if not timeout_us:
        return transport
    own = Deadline(time.monotonic_ns() + timeout_us * 1000, from_parameter=True)
    return own if transport is None or own.at_ns < transport.at_ns else transport


def _timeout_us(parameters: Mapping[str, Any], batching: DynamicBatching | None) -> int:
    asked = asked_timeout_us(parameters)
    priority = requested_priority(parameters)  # checked for every model, as Triton's front ends do
    if batching is None:
        return asked
    policy = batching.policy_for(batching.level_of(priority))
    if policy.timeout_action == DELAY:
        return 0
    return queue_timeout_us(asked, policy)


def queue_timeout_us(asked_us: int, policy: QueuePolicy) -> int:
    """Triton's ``PolicyQueue::Enqueue``: the client's timeout only shortens the level's
    default, and only where ``allow_timeout_override``; with no default it is ignored."""
    default_us = policy.default_timeout_us
    if policy.allow_timeout_override and 0 < asked_us < default_us:
        return asked_us
    return default_us


def asked_timeout_us(parameters: Mapping[str, Any]) -> int:
    """The ``timeout`` request parameter (microseconds, 0 = none), checked."""
    asked = parameters.get("timeout", 0) if parameters else 0
    if not _is_count(asked):
        raise InvalidArgument("request parameter 'timeout' must be a non-negative integer (microseconds)")
    return int(asked)


def requested_priority(parameters: Mapping[str, Any]) -> int:
    """The ``priority`` request parameter (Triton's uint64; 0 = the model's default level), checked."""
    asked = parameters.get("priority", 0) if parameters else 0
    if not _is_count(asked):
        raise InvalidArgument("request parameter 'priority' must be a non-negative integer")
    return int(asked)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
