"""``modelplatform_oip.api``: enough to build an extension on, documented, and light to import."""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import grpc
import numpy as np
import orjson
import pytest

import modelplatform_oip.api as api
from modelplatform import Codec, Settings, hookimpl
from modelplatform.testing import FunctionBackendPlugin, InProcessServer, free_port, function_model
from modelplatform_oip.api import (
    BINARY_CODEC,
    EncodedResponse,
    RestCodec,
    json_output,
    load_json,
    parse_request,
    raw_array,
    response_document,
)
from tests.conftest import ROOT

from ...http_wire import get_status as _get_status
from ...http_wire import post

DOC = ROOT / "docs" / "plugins" / "oip-extension-api.md"
CONFIG = """
name: "double"
backend: "function"
max_batch_size: 0
input [ { name: "A" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [ { name: "B" data_type: TYPE_FP32 dims: [ 3 ] } ]
"""


def test_every_exported_name_resolves_and_is_documented():
    text = DOC.read_text()
    for name in api.__all__:
        assert getattr(api, name) is not None, name
        assert re.search(rf"`{name}\b", text), f"{name} is not in {DOC.name}"


def test_importing_the_api_loads_none_of_oips_grpc_side():
    code = (
        "import sys, modelplatform_oip.api as api\n"
        "loaded = lambda: sorted(m for m in sys.modules if m.startswith(('modelplatform_oip.rpc',"
        " 'modelplatform_oip.protos')))\n"
        "before = loaded()\n"
        "api.unary_method, api.grpc_messages.ModelInferRequest, api.GRPC_SERVICE\n"
        "print(before, 'modelplatform_oip.rpc.service' in loaded())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[] True"


class TextRowsCodec(RestCodec):
    """A third-party ``binary`` codec for oip-rest built on the extension API alone.

    Inputs with ``binary_data_size`` follow the JSON header as raw bytes;
    the answer is JSON with a header saying which codec wrote it.
    """

    name: ClassVar[str] = BINARY_CODEC
    extensions: ClassVar[tuple[str, ...]] = ("third_party_codec",)

    def decode(self, body, header_length, model, version, config, limits):
        view, offset = memoryview(body), header_length

        def read(name: str, datatype: str, shape: list[int], size: int, limits: Any) -> np.ndarray:
            nonlocal offset
            chunk, offset = view[offset : offset + size], offset + size
            count = int(np.prod(shape))
            return raw_array(name, datatype, count, chunk, limits).reshape(shape)

        return parse_request(load_json(bytes(view[:header_length])), model, version, limits, read)

    def wants_response(self, request) -> bool:
        return True

    def encode(self, response, request) -> EncodedResponse:
        doc = response_document(response, [json_output(t) for t in response.outputs])
        return EncodedResponse(orjson.dumps(doc), "application/json", {"X-Codec": "third-party"})


class TextRowsPlugin:
    @staticmethod
    @hookimpl
    def register_codecs(settings: Settings) -> list[Codec]:
        return [TextRowsCodec()]


def _get(port: int, path: str) -> Any:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path)
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    (tmp_path / "double" / "1").mkdir(parents=True)
    (tmp_path / "double" / "config.pbtxt").write_text(CONFIG)
    function_model("double", lambda inputs: {"B": inputs["A"] * 2})
    return tmp_path


@pytest.mark.hook("register_codecs")
async def test_oip_rest_uses_a_codec_registered_through_the_hook(repository):
    settings = Settings(model_repository=repository, host="127.0.0.1", http_port=free_port(),
                        grpc_port=free_port(), plugins=("oip-rest",))  # fmt: skip
    data = np.array([1.5, 2.0, -4.0], "<f4").tobytes()
    header = orjson.dumps({"inputs": [{"name": "A", "datatype": "FP32", "shape": [3],
                                       "parameters": {"binary_data_size": len(data)}}]})  # fmt: skip
    headers = {"Inference-Header-Content-Length": str(len(header))}
    async with InProcessServer(settings, [FunctionBackendPlugin, TextRowsPlugin]):
        port = settings.http_port
        status, reply_headers, body = await asyncio.to_thread(
            post, port, "/v2/models/double/infer", header + data, headers
        )
        metadata = await asyncio.to_thread(_get, port, "/v2")
    assert status == 200, body
    assert reply_headers["x-codec"] == "third-party"
    assert orjson.loads(body)["outputs"][0]["data"] == [3.0, 4.0, -8.0]
    assert "third_party_codec" in metadata["extensions"]


def _grpc_code(port: int, method: str) -> grpc.StatusCode:
    messages = api.grpc_messages
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(
            f"/{api.GRPC_SERVICE}/{method}",
            request_serializer=messages.RepositoryIndexRequest.SerializeToString,
            response_deserializer=messages.RepositoryIndexResponse.FromString,
        )
        try:
            call(messages.RepositoryIndexRequest(), timeout=10)
        except grpc.RpcError as error:
            return error.code()
    return grpc.StatusCode.OK


async def test_blocking_the_repository_extension_leaves_oip_serving(repository):
    """Every installed plugin loads but the blocked one (the operator's ``--disable-plugin``)."""

    def settings(*blocked: str) -> Settings:
        return Settings(model_repository=repository, host="127.0.0.1", http_port=free_port(),
                        grpc_port=free_port(), disable_plugins=blocked)  # fmt: skip

    answers = {}
    for name, chosen in (("with", settings()), ("without", settings("repository"))):
        async with InProcessServer(chosen, [FunctionBackendPlugin]):
            index = await asyncio.to_thread(post, chosen.http_port, "/v2/repository/index", b"", {})
            code = await asyncio.to_thread(_grpc_code, chosen.grpc_port, "RepositoryIndex")
            live = await asyncio.to_thread(_get_status, chosen.http_port, "/v2/health/live")
            answers[name] = (index[0], code, live)
    assert answers["with"] == (200, grpc.StatusCode.OK, 200)
    assert answers["without"] == (404, grpc.StatusCode.UNIMPLEMENTED, 200)
