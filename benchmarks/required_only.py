"""The model-only yardstick plus what issue 32 says a server must keep: a yardstick, not a server.

``canned.py grpc-required PORT METADATA_DIR`` serves ``benchmarks/peer_models``
as model_only.py does (protobuf parses the request, the model's own
``model.py`` runs through the same stand-in ``triton_python_backend_utils``,
protobuf serialises the answer) and adds, each in its leanest form, the work
our ModelInfer may not drop:

- a request scope set around the call, as our edge sets one (access checks and tracing
  read it);
- the call's deadline, read from grpc;
- validation: each input's name, datatype and rank against the model's
  configuration (read once, at start-up), every declared input present;
- Triton's statistics: our own ``ModelStats``, with the three records a
  request makes (queue, execution, success);
- errors as gRPC statuses, never a traceback.

No template, no dataplane, scheduler or python backend, no shared-memory
regions: what is left between this server's rate and ours is the cost of
our layering, not of the work (docs/performance.md, "Issue 32, seventh
session").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import grpc
import numpy as np
from model_only import PEER_MODELS, InferenceRequest, Tensor, load_models

from modelplatform import RequestScope
from modelplatform.statistics import ModelStats
from modelplatform.testing import read_model_config
from modelplatform_oip.protos import grpc_service_pb2 as pb

#: The request scope's variable (the core keeps its own private; this one costs the same).
_scope: ContextVar[RequestScope | None] = ContextVar("required_only_scope", default=None)
_NUMPY_TYPES = {"INT32": np.int32, "FP32": np.float32}
_WIRE_TYPES = {np.dtype(np.int32): "INT32", np.dtype(np.float32): "FP32"}
#: Each model's inputs: name -> (datatype, dims as a request carries them; -1: any).
Specs = dict[str, dict[str, tuple[str, tuple[int, ...]]]]


def input_specs(models: dict[str, Any]) -> Specs:
    specs: Specs = {}
    for name in models:
        config = read_model_config(PEER_MODELS / name)
        batch = (-1,) if config.max_batch_size > 0 else ()
        specs[name] = {s.name: (s.datatype, (*batch, *s.dims)) for s in config.inputs}
    return specs


def _fits(shape: Any, dims: tuple[int, ...]) -> bool:
    if len(shape) != len(dims):
        return False
    for size, dim in zip(shape, dims):
        if dim != -1 and size != dim:
            return False
    return True


def infer_handler(
    models: dict[str, Any], stats_of: Callable[[str], ModelStats] | None = None
) -> grpc.RpcMethodHandler:
    """ModelInfer with the required work; ``stats_of`` gives a model's counters (default: own)."""
    specs = input_specs(models)
    own = {name: ModelStats(name, "1") for name in models}
    stats = {name: (stats_of(name) if stats_of else own[name]) for name in models}
    scope = RequestScope("oip", {})  # what an edge sets when nobody traces: one shared scope

    async def infer(data: bytes, context: grpc.aio.ServicerContext) -> bytes:
        token = _scope.set(scope)
        try:
            context.time_remaining()  # the deadline a scheduler would honour
            return _answer(data, models, specs, stats)
        except ValueError as error:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
            raise  # not reached: abort raises
        except Exception as error:  # a status, never a traceback
            await context.abort(grpc.StatusCode.INTERNAL, type(error).__name__)
            raise  # not reached
        finally:
            _scope.reset(token)

    return grpc.unary_unary_rpc_method_handler(infer)


def _answer(data: bytes, models: dict[str, Any], specs: Specs, stats: dict[str, ModelStats]) -> bytes:
    started = time.perf_counter_ns()
    request = pb.ModelInferRequest.FromString(data)
    model, wanted = models.get(request.model_name), specs.get(request.model_name)
    if model is None or wanted is None:
        raise ValueError(f"unknown model '{request.model_name}'")
    inputs = {}
    for tensor, raw in zip(request.inputs, request.raw_input_contents):
        spec = wanted.get(tensor.name)
        if spec is None or spec[0] != tensor.datatype or not _fits(tensor.shape, spec[1]):
            raise ValueError(f"input '{tensor.name}' does not fit the model")
        array = np.frombuffer(raw, _NUMPY_TYPES[tensor.datatype]).reshape(tuple(tensor.shape))
        inputs[tensor.name] = Tensor(tensor.name, array)
    if len(inputs) != len(wanted):
        raise ValueError("an input is missing")
    counters = stats[request.model_name]
    executing = time.perf_counter_ns()
    counters.record_queue(executing - started)
    (answer,) = model.execute([InferenceRequest(inputs)])
    counters.record_execution(1, time.perf_counter_ns() - executing)
    reply = pb.ModelInferResponse(model_name=request.model_name, model_version="1", id=request.id)
    for tensor in answer.output_tensors():
        array = tensor.as_numpy()
        reply.outputs.add(name=tensor.name(), datatype=_WIRE_TYPES[array.dtype], shape=array.shape)
        reply.raw_output_contents.append(array.tobytes())
    counters.record_success(time.perf_counter_ns() - started)
    return reply.SerializeToString()


def required_handler() -> grpc.RpcMethodHandler:
    return infer_handler(load_models())
