"""OIP over gRPC with tritonclient.grpc, and the repository index over gRPC.

This family must not import the server's generated OIP protos (see
:mod:`soak.driver`), so it imports nothing from ``modelplatform``.
Dialects: ``oip-grpc`` (valid and invalid inference), ``repository-grpc``.
"""

from __future__ import annotations

import numpy as np
import tritonclient.grpc as triton
from tritonclient.utils import InferenceServerException

from soak import payloads as p
from soak.outcomes import ERROR, Case, Outcome, grpc_failure, judged, shorten

GRPC, REPOSITORY = "oip-grpc", "repository-grpc"
TIMEOUT_SECS = 60.0


def cases(http_url: str, grpc_url: str) -> list[Case]:
    client = triton.InferenceServerClient(grpc_url)

    def infer(
        model: str, inputs: dict[str, tuple[str, np.ndarray]], check, expected=(), gone: str = ""
    ) -> Outcome:
        tensors = []
        for name, (datatype, array) in inputs.items():
            tensor = triton.InferInput(name, list(array.shape), datatype)
            tensor.set_data_from_numpy(array)
            tensors.append(tensor)
        try:
            result = client.infer(model, tensors, client_timeout=TIMEOUT_SECS)
        except InferenceServerException as error:
            return grpc_failure(
                str(error.status()).removeprefix("StatusCode."), error.message() or "", expected, gone
            )
        if expected:
            return Outcome(ERROR, shorten(f"accepted; wanted {sorted(expected)}"))
        return check(result)

    def simple() -> Outcome:
        a, b = p.simple_pair(p.simple_rows())
        return infer(
            "simple",
            {"INPUT0": ("INT32", a), "INPUT1": ("INT32", b)},
            lambda r: judged(
                np.array_equal(r.as_numpy("OUTPUT0"), a + b) and np.array_equal(r.as_numpy("OUTPUT1"), a - b)
            ),
            gone=p.GONE_OIP,
        )

    def echo(model: str, datatype: str, make) -> Outcome:
        x = make()
        return infer(
            model,
            {"INPUT0": (datatype, x)},
            lambda r: judged(p.same_array(r.as_numpy("OUTPUT0"), x), x.shape),
        )

    def half_plus_three() -> Outcome:
        x = p.fp32_vector(largest=16 * 1024)
        return infer(
            "saved_model_half_plus_three",
            {"x": ("FP32", x)},
            lambda r: judged(np.array_equal(r.as_numpy("y"), p.half_plus_three(x))),
        )

    def refused(model: str, inputs: dict[str, tuple[str, np.ndarray]], code: str):
        gone = p.GONE_OIP if model == p.RELOADED else ""
        return lambda: infer(model, inputs, None, expected={code}, gone=gone)

    def index() -> Outcome:
        rows = client.get_model_repository_index(as_json=True, client_timeout=TIMEOUT_SECS).get("models", [])
        names = [row["name"] for row in rows]
        return judged(len(names) == len(set(names)) and p.RELOADED in names, names)

    a, b = p.simple_pair()
    return [
        Case(GRPC, "simple", simple, 3),
        Case(GRPC, "identity_fp32 up to 4 MiB", lambda: echo("identity_fp32", "FP32", p.fp32_vector), 2),
        Case(GRPC, "identity_bytes", lambda: echo("identity_bytes", "BYTES", p.byte_strings)),
        Case(GRPC, "saved_model_half_plus_three", half_plus_three),
        Case(GRPC, "unknown model", refused("no_such_model", {"INPUT0": ("INT32", a)}, "NOT_FOUND")),
        Case(
            GRPC,
            "wrong datatype",
            refused(
                "simple",
                {"INPUT0": ("FP32", a.astype(np.float32)), "INPUT1": ("INT32", b)},
                "INVALID_ARGUMENT",
            ),
        ),
        Case(
            GRPC,
            "wrong shape",
            refused(
                "simple", {"INPUT0": ("INT32", a[:, :8]), "INPUT1": ("INT32", b[:, :8])}, "INVALID_ARGUMENT"
            ),
        ),
        Case(REPOSITORY, "index", index),
    ]
