"""When a request stops being worth running: its deadline, computed in one place.

Two things bound how long a client waits. The client's own ``timeout``
request parameter (Triton's: microseconds, 0 = none; a model's
``default_queue_policy`` supplies a default) and the transport's: a gRPC
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
from modelplatform.base.model_config import DynamicBatching

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


def deadline_for(parameters: Mapping[str, Any], policy: DynamicBatching | None) -> Deadline | None:
    """The earlier of the transport's deadline and the ``timeout`` parameter (or policy default).

    As in Triton, the parameter may only shorten a model's default timeout,
    and is ignored when the model's queue policy disallows overriding it.
    """
    transport = _transport.get()
    timeout_us = _timeout_us(parameters, policy)
    if not timeout_us:
        return transport
    own = Deadline(time.monotonic_ns() + timeout_us * 1000, from_parameter=True)
    return own if transport is None or own.at_ns < transport.at_ns else transport


def _timeout_us(parameters: Mapping[str, Any], policy: DynamicBatching | None) -> int:
    default_us = policy.default_timeout_us if policy is not None else 0
    if policy is not None and not policy.allow_timeout_override:
        return default_us
    asked = parameters.get("timeout", 0) if parameters else 0
    if not isinstance(asked, int) or isinstance(asked, bool) or asked < 0:
        raise InvalidArgument("request parameter 'timeout' must be a non-negative integer (microseconds)")
    if asked and default_us:
        return min(asked, default_us)
    return asked or default_us
