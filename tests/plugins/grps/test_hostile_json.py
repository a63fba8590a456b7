"""Type confusion in every field of grps REST payloads is a 4xx with grps's ``status``, never a 500.

gtensors (the constructor fast path and protobuf JSON with camelCase keys and
the ``flat_double`` alias), ndarray, str_data and gmap bodies: structure-aware
mutations of valid bodies (hypothesis), posted to the real server.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("hypothesis")
from hypothesis import given

from tests.hostile_json import HOSTILE, confused, post_json

PREDICT = "/grps/v1/infer/predict"


def _simple(dtype: object, field: str) -> dict:
    return {
        "model": "simple-1",
        "gtensors": {"tensors": [
            {"name": n, "dtype": dtype, "shape": [1, 16], field: list(range(16))} for n in ("INPUT0", "INPUT1")
        ]},
    }  # fmt: skip


BODIES = {
    "gtensors-fast": _simple("DT_INT32", "flat_int32"),
    "gtensors-parsed": _simple(4, "flatInt32"),
    "flat-double": {"model": "identity_fp32-1", "gtensors": {"tensors": [
        {"name": "INPUT0", "dtype": "DT_FLOAT64", "shape": [1, 2], "flat_double": [1.0, 2.0]}]}},
    "ndarray": {"model": "saved_model_half_plus_three-123", "ndarray": [1.0, 2.0, 5.0]},
    "str-data": {"model": "identity_bytes-1", "str_data": "hello"},
    "gmap": {"model": "stream_counter", "gmap": {"s_i32": {"COUNT": 2}}},
}  # fmt: skip
#: Bodies whose template is refused on purpose (a float64 tensor for an FP32 input still reaches the decoder).
REFUSED_TEMPLATES = {"flat-double"}


def grps_error(status: int, body: bytes) -> None:
    """Below 500; every JSON answer carries grps's ``status``, a failure's code equal to the HTTP status."""
    assert status < 500, body
    if status >= 400:
        doc = json.loads(body)
        assert doc["status"]["status"] == "FAILURE" and doc["status"]["code"] == status, body
        assert isinstance(doc["status"]["msg"], str) and doc["status"]["msg"], body


@pytest.mark.parametrize("form", sorted(BODIES))
def test_predict_payload_type_confusion_is_4xx(grps_server, form):
    port, template = grps_server.http_port, BODIES[form]
    status, body = post_json(port, PREDICT, template)
    assert (status == 200) != (form in REFUSED_TEMPLATES), body

    @HOSTILE
    @given(doc=confused(template))
    def check(doc):
        grps_error(*post_json(port, PREDICT, doc))

    check()


def test_model_metadata_body_type_confusion_is_4xx(grps_server):
    @HOSTILE
    @given(doc=confused({"str_data": "simple"}))
    def check(doc):
        grps_error(*post_json(grps_server.http_port, "/grps/v1/metadata/model", doc))

    check()
