"""Region parameters -> tensors for oip-rest and oip-grpc alike (the oip ``RegionCodec`` seam).

Inputs: a numpy view over the mapped region (``np.frombuffer`` through the
oip raw decoder): the backend reads the client's memory, nothing is copied (but
for a small input its offset misaligns: copied aligned, ``datatypes.aligned``).
BYTES inputs are decoded into an object array, as they are from a body.
Outputs: checked before inference (region known, window inside it, not also
asked for as binary data) and offered to the backend as the requested
output's ``destination``; after inference each is written into its window
once, from the backend's array (nothing to write when the backend wrote it
there itself), and the response keeps only its name, type and shape.

CUDA regions (cuda.py): an input in one becomes a tensor whose ``device`` is
the window as a DeviceArray and whose ``data`` is a stand-in; a requested
output in one is offered as ``device_destination``. The dataplane copies
such inputs to the host for backends that read only host memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from modelplatform import DeviceArray, InferenceRequest, InferenceResponse, InvalidArgument, Limits, Tensor
from modelplatform.datatypes import element_count, numpy_dtype
from modelplatform_oip.api import (
    BYTE_SIZE,
    OFFSET,
    REGION,
    OutputPlacement,
    RegionCodec,
    names_region,
    placed_output,
    raw_array,
    raw_view,
)

from .cuda import CudaRegion
from .registry import RegionRegistry
from .system import SystemRegion


@dataclass(frozen=True, slots=True)
class Window:
    """Where one tensor lives: ``size`` bytes at ``offset`` of a region."""

    region: SystemRegion
    offset: int
    size: int

    def view(self, what: str) -> memoryview:
        return self.region.view(self.offset, self.size, what)


@dataclass(frozen=True, slots=True)
class CudaWindow:
    """Where one tensor lives in GPU memory: ``size`` bytes at ``offset`` of a CUDA region."""

    region: CudaRegion
    offset: int
    size: int


class SharedMemoryCodec(RegionCodec):
    def __init__(self, registry: RegionRegistry) -> None:
        self.registry = registry

    def read_input(
        self, name: str, datatype: str, shape: list[int], parameters: Mapping[str, Any], limits: Limits
    ) -> np.ndarray:
        what = f"input '{name}'"
        window = self._window(what, parameters)
        count = element_count(shape, limits.max_tensor_elements, name)
        if isinstance(window, CudaWindow):  # bound to the tensor by bind_outputs, once it exists
            return _device_input(window, what, datatype, count, shape).stand_in()
        return raw_array(name, datatype, count, window.view(what), limits).reshape(shape)

    def bind_outputs(self, request: InferenceRequest) -> OutputPlacement | None:
        self._bind_device_inputs(request)
        bound: dict[str, Window | CudaWindow] = {}
        for output in request.outputs or ():
            if not names_region(output.parameters):
                continue
            what = f"output '{output.name}'"
            for other in ("binary_data", "classification"):
                if output.parameters.get(other) not in (None, False, 0):
                    raise InvalidArgument(f"{what}: can't set both '{REGION}' and '{other}'")
            window = self._window(what, output.parameters)
            if isinstance(window, CudaWindow):
                output.device_destination = _device_output(window)
            else:
                output.destination = window.view(what)  # a backend may write straight into it
            bound[output.name] = window
        return RegionPlacement(bound) if bound else None

    def _bind_device_inputs(self, request: InferenceRequest) -> None:
        """Inputs in CUDA regions get their DeviceArray (read_input gave them a stand-in)."""
        for tensor in request.inputs:
            if tensor.parameters and names_region(tensor.parameters):
                what = f"input '{tensor.name}'"
                window = self._window(what, tensor.parameters)
                if isinstance(window, CudaWindow):
                    count = tensor.data.size
                    tensor.device = _device_input(window, what, tensor.datatype, count, list(tensor.shape))

    def _window(self, what: str, parameters: Mapping[str, Any]) -> Window | CudaWindow:
        name = parameters.get(REGION)
        if not isinstance(name, str):
            raise InvalidArgument(f"{what}: '{REGION}' must be a string")
        size, offset = parameters.get(BYTE_SIZE), parameters.get(OFFSET, 0)
        if size is None:
            raise InvalidArgument(f"{what}: '{REGION}' needs '{BYTE_SIZE}' too")
        if not _is_int(size) or not _is_int(offset) or size < 0 or offset < 0:
            raise InvalidArgument(f"{what}: '{BYTE_SIZE}' and '{OFFSET}' must be non-negative integers")
        region = self.registry.find(name)
        if region is None:
            raise InvalidArgument(f"{what}: Unable to find shared memory region: '{name}'")
        if isinstance(region, CudaRegion):
            region.check_window(offset, size, what)
            return CudaWindow(region, offset, size)
        if not isinstance(region, SystemRegion):
            raise InvalidArgument(f"{what}: region '{name}' is of an unknown kind")
        region.view(offset, size, what)  # bounds checked now, before the model runs
        return Window(region, offset, size)


@dataclass(frozen=True, slots=True)
class RegionPlacement(OutputPlacement):
    """Holds each bound region (so its mapping outlives an unregister) until the answer is written."""

    bound: dict[str, Window | CudaWindow]

    def place(self, response: InferenceResponse) -> InferenceResponse:
        outputs = [self._place(t) if t.name in self.bound else t for t in response.outputs]
        return InferenceResponse(
            response.model_name, response.model_version, outputs, response.id, response.parameters
        )

    def _place(self, tensor: Any) -> Any:
        window = self.bound[tensor.name]
        if isinstance(window, CudaWindow):
            return _place_on_device(tensor, window)
        what = f"output '{tensor.name}'"
        data = raw_view(tensor)
        if len(data) > window.size:
            raise InvalidArgument(
                f"shared memory size specified with the request for output '{tensor.name}' "
                f"({window.size} bytes) should be at least {len(data)} bytes to hold the results"
            )
        target = window.region.view(window.offset, len(data), what)
        if not _same_memory(target, data):  # an output already in place is not copied onto itself
            target[:] = data
        return placed_output(tensor, window.region.name, len(data))


def _device_input(window: CudaWindow, what: str, datatype: str, count: int, shape: list[int]) -> DeviceArray:
    if datatype == "BYTES":
        raise InvalidArgument(
            f"{what}: BYTES tensors cannot be read from CUDA shared memory region '{window.region.name}'"
        )
    dtype = numpy_dtype(datatype)
    if count * dtype.itemsize != window.size:
        raise InvalidArgument(
            f"{what}: unexpected total byte size {window.size} for {count} elements of {datatype} "
            f"in CUDA shared memory region '{window.region.name}'"
        )
    return window.region.array(window.offset, tuple(shape), dtype)


def _device_output(window: CudaWindow) -> DeviceArray:
    """The whole window as bytes: a backend views it with its output's shape and type."""
    return window.region.array(window.offset, (window.size,), np.dtype(np.uint8))


def _place_on_device(tensor: Tensor, window: CudaWindow) -> Tensor:
    """Write an output into its CUDA window: nothing when the backend wrote it there, a
    device-to-device copy from a device array, else a host-to-device copy."""
    region = window.region
    if tensor.datatype == "BYTES":
        raise InvalidArgument(
            f"output '{tensor.name}': BYTES tensors cannot be written to CUDA shared memory region "
            f"'{region.name}'"
        )
    destination = region.array(window.offset, (window.size,), np.dtype(np.uint8))
    size = int(tensor.data.size) * numpy_dtype(tensor.datatype).itemsize
    if size > window.size:
        raise InvalidArgument(
            f"shared memory size specified with the request for output '{tensor.name}' "
            f"({window.size} bytes) should be at least {size} bytes to hold the results"
        )
    device = tensor.device
    if device is None:
        destination.write(np.ascontiguousarray(tensor.data, dtype=numpy_dtype(tensor.datatype)))
    elif device.pointer != destination.pointer:
        destination.write(device)
    return placed_output(tensor, region.name, size)


def _same_memory(target: memoryview, data: bytes | memoryview) -> bool:
    if not isinstance(data, memoryview) or len(data) == 0:
        return False
    here = np.frombuffer(target, np.uint8)
    there = np.frombuffer(data, np.uint8)
    return bool(here.ctypes.data == there.ctypes.data)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
