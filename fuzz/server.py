"""The real server, composed once per fuzzing process, with no port opened.

Built with ``modelplatform.testing`` only (ComposedServer, resolved_settings):
HTTP inputs take the steps both HTTP paths take (match, admit, timeout, the
route's scoped handler with Content-Encoding undone, failure rendered in the
dialect's shape). gRPC inputs go through the method handler the plugin
registered on the gRPC server: its deserialiser, then its behaviour with a
servicer context that records what the call aborts with.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import structlog

from modelplatform import ModelPlatformError
from modelplatform.testing import ComposedServer, resolved_settings

REPOSITORY = Path(__file__).resolve().parent.parent / "model_repository"
#: The example models the targets aim at: every datatype family, both backends.
#: The sleep_2ms models (2 ms a call) and stream_counter (a count is a loop) are left out.
MODELS = (
    "simple",
    "simple_string",
    "simple_onnx",
    "identity_fp32",
    "identity_fp16",
    "identity_bytes",
    "saved_model_half_plus_three",
)
#: The OpenAI dialect's example models (model_repository/tiny_*): its target names them in the body.
OPENAI_MODELS = ("tiny_lm", "tiny_embed")


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one input ended: ``status`` is the HTTP status, or the gRPC / grps code as text."""

    status: int | str
    #: The exception that escaped the handler, if one did (a finding).
    escaped: BaseException | None = None
    #: The error message answered, when there is one (what a finding's report quotes).
    detail: str = ""


class AbortedCall(grpc.aio.AbortError):
    """What ``context.abort`` raises, as grpc.aio's own does."""


class RecordingContext:
    """The servicer context a handler sees: no deadline, no metadata; records the abort."""

    def __init__(self) -> None:
        self.code: grpc.StatusCode = grpc.StatusCode.OK
        self.details = ""
        self.written: list[Any] = []

    def time_remaining(self) -> float | None:
        return None

    def invocation_metadata(self) -> tuple[()]:
        return ()

    def peer(self) -> str:
        return "ipv4:127.0.0.1:1"

    def cancelled(self) -> bool:
        return False

    def done(self) -> bool:
        return False

    def set_code(self, code: grpc.StatusCode) -> None:
        self.code = code

    def set_details(self, details: str) -> None:
        self.details = details

    def set_trailing_metadata(self, metadata: Any) -> None:
        pass

    async def send_initial_metadata(self, metadata: Any) -> None:
        pass

    async def write(self, message: Any) -> None:
        self.written.append(message)

    async def abort(self, code: grpc.StatusCode, details: str = "", trailing_metadata: Any = ()) -> None:
        self.code, self.details = code, details
        raise AbortedCall()


class _RecordingGrpcServer:
    """Stands in for grpc.aio.Server while services register: keeps their handlers."""

    def __init__(self) -> None:
        self.generic: list[Any] = []

    def add_generic_rpc_handlers(self, handlers: Iterable[Any]) -> None:
        self.generic.extend(handlers)

    def add_registered_method_handlers(self, service: str, handlers: Mapping[str, Any]) -> None:
        pass  # the generic handlers hold the same methods


class _CallDetails(grpc.HandlerCallDetails):
    def __init__(self, method: str) -> None:
        self.method = method
        self.invocation_metadata = ()


class FuzzServer:
    """One composed server: models loaded, routes and gRPC handlers resolved, no port open."""

    def __init__(self, quiet: bool = True, **settings: Any) -> None:
        """``quiet`` silences logging process-wide (a fuzzing process; not inside a test run)."""
        if quiet:
            _quiet()
        overrides = {
            "model_repository": REPOSITORY,
            "load_models": MODELS + OPENAI_MODELS,
            "model_control_mode": "explicit",
            "allow_file_upload": True,
            **settings,
        }
        self.server = ComposedServer(resolved_settings(**overrides))
        self.context = self.server.context
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self.server.start())
        self._grpc = _RecordingGrpcServer()
        for service in self.context.grpc_services:
            service.add_to_server(self._grpc, self.context)
        self._methods: dict[str, Any] = {}

    def run(self, call: Any) -> Any:
        return self.loop.run_until_complete(call)

    def http(self, method: str, path: str, body: bytes, headers: Mapping[str, str] | None = None) -> Outcome:
        return self.run(self.http_async(method, path, body, headers or {}))

    async def http_async(
        self, method: str, path: str, body: bytes, headers: Mapping[str, str], query: str = ""
    ) -> Outcome:
        """``headers`` in lower case, as both HTTP paths hand them to a route."""
        raised: list[Exception] = []
        reply = await self.server.http(method, path, body, headers, query, raised.append)
        error = raised[-1] if raised else None
        if isinstance(error, ModelPlatformError):
            return Outcome(reply.status, None, error.message)
        if error is not None:
            return Outcome(500, error, repr(error))  # a finding: the server answers 500
        return Outcome(reply.status, None, "" if reply.status < 400 else _text(reply.body))

    def grpc_method(self, full_method: str) -> Any:
        if full_method not in self._methods:
            details = _CallDetails(full_method)
            found = (h.service(details) for h in self._grpc.generic)
            self._methods[full_method] = next(h for h in found if h is not None)
        return self._methods[full_method]

    def grpc(self, full_method: str, message: bytes) -> Outcome:
        return self.run(self.grpc_async(full_method, message))

    async def grpc_async(self, full_method: str, message: bytes) -> Outcome:
        """A unary call; a message protobuf cannot parse is the transport's INTERNAL, not ours."""
        handler = self.grpc_method(full_method)
        try:
            request = handler.request_deserializer(message)
        except Exception:  # noqa: BLE001 - grpc answers it before any handler runs
            return Outcome("UNPARSED")
        context = RecordingContext()
        try:
            if handler.unary_unary is not None:
                answer = await handler.unary_unary(request, context)
                _serialized(handler, answer)
            else:  # server streaming
                async for answer in handler.unary_stream(request, context):
                    _serialized(handler, answer)
                    context.written.append(answer)
        except AbortedCall:
            return Outcome(context.code.name, None, context.details)
        except Exception as error:  # noqa: BLE001 - a finding: grpc would answer UNKNOWN
            return Outcome("UNKNOWN", error, repr(error))
        return _in_band(answer if handler.unary_unary is not None else context.written)

    def close(self) -> None:
        self.run(self.server.close())
        self.loop.close()


def _serialized(handler: Any, answer: Any) -> bytes:
    """What grpc sends: a handler without a serializer answers bytes itself (oip ModelInfer)."""
    if handler.response_serializer is None:
        if not isinstance(answer, bytes):
            raise TypeError(f"a handler without a serializer answered {type(answer).__name__}, not bytes")
        return answer
    return handler.response_serializer(answer)


def _in_band(answer: Any) -> Outcome:
    """grps answers gRPC OK with its outcome in ``status``; the worst one of a stream counts."""
    answers = answer if isinstance(answer, list) else [answer]
    statuses = [a.status for a in answers if hasattr(a, "status") and a.HasField("status")]
    if not statuses:
        return Outcome("OK")
    worst = max(statuses, key=lambda status: status.code)
    return Outcome(worst.code, None, worst.msg if worst.code >= 400 else "")


def _text(body: Any) -> str:
    return bytes(body).decode("utf-8", "replace") if isinstance(body, (bytes, bytearray, memoryview)) else ""


def _quiet() -> None:
    """Per-input logging would cost more than the input: only critical events are printed."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    logging.getLogger().setLevel(logging.CRITICAL)
