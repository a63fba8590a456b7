"""The runner for a ``model.py`` written for Triton's python backend, run unchanged.

Such a file defines ``class TritonPythonModel`` with ``initialize(args)``
(optional), ``execute(requests)`` and ``finalize()`` (optional), and imports
``triton_python_backend_utils as pb_utils``. ``execute`` receives the whole
batch as a list of ``pb_utils.InferenceRequest`` and returns one
``pb_utils.InferenceResponse`` per request, in order; a response carrying a
``pb_utils.TritonError`` fails that request alone, while an exception from
``execute`` fails every request of that call (Triton's rules). A synchronous
``execute`` runs inline or on the instance's thread, as a ``Model.infer``
does (calls.py). A model with ``model_transaction_policy { decoupled: true }``
answers only streaming calls, one ``execute`` per request, through the
request's response sender (decoupled.py).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from modelplatform import (
    AlreadyExists,
    Cancelled,
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    Internal,
    InvalidArgument,
    ModelConfig,
    ModelExecutionError,
    ModelPlatformError,
    NotFound,
    PhaseClock,
    RawResponse,
    Tensor,
    Unavailable,
    Unsupported,
)

from . import triton_bls
from . import triton_utils as pb
from .bls import ModelCalls, bind, current_calls
from .calls import Deferred, InstanceCaller
from .decoupled import ResponseSender
from .device import input_value, instance_args, keeps_device_inputs, output_value
from .loader import forget_module
from .outputs import OutputTypes
from .raw import no_http

pb.install_bls(triton_bls)  # exec()/async_exec() call models through the server

_ERRORS: dict[int, type[ModelPlatformError]] = {
    pb.TritonError.INVALID_ARG: InvalidArgument,
    pb.TritonError.NOT_FOUND: NotFound,
    pb.TritonError.UNAVAILABLE: Unavailable,
    pb.TritonError.UNSUPPORTED: Unsupported,
    pb.TritonError.ALREADY_EXISTS: AlreadyExists,
    pb.TritonError.CANCELLED: Cancelled,
}


class TritonRunner:
    """One ``TritonPythonModel`` instance living in the server process."""

    def __init__(
        self,
        module: ModuleType,
        config: ModelConfig,
        version_dir: Path,
        instance: int,
        calls: ModelCalls | None = None,
    ) -> None:
        self._module = module
        #: Current while the model's code runs on the loop, so exec() reaches this server.
        self._calls = calls
        # The instance's thread knows its server's calls, for exec() (bls.bound).
        self._caller = InstanceCaller(
            f"{config.name}-{instance}", thread_setup=functools.partial(bind, calls)
        )
        self._config = config
        self._outputs = OutputTypes(config)
        self._version_dir = version_dir
        self._instance = instance
        self._model: Any = None
        #: Whether the model's execute is a coroutine function (found once, at load).
        self._awaits = False
        #: The backend's compute-phase marks (its own clock until handed one).
        self.phases = PhaseClock()
        #: A decoupled model answers through response senders, any number of times.
        self.streams = config.decoupled
        #: Triton's FORCE_CPU_ONLY_INPUT_TENSORS "no": inputs in GPU memory reach the model there.
        self._device_inputs = keeps_device_inputs(config)

    async def load(self) -> None:
        self._model = self._module.TritonPythonModel()
        self._awaits = inspect.iscoroutinefunction(self._model.execute)
        await _run(getattr(self._model, "initialize", None), self._initialize_args())

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        # Loops rather than comprehensions, and the phase marks set here rather than through
        # PhaseClock's methods: each of those is a frame on every request (docs/performance.md).
        requests = []
        for request in batch:
            requests.append(_pb_request(request, self._device_inputs))
        phases = self.phases
        phases.inputs_ready_ns = time.perf_counter_ns()
        token = current_calls.set(self._calls)  # the backend leaves it to this runner (backend.py)
        try:
            if self._awaits:
                responses = await self._model.execute(requests)
            else:
                responses = self._caller.try_inline(self._model.execute, requests)
                if responses is Deferred.TO_THREAD:
                    responses = await self._caller.on_thread(self._model.execute, requests)
        except Exception as error:  # noqa: BLE001 - Triton: an exception fails the whole call
            return [ModelExecutionError(self._config.name, error) for _ in batch]
        finally:
            phases.outputs_started_ns = time.perf_counter_ns()
            current_calls.reset(token)
        if not isinstance(responses, (list, tuple)) or len(responses) != len(batch):
            return [self._miscounted(responses, len(batch)) for _ in batch]
        results: ExecuteResult = []
        for request, response in zip(batch, responses):
            results.append(self._result(request, response))
        return results

    def execute_now(self, request: InferenceRequest) -> InferenceResponse | ModelPlatformError | None:
        """``execute`` for one request, inline and without a coroutine, where the model runs
        inline (calls.py); None, having called nothing, where it does not. A model that
        blocks on another one (NeedsThread) is called again on its thread: None then too."""
        if self._awaits or self.streams or not self._caller.runs_inline():
            return None
        requests = [_pb_request(request, self._device_inputs)]
        phases = self.phases
        phases.inputs_ready_ns = time.perf_counter_ns()
        token = current_calls.set(self._calls)
        try:
            responses = self._caller.try_inline(self._model.execute, requests)
        except Exception as error:  # noqa: BLE001 - Triton: an exception fails the whole call
            return ModelExecutionError(self._config.name, error)
        finally:
            phases.outputs_started_ns = time.perf_counter_ns()
            current_calls.reset(token)
        if responses is Deferred.TO_THREAD:
            return None
        if not isinstance(responses, (list, tuple)) or len(responses) != 1:
            return self._miscounted(responses, 1)
        return self._result(request, responses[0])

    def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        if not self.streams:
            return self._refused()
        return self._decoupled(request)

    async def handle_raw(self, body: bytes, headers: Mapping[str, str]) -> RawResponse:
        raise no_http(self._config.name)

    async def unload(self) -> None:
        model, self._model = self._model, None
        try:
            if model is not None:
                await _run(getattr(model, "finalize", None))
        finally:
            self._caller.close()
            forget_module(self._module)

    def _initialize_args(self) -> dict[str, str]:
        """The ``args`` dict Triton passes to ``initialize``: all values are strings."""
        kind, device = instance_args(self._config, self._instance)
        return {
            "model_config": json.dumps(self._config.to_json()),
            "model_instance_kind": kind,
            "model_instance_name": f"{self._config.name}_0_{self._instance}",
            "model_instance_device_id": device,
            "model_repository": str(self._version_dir.parent),
            "model_version": self._version_dir.name,
            "model_name": self._config.name,
        }

    def _miscounted(self, responses: Any, wanted: int) -> Internal:
        is_list = isinstance(responses, (list, tuple))
        count = len(responses) if is_list else type(responses).__name__
        return Internal(
            f"model '{self._config.name}': execute() returned {count} responses for {wanted} requests"
        )

    def _result(self, request: InferenceRequest, response: Any) -> InferenceResponse | ModelPlatformError:
        if not isinstance(response, pb.InferenceResponse):
            return Internal(
                f"model '{self._config.name}': execute() returned {type(response).__name__}, "
                "expected pb_utils.InferenceResponse"
            )
        try:
            failed, arrays = pb.outcome(response)
            if failed is not None:
                return _error(self._config.name, failed)
            tensors = self._tensors(request, arrays)
        except ModelPlatformError as error:
            return error
        except Exception as error:  # noqa: BLE001 - a malformed response fails its request only
            return ModelExecutionError(self._config.name, error)
        return InferenceResponse(request.model_name, request.model_version, tensors, id=request.id)

    def _tensors(self, request: InferenceRequest, arrays: dict[str, Any]) -> list[Tensor]:
        """The model's outputs (by name) as response tensors; one in GPU memory goes to the
        host, or straight into the CUDA shared-memory window the client bound it to."""
        placed: dict[str, Any] = {}
        for name, value in arrays.items():
            if not isinstance(value, np.ndarray):  # in GPU memory: rare, so looked for second
                arrays[name], placed[name] = output_value(value, _window(request, name))
        tensors = self._outputs.tensors(arrays)
        if placed:
            for tensor in tensors:
                tensor.device = placed.get(tensor.name)
        return tensors

    async def _decoupled(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        """Run ``execute`` for one request and yield what its sender sends, as it comes.

        ``execute`` runs beside the reading: it may send from its own call
        (waiting for room) or return at once and send from a thread. The
        reader leaving cancels the sender, so the model's next send raises.
        """
        sender = ResponseSender(self._config.name)
        triton_request = _pb_request(request, self._device_inputs)
        triton_request.response_sender = sender  # type: ignore[attr-defined]  # Triton's pb_utils request takes the sender as an attribute
        call = asyncio.ensure_future(self._execute_decoupled(triton_request, sender))
        try:
            async for sent, final in sender.responses():
                if isinstance(sent, Exception):
                    raise sent
                if sent is not None:
                    yield self._sent_response(request, sent, final)
        finally:
            sender.cancel()
            call.cancel()  # an async execute stops; a thread stops at its next send

    async def _execute_decoupled(self, request: Any, sender: ResponseSender) -> None:
        try:
            if self._awaits:
                returned = await self._model.execute([request])
            else:
                returned = await self._caller.call(self._model.execute, [request])
        except Exception as error:  # noqa: BLE001 - the stream fails with it
            sender.fail(ModelExecutionError(self._config.name, error))
            return
        if returned is not None:
            sender.fail(
                Internal(
                    f"model '{self._config.name}' is decoupled: execute() must return None "
                    "and answer through request.get_response_sender()"
                )
            )

    def _sent_response(self, request: InferenceRequest, sent: Any, final: bool) -> InferenceResponse:
        result = self._result(request, sent)
        if isinstance(result, ModelPlatformError):
            raise result
        result.final = final
        return result

    async def _refused(self) -> AsyncIterator[InferenceResponse]:
        raise Unsupported(
            f"model '{self._config.name}' is a Triton python model: it answers one response per request"
        )
        yield  # an async generator, as every stream is: the error comes at the first step


def _window(request: InferenceRequest, name: str) -> Any:
    """The CUDA shared-memory window the client bound output ``name`` to, if any."""
    return next((o.device_destination for o in request.outputs or () if o.name == name), None)


#: The request parameters Triton turns into the correlation id and flags, not ``parameters()``.
_SEQUENCE_PARAMETERS = ("sequence_id", "sequence_start", "sequence_end")


def _pb_request(request: InferenceRequest, device_inputs: bool) -> pb.InferenceRequest:
    wanted = []
    for output in request.outputs or ():  # loops, not comprehensions: a frame each per request
        wanted.append(output.name)
    parameters = request.parameters
    flags = 0
    if not parameters:  # most requests: no JSON encoder on the way (it is not cheap per call)
        text = "{}"
    else:
        if any(key in parameters for key in _SEQUENCE_PARAMETERS):
            flags = _sequence_flags(parameters)
            parameters = {k: v for k, v in parameters.items() if k not in _SEQUENCE_PARAMETERS}
        text = json.dumps(parameters, default=str)
    inputs = []
    for t in request.inputs:
        inputs.append(
            pb.Tensor(t.name, t.data if t.device is None else input_value(t.data, t.device, device_inputs))
        )
    return pb.InferenceRequest(
        model_name=request.model_name,
        requested_output_names=wanted,
        inputs=inputs,
        request_id=request.id,
        correlation_id=request.parameters.get("sequence_id", 0),
        parameters=text,
        flags=flags,
    )


def _sequence_flags(parameters: Mapping[str, Any]) -> int:
    start = pb.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START if parameters.get("sequence_start") is True else 0
    end = pb.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END if parameters.get("sequence_end") is True else 0
    return start | end


def _error(model: str, error: Any) -> ModelPlatformError:
    if not isinstance(error, pb.TritonError):
        return Internal(f"model '{model}' failed: {error}")
    kind = _ERRORS.get(error.code())
    if kind is None:
        return Internal(f"model '{model}' failed: {error.message()}")
    return kind(error.message())


async def _run(method: Any, *args: Any) -> Any:
    """Await a coroutine method on the loop; run a plain one in a worker thread."""
    if method is None:
        return None
    if inspect.iscoroutinefunction(method):
        return await method(*args)
    return await asyncio.to_thread(method, *args)
