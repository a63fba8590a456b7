"""Where each ``instance_group`` instance runs: the CPU, a CUDA GPU, or where the model says.

Triton's rules: instances are numbered across the groups in order; a
``KIND_GPU`` group's instances take its ``gpus`` in turn (GPU 0 when it names
none); ``KIND_AUTO`` (no kind, or no ``instance_group`` at all) means a GPU when
one can be used, else the CPU; ``KIND_MODEL`` leaves the tensors where the
TorchScript file put them and hands inputs over on the device of the model's
first parameter. Pure, so it is tested without torch or a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplatform import InvalidArgument, ModelConfig

KINDS = ("KIND_AUTO", "KIND_CPU", "KIND_GPU", "KIND_MODEL")


@dataclass(frozen=True, slots=True)
class Placement:
    kind: str  # KIND_CPU, KIND_GPU or KIND_MODEL (KIND_AUTO is resolved)
    gpu: int = 0

    @property
    def device(self) -> str:
        """The torch device string inputs go to (KIND_MODEL: decided from the loaded module)."""
        return f"cuda:{self.gpu}" if self.kind == "KIND_GPU" else "cpu"


def place(config: ModelConfig, instance_index: int, cuda_available: bool) -> Placement:
    """This instance's placement; raises InvalidArgument for a kind this backend does not run."""
    kind, gpu = _slot(config, instance_index)
    if kind not in KINDS:
        raise InvalidArgument(
            f"model '{config.name}': instance_group kind {kind} is not supported by pytorch"
        )
    if kind == "KIND_AUTO":
        kind = "KIND_GPU" if cuda_available else "KIND_CPU"
    return Placement(kind, gpu)


def _slot(config: ModelConfig, instance_index: int) -> tuple[str, int]:
    slots: list[tuple[str, int]] = []
    for group in config.instance_group:
        gpus = list(group.gpus) or [0]
        slots += [(group.kind, gpus[i % len(gpus)]) for i in range(group.count)]
    if instance_index < len(slots):
        return slots[instance_index]
    return "KIND_AUTO", 0
