"""GPU tensors for Triton python models: inputs left in device memory, outputs returned on it.

Triton hands a python model its inputs in host memory unless the model sets
the parameter ``FORCE_CPU_ONLY_INPUT_TENSORS`` to ``no``; then an input that
arrived in GPU memory (a client's CUDA shared memory) stays there, as a
framework tensor the model takes with ``pb_utils.Tensor.to_dlpack`` (or
``from_dlpack`` back). Outputs a model returns in device memory (torch or
cupy through ``pb_utils.Tensor.from_dlpack``) are copied to the host for the
response, or device to device into a CUDA shared-memory window bound to them.

The framework used for device inputs is torch where it imports, else cupy;
with neither, device inputs go to the host as they would by default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from modelplatform import DeviceArray, InferenceRequest, InvalidArgument, ModelConfig

#: Triton's model parameter: "no" lets GPU inputs reach the model on the GPU.
FORCE_CPU_ONLY = "FORCE_CPU_ONLY_INPUT_TENSORS"
#: DLPack's device type for CPU memory (kDLCPU); CUDA is 2, pinned host memory 3.
DLPACK_CPU = 1


def keeps_device_inputs(config: ModelConfig) -> bool:
    value = config.parameters.get(FORCE_CPU_ONLY, "yes").strip().lower()
    if value not in ("yes", "no", "true", "false", "1", "0", "on", "off"):
        raise InvalidArgument(f"model '{config.name}': parameter '{FORCE_CPU_ONLY}' must be yes or no")
    return value in ("no", "false", "0", "off")


def input_value(data: np.ndarray, device: DeviceArray | None, keep_on_device: bool) -> Any:
    """What pb_utils.Tensor holds for one input: the host array, or a framework tensor on the GPU."""
    if device is None:
        return data
    if keep_on_device:
        framework = _framework_view(device)
        if framework is not None:
            return framework
    return device.to_host()


def is_on_device(value: Any) -> bool:
    """Whether a tensor value lives in device memory (DLPack's device type is not the CPU's)."""
    if isinstance(value, np.ndarray):
        return False
    device = getattr(value, "__dlpack_device__", None)
    return device is not None and device()[0] != DLPACK_CPU


def to_host(value: Any) -> np.ndarray:
    """A host copy of a device tensor: DLPack's cross-device copy, else the framework's own."""
    try:
        return np.from_dlpack(value, device="cpu", copy=True)
    except (BufferError, TypeError, ValueError, RuntimeError):
        pass
    if hasattr(value, "cpu"):  # torch
        return np.asarray(value.cpu().numpy())
    if hasattr(value, "get"):  # cupy
        return np.asarray(value.get())
    raise InvalidArgument(f"cannot copy a {type(value).__name__} from device memory to the host")


def _framework_view(device: DeviceArray) -> Any:
    """The device array as a torch tensor (or cupy array) over the same memory: no copy."""
    try:
        import torch  # optional: only models that keep GPU inputs need it
    except ImportError:
        pass
    else:
        return torch.as_tensor(device, device=f"cuda:{device.device_id}")
    try:
        import cupy  # optional, as torch above
    except ImportError:
        return None
    with cupy.cuda.Device(device.device_id):
        return cupy.asarray(device)


def host_inputs(batch: Sequence[InferenceRequest]) -> None:
    """Inputs in device memory copied to the host, for runners that hand models numpy only."""
    for request in batch:
        for tensor in request.inputs:
            if tensor.device is not None:
                tensor.data, tensor.device = tensor.device.to_host(), None
        for output in request.outputs or ():
            output.device_destination = None


def instance_args(config: ModelConfig, instance: int) -> tuple[str, str]:
    """Triton's ``model_instance_kind`` and ``model_instance_device_id`` for one instance."""
    kind, gpu = config.instance_placement(instance)
    if kind == "KIND_GPU":
        return "GPU", str(gpu)
    return ("MODEL", "0") if kind == "KIND_MODEL" else ("CPU", "0")


def output_value(value: Any, destination: DeviceArray | None) -> tuple[np.ndarray, DeviceArray | None]:
    """An output for the response: a host array, or (a stand-in, the window) once written on the GPU."""
    if not is_on_device(value):
        return value, None
    if destination is None:
        return to_host(value), None
    destination.write(value.contiguous() if hasattr(value, "contiguous") else value)
    shape = tuple(int(d) for d in value.shape)
    dtype = np.dtype(str(value.dtype).removeprefix("torch."))
    return np.broadcast_to(np.zeros((), dtype=dtype), shape), destination
