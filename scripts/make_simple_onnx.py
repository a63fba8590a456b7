"""Writes model_repository/simple_onnx/1/model.onnx: FP32 add/sub, dynamic batch.

OUTPUT0 = INPUT0 + INPUT1 and OUTPUT1 = INPUT0 - INPUT1, every tensor shaped
[batch, 16]. Built node by node with the ``onnx`` package, so nothing is
downloaded. Opset 13 and IR version 8 keep the file readable by older ONNX
Runtime and TensorRT releases. Run: ``python scripts/make_simple_onnx.py [out]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "model_repository" / "simple_onnx" / "1" / "model.onnx"
OPSET = 13
IR_VERSION = 8
WIDTH = 16


def _tensor(name: str) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", WIDTH])


def build() -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes=[
            helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"], name="add"),
            helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"], name="sub"),
        ],
        name="simple_onnx",
        inputs=[_tensor("INPUT0"), _tensor("INPUT1")],
        outputs=[_tensor("OUTPUT0"), _tensor("OUTPUT1")],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="modelplatform",
        ir_version=IR_VERSION,
    )
    onnx.checker.check_model(model)
    return model


def main(out: Path = DEFAULT_OUT) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(build(), str(out))
    print(f"wrote {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
