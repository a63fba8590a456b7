"""What a deserialised engine declares, as plain data (no tensorrt objects).

The GPU code fills these from ``ICudaEngine``; everything that decides
(config checks, profile choice, buffer sizes) reads only these, so it is
tested on a CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

Shape = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Profile:
    """One optimisation profile's range for one input."""

    min: Shape
    opt: Shape
    max: Shape

    def accepts(self, shape: Shape) -> bool:
        if len(shape) != len(self.min):
            return False
        return all(lo <= d <= hi for lo, d, hi in zip(self.min, shape, self.max))


@dataclass(frozen=True, slots=True)
class EngineTensor:
    """An engine I/O tensor. ``shape`` has -1 for dynamic dimensions.

    ``profiles`` holds one :class:`Profile` per optimisation profile for
    inputs, and is empty for outputs.
    """

    name: str
    is_input: bool
    datatype: str
    shape: Shape
    profiles: tuple[Profile, ...] = ()

    @property
    def dynamic(self) -> bool:
        return any(d == -1 for d in self.shape)


@dataclass(frozen=True, slots=True)
class EngineInfo:
    tensors: tuple[EngineTensor, ...]
    num_profiles: int = 1

    @property
    def inputs(self) -> tuple[EngineTensor, ...]:
        return tuple(t for t in self.tensors if t.is_input)

    @property
    def outputs(self) -> tuple[EngineTensor, ...]:
        return tuple(t for t in self.tensors if not t.is_input)

    def tensor(self, name: str) -> EngineTensor | None:
        return next((t for t in self.tensors if t.name == name), None)
