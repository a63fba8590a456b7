"""TF Serving over REST (http.client) and gRPC (stubs from the server's own TF Serving protos).

Dialects: ``tfs-rest`` (predict in row and columnar form, classify,
regress, model status, gzip bodies, invalid requests) and ``tfs-grpc``
(Predict with tensor_content up to 4 MiB and typed values, Classify,
Regress, GetModelStatus, invalid requests).
"""

from __future__ import annotations

import base64
import json

import grpc
import numpy as np

from modelplatform_tfserving.protos import services_pb2_grpc as services
from modelplatform_tfserving.protos import serving_apis_pb2 as apis
from modelplatform_tfserving.protos import tensorflow_pb2 as tf
from soak import payloads as p
from soak.httpwire import HttpSession, compress, json_bytes, oversized_head, raw_exchange
from soak.outcomes import ERROR, OK, Case, Outcome, grpc_failure, http_answer, http_refusal, judged, shorten

REST, GRPC = "tfs-rest", "tfs-grpc"
HALF = "saved_model_half_plus_three"
REGRESS, CLASSIFY = "tensorflow/serving/regress", "tensorflow/serving/classify"
TIMEOUT_SECS = 60.0


def cases(http_url: str, grpc_url: str) -> list[Case]:
    options = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
    channel = grpc.insecure_channel(grpc_url, options=options)
    return rest_cases(http_url, HttpSession(http_url)) + grpc_cases(
        services.PredictionServiceStub(channel), services.ModelServiceStub(channel)
    )


# ---- REST ----


def _answer(data: bytes, key: str):
    return json.loads(data)[key]


def _floats(n: int = 0) -> np.ndarray:
    return p.fp32_vector(largest=1024) if not n else p.RNG.standard_normal(n).astype(np.float32)


def rest_cases(http_url: str, session: HttpSession) -> list[Case]:
    def post(path: str, document: object, verify, gone: str = "", encoding: str = "") -> Outcome:
        body, headers = json_bytes(document), {"Content-Type": "application/json"}
        if encoding:
            body, headers = compress(body, encoding), headers | {"Content-Encoding": encoding}
        status, data, _ = session.request("POST", path, body, headers)
        return http_answer(status, data, verify, gone)

    def simple_rows(encoding: str = "") -> Outcome:
        a, b = p.simple_pair(p.simple_rows())
        rows = [{"INPUT0": x.tolist(), "INPUT1": y.tolist()} for x, y in zip(a, b)]
        want = [{"OUTPUT0": (x + y).tolist(), "OUTPUT1": (x - y).tolist()} for x, y in zip(a, b)]
        return post(
            "/v1/models/simple:predict",
            {"instances": rows},
            lambda d: judged(_answer(d, "predictions") == want, d[:200]),
            p.GONE_TFS,
            encoding,
        )

    def simple_columns() -> Outcome:
        a, b = p.simple_pair(p.simple_rows())
        want = {"OUTPUT0": (a + b).tolist(), "OUTPUT1": (a - b).tolist()}
        return post(
            "/v1/models/simple:predict",
            {"inputs": {"INPUT0": a.tolist(), "INPUT1": b.tolist()}},
            lambda d: judged(_answer(d, "outputs") == want, d[:200]),
            p.GONE_TFS,
        )

    def half(label: str = "") -> Outcome:
        x = _floats()
        path = f"/v1/models/{HALF}/labels/{label}:predict" if label else f"/v1/models/{HALF}:predict"
        return post(
            path,
            {"instances": x.tolist()},
            lambda d: judged(p.same_floats(_answer(d, "predictions"), p.half_plus_three(x))),
        )

    def regress() -> Outcome:
        x = _floats(int(p.RNG.integers(1, 32)))
        examples = [{"x": float(v)} for v in x]  # JSON writes a float with a point: a float feature
        return post(
            f"/v1/models/{HALF}:regress",
            {"signature_name": REGRESS, "examples": examples},
            lambda d: judged(p.same_floats(_answer(d, "results"), p.half_plus_three(x))),
        )

    def classify() -> Outcome:
        x = _floats(int(p.RNG.integers(1, 32)))
        want = p.half_plus_three(x)
        return post(
            f"/v1/models/{HALF}:classify",
            {"signature_name": CLASSIFY, "examples": [{"x": float(v)} for v in x]},
            lambda d: judged(
                [r[0][0] for r in _answer(d, "results")] == [""] * len(x)
                and p.same_floats([r[0][1] for r in _answer(d, "results")], want)
            ),
        )

    def strings() -> Outcome:
        x = p.byte_strings()
        items = [{"b64": base64.b64encode(s).decode()} for s in x]

        def same(d: bytes) -> Outcome:
            got = [
                base64.b64decode(v["b64"]) if isinstance(v, dict) else v.encode()
                for v in _answer(d, "predictions")
            ]
            return judged(got == list(x), d[:200])

        return post("/v1/models/identity_bytes:predict", {"instances": items}, same)

    def status() -> Outcome:
        got, data, _ = session.request("GET", "/v1/models/simple")
        return http_answer(got, data, lambda d: judged("model_version_status" in json.loads(d), d[:200]))

    return [
        Case(REST, "simple rows", simple_rows, 3),
        Case(REST, "simple rows gzip", lambda: simple_rows("gzip")),
        Case(REST, "simple columns", simple_columns),
        Case(REST, f"{HALF} predict", half, 2),
        Case(REST, f"{HALF} predict by label", lambda: half("stable")),
        Case(REST, f"{HALF} regress", regress),
        Case(REST, f"{HALF} classify", classify),
        Case(REST, "identity_bytes b64", strings),
        Case(REST, "model status", status),
        *rest_refusals(http_url, session),
    ]


def rest_refusals(http_url: str, session: HttpSession) -> list[Case]:
    def refused(path: str, body: bytes, expected: set[int], headers: dict[str, str] | None = None):
        def call() -> Outcome:
            status, data, _ = session.request(
                "POST", path, body, {"Content-Type": "application/json", **(headers or {})}
            )
            outcome = http_refusal(status, data, expected, p.GONE_TFS if "/simple" in path else "")
            if outcome.kind == OK and not data.startswith(b'{ "error": '):
                return Outcome(ERROR, shorten(f"not TF Serving's error shape: {data[:200]!r}"))
            return outcome

        return call

    def oversized() -> Outcome:
        status, answer = raw_exchange(
            http_url, oversized_head(f"/v1/models/{HALF}:predict", p.BODY_LIMIT_BYTES + 1)
        )
        return http_refusal(status, answer, {413})

    predict = f"/v1/models/{HALF}:predict"
    return [
        Case(REST, "malformed JSON", refused(predict, b'{"instances": [1.0', {400})),
        Case(REST, "instances of the wrong type", refused(predict, b'{"instances": "x"}', {400})),
        Case(
            REST,
            "ragged instances",
            refused(
                "/v1/models/simple:predict", b'{"instances": [{"INPUT0": [1], "INPUT1": [1, 2]}]}', {400}
            ),
        ),
        Case(
            REST, "unknown model", refused("/v1/models/no_such_model:predict", b'{"instances": [1.0]}', {404})
        ),
        Case(
            REST,
            "unknown signature",
            refused(predict, b'{"signature_name": "nope", "instances": [1.0]}', {400}),
        ),
        Case(
            REST,
            "int feature for a float input",
            refused(
                f"/v1/models/{HALF}:regress",
                json_bytes({"signature_name": REGRESS, "examples": [{"x": 1}]}),
                {400},
            ),
        ),
        Case(
            REST, "broken deflate", refused(predict, b"not deflate", {400}, {"Content-Encoding": "deflate"})
        ),
        Case(REST, "body over the limit", oversized),
    ]


# ---- gRPC ----


def _tensor(array: np.ndarray, dtype: int) -> tf.TensorProto:
    proto = tf.TensorProto(dtype=dtype, tensor_content=array.tobytes())
    proto.tensor_shape.dim.extend(tf.TensorShapeProto.Dim(size=d) for d in array.shape)
    return proto


def _values(proto: tf.TensorProto, dtype: type) -> np.ndarray:
    return np.frombuffer(proto.tensor_content, dtype=dtype).reshape([d.size for d in proto.tensor_shape.dim])


def _examples(x: np.ndarray) -> apis.Input:
    made = apis.Input()
    for value in x:
        made.example_list.examples.add().features.feature["x"].float_list.value.append(float(value))
    return made


def grpc_cases(predictions: services.PredictionServiceStub, models: services.ModelServiceStub) -> list[Case]:
    def call(method, request, check, expected=(), gone: str = "") -> Outcome:
        try:
            response = method(request, timeout=TIMEOUT_SECS)
        except grpc.RpcError as error:
            return grpc_failure(error.code().name, error.details() or "", expected, gone)
        if expected:
            return Outcome(ERROR, shorten(f"accepted; wanted {sorted(expected)}"))
        return check(response)

    def predict(
        model: str, inputs: dict[str, tf.TensorProto], check, expected=(), label: str = ""
    ) -> Outcome:
        request = apis.PredictRequest(model_spec=apis.ModelSpec(name=model, version_label=label))
        for name, tensor in inputs.items():
            request.inputs[name].CopyFrom(tensor)
        gone = p.GONE_TFS if model == p.RELOADED else ""
        return call(predictions.Predict, request, check, expected, gone)

    def identity() -> Outcome:
        x = p.fp32_vector()
        return predict(
            "identity_fp32",
            {"INPUT0": _tensor(x, tf.DT_FLOAT)},
            lambda r: judged(np.array_equal(_values(r.outputs["OUTPUT0"], np.float32), x), x.shape),
        )

    def simple() -> Outcome:
        a, b = p.simple_pair(p.simple_rows())
        typed = tf.TensorProto(dtype=tf.DT_INT32, int_val=b.ravel().tolist())  # typed values, not raw bytes
        typed.tensor_shape.dim.extend(tf.TensorShapeProto.Dim(size=d) for d in b.shape)
        return predict(
            "simple",
            {"INPUT0": _tensor(a, tf.DT_INT32), "INPUT1": typed},
            lambda r: judged(
                np.array_equal(_values(r.outputs["OUTPUT0"], np.int32), a + b)
                and np.array_equal(_values(r.outputs["OUTPUT1"], np.int32), a - b)
            ),
        )

    def half() -> Outcome:
        x = _floats()
        return predict(
            HALF,
            {"x": _tensor(x, tf.DT_FLOAT)},
            lambda r: judged(np.array_equal(_values(r.outputs["y"], np.float32), p.half_plus_three(x))),
            label="stable",
        )

    def regress() -> Outcome:
        x = _floats(int(p.RNG.integers(1, 32)))
        request = apis.RegressionRequest(
            model_spec=apis.ModelSpec(name=HALF, signature_name=REGRESS), input=_examples(x)
        )
        return call(
            predictions.Regress,
            request,
            lambda r: judged(p.same_floats([v.value for v in r.result.regressions], p.half_plus_three(x))),
        )

    def classify() -> Outcome:
        x = _floats(int(p.RNG.integers(1, 32)))
        request = apis.ClassificationRequest(
            model_spec=apis.ModelSpec(name=HALF, signature_name=CLASSIFY), input=_examples(x)
        )
        return call(
            predictions.Classify,
            request,
            lambda r: judged(
                p.same_floats([c.classes[0].score for c in r.result.classifications], p.half_plus_three(x))
            ),
        )

    def status() -> Outcome:
        request = apis.GetModelStatusRequest(model_spec=apis.ModelSpec(name="simple"))
        return call(models.GetModelStatus, request, lambda r: judged(len(r.model_version_status) == 1, r))

    ones = np.ones(4, dtype=np.float32)
    invalid = tf.TensorProto(dtype=tf.DT_INVALID, tensor_content=ones.tobytes())
    invalid.tensor_shape.dim.add(size=4)
    return [
        Case(GRPC, "identity_fp32 up to 4 MiB", identity, 2),
        Case(GRPC, "simple", simple, 2),
        Case(GRPC, f"{HALF} predict by label", half),
        Case(GRPC, f"{HALF} regress", regress),
        Case(GRPC, f"{HALF} classify", classify),
        Case(GRPC, "model status", status),
        Case(
            GRPC,
            "unknown model",
            lambda: predict("no_such_model", {"x": _tensor(ones, tf.DT_FLOAT)}, None, {"NOT_FOUND"}),
        ),
        Case(GRPC, "DT_INVALID tensor", lambda: predict(HALF, {"x": invalid}, None, {"INVALID_ARGUMENT"})),
        Case(
            GRPC,
            "unknown input",
            lambda: predict(HALF, {"nope": _tensor(ones, tf.DT_FLOAT)}, None, {"INVALID_ARGUMENT"}),
        ),
    ]
