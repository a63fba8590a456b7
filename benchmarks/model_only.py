"""The least a grpc.aio server can do to serve a python-backend model: a yardstick, not a server.

``canned.py grpc-model PORT METADATA_DIR`` serves ``benchmarks/peer_models`` this way:
ModelInfer parses the request with protobuf, hands the model's own ``model.py``
(the file Triton and our server load) its inputs as numpy views, and
serialises what it returns with protobuf. Nothing else: no checks against the
configuration, no statistics, no scheduling, no request scope, no error
handling. Its rate is what grpcio with the model's Python allows on this
machine, so "of Triton" for this server is the ceiling for any grpcio server
that runs the same model (docs/performance.md, "Issue 32, sixth session").

The model sees a stand-in for ``triton_python_backend_utils`` that has only
what the peer models call (``Tensor``, ``get_input_tensor_by_name``,
``InferenceResponse``), each as thin as Python allows.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from modelplatform_oip.protos import grpc_service_pb2 as pb

PEER_MODELS = Path(__file__).resolve().with_name("peer_models")
_NUMPY_TYPES = {"INT32": np.int32, "FP32": np.float32}
_WIRE_TYPES = {np.dtype(np.int32): "INT32", np.dtype(np.float32): "FP32"}


class Tensor:
    __slots__ = ("_array", "_name")

    def __init__(self, name: str, array: np.ndarray) -> None:
        self._name, self._array = name, array

    def name(self) -> str:
        return self._name

    def as_numpy(self) -> np.ndarray:
        return self._array


class InferenceRequest:
    __slots__ = ("inputs",)

    def __init__(self, inputs: dict[str, Tensor]) -> None:
        self.inputs = inputs


class InferenceResponse:
    __slots__ = ("_outputs",)

    def __init__(self, output_tensors: list[Tensor]) -> None:
        self._outputs = output_tensors

    def output_tensors(self) -> list[Tensor]:
        return self._outputs


def get_input_tensor_by_name(request: InferenceRequest, name: str) -> Tensor | None:
    return request.inputs.get(name)


def _stand_in_utils() -> types.ModuleType:
    module = types.ModuleType("triton_python_backend_utils")
    module.Tensor = Tensor  # type: ignore[attr-defined]  # the module is built here, attribute by attribute
    module.InferenceResponse = InferenceResponse  # type: ignore[attr-defined]  # as above
    module.get_input_tensor_by_name = get_input_tensor_by_name  # type: ignore[attr-defined]  # as above
    return module


def load_models(repository: Path = PEER_MODELS) -> dict[str, Any]:
    """Each model's ``TritonPythonModel`` instance, by model name (version 1)."""
    sys.modules["triton_python_backend_utils"] = _stand_in_utils()
    models = {}
    for folder in sorted(p for p in repository.iterdir() if (p / "1" / "model.py").exists()):
        spec = importlib.util.spec_from_file_location(f"peer_{folder.name}", folder / "1" / "model.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        models[folder.name] = module.TritonPythonModel()
    return models


def infer_handler(models: dict[str, Any]) -> grpc.RpcMethodHandler:
    """ModelInfer taking the request's bytes and answering serialised bytes."""

    async def infer(data: bytes, context: grpc.aio.ServicerContext) -> bytes:
        request = pb.ModelInferRequest.FromString(data)
        inputs = {
            tensor.name: Tensor(
                tensor.name, np.frombuffer(raw, _NUMPY_TYPES[tensor.datatype]).reshape(tuple(tensor.shape))
            )
            for tensor, raw in zip(request.inputs, request.raw_input_contents)
        }
        (answer,) = models[request.model_name].execute([InferenceRequest(inputs)])
        reply = pb.ModelInferResponse(model_name=request.model_name, model_version="1", id=request.id)
        for tensor in answer.output_tensors():
            array = tensor.as_numpy()
            reply.outputs.add(name=tensor.name(), datatype=_WIRE_TYPES[array.dtype], shape=array.shape)
            reply.raw_output_contents.append(array.tobytes())
        return reply.SerializeToString()

    return grpc.unary_unary_rpc_method_handler(infer)
