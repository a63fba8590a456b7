"""Signatures as ``tensorflow.serving.SignatureDefMap`` for GetModelMetadata."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format

from ..protos import serving_apis_pb2 as apis
from ..protos import tensorflow_pb2 as tf
from ..signatures import Alias, ModelSignatures
from .tensor_proto import TO_DT


def signature_def_map(declared: ModelSignatures) -> Any:
    """The model's own ``signature_def`` map when it declares one, else one built from the aliases."""
    result = apis.SignatureDefMap()
    if declared.signature_def is not None:
        # Fields our copy of tensorflow.proto lacks (sparse and composite encodings) are dropped.
        json_format.ParseDict({"signature_def": declared.signature_def}, result, ignore_unknown_fields=True)
        return result
    for name, sig in declared.signatures.items():
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
