"""Type confusion in every field of TF Serving REST bodies is a 4xx ``{"error": ...}``, never a 500.

Predict in row and columnar form, plain and ``{"b64": ...}`` strings, every
integer width, classify and regress with a context: structure-aware
mutations of valid bodies (hypothesis), posted to the real server.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("hypothesis")
from hypothesis import given

from tests.hostile_json import HOSTILE, confused, post_json

from .conftest import HALF

PREDICT = {
    "rows": ("echo", {"signature_name": "pair", "instances": [{"a": 1.5, "b": 2}, {"a": 2.0, "b": 3}]}),
    "columns": ("echo", {"signature_name": "pair", "inputs": {"a": [1.0, 2.0], "b": [1, 2]}}),
    "rows-b64": ("echo", {"signature_name": "bytes", "instances": [{"b64": "aGVsbG8="}, "plain"]}),
    "columns-b64": ("echo", {"signature_name": "s", "inputs": [{"b64": "aGk="}, "x"]}),
    "int8": ("echo", {"signature_name": "i8", "instances": [1, -128, 127]}),
    "uint64": ("echo", {"signature_name": "u64", "inputs": [0, 18446744073709551615]}),
    "bool": ("echo", {"signature_name": "b", "instances": [True, False]}),
    "matrix": ("echo", {"signature_name": "m", "instances": [[1.0, 2.0], [3.0, 4.0]]}),
    "half-plus-three": (HALF, {"instances": [1.0, 2.0, 5.0]}),
}
EXAMPLES = {
    "classify": ("classifier", {"signature_name": "serving_default", "context": {"x": 0.25}, "examples": [{}, {"x": [0.5]}]}),
    "regress": (HALF, {"signature_name": "tensorflow/serving/regress", "context": {"y": {"b64": "AA=="}}, "examples": [{"x": 2.0}, {"x": [1.0]}]}),
}  # fmt: skip


def tf_error(status: int, body: bytes) -> None:
    """Below 500 (501 is TF Serving's UNIMPLEMENTED for a JSON type it cannot read); errors are ``{"error"}``."""
    assert status < 500 or status == 501, body
    if status >= 400:
        doc = json.loads(body)
        assert list(doc) == ["error"] and isinstance(doc["error"], str) and doc["error"], body


@pytest.mark.parametrize("form", sorted(PREDICT))
def test_predict_type_confusion_is_4xx(tf_server, form):
    model, template = PREDICT[form]
    port = tf_server.http_port
    status, body = post_json(port, f"/v1/models/{model}:predict", template)
    assert status == 200, body  # the template itself is valid

    @HOSTILE
    @given(doc=confused(template))
    def check(doc):
        tf_error(*post_json(port, f"/v1/models/{model}:predict", doc))

    check()


@pytest.mark.parametrize("verb", sorted(EXAMPLES))
def test_classify_regress_type_confusion_is_4xx(tf_server, verb):
    model, template = EXAMPLES[verb]
    port = tf_server.http_port
    status, body = post_json(port, f"/v1/models/{model}:{verb}", template)
    assert status == 200, body

    @HOSTILE
    @given(doc=confused(template))
    def check(doc):
        tf_error(*post_json(port, f"/v1/models/{model}:{verb}", doc))

    check()
