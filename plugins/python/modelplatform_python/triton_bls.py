"""``pb_utils.InferenceRequest.exec()`` / ``async_exec()``: Triton's BLS over bls.ModelCalls.

Triton's contract: the call answers a ``pb_utils.InferenceResponse`` whose
``has_error()`` tells a failed call (it does not raise); ``decoupled=True``
answers an iterator of responses (``async_exec``: an async iterator).
Output tensors wrap the called model's arrays: no copy either way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from modelplatform import (
    ErrorCode,
    InferenceRequest,
    InferenceResponse,
    ModelPlatformError,
    RequestedOutput,
    Tensor,
)

from . import triton_utils as pb
from .bls import bound

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
        return _responses_sync(request)
    return calls.wait(exec_async(request, False))


async def exec_async(request: pb.InferenceRequest, decoupled: bool) -> Any:
    if decoupled:
        return _responses(request)
    try:
        return _answer(await bound().call_async(_neutral(request)))
    except ModelPlatformError as error:
        return _failed(error)


def _responses_sync(request: pb.InferenceRequest) -> Iterator[pb.InferenceResponse]:
    return bound().iterate(_responses(request))


async def _responses(request: pb.InferenceRequest) -> AsyncIterator[pb.InferenceResponse]:
    """Every response of the called model; a failure becomes the last, with its error."""
    try:
        async for response in bound().responses(_neutral(request)):
            yield _answer(response)
    except ModelPlatformError as error:
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
    )


def _answer(response: InferenceResponse) -> pb.InferenceResponse:
    return pb.InferenceResponse([pb.Tensor(t.name, t.data) for t in response.outputs])


def _failed(error: ModelPlatformError) -> pb.InferenceResponse:
    code = _CODES.get(error.code, pb.TritonError.INTERNAL)
    return pb.InferenceResponse(error=pb.TritonError(error.message, code))
