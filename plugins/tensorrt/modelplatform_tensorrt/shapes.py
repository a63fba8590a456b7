"""Which optimisation profile serves a request's input shapes."""

from __future__ import annotations

from collections.abc import Mapping

from modelplatform import InvalidArgument

from .engine_info import EngineInfo, Shape


def choose_profile(model: str, info: EngineInfo, shapes: Mapping[str, Shape], current: int = 0) -> int:
    """The current profile when it accepts every shape (no switch), else the first that does."""
    order = [current, *(p for p in range(info.num_profiles) if p != current)]
    for profile in order:
        if all(_accepts(info, name, shape, profile) for name, shape in shapes.items()):
            return profile
    raise InvalidArgument(f"model '{model}': {_describe(info, shapes)}")


def _accepts(info: EngineInfo, name: str, shape: Shape, profile: int) -> bool:
    tensor = info.tensor(name)
    if tensor is None or not tensor.is_input:
        return False
    if not tensor.profiles:  # a static input: its own shape or nothing
        return tuple(shape) == tensor.shape
    return tensor.profiles[profile].accepts(tuple(shape))


def _describe(info: EngineInfo, shapes: Mapping[str, Shape]) -> str:
    parts = []
    for name, shape in shapes.items():
        tensor = info.tensor(name)
        if tensor is None or not tensor.is_input:
            parts.append(f"'{name}' is not an engine input")
            continue
        ranges = (
            "; ".join(f"profile {i}: {list(p.min)}..{list(p.max)}" for i, p in enumerate(tensor.profiles))
            or f"fixed {list(tensor.shape)}"
        )
        parts.append(f"input '{name}' shape {list(shape)} is outside the engine's range ({ranges})")
    return "; ".join(parts) or "no optimisation profile accepts these shapes"
