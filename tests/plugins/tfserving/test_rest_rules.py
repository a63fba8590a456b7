"""Golden request/response pairs for protocol-notes B1-B6 (TF Serving REST).

Errors are matched on TF Serving's reason text (the ``JSON Value: ...``
prefix is optional upstream too); successes on the parsed body and, where
the layout is part of the rule, on the exact text.
"""

from __future__ import annotations

import pytest

from .conftest import HALF
from .http import call, get, post

ECHO = "/v1/models/echo:predict"
HALF_URL = f"/v1/models/{HALF}"
ROW16 = list(range(16))


def sig(name: str, **doc: object) -> dict:
    return {"signature_name": name, **doc}


# ---- B1 routing ----


def test_paths_are_case_insensitive(tf_server) -> None:
    reply = post(tf_server.http_url, f"/V1/MODELS/{HALF}:PREDICT", {"instances": [1.0]})
    assert (reply.status, reply.json()) == (200, {"predictions": [3.5]})


def test_names_and_labels_are_url_decoded(tf_server) -> None:
    reply = post(
        tf_server.http_url,
        "/v1/models/saved%5Fmodel_half_plus_three/labels/st%61ble:predict",
        {"instances": [2.0]},
    )
    assert (reply.status, reply.json()) == (200, {"predictions": [4.0]})


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", f"{HALF_URL}:predict"),
        ("POST", HALF_URL),
        ("POST", f"{HALF_URL}/label/stable:predict"),
        ("POST", f"{HALF_URL}/versions/123/labels/stable:predict"),
        ("PUT", HALF_URL),
        ("POST", f"{HALF_URL}:explain"),
    ],
)
def test_unmatched_requests_are_malformed(tf_server, method: str, path: str) -> None:
    reply = call(tf_server.http_url, method, path, "{}")
    assert reply.status == 400
    assert reply.content_type == "application/json"
    assert reply.error == f"Malformed request: {method} {path}"


def test_cors_preflight_needs_an_origin(tf_server) -> None:
    ok = call(tf_server.http_url, "OPTIONS", HALF_URL, headers={"Origin": "https://example.test"})
    missing = call(tf_server.http_url, "OPTIONS", HALF_URL)
    assert ok.status == 200 and ok.content_type == "application/json"
    assert (missing.status, missing.error) == (400, "Origin header is missing in CORS preflight")


def test_list_models_extension(tf_server) -> None:
    reply = get(tf_server.http_url, "/v1/models")
    models = {m["name"]: m["model_version_status"] for m in reply.json()["models"]}
    assert reply.status == 200
    assert [s["version"] for s in models["classifier"]] == ["2", "1"]
    assert models[HALF][0]["state"] == "AVAILABLE"


# ---- B2 errors and status codes ----


@pytest.mark.parametrize(
    ("path", "body", "status", "message"),
    [
        (
            f"{HALF_URL}/versions/7:predict",
            '{"instances": [1.0]}',
            404,
            f"Servable not found for request: Specific({HALF}, 7)",
        ),
        (f"{HALF_URL}:predict", "", 400, "JSON Parse error: The document is empty"),
        (f"{HALF_URL}:predict", "   ", 400, "JSON Parse error: The document is empty"),
        (f"{HALF_URL}:predict", "[1.0]", 400, "JSON Value: [1.0] Is not object"),
        (
            f"{HALF_URL}/labels/nope:predict",
            '{"instances": [1.0]}',
            400,
            "Unrecognized servable version label: nope",
        ),
        (
            "/v1/models/echo:predict",
            '{"signature_name": "h", "inputs": [1.0]}',
            501,
            "Conversion of JSON Value: 1.0 to type: half",
        ),
        (
            "/v1/models/echo:predict",
            '{"signature_name": "u16", "inputs": [1]}',
            501,
            "Conversion of JSON Value: 1 to type: uint16",
        ),
    ],
)
def test_error_messages_and_status(tf_server, path: str, body: str, status: int, message: str) -> None:
    reply = post(tf_server.http_url, path, body)
    assert reply.content_type == "application/json"
    assert (reply.status, reply.error) == (status, message)


def test_bad_json_reports_offset(tf_server) -> None:
    reply = post(tf_server.http_url, f"{HALF_URL}:predict", '{"instances": [1.0,,]}')
    assert reply.status == 400
    assert reply.error.startswith("JSON Parse error: ") and "at offset: " in reply.error


def test_error_body_is_pretty_single_key(tf_server) -> None:
    reply = post(tf_server.http_url, "/v1/models/nope:predict", {"instances": [1.0]})
    assert reply.text == '{ "error": "Servable not found for request: Latest(nope)" }'


# ---- B3 model status ----


def test_status_lists_every_version_newest_first(tf_server) -> None:
    versions = get(tf_server.http_url, "/v1/models/classifier").json()["model_version_status"]
    assert [(v["version"], v["state"]) for v in versions] == [("2", "AVAILABLE"), ("1", "AVAILABLE")]


@pytest.mark.parametrize(
    ("suffix", "version"), [("/versions/1", "1"), ("/labels/canary", "2"), ("/labels/stable", "1")]
)
def test_status_of_one_version_or_label(tf_server, suffix: str, version: str) -> None:
    versions = get(tf_server.http_url, f"/v1/models/classifier{suffix}").json()["model_version_status"]
    assert [v["version"] for v in versions] == [version]


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("/v1/models/nope", 404, "Could not find any versions of model nope"),
        ("/v1/models/classifier/versions/9", 404, "Could not find version 9 of model classifier"),
        ("/v1/models/classifier/labels/nope", 400, "Unrecognized servable version label: nope"),
    ],
)
def test_status_errors(tf_server, path: str, status: int, message: str) -> None:
    reply = get(tf_server.http_url, path)
    assert (reply.status, reply.error) == (status, message)


# ---- B4 metadata ----


def test_metadata_doubles_signature_def(tf_server) -> None:
    doc = get(tf_server.http_url, f"{HALF_URL}/metadata").json()
    assert doc["model_spec"] == {"name": HALF, "signature_name": "", "version": "123"}
    defs = doc["metadata"]["signature_def"]["signature_def"]
    assert set(defs) == {"serving_default", "tensorflow/serving/regress", "tensorflow/serving/classify"}
    assert defs["serving_default"] == {
        "inputs": {
            "x": {
                "dtype": "DT_FLOAT",
                "tensor_shape": {"dim": [{"size": "-1", "name": ""}], "unknown_rank": False},
                "name": "x",
            }
        },
        "outputs": {
            "y": {
                "dtype": "DT_FLOAT",
                "tensor_shape": {"dim": [{"size": "-1", "name": ""}], "unknown_rank": False},
                "name": "y",
            }
        },
        "method_name": "tensorflow/serving/predict",
        "defaults": {},
    }
    assert defs["tensorflow/serving/regress"]["method_name"] == "tensorflow/serving/regress"


def test_metadata_default_signature_and_label(tf_server) -> None:
    simple = get(tf_server.http_url, "/v1/models/simple/metadata").json()
    default = simple["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert default["inputs"]["INPUT0"]["tensor_shape"]["dim"] == [
        {"size": "-1", "name": ""},
        {"size": "16", "name": ""},
    ]
    assert set(default["outputs"]) == {"OUTPUT0", "OUTPUT1"}
    canary = get(tf_server.http_url, "/v1/models/classifier/labels/canary/metadata").json()
    assert canary["model_spec"]["version"] == "2"


# ---- B5 predict: request rules ----


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"signature_name": 1, "instances": [1.0]}, "'signature_name' key must be a string value."),
        (
            {"signature_name": "nope", "instances": [1.0]},
            'Serving signature name: "nope" not found in signature def',
        ),
        (
            {"instances": [1.0], "inputs": [1.0]},
            "Not formatted correctly expecting only one of 'inputs' or 'instances' keys to exist",
        ),
        ({"signature_name": "f"}, "Missing 'inputs' or 'instances' key"),
        ({"instances": 1.0}, "Excepting 'instances' to be an list/array"),
        ({"instances": []}, "No values in 'instances' array"),
        (sig("i32", instances=[1.0]), "JSON Value: 1.0 Type: Number is not of expected type: int32"),
        (sig("i8", inputs=[1, 2.5]), "JSON Value: 2.5 Type: Number is not of expected type: int8"),
        (sig("i32", inputs=[2**31]), "is not of expected type: int32"),
        (sig("i64", inputs=[2**63]), "is not of expected type: int64"),
        (sig("u32", inputs=[-1]), "is not of expected type: uint32"),
        (sig("u8", inputs=[256]), "is not of expected type: uint8"),
        (sig("b", inputs=[1]), "JSON Value: 1 Type: Number is not of expected type: bool"),
        (sig("f", inputs=["1.0"]), 'JSON Value: "1.0" Type: String is not of expected type: float'),
        (sig("f", inputs=[True]), "Type: True is not of expected type: float"),
        (sig("s", inputs=[1]), "is not of expected type: string"),
        (sig("s", inputs=[{"b64": "!!!"}]), "Unable to base64 decode"),
        (sig("s", inputs=[{"b64": "YQ==", "x": 1}]), "not formatted correctly for base64 data"),
        (
            sig("m", inputs=[[1.0, 2.0], [3.0]]),
            "Encountered list at unexpected size: 1 at level: 1 expected size: 2",
        ),
        (
            sig("m", inputs=[[1.0, 2.0], 3.0]),
            "found at incorrect level: 2 in the JSON DOM. Expected at level: 2",
        ),
        (sig("f", inputs=[1.0, [2.0]]), "Encountered list at unexpected level: 1 expected < 1"),
        (
            sig("pair", instances=[{"a": 1.0}]),
            "Failed to process element: 0 of 'instances' list. JSON object: {\"a\":1.0} must only have keys: a,b",
        ),
        (
            sig("pair", instances=[{"a": 1.0, "b": 1, "c": 2}]),
            "Failed to process element: 0 key: c of 'instances' list. Error: INVALID_ARGUMENT: JSON object: does not have named input: c",
        ),
        (
            sig("pair", instances=[1.0, 2.0]),
            "instances is a plain list, but expecting list of objects as multiple input tensors required as per tensorinfo_map",
        ),
        (
            sig("pair", instances=[{"a": 1.0, "b": 1}, 2.0]),
            "Expecting object but got list at item 1 of input list",
        ),
        (
            sig("f", instances=[1.0, {"a": 1.0}]),
            "Expecting value/list but got object at item 1 of input list",
        ),
        (
            sig("m", instances=[[1.0, 2.0], [1.0, 2.0, 3.0]]),
            "Failed to process element: 1 of 'instances' list. Error: INVALID_ARGUMENT: Expecting tensor size: 2 but got: 3",
        ),
        (
            sig("m", instances=[[[1.0], [2.0]], [[1.0, 2.0]]]),
            "Failed to process element: 1 of 'instances' list. Error: INVALID_ARGUMENT: Expecting shape [2,1] but got: [1,2]",
        ),
        (
            sig("pair", instances=[{"a": 1.0, "b": 1}, {"a": 1.0, "b": 1.5}]),
            "Failed to process element: 1 key: b of 'instances' list. Error: INVALID_ARGUMENT: JSON Value: 1.5 Type: Number is not of expected type: int64",
        ),
        (
            sig("h", instances=[1.0]),
            "Failed to process element: 0 of 'instances' list. Error: UNIMPLEMENTED: Conversion of JSON Value: 1.0 to type: half",
        ),
        (sig("pair", inputs={"a": [1.0]}), "Missing named input: b in 'inputs' object."),
        (
            sig("pair", inputs=[1.0]),
            "inputs is a plain value/list, but expecting an object as multiple input tensors required as per tensorinfo_map",
        ),
    ],
)
def test_predict_request_rules(tf_server, doc: dict, message: str) -> None:
    reply = post(tf_server.http_url, ECHO, doc)
    assert reply.status == 400, reply.text
    assert reply.content_type == "application/json"
    assert message in reply.error


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (sig("f", instances=[1, 2]), {"predictions": [1.0, 2.0]}),
        (sig("f", inputs=7), None),  # a scalar: rank 0 does not fit the [-1] input
        (sig("i8", inputs=[-128, 127]), {"outputs": [-128, 127]}),
        (sig("i64", inputs=[2**62, -(2**63)]), {"outputs": [2**62, -(2**63)]}),
        (sig("u64", inputs=[2**64 - 1]), {"outputs": [2**64 - 1]}),
        (sig("b", instances=[True, False]), {"predictions": [True, False]}),
        (sig("s", instances=["foo", {"b64": "YmFy"}]), {"predictions": ["foo", "bar"]}),
        (sig("bytes", instances=["foo"]), {"predictions": [{"b64": "Zm9v"}]}),
        (sig("m", inputs=[[1.0, 2.0], [3.0, 4.0]]), {"outputs": [[1.0, 2.0], [3.0, 4.0]]}),
        (sig("m", instances=[[1.0, 2.0], [3.0, 4.0]]), {"predictions": [[1.0, 2.0], [3.0, 4.0]]}),
        (
            sig("pair", inputs={"a": [1.5], "b": [1, 2, 3], "extra": "ignored"}),
            {"outputs": {"a": [1.5], "b": [1, 2, 3]}},
        ),
        (
            sig("pair", instances=[{"a": 1.5, "b": 1}, {"a": 2.5, "b": 2}]),
            {"predictions": [{"a": 1.5, "b": 1}, {"a": 2.5, "b": 2}]},
        ),
        ({"instances": [0.5]}, {"predictions": [0.5]}),
    ],
)
def test_predict_successes(tf_server, doc: dict, expected: dict | None) -> None:
    reply = post(tf_server.http_url, ECHO, doc)
    if expected is None:
        assert reply.status == 400 and "expected shape" in reply.error
        return
    assert (reply.status, reply.json()) == (200, expected)


def test_multi_output_rows_are_objects(tf_server) -> None:
    doc = {"instances": [{"INPUT0": ROW16, "INPUT1": [1] * 16}, {"INPUT0": ROW16, "INPUT1": [2] * 16}]}
    reply = post(tf_server.http_url, "/v1/models/simple:predict", doc)
    assert reply.status == 200
    rows = reply.json()["predictions"]
    assert rows[1] == {"OUTPUT0": [i + 2 for i in ROW16], "OUTPUT1": [i - 2 for i in ROW16]}
    assert reply.text.startswith('{\n    "predictions": [\n        {\n            "OUTPUT0": [1, 2, 3,')


def test_columnar_layout_is_one_value_per_line(tf_server) -> None:
    reply = post(tf_server.http_url, f"{HALF_URL}:predict", {"inputs": [1.0, 2.0]})
    assert reply.text == '{\n    "outputs": [\n        3.5,\n        4.0\n    ]\n}'


def test_trailing_bytes_after_the_document_are_ignored(tf_server) -> None:
    reply = post(tf_server.http_url, f"{HALF_URL}:predict", '{"instances": [1.0]} trailing')
    assert (reply.status, reply.json()) == (200, {"predictions": [3.5]})


def test_nan_and_infinity_tokens_both_ways(tf_server) -> None:
    reply = post(
        tf_server.http_url,
        "/v1/models/identity_fp32:predict",
        '{"instances": [NaN, Infinity, -Infinity, 1.0]}',
    )
    assert reply.status == 200
    assert reply.text == '{\n    "predictions": [NaN, Infinity, -Infinity, 1.0\n    ]\n}'


@pytest.mark.parametrize(
    ("signature", "values", "texts"),
    [
        (
            "f",
            [0.1, 999999.0, 9000000.0, 0.00003, 1.0, -0.0, 16777217, 1e40, 1 / 3],
            ["0.1", "999999.0", "9e+06", "3e-05", "1.0", "-0.0", "16777216.0", "Infinity", "0.333333343"],
        ),
        (
            "d",
            [0.1, 1 / 3, 1e300, 2.0, 123456.789],
            ["0.1", "0.33333333333333331", "1e+300", "2.0", "123456.789"],
        ),
    ],
)
def test_float_formatting(tf_server, signature: str, values: list, texts: list[str]) -> None:
    reply = post(tf_server.http_url, ECHO, sig(signature, instances=values))
    assert reply.status == 200
    assert reply.text == '{\n    "predictions": [' + ", ".join(texts) + "\n    ]\n}"


# ---- B6 classify and regress ----


def test_classify_pairs_label_and_score(tf_server) -> None:
    doc = {"signature_name": "tensorflow/serving/classify", "examples": [{"x": 1.0}, {"x": 2.0}]}
    reply = post(tf_server.http_url, f"{HALF_URL}:classify", doc)
    assert reply.json() == {"results": [[["", 3.5]], [["", 4.0]]]}
    assert reply.text == '{\n    "results": [[["", 3.5]], [["", 4.0]]\n    ]\n}'


def test_classify_with_classes_context_and_label(tf_server) -> None:
    doc = {"context": {"x": 0.25}, "examples": [{}, {"x": 0.5}]}
    reply = post(tf_server.http_url, "/v1/models/classifier/labels/canary:classify", doc)
    assert reply.json() == {"results": [[["pos", 0.5], ["neg", 0.5]], [["pos", 1.0], ["neg", 0.0]]]}


def test_regress_nan_and_one_element_lists(tf_server) -> None:
    doc = {"signature_name": "tensorflow/serving/regress", "examples": [{"x": [NAN_TOKEN]}, {"x": [4.0]}]}
    reply = post(tf_server.http_url, f"{HALF_URL}:regress", doc).text
    assert reply == '{\n    "results": [NaN, 5.0]\n}'


NAN_TOKEN = float("nan")


@pytest.mark.parametrize(
    ("verb", "doc", "message"),
    [
        (
            "regress",
            {"signature_name": "tensorflow/serving/regress"},
            "When method is classify, key 'examples' is expected and was not found",
        ),
        (
            "regress",
            sig("tensorflow/serving/regress", examples={"x": 1.0}),
            "Expecting 'examples' value to be an list/array",
        ),
        ("classify", sig("tensorflow/serving/classify", examples=[]), "'examples' value is an empty array"),
        (
            "regress",
            sig("tensorflow/serving/regress", examples=[1.0]),
            "Example must be JSON object but got JSON Number",
        ),
        (
            "regress",
            sig("tensorflow/serving/regress", examples=[{"x": [10, 10.0]}]),
            "Unexpected element type in feature: x expecting type: int64",
        ),
        (
            "regress",
            sig("tensorflow/serving/regress", examples=[{"x": None}]),
            "Feature: x has element with unexpected JSON type: Null",
        ),
        (
            "regress",
            sig("tensorflow/serving/regress", examples=[{"x": [[1.0]]}]),
            "Feature: x has element with unexpected JSON type: Array",
        ),
        (
            "regress",
            sig("tensorflow/serving/regress", examples=[{"x": {"a": 1}}]),
            "Feature: x has element with unexpected JSON type: Object",
        ),
        (
            "regress",
            sig("tensorflow/serving/regress", examples=[{"x": 2**63}]),
            "Feature: x has uint64 element. Only int64 is supported.",
        ),
        (
            "regress",
            sig("tensorflow/serving/regress", examples=[{"x": 1}]),
            "Name: <unknown>, Key: x, Index: 0.  Data types don't match. Data type: int64 but expected type: float",
        ),
        (
            "regress",
            sig("tensorflow/serving/regress", examples=[{"y": 1.0}]),
            "Feature: x (data type: float) is required but could not be found.",
        ),
        (
            "regress",
            sig("tensorflow/serving/regress", examples=[{"x": [1.0, 2.0]}]),
            "Number of values != expected",
        ),
        (
            "regress",
            {"examples": [{"x": 1.0}]},
            "Expected regression signature method_name to be tensorflow/serving/regress. Was: tensorflow/serving/predict",
        ),
        (
            "classify",
            {"examples": [{"x": 1.0}]},
            "Expected classification signature method_name to be tensorflow/serving/classify. Was: tensorflow/serving/predict",
        ),
    ],
)
def test_classify_regress_rules(tf_server, verb: str, doc: dict, message: str) -> None:
    reply = post(tf_server.http_url, f"{HALF_URL}:{verb}", doc)
    assert reply.status == 400, reply.text
    assert message in reply.error


def test_predict_accepts_a_regress_signature(tf_server) -> None:
    reply = post(
        tf_server.http_url, f"{HALF_URL}:predict", sig("tensorflow/serving/regress", instances=[1.0])
    )
    assert reply.json() == {"predictions": [3.5]}
