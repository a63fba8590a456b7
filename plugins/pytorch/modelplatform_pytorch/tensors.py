"""One input into torch, one output out of it: the only places tensors cross the boundary.

Numeric data crosses without a copy where torch and numpy can share memory:
``torch.from_numpy`` on the way in, ``Tensor.numpy()`` on a CPU tensor on the
way out; moving to or from a GPU is the one copy. Input data that is not a
numpy array but offers ``__dlpack__`` (a tensor already in device memory)
goes in through ``torch.from_dlpack`` (``torch.utils.dlpack``). BF16 travels as ``uint16`` bit patterns
(modelplatform.datatypes) and is reinterpreted, not converted. BYTES inputs
and outputs are TorchScript's ``List[str]`` (UTF-8), one dimension, as in
Triton. Imports torch: only imported from ``load()``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.utils.dlpack import from_dlpack

from modelplatform import DeviceArray, ModelExecutionError

#: torch dtypes -> OIP datatypes, to check what the model returned against the configuration.
DATATYPES: dict[torch.dtype, str] = {
    torch.bool: "BOOL",
    torch.uint8: "UINT8",
    torch.uint16: "UINT16",
    torch.uint32: "UINT32",
    torch.uint64: "UINT64",
    torch.int8: "INT8",
    torch.int16: "INT16",
    torch.int32: "INT32",
    torch.int64: "INT64",
    torch.float16: "FP16",
    torch.float32: "FP32",
    torch.float64: "FP64",
    torch.bfloat16: "BF16",
}


def as_torch(data: Any, datatype: str, device: torch.device) -> Any:
    """One request input as the value ``forward`` takes: a tensor on ``device``, or a List[str]."""
    if isinstance(data, np.ndarray):
        if datatype == "BYTES":
            return [_text(item) for item in data.reshape(-1)]
        if datatype == "BF16":
            return torch.from_numpy(data.view(np.int16)).view(torch.bfloat16).to(device)
        return torch.from_numpy(data).to(device)
    if isinstance(data, DeviceArray):  # a client's CUDA window: mapped, not copied
        mapped = torch.as_tensor(data, device=torch.device("cuda", data.device_id))
        return (mapped.view(torch.bfloat16) if datatype == "BF16" else mapped).to(device)
    if hasattr(data, "__dlpack__"):
        return from_dlpack(data).to(device)
    raise TypeError(f"input data of type {type(data).__name__} is neither a numpy array nor DLPack")


def as_numpy(model: str, name: str, value: Any, datatype: str) -> np.ndarray:
    """One forward result as the response array of output ``name`` (configured as ``datatype``)."""
    if isinstance(value, list):
        return _bytes_array(model, name, value, datatype)
    check_datatype(model, name, value, datatype)
    host = value.detach().cpu()
    if datatype == "BF16":
        return host.view(torch.int16).numpy().view(np.uint16)
    return host.numpy()


def check_datatype(model: str, name: str, value: Any, datatype: str) -> None:
    """Fail the call unless ``value`` is a tensor of the configured ``datatype`` (no data is read)."""
    if not isinstance(value, torch.Tensor):
        raise _mismatch(model, name, f"a {type(value).__name__}, not a tensor or List[str]")
    produced = DATATYPES.get(value.dtype, str(value.dtype))
    if produced != datatype:
        raise _mismatch(model, name, f"{produced}, the configuration says {datatype}")


def _bytes_array(model: str, name: str, value: list[Any], datatype: str) -> np.ndarray:
    if datatype != "BYTES":
        raise _mismatch(model, name, f"a List[str], the configuration says {datatype}")
    array = np.empty(len(value), dtype=object)
    array[:] = [item.encode() if isinstance(item, str) else bytes(item) for item in value]
    return array


def _text(item: Any) -> str:
    return item.decode("utf-8") if isinstance(item, bytes) else str(item)


def _mismatch(model: str, name: str, what: str) -> ModelExecutionError:
    return ModelExecutionError(model, TypeError(f"output '{name}' is {what}"))


def write_to_device(value: Any, destination: DeviceArray) -> np.ndarray:
    """Copy a CUDA result into the client's CUDA window (on the current stream); a stand-in back."""
    if not isinstance(value, torch.Tensor) or value.device.type != "cuda":
        raise TypeError("only a CUDA tensor is written straight into device memory")
    window = torch.as_tensor(destination, device=torch.device("cuda", destination.device_id))
    size = value.numel() * value.element_size()
    if size > window.numel():
        raise ValueError(f"{size} bytes do not fit the {window.numel()}-byte window")
    window[:size].view(value.dtype).view(value.shape).copy_(value)
    dtype = (
        np.dtype(np.uint16)
        if value.dtype == torch.bfloat16
        else np.dtype(str(value.dtype).removeprefix("torch."))
    )
    return np.broadcast_to(np.zeros((), dtype=dtype), tuple(value.shape))
