"""TorchScript models the tests build: scripted and traced, written into a model repository.

Each ``write_*`` function saves ``<root>/<name>/1/model.pt`` with
``torch.jit.save`` and the ``config.pbtxt`` that serves it, and returns the
model's folder. Imports torch: test modules import this after
``pytest.importorskip("torch")``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


class AddSub(torch.nn.Module):
    """Triton's ``simple``: (a + b, a - b)."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return a + b, a - b


class Mixed(torch.nn.Module):
    """Three inputs of three datatypes: scaled = x * scale, total = sum of counts per row (INT64)."""

    def forward(
        self, x: torch.Tensor, scale: torch.Tensor, counts: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return x * scale, counts.sum(dim=1, keepdim=True)


class DictInput(torch.nn.Module):
    """forward takes one Dict[str, Tensor], as Triton's dict-input models do."""

    def forward(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return inputs["x"] * 2.0 + inputs["y"]


class Raiser(torch.nn.Module):
    """Raises on a negative input, answers otherwise."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool((x < 0).any()):
            raise ValueError("negative input")
        return x * 3.0


class Mlp(torch.nn.Module):
    """A small MLP with a batch dimension (weights from a fixed seed)."""

    def __init__(self, features: int = 16, hidden: int = 32, classes: int = 4) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layers = torch.nn.Sequential(
            torch.nn.Linear(features, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.layers(x), dim=1)


class Strings(torch.nn.Module):
    """List[str] in, List[str] out: Triton's string I/O for torch."""

    def forward(self, words: list[str]) -> list[str]:
        return [word.upper() for word in words]


class Bf16(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2.0


def save(module: Any, root: Path, name: str, config: str, file: str = "model.pt") -> Path:
    folder = root / name
    (folder / "1").mkdir(parents=True, exist_ok=True)
    torch.jit.save(module, str(folder / "1" / file))
    (folder / "config.pbtxt").write_text(f'name: "{name}"\n{config}')
    return folder


def scripted(module: torch.nn.Module) -> Any:
    return torch.jit.script(module.eval())


def traced(module: torch.nn.Module, *examples: torch.Tensor) -> Any:
    return torch.jit.trace(module.eval(), examples)


def tensors(names: list[str], datatype: str, dims: str, kind: str = "input") -> str:
    entries = ", ".join(f'{{ name: "{n}" data_type: {datatype} dims: {dims} }}' for n in names)
    return f"{kind} [ {entries} ]\n"


ADD_SUB_CONFIG = (
    'platform: "pytorch_libtorch"\nmax_batch_size: 8\n'
    + tensors(["a", "b"], "TYPE_FP32", "[ 16 ]")
    + tensors(["OUTPUT__0", "OUTPUT__1"], "TYPE_FP32", "[ 16 ]", "output")
)
INDEXED_CONFIG = (
    'backend: "pytorch"\nmax_batch_size: 8\n'
    + tensors(["INPUT__1", "INPUT__0"], "TYPE_FP32", "[ 16 ]")
    + tensors(["OUTPUT__1", "OUTPUT__0"], "TYPE_FP32", "[ 16 ]", "output")
)
MIXED_CONFIG = (
    'backend: "pytorch"\nmax_batch_size: 4\n'
    'input [ { name: "counts" data_type: TYPE_INT64 dims: [ 3 ] },'
    ' { name: "x" data_type: TYPE_FP64 dims: [ 2 ] },'
    ' { name: "scale" data_type: TYPE_FP64 dims: [ 1 ] } ]\n'
    'output [ { name: "scaled" data_type: TYPE_FP64 dims: [ 2 ] },'
    ' { name: "total" data_type: TYPE_INT64 dims: [ 1 ] } ]\n'
)
DICT_CONFIG = (
    'backend: "pytorch"\nmax_batch_size: 8\n'
    + tensors(["y", "x"], "TYPE_FP32", "[ 4 ]")
    + tensors(["z"], "TYPE_FP32", "[ 4 ]", "output")
)
RAISER_CONFIG = (
    'backend: "pytorch"\nmax_batch_size: 8\n'
    + tensors(["INPUT__0"], "TYPE_FP32", "[ 4 ]")
    + tensors(["OUTPUT__0"], "TYPE_FP32", "[ 4 ]", "output")
)
MLP_CONFIG = (
    'platform: "pytorch_libtorch"\nmax_batch_size: 16\n'
    + tensors(["INPUT__0"], "TYPE_FP32", "[ 16 ]")
    + tensors(["OUTPUT__0"], "TYPE_FP32", "[ 4 ]", "output")
    + "dynamic_batching { max_queue_delay_microseconds: 20000 }\n"
    + "instance_group [ { count: 1 kind: KIND_CPU } ]\n"
)
STRINGS_CONFIG = (
    'backend: "pytorch"\nmax_batch_size: 0\n'
    + tensors(["INPUT__0"], "TYPE_STRING", "[ -1 ]")
    + tensors(["OUTPUT__0"], "TYPE_STRING", "[ -1 ]", "output")
)
BF16_CONFIG = (
    'backend: "pytorch"\nmax_batch_size: 0\n'
    + tensors(["INPUT__0"], "TYPE_BF16", "[ 4 ]")
    + tensors(["OUTPUT__0"], "TYPE_BF16", "[ 4 ]", "output")
)


def write_add_sub(root: Path, name: str = "add_sub", how: str = "script") -> Path:
    example = torch.ones(2, 16)
    module = scripted(AddSub()) if how == "script" else traced(AddSub(), example, example)
    return save(module, root, name, ADD_SUB_CONFIG)


def write_indexed(root: Path, name: str = "indexed") -> Path:
    return save(scripted(AddSub()), root, name, INDEXED_CONFIG)


def write_mixed(root: Path, name: str = "mixed") -> Path:
    return save(scripted(Mixed()), root, name, MIXED_CONFIG)


def write_dict(root: Path, name: str = "dict_input") -> Path:
    return save(scripted(DictInput()), root, name, DICT_CONFIG)


def write_raiser(root: Path, name: str = "raiser") -> Path:
    return save(scripted(Raiser()), root, name, RAISER_CONFIG)


def write_mlp(root: Path, name: str = "mlp", how: str = "trace", config: str = MLP_CONFIG) -> Path:
    module = traced(Mlp(), torch.ones(3, 16)) if how == "trace" else scripted(Mlp())
    return save(module, root, name, config)


def write_strings(root: Path, name: str = "strings") -> Path:
    return save(scripted(Strings()), root, name, STRINGS_CONFIG)


def write_bf16(root: Path, name: str = "bf16") -> Path:
    return save(scripted(Bf16()), root, name, BF16_CONFIG)


def write_all(root: Path) -> Path:
    for write in (
        write_add_sub,
        write_indexed,
        write_mixed,
        write_dict,
        write_raiser,
        write_mlp,
        write_strings,
    ):
        write(root)
    write_add_sub(root, "add_sub_traced", how="trace")
    return root
