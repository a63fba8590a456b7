"""One `simple` request per REST dialect, for the wrk rows of `make bench`; and one
`saved_model_half_plus_three` request per dialect (TF Serving's toy model, three
FP32 elements), a second group with its own OIP reference.

Each dialect gets the same question in its own words: INPUT0 = 0..15 and
INPUT1 = sixteen ones, both INT32 [1, 16], both outputs wanted as JSON. The
OIP body has the form perf_analyzer sends for `--input-tensor-format json`
(`id`, `inputs`, `outputs` with `binary_data: false`); its values are not
perf_analyzer's zeros, so that :func:`check` can tell a sum from a
difference. The bench and the bench smoke test both call :func:`check`, so a
body that stops being accepted fails `make test`, not only `make bench`.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from dataclasses import dataclass, field

MODEL = "simple"
SHAPE = [1, 16]
INPUT0 = list(range(16))
INPUT1 = [1] * 16
# name -> (shape, row-major values): the model's OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1.
EXPECTED = {
    "OUTPUT0": (SHAPE, [a + b for a, b in zip(INPUT0, INPUT1)]),
    "OUTPUT1": (SHAPE, [a - b for a, b in zip(INPUT0, INPUT1)]),
}

Outputs = dict[str, tuple[list[int], list[int]]]


@dataclass(frozen=True)
class RestRequest:
    """A fixed POST that one dialect answers with both outputs of `simple`."""

    label: str
    path: str
    body: bytes
    read_outputs: Callable[[dict], Outputs]
    headers: dict[str, str] = field(default_factory=dict)
    #: What the answer must hold, and the model asked.
    expected: Outputs = field(default_factory=lambda: EXPECTED)
    model: str = MODEL


class BodyRejected(RuntimeError):
    """The server did not answer a bench body with 200 and the expected outputs."""


def _compact(document: object) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def _oip_outputs(answer: dict) -> Outputs:
    return {o["name"]: (o["shape"], o["data"]) for o in answer["outputs"]}


def _tfserving_outputs(answer: dict) -> Outputs:
    rows = answer["predictions"]
    names = rows[0].keys()
    return {n: ([len(rows), len(rows[0][n])], [v for row in rows for v in row[n]]) for n in names}


def _grps_outputs(answer: dict) -> Outputs:
    return {t["name"]: (t["shape"], t["flat_int32"]) for t in answer["gtensors"]["tensors"]}


def _grps_float_outputs(answer: dict) -> Outputs:
    return {t["name"]: (t["shape"], t["flat_float32"]) for t in answer["gtensors"]["tensors"]}


def _tfserving_single_output(name: str) -> Callable[[dict], Outputs]:
    """Row form of a one-output signature: ``predictions`` is the list of values itself."""
    return lambda answer: {name: ([len(answer["predictions"])], answer["predictions"])}


def _oip_request() -> RestRequest:
    body = _compact(
        {
            "id": "",
            "inputs": [
                {"name": "INPUT0", "datatype": "INT32", "shape": SHAPE, "data": INPUT0},
                {"name": "INPUT1", "datatype": "INT32", "shape": SHAPE, "data": INPUT1},
            ],
            "outputs": [{"name": n, "parameters": {"binary_data": False}} for n in EXPECTED],
        }
    )
    # perf_analyzer sends the OIP binary extension's header even for pure JSON.
    headers = {"Content-Type": "application/json", "Inference-Header-Content-Length": str(len(body))}
    return RestRequest(
        "simple oip-rest JSON c8 (wrk)", f"/v2/models/{MODEL}/infer", body, _oip_outputs, headers
    )


def _tfserving_request() -> RestRequest:
    # Row form: TF Serving's usual client shape; one instance is one [1, 16] batch.
    body = _compact({"instances": [{"INPUT0": INPUT0, "INPUT1": INPUT1}]})
    return RestRequest(
        "simple tfserving-rest :predict c8 (wrk)",
        f"/v1/models/{MODEL}:predict",
        body,
        _tfserving_outputs,
        {"Content-Type": "application/json"},
    )


def _grps_request() -> RestRequest:
    tensors = [
        {"name": "INPUT0", "dtype": "DT_INT32", "shape": SHAPE, "flat_int32": INPUT0},
        {"name": "INPUT1", "dtype": "DT_INT32", "shape": SHAPE, "flat_int32": INPUT1},
    ]
    body = _compact({"model": MODEL, "gtensors": {"tensors": tensors}})
    return RestRequest(
        "simple grps-rest predict c8 (wrk)",
        "/grps/v1/infer/predict",
        body,
        _grps_outputs,
        {"Content-Type": "application/json"},
    )


OIP = _oip_request()
TFSERVING = _tfserving_request()
GRPS = _grps_request()
REQUESTS = (OIP, TFSERVING, GRPS)

HALF_PLUS_THREE_MODEL = "saved_model_half_plus_three"
_X = [1.0, 2.0, 5.0]
_Y = {"y": ([3], [0.5 * x + 3 for x in _X])}
_JSON = {"Content-Type": "application/json"}
HALF_PLUS_THREE = (
    RestRequest(
        f"{HALF_PLUS_THREE_MODEL} oip-rest JSON c8 (wrk)",
        f"/v2/models/{HALF_PLUS_THREE_MODEL}/infer",
        _compact({"inputs": [{"name": "x", "datatype": "FP32", "shape": [3], "data": _X}]}),
        _oip_outputs,
        _JSON,
        _Y,
        HALF_PLUS_THREE_MODEL,
    ),
    RestRequest(
        f"{HALF_PLUS_THREE_MODEL} tfserving-rest :predict c8 (wrk)",
        f"/v1/models/{HALF_PLUS_THREE_MODEL}:predict",
        _compact({"instances": _X}),
        _tfserving_single_output("y"),
        _JSON,
        _Y,
        HALF_PLUS_THREE_MODEL,
    ),
    RestRequest(
        f"{HALF_PLUS_THREE_MODEL} grps-rest predict c8 (wrk)",
        "/grps/v1/infer/predict",
        _compact({"model": HALF_PLUS_THREE_MODEL, "ndarray": _X}),
        _grps_float_outputs,
        _JSON,
        _Y,
        HALF_PLUS_THREE_MODEL,
    ),
)
#: Each group: its OIP reference first, then the dialects measured against it.
GROUPS = (REQUESTS, HALF_PLUS_THREE)


def chosen(only: str) -> list[list[RestRequest]]:
    """Per group, the requests whose label contains `only`, with the group's OIP reference
    first whenever any of the group is chosen."""
    groups = []
    for reference, *dialects in GROUPS:
        picked = [r for r in (reference, *dialects) if only in r.label]
        if picked:
            groups.append([reference, *(r for r in picked if r is not reference)])
    return groups


def check(request: RestRequest, host: str, port: int) -> None:
    """POST the body once; raise :class:`BodyRejected` unless 200 with the expected outputs."""
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        connection.request("POST", request.path, body=request.body, headers=request.headers)
        reply = connection.getresponse()
        data = reply.read()
    finally:
        connection.close()
    if reply.status != 200:
        raise BodyRejected(f"{request.label}: POST {request.path} answered {reply.status}: {data[:500]!r}")
    try:
        outputs = request.read_outputs(json.loads(data))
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise BodyRejected(f"{request.label}: unreadable answer ({error!r}): {data[:500]!r}") from error
    if outputs != request.expected:
        raise BodyRejected(f"{request.label}: expected {request.expected}, got {outputs}")
