"""Region parameters -> tensors for oip-rest and oip-grpc alike (the oip ``RegionCodec`` seam).

Inputs: a numpy view over the mapped region (``np.frombuffer`` through the
oip raw decoder): the backend reads the client's memory, nothing is copied.
BYTES inputs are decoded into an object array, as they are from a body.
Outputs: checked before inference (region known, window inside it, not also
asked for as binary data) and offered to the backend as the requested
output's ``destination``; after inference each is written into its window
once, from the backend's array (nothing to write when the backend wrote it
there itself), and the response keeps only its name, type and shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from modelplatform import InferenceRequest, InferenceResponse, InvalidArgument, Limits
from modelplatform.datatypes import element_count
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


class SharedMemoryCodec(RegionCodec):
    def __init__(self, registry: RegionRegistry) -> None:
        self.registry = registry

    def read_input(
        self, name: str, datatype: str, shape: list[int], parameters: Mapping[str, Any], limits: Limits
    ) -> np.ndarray:
        what = f"input '{name}'"
        window = self._window(what, parameters)
        count = element_count(shape, limits.max_tensor_elements, name)
        return raw_array(name, datatype, count, window.view(what), limits).reshape(shape)

    def bind_outputs(self, request: InferenceRequest) -> OutputPlacement | None:
        bound = {}
        for output in request.outputs or ():
            if not names_region(output.parameters):
                continue
            what = f"output '{output.name}'"
            for other in ("binary_data", "classification"):
                if output.parameters.get(other) not in (None, False, 0):
                    raise InvalidArgument(f"{what}: can't set both '{REGION}' and '{other}'")
            window = self._window(what, output.parameters)
            output.destination = window.view(what)  # a backend may write straight into it
            bound[output.name] = window
        return RegionPlacement(bound) if bound else None

    def _window(self, what: str, parameters: Mapping[str, Any]) -> Window:
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
        if not isinstance(region, SystemRegion):
            raise InvalidArgument(
                f"{what}: region '{name}' is CUDA shared memory, which this server cannot read"
            )
        region.view(offset, size, what)  # bounds checked now, before the model runs
        return Window(region, offset, size)


@dataclass(frozen=True, slots=True)
class RegionPlacement(OutputPlacement):
    """Holds each bound region (so its mapping outlives an unregister) until the answer is written."""

    bound: dict[str, Window]

    def place(self, response: InferenceResponse) -> InferenceResponse:
        outputs = [self._place(t) if t.name in self.bound else t for t in response.outputs]
        return InferenceResponse(
            response.model_name, response.model_version, outputs, response.id, response.parameters
        )

    def _place(self, tensor: Any) -> Any:
        window = self.bound[tensor.name]
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


def _same_memory(target: memoryview, data: bytes | memoryview) -> bool:
    if not isinstance(data, memoryview) or len(data) == 0:
        return False
    here = np.frombuffer(target, np.uint8)
    there = np.frombuffer(data, np.uint8)
    return bool(here.ctypes.data == there.ctypes.data)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
