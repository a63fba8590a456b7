"""The bundled SavedModel (model_repository/half_plus_two, scripts/build_savedmodel.py).

TF Serving's layout with its zero-padded testdata folder ``00000123``: served
as version 123 from that folder, with no config.pbtxt, over OIP and TF Serving.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from .conftest import NO_TENSORFLOW

pytestmark = pytest.mark.skipif(NO_TENSORFLOW, reason="tensorflow is not installed")


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_half_plus_two_answers_as_tf_serving_documents_it(server):
    url = f"http://{server.http_url}/v1/models/half_plus_two"
    assert _post(f"{url}:predict", {"instances": [1.0, 2.0, 5.0]}) == {"predictions": [2.5, 3.0, 4.5]}
    body = {"signature_name": "regress_x_to_y", "examples": [{"x": 4.0}]}
    assert _post(f"{url}/versions/123:regress", body) == {"results": [4.0]}


def test_half_plus_two_over_oip(server):
    body = {"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [0.0, 4.0]}]}
    answer = _post(f"http://{server.http_url}/v2/models/half_plus_two/versions/123/infer", body)
    assert answer["model_version"] == "123"
    assert answer["outputs"][0]["data"] == [2.0, 4.0]
