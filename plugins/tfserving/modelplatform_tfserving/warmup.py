"""TF Serving's warmup file, ``<version>/assets.extra/tf_serving_warmup_requests``, as requests.

The file is a TFRecord of ``PredictionLog`` messages, at most 1000 (TF
Serving's limit), each a logged Predict, Classify, Regress or MultiInference
request. Each becomes the InferenceRequest that request would have made
through the model's signatures (a MultiInference one per task); the core
replays them once each, in file order, on every instance before the version
turns READY. A file that cannot be read, or a record naming an unknown
signature, input or log type, fails the load naming the record, as in TF
Serving. Both ``tfserving-rest`` and ``tfserving-grpc`` answer the hook
(the first answer is taken), so either plugin alone warms a model up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError

from modelplatform import (
    InferenceRequest,
    InvalidArgument,
    Limits,
    ModelConfig,
    ModelPlatformError,
    RequestedOutput,
    Tensor,
    hookimpl,
)

from .examples import examples_of, signature_inputs
from .grpc.tensor_proto import to_array
from .protos import prediction_log_pb2 as logs
from .signatures import (
    CLASSIFY,
    DEFAULT_SIGNATURE,
    REGRESS,
    ModelSignatures,
    Signature,
)
from .signatures import (
    parse as parse_signatures,
)
from .tfrecord import read_records

WARMUP_FILE = Path("assets.extra") / "tf_serving_warmup_requests"
MAX_RECORDS = 1000
#: A file over this is refused before it is read; so is one record over its limit.
MAX_FILE_BYTES = 256 * 2**20
MAX_RECORD_BYTES = 64 * 2**20
_LIMITS = Limits(max_tensor_elements=64 * 2**20, max_bytes_element=MAX_RECORD_BYTES)


@hookimpl
def warmup_requests(version_dir: Path, config: ModelConfig) -> list[InferenceRequest] | None:
    """The version's warmup file as requests, or None when it has none."""
    path = version_dir / WARMUP_FILE
    if not path.is_file():
        return None
    try:
        return read_warmup_file(path, config)
    except ModelPlatformError as error:
        raise InvalidArgument(f"{WARMUP_FILE.as_posix()}: {error.message}") from None


def read_warmup_file(path: Path, config: ModelConfig) -> list[InferenceRequest]:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise InvalidArgument(f"the file is {size} bytes, over the limit of {MAX_FILE_BYTES}")
    signatures = parse_signatures(config)  # once per load: nothing to cache
    requests = []
    for index, record in enumerate(read_records(path, MAX_RECORDS, MAX_RECORD_BYTES)):
        try:
            found = _requests(_parse(record), config.name, signatures)
        except ModelPlatformError as error:
            raise InvalidArgument(f"record {index}: {error.message}") from None
        for request in found:
            request.id = f"{WARMUP_FILE.name} record {index}"
        requests += found
    return requests


def _parse(record: bytes) -> Any:
    log = logs.PredictionLog()
    try:
        log.ParseFromString(record)
    except DecodeError as error:
        raise InvalidArgument(f"not a PredictionLog: {error}") from None
    return log


def _requests(log: Any, model: str, signatures: ModelSignatures) -> list[InferenceRequest]:
    kind = log.WhichOneof("log_type")
    if kind == "predict_log":
        request = log.predict_log.request
        return [_predict(model, _signature(signatures, request.model_spec.signature_name), request)]
    if kind in ("classify_log", "regress_log"):
        request = getattr(log, kind).request
        method = CLASSIFY if kind == "classify_log" else REGRESS
        sig = _signature(signatures, request.model_spec.signature_name, method)
        return [_from_examples(model, sig, request.input)]
    if kind == "multi_inference_log":
        request = log.multi_inference_log.request
        tasks = request.tasks
        sigs = [_signature(signatures, t.model_spec.signature_name, t.method_name) for t in tasks]
        return [_from_examples(model, sig, request.input) for sig in sigs]
    raise InvalidArgument("holds no Predict, Classify, Regress or MultiInference request")


def _signature(signatures: ModelSignatures, name: str, method: str = "") -> Signature:
    found = signatures.signatures.get(name or DEFAULT_SIGNATURE)
    if found is None:
        raise InvalidArgument(f"signature '{name or DEFAULT_SIGNATURE}' is not declared")
    if method and found.method_name != method:
        raise InvalidArgument(f"signature '{found.name}' has method {found.method_name}, not {method}")
    return found


def _predict(model: str, sig: Signature, request: Any) -> InferenceRequest:
    by_alias = {a.alias: a for a in sig.inputs}
    tensors = []
    for alias, proto in request.inputs.items():
        if alias not in by_alias:
            raise InvalidArgument(f"input '{alias}' is not in signature '{sig.name}'")
        datatype, array = to_array(proto, _LIMITS)
        tensors.append(Tensor(by_alias[alias].spec.name, datatype, tuple(array.shape), array))
    outputs = {a.alias: a.spec.name for a in sig.outputs}
    wanted = [outputs.get(alias, alias) for alias in request.output_filter]
    return InferenceRequest(model, tensors, outputs=[RequestedOutput(n) for n in wanted] or None)


def _from_examples(model: str, sig: Signature, request_input: Any) -> InferenceRequest:
    arrays = signature_inputs(examples_of(request_input), sig, _LIMITS)
    datatypes = {a.spec.name: a.spec.datatype for a in sig.inputs}
    tensors = [Tensor(n, datatypes[n], tuple(a.shape), a) for n, a in arrays.items()]
    return InferenceRequest(model, tensors)
