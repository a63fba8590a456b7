"""The seam through which tensors travel in shared-memory regions, for oip-rest and oip-grpc alike.

Triton's shared-memory extensions name a region in an input's or requested
output's parameters (``shared_memory_region``, ``shared_memory_byte_size``,
``shared_memory_offset``) instead of carrying data. Both transports hand such
an input to the one :class:`RegionCodec` a plugin registers (dialect
``oip-regions``, name ``shared_memory``), and ask it to bind the requested
outputs before inference and to write them after: what a region holds is
resolved in one place, whichever transport the request came on.

Without such a codec (no plugin, or client shared memory disabled) a request
naming a region is refused with a 400 / INVALID_ARGUMENT naming the region.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from modelplatform import (
    Codec,
    DecoupledModel,
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    Limits,
    ModelPlatformError,
    ServerContext,
    Tensor,
)

REGIONS_DIALECT = "oip-regions"
REGION_CODEC = "shared_memory"
REGION = "shared_memory_region"
BYTE_SIZE = "shared_memory_byte_size"
OFFSET = "shared_memory_offset"

#: Builds an input's array from the region its parameters name.
RegionReader = Callable[[str, str, list[int], Mapping[str, Any], Limits], np.ndarray]


class OutputPlacement:
    """Outputs bound to regions for one request; ``place`` writes them after inference."""

    def place(self, response: InferenceResponse) -> InferenceResponse:
        raise NotImplementedError


class RegionCodec(Codec):
    """Base of the codec that resolves region parameters (the shared-memory plugin's)."""

    dialect: ClassVar[str] = REGIONS_DIALECT
    name: ClassVar[str] = REGION_CODEC

    def read_input(
        self, name: str, datatype: str, shape: list[int], parameters: Mapping[str, Any], limits: Limits
    ) -> np.ndarray:
        """The input's array: a view over the region wherever the datatype allows."""
        raise NotImplementedError

    def bind_outputs(self, request: InferenceRequest) -> OutputPlacement | None:
        """Check the requested outputs' regions before inference; None when no output names one."""
        raise NotImplementedError


def names_region(parameters: Mapping[str, Any]) -> bool:
    return REGION in parameters


def in_region(tensor: Tensor) -> bool:
    """Whether an output was written into a region (its data stays out of the response)."""
    return REGION in tensor.parameters


def placed_output(tensor: Tensor, region: str, size: int) -> Tensor:
    """The response's stand-in for an output written into ``region``: shape and type, no data."""
    empty = np.empty(0, dtype=tensor.data.dtype)
    return Tensor(tensor.name, tensor.datatype, tensor.shape, empty, {REGION: region, BYTE_SIZE: size})


class Regions:
    """What a transport holds: the registered codec, or refusals naming the region."""

    def __init__(self, context: ServerContext) -> None:
        codec = context.codecs.get(REGIONS_DIALECT, REGION_CODEC)
        self.codec: RegionCodec | None = codec if isinstance(codec, RegionCodec) else None
        self._infer = context.dataplane.inference.infer  # bound once: the request path looks up nothing

    def read_input(
        self, name: str, datatype: str, shape: list[int], parameters: Mapping[str, Any], limits: Limits
    ) -> np.ndarray:
        if self.codec is None:
            raise _disabled(f"input '{name}'", parameters)
        return self.codec.read_input(name, datatype, shape, parameters, limits)

    async def infer(self, request: InferenceRequest, endpoint: str) -> InferenceResponse:
        """One request as every OIP transport runs it: outputs bound to regions are checked
        before inference and written there after it; a decoupled model's refusal names
        ``endpoint`` (Triton's words)."""
        placement = self.bind_outputs(request)
        try:
            response = await self._infer(request)
        except DecoupledModel as error:
            raise error.at_endpoint(endpoint) from None
        return response if placement is None else placement.place(response)

    def bind_outputs(self, request: InferenceRequest) -> OutputPlacement | None:
        """Where outputs bound to regions go (None: nowhere special); a refusal names the model."""
        try:
            if self.codec is not None:
                return self.codec.bind_outputs(request)
            for output in request.outputs or ():
                if names_region(output.parameters):
                    raise _disabled(f"output '{output.name}'", output.parameters)
        except ModelPlatformError as error:
            raise error.naming_model(request.model_name) from None
        return None


def _disabled(what: str, parameters: Mapping[str, Any]) -> InvalidArgument:
    return InvalidArgument(
        f"{what}: unknown shared memory region '{parameters.get(REGION)}': client shared memory "
        "is disabled on this server (start it with --allow-client-shm)"
    )
