"""The model configuration checked against (and completed from) an engine.

Runs at load, before any request: every declared tensor must exist in the
engine with the same datatype and rank, fixed dimensions must agree or fall
inside an optimisation profile, and a batching model's ``max_batch_size``
must fit the largest batch a profile accepts. Errors name the model, the
tensor, and both sides. A configuration that omits ``input``/``output`` gets
them from the engine (and ``max_batch_size`` from the profiles when every
tensor has a dynamic first dimension), as Triton's auto-complete does.
"""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform import InvalidArgument, ModelConfig, TensorSpec
from modelplatform.datatypes import DATATYPE_TO_CONFIG

from .engine_info import EngineInfo, EngineTensor, Profile


def complete(config: ModelConfig, info: EngineInfo) -> ModelConfig:
    """``config`` with omitted tensors filled from ``info``, checked; raises on disagreement."""
    if not config.inputs or not config.outputs:
        config = _filled(config, info)
    check(config, info)
    return config


def check(config: ModelConfig, info: EngineInfo) -> None:
    for spec in config.inputs:
        tensor = _engine_tensor(config, info, spec, is_input=True)
        _check_batch(config, tensor)
        _check_dims(config, spec, tensor)
    declared = {s.name for s in config.inputs}
    undeclared = [t.name for t in info.inputs if t.name not in declared]
    if undeclared:
        raise InvalidArgument(
            f"model '{config.name}': engine input(s) {undeclared} are not declared in the configuration"
        )
    for spec in config.outputs:
        tensor = _engine_tensor(config, info, spec, is_input=False)
        _check_dims(config, spec, tensor)


def largest_batch(tensor: EngineTensor) -> int:
    """The largest first dimension any profile accepts for an input."""
    return max((p.max[0] for p in tensor.profiles if p.max), default=0)


def _filled(config: ModelConfig, info: EngineInfo) -> ModelConfig:
    max_batch = config.max_batch_size
    if not (max_batch or config.inputs or config.outputs):
        max_batch = _profile_batch(info)
    data = config.to_json()
    data["max_batch_size"] = max_batch
    if not config.inputs:
        data["input"] = [_spec_json(t, max_batch) for t in info.inputs]
    if not config.outputs:
        data["output"] = [_spec_json(t, max_batch) for t in info.outputs]
    return ModelConfig.from_json(data)


def _profile_batch(info: EngineInfo) -> int:
    """A batch size every input's profiles allow, when all tensors batch; else 0."""
    if not info.tensors or any(not t.shape or t.shape[0] != -1 for t in info.tensors):
        return 0
    return min(largest_batch(t) for t in info.inputs) if info.inputs else 0


def _spec_json(tensor: EngineTensor, max_batch: int) -> dict[str, object]:
    dims = tensor.shape[1:] if max_batch > 0 else tensor.shape
    return {"name": tensor.name, "data_type": DATATYPE_TO_CONFIG[tensor.datatype], "dims": list(dims)}


def _engine_tensor(config: ModelConfig, info: EngineInfo, spec: TensorSpec, is_input: bool) -> EngineTensor:
    kind = "input" if is_input else "output"
    where = f"model '{config.name}': {kind} '{spec.name}'"
    tensor = info.tensor(spec.name)
    if tensor is None or tensor.is_input != is_input:
        names = [t.name for t in (info.inputs if is_input else info.outputs)]
        raise InvalidArgument(f"{where} is not an engine {kind} (engine {kind}s: {names})")
    if tensor.datatype != spec.datatype:
        raise InvalidArgument(
            f"{where} is {spec.datatype} in the configuration, {tensor.datatype} in the engine"
        )
    return tensor


def _check_batch(config: ModelConfig, tensor: EngineTensor) -> None:
    if not config.batching:
        return
    where = f"model '{config.name}': input '{tensor.name}'"
    if not tensor.shape or tensor.shape[0] != -1:
        raise InvalidArgument(
            f"{where}: max_batch_size is {config.max_batch_size} but the engine's first dimension "
            f"is {list(tensor.shape[:1])}, not dynamic (build with a dynamic batch or set max_batch_size: 0)"
        )
    if config.max_batch_size > largest_batch(tensor):
        raise InvalidArgument(
            f"{where}: max_batch_size {config.max_batch_size} is larger than the largest batch "
            f"any optimisation profile accepts ({largest_batch(tensor)})"
        )


def _check_dims(config: ModelConfig, spec: TensorSpec, tensor: EngineTensor) -> None:
    declared = spec.reshape if spec.reshape is not None else spec.dims
    full = ([-1] if config.batching else []) + list(declared)
    where = f"model '{config.name}': tensor '{spec.name}'"
    if len(full) != len(tensor.shape):
        raise InvalidArgument(
            f"{where} has shape {full} in the configuration, {list(tensor.shape)} in the engine"
        )
    for axis, (want, have) in enumerate(zip(full, tensor.shape)):
        if want == -1 or want == have:
            continue
        if have != -1 or not _in_some_profile(tensor.profiles, axis, want):
            raise InvalidArgument(
                f"{where} has shape {full} in the configuration; the engine allows "
                f"{_allowed(tensor, axis)} for dimension {axis}"
            )


def _in_some_profile(profiles: Sequence[Profile], axis: int, value: int) -> bool:
    if not profiles:
        return True  # a dynamic output: TensorRT derives it from the inputs
    return any(p.min[axis] <= value <= p.max[axis] for p in profiles)


def _allowed(tensor: EngineTensor, axis: int) -> str:
    if tensor.shape[axis] != -1:
        return str(tensor.shape[axis])
    return " or ".join(f"{p.min[axis]}..{p.max[axis]}" for p in tensor.profiles)
