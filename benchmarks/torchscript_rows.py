"""The torchscript rows of `make bench`: a TorchScript MLP served, against bare torch in process.

`torchscript_mlp` (scripts/build_torchscript_model.py; about 33 MB of
weights) is served by the pytorch backend; the bare ceiling is the same
module loaded here with ``torch.jit.load`` and called under
``torch.inference_mode`` (framework_bench.py says how the rows are measured).
Needs torch.

    make bench BENCH_ARGS="--only torchscript"
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from framework_bench import CLASSES, FEATURES, HIDDEN, BareCall, Framework

MODEL = "torchscript_mlp"
CONFIG = f"""name: "{MODEL}"
platform: "pytorch_libtorch"
max_batch_size: 8
input [ {{ name: "INPUT__0" data_type: TYPE_FP32 dims: [ {FEATURES} ] }} ]
output [ {{ name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ {CLASSES} ] }} ]
dynamic_batching {{ }}
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
"""


def _build(model_folder: Path) -> None:
    import build_torchscript_model  # scripts/: needs torch, imported only for these rows

    build_torchscript_model.write(model_folder / "1" / "model.pt", FEATURES, HIDDEN, CLASSES)


def _bare(model_folder: Path) -> BareCall:
    import torch

    module = torch.jit.load(str(model_folder / "1" / "model.pt")).eval()

    def call(rows: np.ndarray) -> None:
        with torch.inference_mode():
            module(torch.from_numpy(rows)).numpy()

    return call


TORCHSCRIPT = Framework("torchscript", "torch", MODEL, CONFIG, _build, _bare, start_timeout=120)
