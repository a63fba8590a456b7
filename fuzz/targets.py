"""The fuzz targets: fuzzer bytes -> one request of a dialect -> the real handler.

Input format, the same for every target: the first byte picks a variant (the
model in the path, the verb, the RPC), the rest is the body as the dialect
receives it. The binary-extension target also takes its
``Inference-Header-Content-Length`` from two bytes after the selector.
"""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from modelplatform import ModelPlatformError
from modelplatform.testing import read_model_config

from . import seeds
from .server import MODELS, FuzzServer, Outcome

Run = Callable[[FuzzServer, bytes], Awaitable[Outcome]]


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    #: What it feeds, for the table and the docs.
    covers: str
    seeds: Callable[[], list[bytes]]
    run: Run


def _pick(options: Sequence[Any], data: bytes) -> tuple[Any, bytes]:
    """The option the selector byte names, and the rest of the input."""
    if not data:
        return options[0], b""
    return options[data[0] % len(options)], data[1:]


def _selector(options: Sequence[Any], option: Any) -> bytes:
    return bytes([options.index(option)])


# ---- OIP over HTTP: JSON and the binary tensor data extension ----


async def _oip_json(server: FuzzServer, data: bytes) -> Outcome:
    model, body = _pick(MODELS, data)
    return await server.http_async("POST", f"/v2/models/{model}/infer", body, {})


def _oip_json_seeds() -> list[bytes]:
    return [_selector(MODELS, model) + orjson.dumps(body)
            for model, bodies in seeds.oip_json_bodies().items() for body in bodies]  # fmt: skip


async def _oip_binary(server: FuzzServer, data: bytes) -> Outcome:
    model, rest = _pick(MODELS, data)
    header_length, body = (struct.unpack("<H", rest[:2])[0], rest[2:]) if len(rest) >= 2 else (0, rest)
    headers = {"inference-header-content-length": str(header_length)}
    return await server.http_async("POST", f"/v2/models/{model}/infer", body, headers)


def _oip_binary_seeds() -> list[bytes]:
    found = []
    for model, requests in seeds.oip_binary_requests().items():
        for header, tail in requests:
            head = orjson.dumps(header)
            found.append(_selector(MODELS, model) + struct.pack("<H", len(head)) + head + tail)
    return found


# ---- OIP over gRPC ----

OIP_INFER = "/inference.GRPCInferenceService/ModelInfer"


async def _oip_grpc(server: FuzzServer, data: bytes) -> Outcome:
    return await server.grpc_async(OIP_INFER, data)


def _oip_grpc_seeds() -> list[bytes]:
    return [request.SerializeToString() for request in seeds.oip_grpc_requests()]


# ---- TF Serving: REST JSON and gRPC TensorProto ----

TF_VERBS = ("predict", "classify", "regress")
TF_ROUTES = tuple((verb, model) for model in MODELS for verb in TF_VERBS)


async def _tfserving_json(server: FuzzServer, data: bytes) -> Outcome:
    (verb, model), body = _pick(TF_ROUTES, data)
    return await server.http_async("POST", f"/v1/models/{model}:{verb}", body, {})


def _tfserving_json_seeds() -> list[bytes]:
    found = []
    for verb, bodies in seeds.tfserving_json_bodies().items():
        models = MODELS if verb == "predict" else ("saved_model_half_plus_three",)
        for model in models:
            found += [_selector(TF_ROUTES, (verb, model)) + orjson.dumps(body) for body in bodies]
    return found


TF_METHODS = ("Predict", "Classify", "Regress")


async def _tfserving_grpc(server: FuzzServer, data: bytes) -> Outcome:
    method, message = _pick(TF_METHODS, data)
    return await server.grpc_async(f"/tensorflow.serving.PredictionService/{method}", message)


def _tfserving_grpc_seeds() -> list[bytes]:
    return [_selector(TF_METHODS, method) + request.SerializeToString()
            for method, requests in seeds.tfserving_grpc_requests().items() for request in requests]  # fmt: skip


# ---- grps: REST JSON and gRPC protobuf ----

GRPS_QUERIES = ("", "return-ndarray=true", "model=simple", "model=identity_bytes-1")


async def _grps_json(server: FuzzServer, data: bytes) -> Outcome:
    query, body = _pick(GRPS_QUERIES, data)
    return await server.http_async(
        "POST", "/grps/v1/infer/predict", body, {"content-type": "application/json"}, query
    )


def _grps_json_seeds() -> list[bytes]:
    return [bytes([index]) + orjson.dumps(body)
            for body in seeds.grps_json_bodies() for index in range(len(GRPS_QUERIES))]  # fmt: skip


GRPS_METHODS = ("Predict", "PredictStreaming", "ModelMetadata")


async def _grps_grpc(server: FuzzServer, data: bytes) -> Outcome:
    method, message = _pick(GRPS_METHODS, data)
    return await server.grpc_async(f"/grps.protos.v1.GrpsService/{method}", message)


def _grps_grpc_seeds() -> list[bytes]:
    return [bytes([index]) + request.SerializeToString()
            for request in seeds.grps_grpc_requests() for index in range(2)]  # fmt: skip


# ---- the OpenAI-compatible API: chat, completions and embeddings bodies ----

OPENAI_PATHS = ("chat/completions", "completions", "embeddings")


async def _openai(server: FuzzServer, data: bytes) -> Outcome:
    path, body = _pick(OPENAI_PATHS, data)
    return await server.http_async("POST", f"/openai/v1/{path}", body, {"content-type": "application/json"})


def _openai_seeds() -> list[bytes]:
    return [_selector(OPENAI_PATHS, path) + orjson.dumps(body)
            for path, bodies in seeds.openai_bodies().items() for body in bodies]  # fmt: skip


# ---- the repository API's load and unload bodies ----

REPOSITORY_CALLS = tuple(
    (action, model) for model in ("simple", "identity_fp32", "uploaded") for action in ("load", "unload")
)


async def _repository(server: FuzzServer, data: bytes) -> Outcome:
    (action, model), body = _pick(REPOSITORY_CALLS, data)
    return await server.http_async("POST", f"/v2/repository/models/{model}/{action}", body, {})


def _repository_seeds() -> list[bytes]:
    bodies = seeds.repository_load_bodies()
    return [
        _selector(REPOSITORY_CALLS, ("load", model)) + orjson.dumps(body)
        for model in ("simple", "uploaded")
        for body in bodies
    ] + [_selector(REPOSITORY_CALLS, ("unload", "simple"))]


# ---- config.pbtxt: the text-format reader and ModelConfig building ----


class _ConfigFolder:
    """One model folder whose config.pbtxt each input rewrites (read as the repository reads it)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="fuzz-config-")) / "rich"
        self.folder.mkdir()

    def read(self, text: bytes) -> Outcome:
        (self.folder / "config.pbtxt").write_bytes(text)
        try:
            read_model_config(self.folder)
        except ModelPlatformError as error:
            return Outcome(400 if error.code.value == "INVALID_ARGUMENT" else 500)
        except Exception as error:  # noqa: BLE001 - a finding: a load would fail with a 500
            return Outcome(500, error)
        return Outcome(200)


_FOLDER: list[_ConfigFolder] = []


async def _config_pbtxt(server: FuzzServer, data: bytes) -> Outcome:
    if not _FOLDER:
        _FOLDER.append(_ConfigFolder())
    return _FOLDER[0].read(data)


TARGETS: dict[str, Target] = {
    target.name: target
    for target in (
        Target("oip-json", "OIP REST infer, JSON body", _oip_json_seeds, _oip_json),
        Target(
            "oip-binary",
            "OIP REST infer, binary extension (header length, binary_data_size, BYTES length prefixes)",
            _oip_binary_seeds,
            _oip_binary,
        ),
        Target("oip-grpc", "OIP gRPC ModelInfer, typed and raw contents", _oip_grpc_seeds, _oip_grpc),
        Target(
            "tfserving-json",
            "TF Serving REST predict/classify/regress (row, columnar, b64)",
            _tfserving_json_seeds,
            _tfserving_json,
        ),
        Target(
            "tfserving-grpc",
            "TF Serving gRPC Predict (TensorProto), Classify, Regress",
            _tfserving_grpc_seeds,
            _tfserving_grpc,
        ),
        Target(
            "grps-json", "grps REST predict (gtensors, ndarray, str_data, gmap)", _grps_json_seeds, _grps_json
        ),
        Target(
            "grps-grpc", "grps gRPC Predict / PredictStreaming / ModelMetadata", _grps_grpc_seeds, _grps_grpc
        ),
        Target(
            "openai-json",
            "OpenAI-compatible chat/completions, completions, embeddings (streamed and not)",
            _openai_seeds,
            _openai,
        ),
        Target(
            "repository",
            "repository load/unload bodies (config override, file: parameters)",
            _repository_seeds,
            _repository,
        ),
        Target("config-pbtxt", "config.pbtxt text format -> ModelConfig", seeds.config_texts, _config_pbtxt),
    )
}
