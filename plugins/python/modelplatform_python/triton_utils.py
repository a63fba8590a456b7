"""The ``triton_python_backend_utils`` API that Triton python models import.

Written from the python backend's documented interface: tensors, requests,
responses, errors, config lookups and type helpers, and BLS:
``InferenceRequest(...).exec()`` / ``await .async_exec()`` call another model
in the server's own process (triton_bls.py); DLPack on CPU
(triton_dlpack.py: a tensor on another device is kept as it is, and what
needs numpy refuses it with a clear message); custom metrics
(``MetricFamily``, triton_metrics.py); the ``ModelConfig`` that
``auto_complete_config`` completes (triton_config.py). Decoupled response
senders live in decoupled.py. The top-level
module ``triton_python_backend_utils`` re-exports this one, so
``import triton_python_backend_utils as pb_utils`` works unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import structlog

from .device import DLPACK_CPU, is_on_device
from .triton_config import ModelConfig
from .triton_dlpack import capsule_of
from .triton_errors import TritonModelException
from .triton_metrics import Metric, MetricFamily

__all__ = [
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_END",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_START",
    "TRITONSERVER_REQUEST_RELEASE_ALL",
    "TRITONSERVER_RESPONSE_COMPLETE_FINAL",
    "InferenceRequest",
    "InferenceResponse",
    "Logger",
    "Metric",
    "MetricFamily",
    "ModelConfig",
    "Tensor",
    "TritonError",
    "TritonModelException",
    "deserialize_bytes_tensor",
    "get_input_config_by_name",
    "get_input_tensor_by_name",
    "get_output_config_by_name",
    "get_output_tensor_by_name",
    "numpy_to_triton_type",
    "serialize_byte_tensor",
    "triton_string_to_numpy",
    "triton_to_numpy_type",
    "using_decoupled_model_transaction_policy",
]

_log = structlog.get_logger("modelplatform_python.triton")

# Triton's TRITONSERVER_DataType numbering; the config's TYPE_* enum matches it.
_TYPE_NAMES = (
    "TYPE_INVALID", "TYPE_BOOL", "TYPE_UINT8", "TYPE_UINT16", "TYPE_UINT32", "TYPE_UINT64",
    "TYPE_INT8", "TYPE_INT16", "TYPE_INT32", "TYPE_INT64", "TYPE_FP16", "TYPE_FP32",
    "TYPE_FP64", "TYPE_STRING", "TYPE_BF16",
)  # fmt: skip
_NUMPY = {
    "TYPE_BOOL": np.bool_, "TYPE_UINT8": np.uint8, "TYPE_UINT16": np.uint16,
    "TYPE_UINT32": np.uint32, "TYPE_UINT64": np.uint64, "TYPE_INT8": np.int8,
    "TYPE_INT16": np.int16, "TYPE_INT32": np.int32, "TYPE_INT64": np.int64,
    "TYPE_FP16": np.float16, "TYPE_FP32": np.float32, "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_,
}  # fmt: skip

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1


class TritonError:
    """An error carried by an InferenceResponse; fails that request alone."""

    (UNKNOWN, INTERNAL, NOT_FOUND, INVALID_ARG,
     UNAVAILABLE, UNSUPPORTED, ALREADY_EXISTS, CANCELLED) = range(8)  # fmt: skip

    def __init__(self, message: str, code: int = INTERNAL) -> None:
        self._message = message
        self._code = code

    def message(self) -> str:
        return self._message

    def code(self) -> int:
        return self._code

    def __repr__(self) -> str:
        return f"TritonError({self._message!r}, code={self._code})"


class Tensor:
    """A named tensor: a numpy array in host memory, or a framework's tensor in GPU memory.

    GPU tensors come from ``from_dlpack`` (torch, cupy) or, for models with
    ``FORCE_CPU_ONLY_INPUT_TENSORS: no``, from inputs that arrived in device
    memory; ``as_numpy`` is for host tensors only, as on Triton.
    """

    def __init__(self, name: str, array: Any) -> None:
        if not isinstance(array, np.ndarray) and not is_on_device(array):
            raise TritonModelException(f"Tensor '{name}' needs a numpy array, got {type(array).__name__}")
        self._name = name
        self._array = array

    def name(self) -> str:
        return self._name

    def as_numpy(self) -> np.ndarray:
        if not isinstance(self._array, np.ndarray):
            raise TritonModelException(
                f"tensor '{self._name}' is in GPU memory: as_numpy() is only supported for CPU tensors"
            )
        return self._array

    def shape(self) -> list[int]:
        return [int(d) for d in self._array.shape]

    def is_cpu(self) -> bool:
        return isinstance(self._array, np.ndarray)

    def to_dlpack(self) -> Any:
        """A DLPack capsule of the tensor's memory (no copy), e.g. for ``torch.from_dlpack``."""
        if not isinstance(self._array, np.ndarray):
            return self._array.__dlpack__()
        try:
            return capsule_of(self._array)
        except (BufferError, TypeError) as error:  # BYTES (object) tensors have no DLPack form
            raise TritonModelException(f"tensor '{self._name}': {error}") from None

    def __dlpack__(self, **kwargs: Any) -> Any:
        """So ``numpy.from_dlpack(tensor)`` and ``torch.from_dlpack(tensor)`` take it directly."""
        if not isinstance(self._array, np.ndarray):
            return self._array.__dlpack__(**kwargs)
        return capsule_of(self._array, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        if not isinstance(self._array, np.ndarray):
            device = self._array.__dlpack_device__()
            return (int(device[0]), int(device[1]))
        return (DLPACK_CPU, 0)

    @classmethod
    def from_dlpack(cls, name: str, capsule: Any) -> Tensor:
        """From an object with ``__dlpack__`` or a DLPack capsule; GPU memory stays on the GPU."""
        if is_on_device(capsule):
            return cls(name, capsule)
        if hasattr(capsule, "__dlpack__"):
            value = np.from_dlpack(capsule)
        elif type(capsule).__name__ == "PyCapsule":
            value = _from_capsule(capsule)
        else:
            raise TritonModelException(
                f"Tensor.from_dlpack('{name}'): needs a DLPack capsule or an object with "
                f"__dlpack__ and __dlpack_device__, got {type(capsule).__name__}"
            )
        if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
            raise TritonModelException(f"Tensor.from_dlpack('{name}'): the tensor is not C-contiguous")
        return cls(name, value)


def outcome(response: InferenceResponse) -> tuple[TritonError | None, dict[str, Any]]:
    """A response's error and what each output holds, by name: read in one call (the runner
    reads every response, and every call on the request path costs the event loop: see
    docs/performance.md, issue 32, seventh session)."""
    values = {}
    for tensor in response._outputs:  # a loop, not a comprehension: a frame less
        values[tensor._name] = tensor._array
    return response._error, values


def _from_capsule(capsule: Any) -> Any:
    """A bare capsule says nothing of its device: torch reads any (numpy only host memory)."""
    try:
        from torch.utils.dlpack import from_dlpack  # optional: GPU capsules need a framework
    except ImportError:
        return np.from_dlpack(_Capsule(capsule))
    value = from_dlpack(capsule)
    return value.numpy() if value.device.type == "cpu" else value


class _Capsule:
    """A host DLPack capsule dressed as an object numpy's from_dlpack takes."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, **_: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (DLPACK_CPU, 0)


class InferenceRequest:
    """One request as ``execute`` receives it, or one a model builds to call another (BLS)."""

    def __init__(
        self,
        model_name: str = "",
        requested_output_names: Sequence[str] = (),
        inputs: Sequence[Tensor] = (),
        request_id: str = "",
        correlation_id: int | str = 0,
        parameters: dict[str, Any] | str | None = None,
        flags: int = 0,
        model_version: int = -1,
        **_: Any,
    ) -> None:
        self._model_name = model_name
        self._model_version = model_version
        self._inputs = list(inputs)
        self._requested = list(requested_output_names)
        self._request_id = request_id
        self._correlation_id = correlation_id
        if not isinstance(parameters, str):
            parameters = json.dumps(parameters or {})
        self._parameters = parameters
        self._flags = flags

    def inputs(self) -> list[Tensor]:
        return self._inputs

    def requested_output_names(self) -> list[str]:
        return self._requested

    def request_id(self) -> str:
        return self._request_id

    def correlation_id(self) -> int | str:
        return self._correlation_id

    def parameters(self) -> str:
        """The request parameters as a JSON string (Triton's form)."""
        return self._parameters

    def flags(self) -> int:
        return self._flags

    def model_name(self) -> str:
        return self._model_name

    def model_version(self) -> int:
        """The version a BLS call asks for; -1: the newest READY one."""
        return self._model_version

    def is_cancelled(self) -> bool:
        sender = getattr(self, "response_sender", None)  # set for decoupled models (decoupled.py)
        return sender is not None and sender.is_cancelled()

    def get_response_sender(self) -> Any:
        sender = getattr(self, "response_sender", None)
        if sender is None:
            raise TritonModelException(
                "a response sender is only for models with model_transaction_policy { decoupled: true }"
            )
        return sender

    def exec(self, decoupled: bool = False) -> Any:
        """Call ``model_name`` and wait: a response, or with ``decoupled`` an iterator of them."""
        return _bls.exec_sync(self, decoupled)

    async def async_exec(self, decoupled: bool = False) -> Any:
        """``exec`` for ``async def execute``: with ``decoupled``, an async iterator."""
        return await _bls.exec_async(self, decoupled)


class _NoServer:
    """BLS outside a server (a model file imported by a script): refused clearly."""

    @staticmethod
    def exec_sync(request: InferenceRequest, decoupled: bool) -> Any:
        raise TritonModelException("InferenceRequest.exec() runs only inside a server's model")

    @staticmethod
    async def exec_async(request: InferenceRequest, decoupled: bool) -> Any:
        raise TritonModelException("InferenceRequest.async_exec() runs only in a server's model")


#: What runs ``exec``/``async_exec``: triton_bls once the python backend is imported
#: (installed from there: this module must not import it, it imports this one).
_bls: Any = _NoServer


def install_bls(runner: Any) -> None:
    global _bls  # noqa: PLW0603 - one implementation per process
    _bls = runner


class InferenceResponse:
    """Output tensors, or an error for its request."""

    def __init__(
        self,
        output_tensors: Sequence[Tensor] | None = None,
        error: TritonError | None = None,
        parameters: dict[str, Any] | str | None = None,
    ) -> None:
        self._outputs = list(output_tensors or [])
        self._error = error
        self._parameters = parameters

    def output_tensors(self) -> list[Tensor]:
        return self._outputs

    def has_error(self) -> bool:
        return self._error is not None

    def error(self) -> TritonError | None:
        return self._error


class Logger:
    """pb_utils.Logger: model log lines go to the server's structured log."""

    @staticmethod
    def log_info(message: str) -> None:
        _log.info("model_logged", message=message)

    @staticmethod
    def log_warn(message: str) -> None:
        _log.warning("model_logged", message=message)

    @staticmethod
    def log_error(message: str) -> None:
        _log.error("model_logged", message=message)

    @staticmethod
    def log_verbose(message: str) -> None:
        _log.debug("model_logged", message=message)

    @staticmethod
    def log(message: str, level: int = 0) -> None:
        _log.info("model_logged", message=message, level=level)


def get_input_tensor_by_name(request: InferenceRequest, name: str) -> Tensor | None:
    for tensor in request._inputs:  # no method calls, no genexpr: this runs per input per request
        if tensor._name == name:
            return tensor
    return None


def get_output_tensor_by_name(response: InferenceResponse, name: str) -> Tensor | None:
    return next((t for t in response.output_tensors() if t.name() == name), None)


def get_input_config_by_name(model_config: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((t for t in model_config.get("input", []) if t.get("name") == name), None)


def get_output_config_by_name(model_config: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((t for t in model_config.get("output", []) if t.get("name") == name), None)


def using_decoupled_model_transaction_policy(model_config: dict[str, Any]) -> bool:
    return bool(model_config.get("model_transaction_policy", {}).get("decoupled", False))


def triton_string_to_numpy(triton_type: str) -> type:
    """``"TYPE_FP32"`` -> ``numpy.float32`` (``TYPE_STRING`` -> ``numpy.object_``)."""
    try:
        return _NUMPY[triton_type]
    except KeyError:
        raise TritonModelException(f"unknown or unsupported Triton type '{triton_type}'") from None


def triton_to_numpy_type(data_type: int) -> type:
    """Triton's numeric data type code -> numpy type."""
    if not 0 < data_type < len(_TYPE_NAMES):
        raise TritonModelException(f"unknown Triton data type {data_type}")
    return triton_string_to_numpy(_TYPE_NAMES[data_type])


def numpy_to_triton_type(data_type: Any) -> int | None:
    dtype = np.dtype(data_type)
    for name, candidate in _NUMPY.items():
        if np.dtype(candidate) == dtype or (name == "TYPE_STRING" and dtype.kind in ("S", "U")):
            return _TYPE_NAMES.index(name)
    return None


def serialize_byte_tensor(array: np.ndarray) -> np.ndarray:
    """BYTES elements as Triton's 4-byte little-endian length + bytes, in a uint8 array."""
    chunks = []
    for item in array.ravel(order="C"):
        data = item if isinstance(item, bytes) else str(item).encode("utf-8")
        chunks.append(len(data).to_bytes(4, "little") + data)
    return np.frombuffer(b"".join(chunks), dtype=np.uint8)


def deserialize_bytes_tensor(encoded: bytes | np.ndarray) -> np.ndarray:
    data = bytes(encoded)
    items, offset = [], 0
    while offset + 4 <= len(data):
        size = int.from_bytes(data[offset : offset + 4], "little")
        items.append(data[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return np.array(items, dtype=np.object_)
