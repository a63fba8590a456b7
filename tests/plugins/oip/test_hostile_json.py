"""Type confusion in every field of OIP infer and repository bodies is a 4xx ``{"error": ...}``, never a 500.

Property tests (hypothesis) post structure-aware mutations of valid bodies to
one real server; the regression cases are the 500s the issue found.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator

import pytest

pytest.importorskip("hypothesis")
from hypothesis import given
from hypothesis import strategies as st

from modelplatform.testing import ServerProcess
from tests.conftest import MODEL_REPOSITORY
from tests.hostile_json import HOSTILE, confused, post_json, triton_error

from ...http_wire import post

MODELS = ("simple", "simple_string", "saved_model_half_plus_three", "identity_fp32")


def _pair(datatype: str, data: list) -> dict:
    return {
        "id": "r1",
        "parameters": {"binary_data_output": False, "priority": 1},
        "inputs": [
            {"name": n, "datatype": datatype, "shape": [1, 16], "data": data, "parameters": {"x": 1}}
            for n in ("INPUT0", "INPUT1")
        ],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": False}}, {"name": "OUTPUT1"}],
    }


INFER = {
    "simple": _pair("INT32", [list(range(16))]),
    "simple_string": _pair("BYTES", [str(i) for i in range(16)]),
    "saved_model_half_plus_three": {
        "inputs": [{"name": "x", "datatype": "FP32", "shape": [3], "data": [1.0, 2.0, 5.0]}]
    },
    "identity_fp32": {
        "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 2], "data": [[1.0, 2.0]]}]
    },
}
BINARY_HEADER = {
    "inputs": [
        {"name": n, "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}}
        for n in ("INPUT0", "INPUT1")
    ],
    "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}],
}
REPOSITORY = {
    "index": {"ready": True},
    "models/simple/load": {"parameters": {"config": json.dumps({"max_batch_size": 8})}},
    "models/identity_fp32/unload": {"parameters": {"unload_dependents": False}},
}
CONFIG = {
    "name": "identity_fp32",
    "backend": "python",
    "max_batch_size": 4,
    "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [2]}],
    "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [2]}],
    "instance_group": [{"count": 1, "kind": "KIND_CPU"}],
    "dynamic_batching": {"max_queue_delay_microseconds": 100},
    "version_policy": {"latest": {"num_versions": 1}},
    "parameters": {"k": {"string_value": "v"}},
}


@pytest.fixture(scope="module")
def hostile_server() -> Iterator[ServerProcess]:
    loads = [arg for model in MODELS for arg in ("--load-model", model)]
    args = ("--model-repository", str(MODEL_REPOSITORY), "--model-control-mode", "explicit", *loads)
    with ServerProcess(*args) as process:
        yield process


def _still_serves(server: ServerProcess) -> None:
    status, body = post_json(server.http_port, "/v2/models/simple/infer", INFER["simple"])
    assert status == 200, body


@pytest.mark.parametrize("model", sorted(INFER))
def test_infer_body_type_confusion_is_4xx(hostile_server, model):
    @HOSTILE
    @given(doc=confused(INFER[model]))
    def check(doc):
        triton_error(*post_json(hostile_server.http_port, f"/v2/models/{model}/infer", doc))

    check()
    _still_serves(hostile_server)


def test_binary_header_type_confusion_is_4xx(hostile_server):
    tail = struct.pack("<16i", *range(16)) * 2

    @HOSTILE
    @given(doc=confused(BINARY_HEADER))
    def check(doc):
        header = json.dumps(doc).encode()
        headers = {"Inference-Header-Content-Length": str(len(header))}
        status, _, body = post(hostile_server.http_port, "/v2/models/simple/infer", header + tail, headers)
        triton_error(status, body)

    check()
    _still_serves(hostile_server)


@pytest.mark.parametrize("action", sorted(REPOSITORY))
def test_repository_body_type_confusion_is_4xx(hostile_server, action):
    @HOSTILE
    @given(doc=confused(REPOSITORY[action]))
    def check(doc):
        triton_error(*post_json(hostile_server.http_port, f"/v2/repository/{action}", doc))

    check()
    post_json(hostile_server.http_port, "/v2/repository/models/identity_fp32/load", {})


def test_load_config_override_type_confusion_is_4xx(hostile_server):
    @HOSTILE
    @given(config=confused(CONFIG), parameters=st.just({}))
    def check(config, parameters):
        doc = {"parameters": {"config": json.dumps(config), **parameters}}
        triton_error(*post_json(hostile_server.http_port, "/v2/repository/models/identity_fp32/load", doc))

    check()
    status, body = post_json(hostile_server.http_port, "/v2/repository/models/identity_fp32/load", {})
    assert status == 200, body


# ---- the 500s the issue found, kept as regression cases ----


@pytest.mark.parametrize(
    ("model", "tensor", "words"),
    [
        ("saved_model_half_plus_three", {"name": "x", "shape": [0], "datatype": [], "data": []}, "datatype"),
        (
            "simple",
            {"name": "INPUT0", "shape": [1, 16], "datatype": [[12, 19], -2147483649, None, 13], "data": []},
            "datatype",
        ),
        ("simple", {"name": "INPUT0", "shape": [0, 2**70], "datatype": "INT32", "data": []}, "shape"),
        ("simple", {"name": "INPUT0", "shape": [-1, 16], "datatype": "INT32", "data": []}, "shape"),
        ("simple", {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": [2**70] * 16}, "INPUT0"),
        ("simple", {"name": ["INPUT0"], "shape": [1, 16], "datatype": "INT32", "data": [0] * 16}, "name"),
    ],
)
def test_known_type_confusions_are_400(hostile_server, model, tensor, words):
    status, body = post_json(hostile_server.http_port, f"/v2/models/{model}/infer", {"inputs": [tensor]})
    assert status == 400, body
    assert words in json.loads(body)["error"]


@pytest.mark.parametrize(
    "override",
    [
        {**CONFIG, "instance_group": [{"count": 1, "kind": -1}]},
        {**CONFIG, "input": [{"name": "INPUT0", "data_type": 99, "dims": [2]}]},
    ],
)
def test_load_config_with_an_enum_number_no_value_has_is_400(hostile_server, override):
    """Found by the property test: proto3 keeps unknown enum numbers, which nothing can name later."""
    doc = {"parameters": {"config": json.dumps(override)}}
    status, body = post_json(hostile_server.http_port, "/v2/repository/models/identity_fp32/load", doc)
    assert status == 400, body
    assert "has no value" in json.loads(body)["error"]
