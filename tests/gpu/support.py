"""What the GPU tests share: the skip reasons, a device check, and python models built in the test.

Everything here runs only where `make test-gpu` runs (a CUDA machine with
torch, pycuda and tritonclient's CUDA shared-memory utilities); imported on
a CPU machine it only defines names.
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

ROOT = Path(__file__).resolve().parents[2]
PERF_ANALYZER = ROOT / ".venv/perf_analyzer/perf_analyzer"


def require_cuda() -> None:
    """Skip unless torch sees a CUDA device and pycuda imports (the server's CUDA shm needs it)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    pytest.importorskip("pycuda.driver", reason="pycuda is not installed (requirements/gpu.txt)")
    pytest.importorskip("tritonclient.utils.cuda_shared_memory", reason="needs cuda-python for tritonclient")


#: A Triton python model on the GPU: doubles INPUT0 with torch on its instance's device and
#: returns it through DLPack; WHERE says where the input arrived and where the instance runs.
#: With a GPU input it also adds 1 to the input in place: the client sees that in its own
#: region only when the model was handed the client's device memory, not a copy.
GPU_PROBE = dedent(
    """
    import numpy as np
    import torch
    import triton_python_backend_utils as pb_utils


    class TritonPythonModel:
        def initialize(self, args):
            self.kind = args["model_instance_kind"]
            self.device = torch.device(f"cuda:{args['model_instance_device_id']}")

        def execute(self, requests):
            responses = []
            for request in requests:
                tensor = pb_utils.get_input_tensor_by_name(request, "INPUT0")
                x = torch.from_dlpack(tensor.to_dlpack())
                if not tensor.is_cpu():
                    x.add_(1.0)
                y = x.to(self.device) * 2
                out = pb_utils.Tensor.from_dlpack("OUTPUT0", torch.utils.dlpack.to_dlpack(y))
                where = [str(x.device), self.kind, str(self.device), str(out.is_cpu())]
                info = pb_utils.Tensor("WHERE", np.array([w.encode() for w in where], dtype=object))
                responses.append(pb_utils.InferenceResponse(output_tensors=[out, info]))
            return responses
    """
)

GPU_PROBE_CONFIG = dedent(
    """
    name: "{name}"
    backend: "python"
    input [ {{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }} ]
    output [
      {{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }},
      {{ name: "WHERE" data_type: TYPE_STRING dims: [ 4 ] }}
    ]
    instance_group [ {{ kind: KIND_GPU count: 1 gpus: [ 0 ] }} ]
    parameters {{ key: "FORCE_CPU_ONLY_INPUT_TENSORS" value: {{ string_value: "{force_cpu}" }} }}
    """
)


def write_probe(repository: Path, name: str, force_cpu: str) -> None:
    folder = repository / name
    (folder / "1").mkdir(parents=True)
    (folder / "1" / "model.py").write_text(GPU_PROBE)
    (folder / "config.pbtxt").write_text(GPU_PROBE_CONFIG.format(name=name, force_cpu=force_cpu))


TORCH_PROBE_CONFIG = dedent(
    """
    name: "torch_probe"
    backend: "pytorch"
    input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ -1 ] } ]
    output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ -1 ] } ]
    instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]
    """
)


def write_torch_probe(repository: Path) -> None:
    """A TorchScript model on GPU 0 that adds 1 to its input in place, then doubles it."""
    import torch

    class Probe(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x.add_(1.0)
            return x * 2

    folder = repository / "torch_probe"
    (folder / "1").mkdir(parents=True)
    torch.jit.save(torch.jit.script(Probe()), str(folder / "1" / "model.pt"))
    (folder / "config.pbtxt").write_text(TORCH_PROBE_CONFIG)
