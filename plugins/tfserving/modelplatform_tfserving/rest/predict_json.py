"""Predict over JSON: ``instances`` (row) and ``inputs`` (columnar) both ways.

Request rules and message texts follow TF Serving's ``json_tensor.cc``
(protocol-notes B5); the answer keeps the request's format.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from modelplatform import InvalidArgument, ModelPlatformError

from ..errors import format_error, invalid_argument_text, quote
from ..json_out import INDENT, document, key_text, leaf_texts, multi_line, single_line
from ..json_tensors import array_from_json, dense_shape, is_named_object
from ..limits import Limits
from ..signatures import Signature

ROW, COLUMNAR = "predictions", "outputs"
BYTES_SUFFIX = "_bytes"


def request_format(doc: dict[str, Any]) -> str:
    """Which of ``instances``/``inputs`` the request uses (exactly one)."""
    has_rows, has_columns = "instances" in doc, "inputs" in doc
    if has_rows and has_columns:
        raise format_error(
            doc, "Not formatted correctly expecting only one of 'inputs' or 'instances' keys to exist "
        )
    if has_rows:
        rows = doc["instances"]
        if not isinstance(rows, list):
            raise format_error(doc, "Excepting 'instances' to be an list/array")
        if not rows:
            raise format_error(doc, "No values in 'instances' array")
        return ROW
    if has_columns:
        return COLUMNAR
    raise InvalidArgument("Missing 'inputs' or 'instances' key")


def signature_name(doc: dict[str, Any]) -> str:
    name = doc.get("signature_name", "")
    if not isinstance(name, str):
        raise format_error(doc, "not formatted correctly. 'signature_name' key must be a string value.")
    return name


def decode_inputs(
    doc: dict[str, Any], fmt: str, signature: Signature, limits: Limits
) -> dict[str, np.ndarray]:
    types = {a.alias: a.spec.datatype for a in signature.inputs}
    if fmt == ROW:
        return _from_instances(doc["instances"], types, limits)
    return _from_inputs(doc["inputs"], types, limits)


def _from_inputs(value: Any, types: dict[str, str], limits: Limits) -> dict[str, np.ndarray]:
    if not is_named_object(value):
        if len(types) > 1:
            raise InvalidArgument(
                "inputs is a plain value/list, but expecting an object as multiple "
                "input tensors required as per tensorinfo_map"
            )
        name = next(iter(types))
        return {name: array_from_json(value, types[name], limits)}
    arrays = {}
    for name, datatype in types.items():
        if name not in value:
            raise InvalidArgument(f"Missing named input: {name} in 'inputs' object.")
        arrays[name] = array_from_json(value[name], datatype, limits)
    return arrays


def _from_instances(rows: list[Any], types: dict[str, str], limits: Limits) -> dict[str, np.ndarray]:
    if not is_named_object(rows[0]):
        if len(types) > 1:
            raise InvalidArgument(
                "instances is a plain list, but expecting list of objects as multiple "
                "input tensors required as per tensorinfo_map"
            )
        name = next(iter(types))
        for index, row in enumerate(rows):
            if is_named_object(row):
                raise InvalidArgument(f"Expecting value/list but got object at item {index} of input list")
        return {name: _stack(rows, name, types[name], limits, keyed=False)}
    _check_row_keys(rows, types)
    return {
        name: _stack([row[name] for row in rows], name, datatype, limits, keyed=True)
        for name, datatype in types.items()
    }


def _check_row_keys(rows: list[Any], types: dict[str, str]) -> None:
    expected = set(types)
    for index, row in enumerate(rows):
        if not is_named_object(row):
            raise InvalidArgument(f"Expecting object but got list at item {index} of input list")
        for key in row:
            if key not in expected:
                raise InvalidArgument(
                    f"Failed to process element: {index} key: {key} of 'instances' list. "
                    f"Error: INVALID_ARGUMENT: JSON object: does not have named input: {key}"
                )
        if set(row) != expected:
            raise InvalidArgument(
                f"Failed to process element: {index} of 'instances' list. JSON object: "
                f"{quote(row)} must only have keys: {','.join(sorted(expected))}"
            )


def _stack(items: list[Any], name: str, datatype: str, limits: Limits, keyed: bool) -> np.ndarray:
    """The batch of every row's value; on failure, the row-by-row diagnosis."""
    try:
        return array_from_json(items, datatype, limits)
    except ModelPlatformError:
        _diagnose(items, name, datatype, limits, keyed)
        raise


def _diagnose(items: list[Any], name: str, datatype: str, limits: Limits, keyed: bool) -> None:
    where = f" key: {name}" if keyed else ""
    first_shape = dense_shape(items[0])
    first_size = int(np.prod(first_shape)) if first_shape else 1
    for index, item in enumerate(items):
        try:
            array_from_json(item, datatype, limits)
            shape = dense_shape(item)
            size = int(np.prod(shape)) if shape else 1
            if size != first_size:
                raise InvalidArgument(f"Expecting tensor size: {first_size} but got: {size}")
            if shape != first_shape:
                raise InvalidArgument(
                    f"Expecting shape {_shape_text(first_shape)} but got: {_shape_text(shape)}"
                )
        except ModelPlatformError as error:
            raise InvalidArgument(
                f"Failed to process element: {index}{where} of 'instances' list. "
                f"Error: {invalid_argument_text(error)}"
            ) from None


def _shape_text(shape: list[int]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


# ---- response ----


def encode_outputs(outputs: dict[str, np.ndarray], fmt: str) -> str:
    if fmt == ROW:
        return document(ROW, _rows(outputs))
    return document(COLUMNAR, _columns(outputs))


def _leaves(name: str, array: np.ndarray) -> list[str]:
    return leaf_texts(array, as_b64=name.endswith(BYTES_SUFFIX))


def _columns(outputs: dict[str, np.ndarray]) -> str:
    if len(outputs) == 1:
        name, array = next(iter(outputs.items()))
        return multi_line(_leaves(name, array), array.shape, 1)
    members = (
        "\n" + INDENT * 2 + key_text(name) + ": " + multi_line(_leaves(name, array), array.shape, 2)
        for name, array in outputs.items()
    )
    return "{" + ",".join(members) + "\n" + INDENT + "}"


def _rows(outputs: dict[str, np.ndarray]) -> str:
    batch = _batch_size(outputs)
    if batch == 0:
        return "[]"
    per_row = {name: _row_texts(name, array, batch) for name, array in outputs.items()}
    if len(outputs) == 1:
        return "[" + ", ".join(next(iter(per_row.values()))) + "\n" + INDENT + "]"
    objects = []
    for index in range(batch):
        members = ",".join(
            "\n" + INDENT * 3 + key_text(name) + ": " + rows[index] for name, rows in per_row.items()
        )
        objects.append("\n" + INDENT * 2 + "{" + members + "\n" + INDENT * 2 + "}")
    return "[" + ",".join(objects) + "\n" + INDENT + "]"


def _row_texts(name: str, array: np.ndarray, batch: int) -> list[str]:
    leaves = _leaves(name, array)
    step = len(leaves) // batch
    item_shape = array.shape[1:]
    return [single_line(leaves[i * step : (i + 1) * step], item_shape) for i in range(batch)]


def _batch_size(outputs: dict[str, np.ndarray]) -> int:
    batch = -1
    for name, array in outputs.items():
        if array.ndim == 0:
            raise InvalidArgument(f"Tensor name: {name} has no shape information ")
        if batch >= 0 and array.shape[0] != batch:
            raise InvalidArgument(
                f"Tensor name: {name} has inconsistent batch size: {array.shape[0]} expecting: {batch}"
            )
        batch = array.shape[0]
    return batch
