"""grps over REST (http.client) and gRPC (stubs from the server's own grps proto), with streams.

Dialects: ``grps-rest`` (gtensors, str_data, bin_data, ndarray, gzip,
invalid requests), ``grps-grpc`` (Predict in every payload form, invalid
requests: grps answers errors in band), ``grps-stream`` (PredictStreaming
over gRPC, ``?streaming=true`` over REST, and the model's own streamed HTTP
route).
"""

from __future__ import annotations

import json

import grpc
import numpy as np

from modelplatform_grps.protos import grps_pb2, grps_pb2_grpc
from modelplatform_grps.protos.grps_pb2 import GenericTensor, GrpsMessage
from soak import payloads as p
from soak.httpwire import HttpSession, compress, json_bytes, oversized_head, raw_exchange
from soak.outcomes import (
    ERROR,
    GONE,
    OK,
    SERVER_ERROR,
    Case,
    Outcome,
    grpc_failure,
    http_answer,
    http_refusal,
    judged,
    shorten,
)

REST, GRPC, STREAM = "grps-rest", "grps-grpc", "grps-stream"
PREDICT = "/grps/v1/infer/predict"
TIMEOUT_SECS = 60.0
JSON_HEADERS = {"Content-Type": "application/json"}


def cases(http_url: str, grpc_url: str) -> list[Case]:
    options = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
    stub = grps_pb2_grpc.GrpsServiceStub(grpc.insecure_channel(grpc_url, options=options))
    session = HttpSession(http_url)
    return rest_cases(http_url, session) + grpc_cases(stub) + stream_cases(session, stub)


def _simple_tensors() -> tuple[list[dict], dict[str, list[int]]]:
    a, b = p.simple_pair(p.simple_rows())
    tensors = [
        {"name": n, "dtype": "DT_INT32", "shape": list(v.shape), "flat_int32": v.ravel().tolist()}
        for n, v in (("INPUT0", a), ("INPUT1", b))
    ]
    return tensors, {"OUTPUT0": (a + b).ravel().tolist(), "OUTPUT1": (a - b).ravel().tolist()}


def _flat(answer: dict) -> dict[str, list]:
    return {
        t["name"]: next(v for k, v in t.items() if k.startswith("flat_"))
        for t in answer["gtensors"]["tensors"]
    }


# ---- REST ----


def rest_cases(http_url: str, session: HttpSession) -> list[Case]:
    def post(
        body: bytes, verify, gone: str = "", headers: dict[str, str] | None = None, query: str = ""
    ) -> Outcome:
        status, data, _ = session.request("POST", PREDICT + query, body, {**JSON_HEADERS, **(headers or {})})
        return http_answer(status, data, verify, gone)

    def simple(encoding: str = "") -> Outcome:
        tensors, want = _simple_tensors()
        body, headers = json_bytes({"model": "simple", "gtensors": {"tensors": tensors}}), {}
        if encoding:
            body, headers = compress(body, encoding), {"Content-Encoding": encoding}
        return post(body, lambda d: judged(_flat(json.loads(d)) == want, d[:200]), p.GONE_OIP, headers)

    def str_data() -> Outcome:
        text = (
            "s" + p.byte_strings(printable=True)[0].decode()
        )  # an empty str_data is no str_data (protobuf JSON)
        return post(
            json_bytes({"model": "identity_bytes", "str_data": text}),
            lambda d: judged(json.loads(d)["str_data"] == text, d[:200]),
        )

    def bin_data() -> Outcome:
        raw = p.RNG.bytes(int(p.RNG.integers(1, 4096)))
        status, data, _ = session.request(
            "POST", PREDICT + "?model=identity_bytes", raw, {"Content-Type": "application/octet-stream"}
        )
        return http_answer(status, data, lambda d: judged(d == raw, len(d)))

    def ndarray() -> Outcome:
        x = p.fp32_vector(largest=1024)
        return post(
            json_bytes({"model": "saved_model_half_plus_three", "ndarray": x.tolist()}),
            lambda d: judged(p.same_floats(json.loads(d)["ndarray"], p.half_plus_three(x))),
            query="?return-ndarray=true",
        )

    return [
        Case(REST, "simple gtensors", simple, 3),
        Case(REST, "simple gtensors gzip", lambda: simple("gzip")),
        Case(REST, "identity_bytes str_data", str_data),
        Case(REST, "identity_bytes bin_data", bin_data),
        Case(REST, "saved_model_half_plus_three ndarray", ndarray),
        *rest_refusals(http_url, session),
    ]


def rest_refusals(http_url: str, session: HttpSession) -> list[Case]:
    def refused(body: bytes, expected: set[int], headers: dict[str, str] | None = None, gone: str = ""):
        def call() -> Outcome:
            status, data, _ = session.request("POST", PREDICT, body, {**JSON_HEADERS, **(headers or {})})
            outcome = http_refusal(status, data, expected, gone)
            if outcome.kind == OK and b'"status":"FAILURE"' not in data:
                return Outcome(ERROR, shorten(f"not grps's error shape: {data[:200]!r}"))
            return outcome

        return call

    def oversized() -> Outcome:
        status, answer = raw_exchange(http_url, oversized_head(PREDICT, p.BODY_LIMIT_BYTES + 1))
        return http_refusal(status, answer, {413})

    tensors, _ = _simple_tensors()
    return [
        Case(REST, "malformed JSON", refused(b'{"model": "simple"', {400})),
        Case(REST, "no legal field", refused(b'{"model": "identity_bytes"}', {400})),
        Case(
            REST,
            "shape of the wrong type",
            refused(
                json_bytes({"model": "simple", "gtensors": {"tensors": [{**tensors[0], "shape": "x"}]}}),
                {400},
            ),
        ),
        Case(REST, "unknown model", refused(b'{"model": "no_such_model", "str_data": "x"}', {404})),
        Case(
            REST,
            "wrong content type",
            refused(b'{"model": "identity_bytes", "str_data": "x"}', {400}, {"Content-Type": "text/plain"}),
        ),
        Case(REST, "broken gzip", refused(b"not gzip", {400}, {"Content-Encoding": "gzip"})),
        Case(REST, "body over the limit", oversized),
    ]


# ---- gRPC (errors in band: status.code) ----


def _in_band(reply: GrpsMessage, check, expected: set[int] = frozenset(), gone: str = "") -> Outcome:
    code = reply.status.code
    if gone and code == 404 and gone in reply.status.msg:
        return Outcome(GONE)
    if expected:
        if code in expected:
            return Outcome(OK)
        kind = SERVER_ERROR if code >= 500 else ERROR
        return Outcome(kind, shorten(f"status {code} (wanted {sorted(expected)}) {reply.status.msg}"))
    if reply.status.status == grps_pb2.Status.SUCCESS:
        return check(reply)
    return Outcome(SERVER_ERROR if code >= 500 else ERROR, shorten(f"status {code} {reply.status.msg}"))


def grpc_cases(stub: grps_pb2_grpc.GrpsServiceStub) -> list[Case]:
    def predict(request: GrpsMessage, check, expected: set[int] = frozenset(), gone: str = "") -> Outcome:
        try:
            reply = stub.Predict(request, timeout=TIMEOUT_SECS)
        except grpc.RpcError as error:
            return grpc_failure(error.code().name, error.details() or "")
        return _in_band(reply, check, expected, gone)

    def simple() -> Outcome:
        tensors, want = _simple_tensors()
        request = GrpsMessage(model="simple-1")
        for t in tensors:
            request.gtensors.tensors.append(
                GenericTensor(
                    name=t["name"], dtype=grps_pb2.DT_INT32, shape=t["shape"], flat_int32=t["flat_int32"]
                )
            )
        return predict(
            request,
            lambda r: judged({t.name: list(t.flat_int32) for t in r.gtensors.tensors} == want, r.gtensors),
            gone=p.GONE_OIP,
        )

    def identity() -> Outcome:
        x = p.fp32_vector()
        request = GrpsMessage(model="identity_fp32")
        request.gtensors.tensors.add(name="INPUT0", dtype=grps_pb2.DT_FLOAT32, shape=[len(x)], flat_float32=x)
        return predict(
            request,
            lambda r: judged(
                np.array_equal(np.asarray(r.gtensors.tensors[0].flat_float32, dtype=np.float32), x), x.shape
            ),
        )

    def bin_data() -> Outcome:
        raw = p.RNG.bytes(int(p.RNG.integers(0, 4096)))
        return predict(GrpsMessage(model="identity_bytes", bin_data=raw), lambda r: judged(r.bin_data == raw))

    return [
        Case(GRPC, "simple gtensors", simple, 3),
        Case(GRPC, "identity_fp32 up to 4 MiB", identity, 2),
        Case(GRPC, "identity_bytes bin_data", bin_data),
        Case(
            GRPC,
            "unknown model",
            lambda: predict(GrpsMessage(model="no_such_model", str_data="x"), None, {404}),
        ),
        Case(GRPC, "no legal field", lambda: predict(GrpsMessage(model="identity_bytes"), None, {400})),
        Case(
            GRPC,
            "str_data for an INT32 model",
            lambda: predict(GrpsMessage(model="simple", str_data="x"), None, {400}, gone=p.GONE_OIP),
        ),
    ]


# ---- streams ----


def stream_cases(session: HttpSession, stub: grps_pb2_grpc.GrpsServiceStub) -> list[Case]:
    def count() -> int:
        return int(p.RNG.integers(1, 20))

    def over_grpc() -> Outcome:
        n = count()
        request = GrpsMessage(model="stream_counter")
        request.gmap.s_i32["COUNT"] = n
        try:
            replies = list(stub.PredictStreaming(request, timeout=TIMEOUT_SECS))
        except grpc.RpcError as error:
            return grpc_failure(error.code().name, error.details() or "")
        failed = [r for r in replies if r.status.status != grps_pb2.Status.SUCCESS]
        if failed:
            return _in_band(failed[0], None)
        return judged(
            [list(r.gtensors.tensors[0].flat_int32) for r in replies] == [[i] for i in range(1, n + 1)]
        )

    def over_rest() -> Outcome:
        n = count()
        body = json_bytes({"model": "stream_counter", "gmap": {"s_i32": {"COUNT": n}}})
        status, pieces = session.chunks(PREDICT + "?streaming=true", body, JSON_HEADERS)
        return http_answer(
            status, b"".join(pieces), lambda d: judged(_indices(d) == list(range(1, n + 1)), d[:200])
        )

    def custom_route() -> Outcome:
        n = count()
        status, pieces = session.chunks(
            "/stream_counter/count", str(n).encode(), {"Content-Type": "text/plain"}
        )
        want = "".join(f"{i}\n" for i in range(1, n + 1)).encode()
        return http_answer(status, b"".join(pieces), lambda d: judged(d == want, d[:200]))

    return [
        Case(STREAM, "PredictStreaming", over_grpc, 2),
        Case(STREAM, "REST ?streaming=true", over_rest),
        Case(STREAM, "model's streamed HTTP route", custom_route),
    ]


def _indices(stream: bytes) -> list[int]:
    """INDEX of every GrpsMessage in a stream of JSON objects written back to back."""
    decoder, text, found, at = json.JSONDecoder(), stream.decode(), [], 0
    while at < len(text):
        message, at = decoder.raw_decode(text, at)
        found.append(int(_flat(message)["INDEX"][0]))
    return found
