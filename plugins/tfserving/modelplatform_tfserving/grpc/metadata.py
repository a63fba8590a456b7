"""Signatures as ``tensorflow.serving.SignatureDefMap`` for GetModelMetadata."""

from __future__ import annotations

from typing import Any

from ..protos import serving_apis_pb2 as apis
from ..protos import tensorflow_pb2 as tf
from ..signatures import Alias, Signature
from .tensor_proto import TO_DT


def signature_def_map(signatures: dict[str, Signature]) -> Any:
    result = apis.SignatureDefMap()
    for name, sig in signatures.items():
        entry = result.signature_def[name]
        entry.method_name = sig.method_name
        for alias in sig.inputs:
            entry.inputs[alias.alias].CopyFrom(tensor_info(alias))
        for alias in sig.outputs:
            entry.outputs[alias.alias].CopyFrom(tensor_info(alias))
    return result


def tensor_info(alias: Alias) -> Any:
    info = tf.TensorInfo(name=alias.spec.name, dtype=TO_DT[alias.spec.datatype])
    info.tensor_shape.dim.extend(tf.TensorShapeProto.Dim(size=d) for d in alias.full_shape)
    return info
