"""Outputs written by ONNX Runtime straight into memory the client set aside (I/O binding).

A requested output with a ``destination`` (a shared-memory window) is bound to
that memory, so ONNX Runtime allocates no array for it and the shared-memory
codec has nothing left to copy. Binding needs the output's shape before the
run, so :func:`plan` decides once per model, at load, which outputs' shapes
follow from the inputs' shapes: every dimension fixed, or symbolic under a
name (``dim_param``) that also names a dimension of an input. Per request,
:func:`targets` resolves those shapes from the actual inputs and keeps each
destination that is big enough, aligned for the datatype and clear of the
inputs and of the other bound outputs. Everything else (string tensors,
shapes known only after the run, a window too small, which the codec then
refuses naming the output) takes the plain run and one copy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from modelplatform import InferenceRequest
from modelplatform.datatypes import numpy_dtype

from .signature import ONNX_DATATYPES

#: A fixed size, or (input name, axis): the size of that input's dimension.
Dim = int | tuple[str, int]
Arrays = Mapping[str, np.ndarray]


@dataclass(frozen=True, slots=True)
class OutputShape:
    """How to know one output's shape and type before the run."""

    dtype: np.dtype
    dims: tuple[Dim, ...]

    def resolve(self, feeds: Arrays) -> tuple[int, ...] | None:
        """The shape for these inputs; None when an input it reads is missing or of another rank."""
        shape = []
        for dim in self.dims:
            if isinstance(dim, int):
                shape.append(dim)
                continue
            array = feeds.get(dim[0])
            if array is None or dim[1] >= array.ndim:
                return None
            shape.append(array.shape[dim[1]])
        return tuple(shape)


@dataclass(frozen=True, slots=True)
class BindingPlan:
    """What one model allows: the outputs whose shape is known ahead, and its string tensors."""

    shapes: Mapping[str, OutputShape]
    #: Inputs and outputs ONNX Runtime cannot bind (string tensors): a request using one runs plainly.
    strings: frozenset[str]


def plan(inputs: Sequence[Any], outputs: Sequence[Any]) -> BindingPlan:
    """From ``session.get_inputs()`` / ``get_outputs()`` (shapes hold ints, names or None)."""
    symbols: dict[str, tuple[str, int]] = {}
    for arg in inputs:
        for axis, dim in enumerate(arg.shape or ()):
            if isinstance(dim, str) and dim:
                symbols.setdefault(dim, (arg.name, axis))
    shapes: dict[str, OutputShape] = {}
    for arg in outputs:
        dims = _dims(arg.shape, symbols)
        datatype = ONNX_DATATYPES.get(arg.type)
        if dims is not None and datatype not in (None, "BYTES"):
            shapes[arg.name] = OutputShape(numpy_dtype(datatype), dims)
    strings = frozenset(arg.name for arg in [*inputs, *outputs] if arg.type == "tensor(string)")
    return BindingPlan(shapes, strings)


def targets(
    request: InferenceRequest, binding: BindingPlan, names: Sequence[str], feeds: Arrays
) -> dict[str, np.ndarray]:
    """Arrays over the destinations ONNX Runtime can write these outputs into (often none)."""
    if not any(wanted.destination is not None for wanted in request.outputs or ()):
        return {}
    if binding.strings.intersection(names) or binding.strings.intersection(feeds):
        return {}
    found: dict[str, np.ndarray] = {}
    for wanted in request.outputs or ():
        shape = binding.shapes.get(wanted.name)
        if wanted.destination is None or shape is None:
            continue
        target = _target(shape, wanted.destination, feeds)
        if target is not None and not _overlaps(target, [*feeds.values(), *found.values()]):
            found[wanted.name] = target
    return found


def run_bound(
    session: Any, names: Sequence[str], feeds: Arrays, bound: Mapping[str, np.ndarray]
) -> list[np.ndarray]:
    """One blocking run writing each of ``bound`` into its array; the rest ONNX Runtime allocates."""
    binding = session.io_binding()
    for name, array in feeds.items():
        binding.bind_cpu_input(name, array)
    for name in names:
        target = bound.get(name)
        if target is None:
            binding.bind_output(name, "cpu")
        else:
            binding.bind_output(name, "cpu", 0, target.dtype, list(target.shape), target.ctypes.data)
    session.run_with_iobinding(binding)
    produced = binding.get_outputs()  # in the order bound
    return [bound[name] if name in bound else value.numpy() for name, value in zip(names, produced)]


def _dims(shape: Any, symbols: Mapping[str, tuple[str, int]]) -> tuple[Dim, ...] | None:
    if shape is None:
        return None
    dims: list[Dim] = []
    for dim in shape:
        if isinstance(dim, int) and dim >= 0:
            dims.append(dim)
        elif isinstance(dim, str) and dim in symbols:
            dims.append(symbols[dim])
        else:
            return None  # unknown until the run
    return tuple(dims)


def _overlaps(target: np.ndarray, others: Sequence[np.ndarray]) -> bool:
    """Written in place, an output over an input would overwrite what the model has yet to read,
    and two outputs over each other would mix: those keep the plain run's order (read, then copy)."""
    return any(np.may_share_memory(target, other) for other in others)


def _target(shape: OutputShape, destination: memoryview, feeds: Arrays) -> np.ndarray | None:
    resolved = shape.resolve(feeds)
    if resolved is None or destination.readonly:
        return None
    size = math.prod(resolved) * shape.dtype.itemsize
    if size == 0 or size > destination.nbytes:
        return None  # too small: the codec refuses it after the plain run, naming the output
    window = np.frombuffer(destination, np.uint8, count=size)
    if window.ctypes.data % shape.dtype.alignment:
        return None
    return window.view(shape.dtype).reshape(resolved)
