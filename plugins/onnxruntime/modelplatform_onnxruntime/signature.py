"""What an ONNX graph declares, checked against and filled into the model config.

Like Triton's auto-complete: a configuration that omits ``input``/``output``
gets them from the graph, and one that omits ``max_batch_size`` gets
:data:`DEFAULT_MAX_BATCH_SIZE` when every graph tensor has a dynamic first
dimension. What the configuration does declare must agree with the graph, or
the model fails to load naming the tensor and the difference.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from modelplatform import InvalidArgument, ModelConfig, TensorSpec
from modelplatform.datatypes import DATATYPE_TO_CONFIG

#: Triton's default for models whose batch dimension is dynamic.
DEFAULT_MAX_BATCH_SIZE = 4

#: ONNX Runtime type strings -> OIP datatypes (BF16 has no numpy form in ORT).
ONNX_DATATYPES = {
    "tensor(bool)": "BOOL",
    "tensor(uint8)": "UINT8",
    "tensor(uint16)": "UINT16",
    "tensor(uint32)": "UINT32",
    "tensor(uint64)": "UINT64",
    "tensor(int8)": "INT8",
    "tensor(int16)": "INT16",
    "tensor(int32)": "INT32",
    "tensor(int64)": "INT64",
    "tensor(float16)": "FP16",
    "tensor(float)": "FP32",
    "tensor(double)": "FP64",
    "tensor(string)": "BYTES",
}


@dataclass(frozen=True, slots=True)
class GraphTensor:
    """A graph input or output; unknown or symbolic dimensions are -1."""

    name: str
    datatype: str
    shape: tuple[int, ...]

    @property
    def dynamic_batch(self) -> bool:
        return len(self.shape) >= 1 and self.shape[0] == -1


def describe(model: str, node_args: Iterable[Any]) -> tuple[GraphTensor, ...]:
    """GraphTensors from ``session.get_inputs()`` / ``get_outputs()``."""
    return tuple(
        GraphTensor(arg.name, _datatype(model, arg.name, arg.type), _shape(arg.shape)) for arg in node_args
    )


def complete(
    config: ModelConfig, inputs: Sequence[GraphTensor], outputs: Sequence[GraphTensor]
) -> ModelConfig:
    """The config with omitted parts filled from the graph; raises on disagreement."""
    max_batch = _max_batch_size(config, [*inputs, *outputs])
    if max_batch == config.max_batch_size and config.inputs and config.outputs:
        _check(config, inputs, outputs)
        return config
    data = config.to_json()
    data["max_batch_size"] = max_batch
    if not config.inputs:
        data["input"] = [_spec_json(t, max_batch) for t in inputs]
    if not config.outputs:
        data["output"] = [_spec_json(t, max_batch) for t in outputs]
    completed = ModelConfig.from_json(data)
    _check(completed, inputs, outputs)
    return completed


def _max_batch_size(config: ModelConfig, tensors: Sequence[GraphTensor]) -> int:
    if config.max_batch_size or config.inputs or config.outputs:
        return config.max_batch_size
    if tensors and all(t.dynamic_batch for t in tensors):
        return DEFAULT_MAX_BATCH_SIZE
    return 0


def _spec_json(tensor: GraphTensor, max_batch: int) -> dict[str, Any]:
    dims = tensor.shape[1:] if max_batch > 0 else tensor.shape
    return {"name": tensor.name, "data_type": DATATYPE_TO_CONFIG[tensor.datatype], "dims": list(dims)}


def _check(config: ModelConfig, inputs: Sequence[GraphTensor], outputs: Sequence[GraphTensor]) -> None:
    by_name = {t.name: t for t in inputs}
    for spec in config.inputs:
        _check_spec(config, "input", spec, by_name.get(spec.name))
    declared = {s.name for s in config.inputs}
    missing = [t.name for t in inputs if t.name not in declared]
    if missing:
        raise InvalidArgument(
            f"model '{config.name}': graph input(s) {missing} are not declared in the configuration"
        )
    by_name = {t.name: t for t in outputs}
    for spec in config.outputs:
        _check_spec(config, "output", spec, by_name.get(spec.name))


def _check_spec(config: ModelConfig, kind: str, spec: TensorSpec, graph: GraphTensor | None) -> None:
    where = f"model '{config.name}': {kind} '{spec.name}'"
    if graph is None:
        raise InvalidArgument(f"{where} is not in the ONNX graph")
    if graph.datatype != spec.datatype:
        raise InvalidArgument(
            f"{where} is {spec.datatype} in the configuration, {graph.datatype} in the graph"
        )
    if spec.reshape is not None:
        return  # the configured reshape, not dims, must match the graph; ORT reports misuse
    shape = graph.shape
    if config.batching:
        if not graph.dynamic_batch:
            raise InvalidArgument(
                f"{where}: max_batch_size is {config.max_batch_size} but the graph's first "
                f"dimension is {list(shape[:1]) or 'missing'}, not dynamic (set max_batch_size: 0)"
            )
        shape = shape[1:]
    if not _dims_agree(spec.dims, shape):
        full = spec.full_shape(config.max_batch_size)
        raise InvalidArgument(
            f"{where} has shape {full} in the configuration, {list(graph.shape)} in the graph"
        )


def _dims_agree(configured: Sequence[int], graph: Sequence[int]) -> bool:
    if len(configured) != len(graph):
        return False
    return all(g == -1 or c == g for c, g in zip(configured, graph))


def _datatype(model: str, name: str, onnx_type: str) -> str:
    try:
        return ONNX_DATATYPES[onnx_type]
    except KeyError:
        raise InvalidArgument(f"model '{model}': tensor '{name}' has unsupported type {onnx_type}") from None


def _shape(shape: Any) -> tuple[int, ...]:
    if shape is None:
        return ()
    return tuple(d if isinstance(d, int) and d >= 0 else -1 for d in shape)
