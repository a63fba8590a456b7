"""OIP over HTTP: JSON with http.client, the binary extension with tritonclient.http, hostile bodies.

Dialects: ``oip-http-json`` (valid JSON bodies, plain and compressed, and
every invalid request), ``oip-http-binary`` (tritonclient.http with binary
tensors up to 4 MiB).
"""

from __future__ import annotations

import json

import numpy as np
import tritonclient.http as triton
from tritonclient.utils import InferenceServerException

from soak import payloads as p
from soak.httpwire import HttpSession, compress, decompress, json_bytes, oversized_head, raw_exchange
from soak.outcomes import ERROR, OK, Case, Outcome, http_answer, http_refusal, judged, shorten

JSON, BINARY = "oip-http-json", "oip-http-binary"
INFER = "/v2/models/{}/infer"


def cases(http_url: str, grpc_url: str) -> list[Case]:
    return (
        json_cases(HttpSession(http_url))
        + hostile_cases(http_url, HttpSession(http_url))
        + binary_cases(triton.InferenceServerClient(http_url, network_timeout=60.0))
    )


# ---- JSON ----


def _tensor(name: str, datatype: str, array: np.ndarray) -> dict:
    data = [x.decode() for x in array.flat] if datatype == "BYTES" else array.ravel().tolist()
    return {"name": name, "datatype": datatype, "shape": list(array.shape), "data": data}


def _outputs(body: bytes) -> dict[str, tuple[list[int], list]]:
    return {o["name"]: (o["shape"], o["data"]) for o in json.loads(body)["outputs"]}


def _text(values: np.ndarray) -> np.ndarray:
    """Integers as decimal text (simple_string's inputs)."""
    return np.array([str(int(i)).encode() for i in values.flat], dtype=object).reshape(values.shape)


def _simple_body() -> tuple[dict, dict]:
    a, b = p.simple_pair(p.simple_rows())
    document = {"inputs": [_tensor("INPUT0", "INT32", a), _tensor("INPUT1", "INT32", b)]}
    shape = list(a.shape)
    return document, {
        "OUTPUT0": (shape, (a + b).ravel().tolist()),
        "OUTPUT1": (shape, (a - b).ravel().tolist()),
    }


def json_cases(session: HttpSession) -> list[Case]:
    def simple(encoding: str = "") -> Outcome:
        document, expected = _simple_body()
        body, headers = json_bytes(document), {"Content-Type": "application/json"}
        if encoding:
            body = compress(body, encoding)
            headers |= {"Content-Encoding": encoding, "Accept-Encoding": encoding}
        status, data, reply_headers = session.request("POST", INFER.format("simple"), body, headers)
        if status == 200 and reply_headers.get("content-encoding"):
            data = decompress(data, reply_headers["content-encoding"])
        return http_answer(status, data, lambda d: judged(_outputs(d) == expected, d[:200]), p.GONE_OIP)

    def identity_fp32() -> Outcome:
        x = p.fp32_vector(largest=p.JSON_MAX_ELEMENTS)
        status, data = session.post_json(
            INFER.format("identity_fp32"), {"inputs": [_tensor("INPUT0", "FP32", x)]}
        )
        return http_answer(
            status, data, lambda d: judged(p.same_floats(_outputs(d)["OUTPUT0"][1], x), len(x))
        )

    def identity_bytes() -> Outcome:
        x = p.byte_strings(printable=True)
        status, data = session.post_json(
            INFER.format("identity_bytes"), {"inputs": [_tensor("INPUT0", "BYTES", x)]}
        )
        want = [s.decode() for s in x]
        return http_answer(status, data, lambda d: judged(_outputs(d)["OUTPUT0"][1] == want, d[:200]))

    def half_plus_three() -> Outcome:
        x = p.fp32_vector(largest=1024)
        document = {"inputs": [_tensor("x", "FP32", x)]}
        status, data = session.post_json(INFER.format("saved_model_half_plus_three"), document)
        return http_answer(
            status, data, lambda d: judged(p.same_floats(_outputs(d)["y"][1], p.half_plus_three(x)))
        )

    def simple_string() -> Outcome:
        a, b = p.simple_pair(p.simple_rows())
        document = {"inputs": [_tensor("INPUT0", "BYTES", _text(a)), _tensor("INPUT1", "BYTES", _text(b))]}
        status, data = session.post_json(INFER.format("simple_string"), document)
        want = {
            "OUTPUT0": [str(int(v)) for v in (a + b).flat],
            "OUTPUT1": [str(int(v)) for v in (a - b).flat],
        }
        return http_answer(
            status, data, lambda d: judged({k: v[1] for k, v in _outputs(d).items()} == want, d[:200])
        )

    return [
        Case(JSON, "simple", simple, 4),
        Case(JSON, "simple gzip", lambda: simple("gzip")),
        Case(JSON, "simple deflate", lambda: simple("deflate")),
        Case(JSON, "identity_fp32", identity_fp32, 2),
        Case(JSON, "identity_bytes", identity_bytes),
        Case(JSON, "saved_model_half_plus_three", half_plus_three),
        Case(JSON, "simple_string", simple_string),
    ]


# ---- invalid requests (answered in OIP's error shape) ----

BOMB = compress(bytes(p.BODY_LIMIT_BYTES + (1 << 20)), "gzip")  # ~9 MiB of zeros in ~9 KiB


def hostile_cases(http_url: str, session: HttpSession) -> list[Case]:
    def refused(path: str, body: bytes, expected: set[int], headers: dict[str, str] | None = None):
        def call() -> Outcome:
            status, data, _ = session.request(
                "POST", path, body, {"Content-Type": "application/json", **(headers or {})}
            )
            outcome = http_refusal(status, data, expected, p.GONE_OIP if path == simple else "")
            if outcome.kind == OK and not data.startswith(b'{"error":'):
                return Outcome(ERROR, shorten(f"not OIP's error shape: {data[:200]!r}"))
            return outcome

        return call

    def oversized() -> Outcome:
        status, answer = raw_exchange(
            http_url, oversized_head(INFER.format("identity_fp32"), p.BODY_LIMIT_BYTES + 1)
        )
        return http_refusal(status, answer, {413})

    simple = INFER.format("simple")
    good, _ = _simple_body()
    wrong_type = {"inputs": [{"name": "x", "shape": [0], "datatype": [], "data": []}]}
    short = {
        "inputs": [
            {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": [1, 2]},
            {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": [1, 2]},
        ]
    }
    return [
        Case(JSON, "malformed JSON", refused(simple, b'{"inputs": [', {400})),
        Case(
            JSON,
            "datatype of the wrong type",
            refused(INFER.format("saved_model_half_plus_three"), json_bytes(wrong_type), {400}),
        ),
        Case(
            JSON,
            "INT32 data as strings",
            refused(
                simple,
                json_bytes({"inputs": [{**t, "data": [str(v) for v in t["data"]]} for t in good["inputs"]]}),
                {400},
            ),
        ),
        Case(JSON, "too little data", refused(simple, json_bytes(short), {400})),
        Case(JSON, "unknown model", refused(INFER.format("no_such_model"), json_bytes(good), {404})),
        Case(
            JSON,
            "binary header past the body",
            refused(simple, json_bytes(good), {400}, {"Inference-Header-Content-Length": "999999"}),
        ),
        Case(JSON, "broken gzip", refused(simple, b"not gzip at all", {400}, {"Content-Encoding": "gzip"})),
        Case(
            JSON,
            "gzip bomb",
            refused(INFER.format("identity_fp32"), BOMB, {413}, {"Content-Encoding": "gzip"}),
        ),
        Case(JSON, "body over the limit", oversized),
    ]


# ---- binary extension (tritonclient.http) ----


def binary_cases(client: triton.InferenceServerClient) -> list[Case]:
    def infer(model: str, inputs: dict[str, tuple[str, np.ndarray]], check, gone: str = "") -> Outcome:
        tensors = []
        for name, (datatype, array) in inputs.items():
            tensor = triton.InferInput(name, list(array.shape), datatype)
            tensor.set_data_from_numpy(array, binary_data=True)
            tensors.append(tensor)
        try:
            result = client.infer(model, tensors)
        except InferenceServerException as error:
            status = int(error.status()) if str(error.status()).isdigit() else 0
            return http_answer(status, (error.message() or "").encode(), lambda _: Outcome(OK), gone)
        return check(result)

    def simple() -> Outcome:
        a, b = p.simple_pair(p.simple_rows())
        return infer(
            "simple",
            {"INPUT0": ("INT32", a), "INPUT1": ("INT32", b)},
            lambda r: judged(
                np.array_equal(r.as_numpy("OUTPUT0"), a + b) and np.array_equal(r.as_numpy("OUTPUT1"), a - b)
            ),
            p.GONE_OIP,
        )

    def echo(model: str, datatype: str, make) -> Outcome:
        x = make()
        return infer(
            model,
            {"INPUT0": (datatype, x)},
            lambda r: judged(p.same_array(r.as_numpy("OUTPUT0"), x), x.shape),
        )

    return [
        Case(BINARY, "simple", simple, 3),
        Case(BINARY, "identity_fp32 up to 4 MiB", lambda: echo("identity_fp32", "FP32", p.fp32_vector), 2),
        Case(BINARY, "identity_fp16", lambda: echo("identity_fp16", "FP16", p.fp16_vector)),
        Case(BINARY, "identity_bytes", lambda: echo("identity_bytes", "BYTES", p.byte_strings)),
    ]
