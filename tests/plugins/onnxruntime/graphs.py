"""Tiny one-node ONNX graphs built with ``onnx.helper``, and model folders serving them.

Each graph maps input ``X`` to output ``Y``; dimensions are ints (fixed) or
strings (``dim_param`` names) or None (neither). ONNX Runtime reports ``Y``'s
declared shape, where its own shape inference finds nothing better for a
None, and that report is what the I/O binding plan reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import onnx
from onnx import TensorProto, helper

OPSET = 13
IR_VERSION = 8
Dims = Sequence[int | str]


def graph(op: str, x_dims: Dims, y_dims: Dims, element: int = TensorProto.FLOAT) -> onnx.ModelProto:
    """``Y = op(X)`` with the given declared shapes."""
    body = helper.make_graph(
        [helper.make_node(op, ["X"], ["Y"])],
        f"{op.lower()}_graph",
        [helper.make_tensor_value_info("X", element, list(x_dims))],
        [helper.make_tensor_value_info("Y", element, list(y_dims))],
    )
    model = helper.make_model(body, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    onnx.checker.check_model(model)
    return model


def add_model(
    repository: Path, name: str, model: onnx.ModelProto, dims: Dims, max_batch_size: int = 0, extra: str = ""
) -> None:
    """``<repository>/<name>`` serving ``model`` (FP32 X -> Y, configured ``dims``), one thread."""
    folder = repository / name
    (folder / "1").mkdir(parents=True)
    onnx.save(model, str(folder / "1" / "model.onnx"))
    shape = ", ".join(str(-1 if isinstance(d, str) else d) for d in dims)
    (folder / "config.pbtxt").write_text(
        f'name: "{name}"\nplatform: "onnxruntime_onnx"\nmax_batch_size: {max_batch_size}\n'
        f'input [ {{ name: "X" data_type: TYPE_FP32 dims: [ {shape} ] }} ]\n'
        f'output [ {{ name: "Y" data_type: TYPE_FP32 dims: [ {shape} ] }} ]\n'
        'parameters { key: "intra_op_thread_count" value: { string_value: "1" } }\n' + extra
    )
