"""Triton's ``triton_grpc_error`` mode of ``ModelStreamInfer``: the first failure ends the stream.

By default a failed request is one ``error_message`` on the stream and the
stream goes on. A client that opens the stream with the metadata header
``triton_grpc_error: true`` asks instead for the first failure as the call's
own gRPC status (the code a unary call would get, the same message), after
which the stream is closed and the requests still in flight on it are
cancelled. Like Triton, only the exact value ``true`` turns the mode on; any
other value leaves the default (logged, so a typo is visible).

The mode is read once per stream; a stream without the header pays nothing
per message.
"""

from __future__ import annotations

import asyncio

import grpc
import structlog

from modelplatform import ModelPlatformError, grpc_status

#: The metadata key a client sets when it opens the stream (gRPC lower-cases keys).
HEADER = "triton_grpc_error"
#: Values are logged cut to this length (the client controls them).
LOGGED_VALUE_CHARS = 64

log = structlog.get_logger("modelplatform_oip.grpc")


def ends_on_first_error(context: grpc.aio.ServicerContext) -> bool:
    """Whether the client opened the stream with ``triton_grpc_error: true``."""
    for key, value in context.invocation_metadata() or ():
        if key == HEADER:
            if value != "true":
                log.warning("stream_error_header_ignored", value=str(value)[:LOGGED_VALUE_CHARS])
            return value == "true"
    return False


def failure_status(error: Exception) -> tuple[grpc.StatusCode, str]:
    """The status a failed request ends its stream with: a unary call's code and message."""
    if isinstance(error, ModelPlatformError):
        return grpc_status(error), error.message
    return grpc.StatusCode.INTERNAL, f"internal error: {type(error).__name__}"


class FirstError:
    """The failure that ends one ``triton_grpc_error`` stream.

    The request that fails first records its status and cancels the task that
    reads the stream, which then cancels the other requests and answers with
    that status (see ``OipService.model_stream_infer``); later failures are
    dropped, as the stream is already ending.
    """

    def __init__(self, reader: asyncio.Task[None]) -> None:
        self._reader = reader
        self.status: tuple[grpc.StatusCode, str] | None = None

    def end_stream(self, error: Exception) -> None:
        if self.status is None:
            self.status = failure_status(error)
            self._reader.cancel()

    async def abort(self, context: grpc.aio.ServicerContext) -> None:
        """Close the stream with the recorded status (raises grpc's AbortError, as abort does)."""
        assert self.status is not None
        code, message = self.status
        log.info("stream_ended_by_error", code=code.name, error=message)
        await context.abort(code, message)
