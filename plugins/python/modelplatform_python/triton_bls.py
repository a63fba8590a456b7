"""``pb_utils.InferenceRequest.exec()`` / ``async_exec()``: Triton's BLS over bls.ModelCalls.

Triton's contract: the call answers a ``pb_utils.InferenceResponse`` whose
``has_error()`` tells a failed call (it does not raise); ``decoupled=True``
answers an iterator of responses (``async_exec``: an async iterator).
Output tensors wrap the called model's arrays: no copy either way. The
call goes through the server that runs the calling model (bls.bound).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from modelplatform import (
    ErrorCode,
    InferenceRequest,
    InferenceResponse,
    ModelPlatformError,
    RequestedOutput,
    Tensor,
    Unavailable,
)

from . import triton_utils as pb
from .bls import ModelCalls, bound

_CODES = {
    ErrorCode.INVALID_ARGUMENT: pb.TritonError.INVALID_ARG,
    ErrorCode.NOT_FOUND: pb.TritonError.NOT_FOUND,
    ErrorCode.UNAVAILABLE: pb.TritonError.UNAVAILABLE,
    ErrorCode.UNSUPPORTED: pb.TritonError.UNSUPPORTED,
    ErrorCode.ALREADY_EXISTS: pb.TritonError.ALREADY_EXISTS,
    ErrorCode.CANCELLED: pb.TritonError.CANCELLED,
}


def exec_sync(request: pb.InferenceRequest, decoupled: bool) -> Any:
    calls = bound()
    if decoupled:
        return calls.iterate(_responses(calls, request))
    return calls.wait(_called(calls, request))


async def exec_async(request: pb.InferenceRequest, decoupled: bool) -> Any:
    try:
        calls = bound()
    except Unavailable as error:  # async_exec answers every failure, it never raises
        return _failures(error) if decoupled else _failed(error)
    if decoupled:
        return _responses(calls, request)
    return await _called(calls, request)


async def _called(calls: ModelCalls, request: pb.InferenceRequest) -> pb.InferenceResponse:
    try:
        return _answer(await calls.call_async(_neutral(request)))
    except ModelPlatformError as error:
        return _failed(error)


async def _responses(calls: ModelCalls, request: pb.InferenceRequest) -> AsyncIterator[pb.InferenceResponse]:
    """Every response of the called model; a failure becomes the last, with its error."""
    try:
        async for response in calls.responses(_neutral(request)):
            yield _answer(response)
    except ModelPlatformError as error:
        yield _failed(error)


async def _failures(error: ModelPlatformError) -> AsyncIterator[pb.InferenceResponse]:
    yield _failed(error)


def _neutral(request: pb.InferenceRequest) -> InferenceRequest:
    version = request.model_version()
    wanted = request.requested_output_names()
    return InferenceRequest(
        request.model_name(),
        [Tensor.from_array(t.name(), t.as_numpy()) for t in request.inputs()],
        model_version="" if version < 0 else str(version),
        id=request.request_id(),
        outputs=[RequestedOutput(name) for name in wanted] if wanted else None,
        parameters=_sequence_parameters(request),
    )


def _sequence_parameters(request: pb.InferenceRequest) -> dict[str, Any]:
    """A BLS call's correlation id and flags, as the sequence batcher reads them."""
    correlation_id, flags = request.correlation_id(), request.flags()
    if not correlation_id and not flags:
        return {}
    return {
        "sequence_id": correlation_id,
        "sequence_start": bool(flags & pb.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START),
        "sequence_end": bool(flags & pb.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END),
    }


def _answer(response: InferenceResponse) -> pb.InferenceResponse:
    return pb.InferenceResponse([pb.Tensor(t.name, t.data) for t in response.outputs])


def _failed(error: ModelPlatformError) -> pb.InferenceResponse:
    code = _CODES.get(error.code, pb.TritonError.INTERNAL)
    return pb.InferenceResponse(error=pb.TritonError(error.message, code))
