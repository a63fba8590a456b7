"""What a SavedModel's signatures declare, read from its ``saved_model.pb``.

The file is TensorFlow's ``SavedModel`` message; the meta graph tagged
``serve`` (TF Serving's and Triton's choice; Triton's model parameter
``TF_GRAPH_TAG`` names another) holds the ``signature_def`` map. Each signature becomes a :class:`Signature` of plain values, and the map
is also kept as the protobuf JSON TF Serving's metadata API prints. A tensor
whose rank is unknown (a TF1 placeholder without a shape) is one dimension
of any size: what TF Serving feeds serialized examples and instance lists as.
TensorFlow's own entries (``__saved_model_init_op``) are not served, and stay
in the metadata document, as TF Serving shows them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modelplatform import InvalidArgument

SAVED_MODEL_FILE = "saved_model.pb"
SERVE_TAG = "serve"
PREDICT = "tensorflow/serving/predict"
CLASSIFY = "tensorflow/serving/classify"
REGRESS = "tensorflow/serving/regress"
#: TensorFlow's internal signature keys (the init and train ops), never served.
INTERNAL_PREFIX = "__saved_model_"

#: TensorFlow DataType names -> OIP datatypes (what numpy can hold).
DATATYPES = {
    "DT_FLOAT": "FP32",
    "DT_DOUBLE": "FP64",
    "DT_HALF": "FP16",
    "DT_INT8": "INT8",
    "DT_INT16": "INT16",
    "DT_INT32": "INT32",
    "DT_INT64": "INT64",
    "DT_UINT8": "UINT8",
    "DT_UINT16": "UINT16",
    "DT_UINT32": "UINT32",
    "DT_UINT64": "UINT64",
    "DT_BOOL": "BOOL",
    "DT_STRING": "BYTES",
}


@dataclass(frozen=True, slots=True)
class SignatureTensor:
    """One input or output of a signature: the alias clients use, its type and shape (-1: any)."""

    alias: str
    datatype: str
    shape: tuple[int, ...]

    @property
    def dynamic_batch(self) -> bool:
        return bool(self.shape) and self.shape[0] == -1


@dataclass(frozen=True, slots=True)
class Signature:
    name: str
    method_name: str
    inputs: tuple[SignatureTensor, ...]
    outputs: tuple[SignatureTensor, ...]

    @property
    def takes_examples(self) -> bool:
        """A classify/regress signature fed serialized tf.Examples (one string input), as TF Serving feeds them."""
        single = self.inputs[0] if len(self.inputs) == 1 else None
        return self.method_name in (CLASSIFY, REGRESS) and single is not None and single.datatype == "BYTES"


@dataclass(frozen=True, slots=True)
class SavedModelSignatures:
    tags: tuple[str, ...]
    signatures: dict[str, Signature]
    #: The ``signature_def`` map as protobuf JSON (TF Serving's metadata document).
    signature_def_json: str


def read(model: str, export_dir: Path, tag: str = "") -> SavedModelSignatures:
    """The signatures of the meta graph tagged ``tag`` (by default ``serve``, else the first
    graph); needs TensorFlow (its protobuf messages)."""
    from tensorflow.core.protobuf import saved_model_pb2  # heavy: only when a model loads

    saved_model = saved_model_pb2.SavedModel()
    try:
        saved_model.ParseFromString((export_dir / SAVED_MODEL_FILE).read_bytes())
    except Exception as error:  # noqa: BLE001 - a truncated or foreign file: protobuf's DecodeError and more
        raise InvalidArgument(
            f"model '{model}': {export_dir / SAVED_MODEL_FILE} is not a SavedModel: {error}"
        ) from None
    meta_graph = _meta_graph(model, saved_model, tag)
    signatures = {
        name: _signature(model, name, sig)
        for name, sig in sorted(meta_graph.signature_def.items())
        if not name.startswith(INTERNAL_PREFIX)
    }
    if not signatures:
        raise InvalidArgument(f"model '{model}': the SavedModel declares no signature to serve")
    return SavedModelSignatures(
        tuple(meta_graph.meta_info_def.tags), signatures, json.dumps(_signature_def_document(meta_graph))
    )


def _meta_graph(model: str, saved_model: Any, tag: str) -> Any:
    graphs = list(saved_model.meta_graphs)
    if not graphs:
        raise InvalidArgument(f"model '{model}': the SavedModel holds no meta graph")
    for graph in graphs:
        if (tag or SERVE_TAG) in graph.meta_info_def.tags:
            return graph
    if tag:
        tags = sorted({t for g in graphs for t in g.meta_info_def.tags})
        raise InvalidArgument(f"model '{model}': no meta graph is tagged '{tag}' (tags: {tags})")
    return graphs[0]


def _signature(model: str, name: str, signature_def: Any) -> Signature:
    where = f"model '{model}': signature '{name}'"
    return Signature(
        name,
        signature_def.method_name,
        tuple(_tensor(where, alias, info) for alias, info in sorted(signature_def.inputs.items())),
        tuple(_tensor(where, alias, info) for alias, info in sorted(signature_def.outputs.items())),
    )


def _tensor(where: str, alias: str, info: Any) -> SignatureTensor:
    from tensorflow.core.framework import types_pb2  # heavy: only when a model loads

    dtype = types_pb2.DataType.Name(info.dtype)
    if dtype not in DATATYPES:
        raise InvalidArgument(
            f"{where}: tensor '{alias}' has type {dtype}, which this backend does not serve"
        )
    if info.WhichOneof("encoding") != "name":
        raise InvalidArgument(
            f"{where}: tensor '{alias}' is sparse or composite, which this backend does not serve"
        )
    shape = info.tensor_shape
    dims = (-1,) if shape.unknown_rank else tuple(d.size if d.size >= 0 else -1 for d in shape.dim)
    return SignatureTensor(alias, DATATYPES[dtype], dims)


def _signature_def_document(meta_graph: Any) -> dict[str, Any]:
    """``{name: SignatureDef}`` printed as TF Serving prints it (field names kept, defaults shown)."""
    from google.protobuf import json_format

    return {
        name: json_format.MessageToDict(
            sig, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        for name, sig in sorted(meta_graph.signature_def.items())
    }
