"""The JSON documents of the GET routes: model status, metadata, model list.

Printed like protobuf's JSON printer in TF Serving: proto field names,
defaults included, int64 as strings, one-space indentation.
"""

from __future__ import annotations

import json
from typing import Any

from ..servables import VersionStatus
from ..signatures import Alias, ModelSignatures, Signature
from ..tf_types import DT_NAMES


def pretty(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False)


def status_json(statuses: list[VersionStatus]) -> dict[str, Any]:
    return {"model_version_status": [_version_status(s) for s in statuses]}


def _version_status(status: VersionStatus) -> dict[str, Any]:
    return {
        "version": status.version,
        "state": status.state,
        "status": {"error_code": status.error_code, "error_message": status.error_message},
    }


def metadata_json(name: str, version: str, declared: ModelSignatures) -> dict[str, Any]:
    """GetModelMetadataResponse with its doubled ``signature_def`` key (B4).

    The model's own ``signature_def`` map when it declares one (a SavedModel's,
    printed by protobuf as TF Serving prints it), else one built from the aliases.
    """
    signature_defs = declared.signature_def
    if signature_defs is None:
        signature_defs = {n: _signature_def(s) for n, s in declared.signatures.items()}
    return {
        "model_spec": {"name": name, "signature_name": "", "version": version},
        "metadata": {"signature_def": {"signature_def": signature_defs}},
    }


def _signature_def(sig: Signature) -> dict[str, Any]:
    return {
        "inputs": {a.alias: tensor_info(a) for a in sig.inputs},
        "outputs": {a.alias: tensor_info(a) for a in sig.outputs},
        "method_name": sig.method_name,
        "defaults": {},
    }


def tensor_info(alias: Alias) -> dict[str, Any]:
    return {
        "dtype": DT_NAMES[alias.spec.datatype],
        "tensor_shape": {
            "dim": [{"size": str(d), "name": ""} for d in alias.full_shape],
            "unknown_rank": False,
        },
        "name": alias.spec.name,
    }
