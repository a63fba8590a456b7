"""Triton's ``model_warmup`` samples as requests: zeros, random values, or files under ``warmup/``.

A sample gives every input its datatype and dims (no batch dimension) and
where its values come from. ``input_data_file`` holds one item, raw and
row-major (BYTES: each element a 4-byte little-endian length and the bytes),
and must be exactly that size. A batching model gets the item repeated to the
sample's ``batch_size`` along a leading batch dimension. Everything a model
folder controls is bounded: element counts and file sizes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from modelplatform.base.dtypes import decode_bytes, element_size, numpy_dtype
from modelplatform.base.errors import InvalidArgument, ModelPlatformError
from modelplatform.base.inference import InferenceRequest, Tensor
from modelplatform.base.model_config import WARMUP_FOLDER, ModelConfig, ModelWarmup, WarmupInput
from modelplatform.base.validation import element_count

#: Per input, batch included: the default ``--max-tensor-elements``.
MAX_ELEMENTS = 64 * 2**20
#: A BYTES input file larger than this is refused before it is read.
MAX_FILE_BYTES = 256 * 2**20


@dataclass(frozen=True, slots=True)
class Sample:
    """One warmup request and how many times each instance runs it."""

    name: str
    request: InferenceRequest
    count: int = 1


def triton_samples(config: ModelConfig, model_dir: Path) -> list[Sample]:
    """The configuration's ``model_warmup`` samples, in order; raises naming sample and input."""
    folder = model_dir / WARMUP_FOLDER
    return [_sample(config, warmup, folder) for warmup in config.model_warmup]


def _sample(config: ModelConfig, warmup: ModelWarmup, folder: Path) -> Sample:
    tensors = []
    for key, spec in warmup.inputs.items():
        where = f"warmup sample '{warmup.name}' input '{key}'"
        try:
            tensors.append(_tensor(config, warmup.batch_size, key, spec, folder))
        except ModelPlatformError as error:
            raise InvalidArgument(f"{where}: {error.message}") from None
    request = InferenceRequest(config.name, tensors, id=warmup.name)
    return Sample(warmup.name, request, warmup.count)


def _tensor(config: ModelConfig, batch_size: int, key: str, spec: WarmupInput, folder: Path) -> Tensor:
    if config.input_spec(key) is None:
        declared = ", ".join(s.name for s in config.inputs) or "none"
        raise InvalidArgument(f"the model has no such input (inputs: {declared})")
    count = element_count(spec.dims, MAX_ELEMENTS // batch_size)
    item = _values(spec, count, folder).reshape(spec.dims)
    if config.batching:
        item = np.repeat(item[np.newaxis], batch_size, axis=0)
    return Tensor(key, spec.datatype, tuple(item.shape), item)


def _values(spec: WarmupInput, count: int, folder: Path) -> np.ndarray:
    if spec.source == "input_data_file":
        return _from_file(spec, count, folder)
    if spec.source == "random_data" and spec.datatype != "BYTES":  # BYTES: zeros, as Triton
        return _random(spec.datatype, count)
    if spec.datatype == "BYTES":
        return np.full(count, b"", dtype=object)  # zero lengths: empty elements
    return np.zeros(count, dtype=numpy_dtype(spec.datatype))


def _random(datatype: str, count: int) -> np.ndarray:
    """Small non-negative values: a random index or length must not break the model."""
    rng = np.random.default_rng()
    if datatype == "BF16":  # the upper halves of float32 bit patterns
        return (rng.random(count, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
    dtype = numpy_dtype(datatype)
    if dtype.kind == "f":
        return rng.random(count).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, count).astype(np.bool_)
    return rng.integers(0, 100, count).astype(dtype)


def _from_file(spec: WarmupInput, count: int, folder: Path) -> np.ndarray:
    path = folder / spec.data_file
    if not path.resolve().is_relative_to(folder.resolve()) or not path.is_file():
        raise InvalidArgument(f"input_data_file '{spec.data_file}' is not a file in {WARMUP_FOLDER}/")
    size = path.stat().st_size
    if spec.datatype == "BYTES":
        if size > MAX_FILE_BYTES:
            raise InvalidArgument(f"input_data_file '{spec.data_file}' is over {MAX_FILE_BYTES} bytes")
        return decode_bytes(path.read_bytes(), count)
    expected = count * element_size(spec.datatype)
    if size != expected:
        raise InvalidArgument(
            f"input_data_file '{spec.data_file}' is {size} bytes, expected {expected} "
            f"({count} {spec.datatype} elements)"
        )
    dtype = numpy_dtype(spec.datatype).newbyteorder("<")
    array = np.frombuffer(path.read_bytes(), dtype=dtype)
    return array.view(np.bool_) if spec.datatype == "BOOL" else array
