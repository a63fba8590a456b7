"""Writes model_repository/simple_torchscript/1/model.pt: a small MLP as TorchScript.

``INPUT__0`` FP32 [batch, 16] -> ``OUTPUT__0`` FP32 [batch, 4], class
probabilities (Linear 16->32, ReLU, Linear 32->4, softmax). The weights come
from ``torch.manual_seed(0)``, so every build computes the same function; the
module is scripted (``torch.jit.script``), not traced, so the file holds the
code as written. ``benchmarks/run.py`` builds a wider one the same way.
Run: ``python scripts/build_torchscript_model.py [--out FILE] [--features N]
[--hidden N] [--classes N]`` (needs torch).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "model_repository" / "simple_torchscript" / "1" / "model.pt"
SEED = 0


class Mlp(torch.nn.Module):
    def __init__(self, features: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.hidden = torch.nn.Linear(features, hidden)
        self.out = torch.nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.out(torch.relu(self.hidden(x))), dim=1)


def build(features: int = 16, hidden: int = 32, classes: int = 4) -> torch.jit.ScriptModule:
    torch.manual_seed(SEED)
    return torch.jit.script(Mlp(features, hidden, classes).eval())


def write(out: Path, features: int = 16, hidden: int = 32, classes: int = 4) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.jit.save(build(features, hidden, classes), str(out))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--classes", type=int, default=4)
    args = parser.parse_args()
    print(write(args.out, args.features, args.hidden, args.classes))


if __name__ == "__main__":
    main()
