"""How big each reusable host/device buffer must be.

Buffers are allocated once at load for the largest shape any profile
allows, so no request allocates: inputs from each profile's ``max`` shape,
outputs from the shapes TensorRT derives for those maxima.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from modelplatform import Unsupported
from modelplatform.datatypes import element_size

from .engine_info import EngineInfo, EngineTensor, Shape


@dataclass(frozen=True, slots=True)
class BufferPlan:
    name: str
    datatype: str
    elements: int

    @property
    def nbytes(self) -> int:
        return self.elements * element_size(self.datatype)


def plan_buffers(
    model: str, info: EngineInfo, output_shapes: Mapping[str, Iterable[Shape]]
) -> tuple[BufferPlan, ...]:
    """One plan per engine tensor; ``output_shapes`` holds each output's shape per profile."""
    plans = []
    for tensor in info.tensors:
        shapes = _input_shapes(tensor) if tensor.is_input else list(output_shapes.get(tensor.name, ()))
        plans.append(BufferPlan(tensor.name, tensor.datatype, _largest(model, tensor, shapes)))
    return tuple(plans)


def _input_shapes(tensor: EngineTensor) -> list[Shape]:
    return [p.max for p in tensor.profiles] if tensor.profiles else [tensor.shape]


def _largest(model: str, tensor: EngineTensor, shapes: list[Shape]) -> int:
    if not shapes:
        shapes = [tensor.shape]
    if any(d < 0 for shape in shapes for d in shape):
        raise Unsupported(
            f"model '{model}': tensor '{tensor.name}' has no bounded shape {[list(s) for s in shapes]} "
            "(data-dependent output shapes are not supported)"
        )
    return max(math.prod(shape) for shape in shapes)
