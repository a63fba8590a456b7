"""A loaded TorchScript module and the one call that runs it: imports torch.

:meth:`TorchModel.open` and :meth:`TorchModel.infer` run in a worker thread
(torch releases the GIL while it computes). ``infer`` does a whole execute's
torch work in that thread: inputs onto the device (several requests' pieces
joined there), ``forward`` under the configured grad and optimisation modes
on the instance's own CUDA stream, outputs back to numpy. Only ``load()``
imports this module, so the plugin imports on a machine without torch.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import structlog
import torch

from modelplatform import (
    DeviceArray,
    InvalidArgument,
    ModelConfig,
    ModelExecutionError,
    PhaseClock,
    Unavailable,
)

from . import threads
from .binding import Argument, Binding, bind
from .parameters import TorchSettings
from .placement import Placement, place
from .tensors import as_numpy, as_torch, check_datatype, write_to_device

log = structlog.get_logger("modelplatform_pytorch")

# Request inputs are read-only buffers (np.frombuffer over the request body) handed to torch
# without a copy; torch warns once per process that it cannot mark a tensor read-only. The
# backend's documented rule (docs/backends/pytorch.md) is that a model never writes its inputs.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable", category=UserWarning)


#: One CUDA stream per (device, model, instance index), kept across loads: torch keeps a cuBLAS
#: workspace per stream it ran on, so a new stream at every reload would take device memory again.
STREAMS: dict[tuple[str, str, int], Any] = {}


class TorchScriptError(Exception):
    """What forward raised, shortened to its last line (TorchScript prepends its own traceback)."""


@dataclass(slots=True)
class TorchModel:
    name: str
    module: Any
    device: torch.device
    stream: Any  # torch.cuda.Stream of this instance, None on the CPU
    settings: TorchSettings
    binding: Binding

    @classmethod
    def open(
        cls, config: ModelConfig, path: Path, instance_index: int, settings: TorchSettings
    ) -> TorchModel:
        placement = place(config, instance_index, torch.cuda.is_available())
        _check_device(config.name, instance_index, placement)
        threads.apply(config.name, settings)
        module = _load(config.name, path, placement)
        device = _input_device(module, placement)
        binding = bind(config, _arguments(config.name, module))
        stream = _stream(device, config.name, instance_index)
        log.info(
            "torchscript_module_loaded",
            model=config.name,
            instance=instance_index,
            device=str(device),
            inputs_bound_by=binding.rule,
            torch=torch.__version__,
        )
        return cls(config.name, module, device, stream, settings, binding)

    def infer(
        self,
        pieces: Mapping[str, Sequence[Any]],
        datatypes: Mapping[str, str],
        outputs: Mapping[str, str],
        phases: PhaseClock,
        windows: Mapping[str, DeviceArray] | None = None,
    ) -> dict[str, np.ndarray]:
        """Run forward once on every request's pieces of each input (joined along the batch
        dimension); ``outputs``: output name -> configured datatype, the ones to return.
        An output with a CUDA ``windows`` entry (one request's CUDA shared memory) is written
        there on the device and answered with a stand-in."""
        with self._modes():
            values = {name: _join([as_torch(p, datatypes[name], self.device) for p in parts])
                      for name, parts in pieces.items()}  # fmt: skip
            phases.inputs_ready()
            result = self._forward(values)
            phases.outputs_started()
            arrays = {name: self._output(result, name, t, windows) for name, t in outputs.items()}
            if windows and self.stream is not None:
                self.stream.synchronize()  # the client reads its window once the answer arrives
        if self.settings.cache_cleaning and self.stream is not None:
            torch.cuda.empty_cache()
        return arrays

    def close(self) -> None:
        on_gpu, self.module = self.stream is not None, None
        if on_gpu:
            torch.cuda.synchronize(self.device)
            torch.cuda.empty_cache()  # give this model's cached blocks back for other models

    @contextlib.contextmanager
    def _modes(self) -> Iterator[None]:
        threads.apply_here(self.settings)
        grad = torch.inference_mode() if self.settings.inference_mode else torch.no_grad()
        stream = torch.cuda.stream(self.stream) if self.stream is not None else contextlib.nullcontext()
        optimize = torch.jit.optimized_execution(self.settings.optimized_execution)  # type: ignore[attr-defined]  # public, missing from torch.jit.__all__
        with grad, optimize, stream:
            yield

    def _forward(self, values: dict[str, Any]) -> Any:
        try:
            if self.binding.dict_input:
                return self.module(values)
            return self.module(*[values[name] for name in self.binding.inputs])
        except Exception as error:  # noqa: BLE001 - whatever forward raised fails this call only
            raise ModelExecutionError(self.name, TorchScriptError(_last_line(error))) from None

    def _output(
        self, result: Any, name: str, datatype: str, windows: Mapping[str, DeviceArray] | None
    ) -> np.ndarray:
        value = self._pick(result, name)
        window = windows.get(name) if windows else None
        if window is not None and isinstance(value, torch.Tensor) and value.is_cuda:
            check_datatype(self.name, name, value, datatype)
            return write_to_device(value.contiguous(), window)
        return as_numpy(self.name, name, value, datatype)

    def _pick(self, result: Any, name: str) -> Any:
        elements = result if isinstance(result, tuple) else (result,)
        index = self.binding.outputs[name]
        if index >= len(elements):
            raise ModelExecutionError(
                self.name,
                TorchScriptError(f"output '{name}' is element {index}, forward returned {len(elements)}"),
            )
        return elements[index]


def _check_device(model: str, instance_index: int, placement: Placement) -> None:
    if placement.kind != "KIND_GPU":
        return
    if not torch.cuda.is_available():
        raise Unavailable(
            f"model '{model}': instance {instance_index} is KIND_GPU, but torch {torch.__version__} "
            "has no CUDA GPU to use (torch.cuda.is_available() is False)"
        )
    if placement.gpu >= torch.cuda.device_count():
        raise InvalidArgument(
            f"model '{model}': instance {instance_index} asks for GPU {placement.gpu}, "
            f"torch sees {torch.cuda.device_count()}"
        )


def _load(model: str, path: Path, placement: Placement) -> Any:
    location = None if placement.kind == "KIND_MODEL" else torch.device(placement.device)
    try:
        module = torch.jit.load(str(path), map_location=location)
    except Exception as error:  # noqa: BLE001 - torch raises RuntimeError/ValueError for a bad file
        raise InvalidArgument(
            f"model '{model}': {path} is not a TorchScript file torch.jit.load can read "
            f"(save it with torch.jit.save after torch.jit.script or torch.jit.trace): {_last_line(error)}"
        ) from None
    return module.eval()


def _input_device(module: Any, placement: Placement) -> torch.device:
    if placement.kind != "KIND_MODEL":
        return torch.device(placement.device)
    first = next(iter(module.parameters()), None)
    return first.device if first is not None else torch.device("cpu")


def _arguments(model: str, module: Any) -> list[Argument]:
    try:
        schema = module.forward.schema
    except (AttributeError, RuntimeError) as error:
        raise InvalidArgument(
            f"model '{model}': the TorchScript module has no forward method: {error}"
        ) from None
    arguments = [Argument(a.name, a.type.kind(), str(a.type)) for a in schema.arguments]
    return arguments[1:] if arguments and arguments[0].kind == "ClassType" else arguments


def _stream(device: torch.device, model: str, instance_index: int) -> Any:
    if device.type != "cuda":
        return None
    key = (str(device), model, instance_index)
    if key not in STREAMS:
        STREAMS[key] = torch.cuda.Stream(device)
    return STREAMS[key]


def _join(values: list[Any]) -> Any:
    if len(values) == 1:
        return values[0]
    if isinstance(values[0], list):
        return [item for value in values for item in value]
    return torch.cat(values)


def _last_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__
