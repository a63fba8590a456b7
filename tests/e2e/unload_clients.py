"""One client that infers ``simple`` and ``identity_fp32`` in turn until told to stop.

Run as a subprocess by test_unload_under_load.py (tritonclient.grpc cannot
share protobuf's pool with the server's protos in one process, and the
tritonclient.http client keeps to one thread). Prints ``started`` once it has
a connection, then, when stdin closes, one JSON object: per model, how many
answers were right, and every other answer as (status, message) with counts.
Usage: python unload_clients.py KIND HTTP_HOST:PORT GRPC_HOST:PORT
KIND: triton-http, triton-grpc, tfs-rest, grps-rest; or index-grpc, which polls
the repository index with tritonclient.grpc instead and prints every poll as
[monotonic time sent, time answered, rows].
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable

import numpy as np

ROW = list(range(16))
SUM = [2 * i for i in ROW]  # simple: OUTPUT0 = INPUT0 + INPUT1, both ROW
VALUES = [1.5, -2.0, 3.25]
#: (model, outcome) -> count; an outcome is "ok" or "<status> <message>".
Outcome = tuple[str, str]
Attempt = Callable[[str], str]


def triton_http(http_url: str, grpc_url: str) -> Attempt:
    import tritonclient.http as client_module
    from tritonclient.utils import InferenceServerException

    client = client_module.InferenceServerClient(http_url)
    return _triton(client_module, client, InferenceServerException, lambda e: f"{e.status()} {e.message()}")


def triton_grpc(http_url: str, grpc_url: str) -> Attempt:
    import tritonclient.grpc as client_module
    from tritonclient.utils import InferenceServerException

    client = client_module.InferenceServerClient(grpc_url)
    return _triton(client_module, client, InferenceServerException, lambda e: f"{e.status()} {e.message()}")


def _triton(module, client, error_type, describe) -> Attempt:
    def tensor(name: str, array: np.ndarray, datatype: str):
        made = module.InferInput(name, list(array.shape), datatype)
        made.set_data_from_numpy(array)
        return made

    row = np.array([ROW], dtype=np.int32)

    def attempt(model: str) -> str:
        try:
            if model == "simple":
                result = client.infer(model, [tensor("INPUT0", row, "INT32"), tensor("INPUT1", row, "INT32")])
                return _ok(result.as_numpy("OUTPUT0").tolist() == [SUM])
            values = np.array(VALUES, dtype=np.float32)
            result = client.infer(model, [tensor("INPUT0", values, "FP32")])
            return _ok(result.as_numpy("OUTPUT0").tolist() == VALUES)
        except error_type as error:
            return describe(error)

    return attempt


def tfs_rest(http_url: str, grpc_url: str) -> Attempt:
    bodies = {
        "simple": {"instances": [{"INPUT0": ROW, "INPUT1": ROW}]},
        "identity_fp32": {"instances": VALUES},
    }
    expected = {"simple": [{"OUTPUT0": SUM, "OUTPUT1": [0] * 16}], "identity_fp32": VALUES}

    def attempt(model: str) -> str:
        status, answer = _post(http_url, f"/v1/models/{model}:predict", bodies[model])
        if status == 200:
            return _ok(answer.get("predictions") == expected[model])
        return f"{status} {answer.get('error')}"

    return attempt


def grps_rest(http_url: str, grpc_url: str) -> Attempt:
    def tensor(name: str, kind: str, values: list, shape: list[int]) -> dict:
        field = {"DT_INT32": "flat_int32", "DT_FLOAT32": "flat_float32"}[kind]
        return {"name": name, "dtype": kind, "shape": shape, field: values}

    bodies = {
        "simple": [tensor("INPUT0", "DT_INT32", ROW, [1, 16]), tensor("INPUT1", "DT_INT32", ROW, [1, 16])],
        "identity_fp32": [tensor("INPUT0", "DT_FLOAT32", VALUES, [3])],
    }
    expected = {"simple": SUM, "identity_fp32": VALUES}

    def attempt(model: str) -> str:
        body = {"model": model, "gtensors": {"tensors": bodies[model]}}
        status, answer = _post(http_url, "/grps/v1/infer/predict", body)
        if status == 200:
            outputs = answer["gtensors"]["tensors"]
            flat = next(v for k, v in outputs[0].items() if k.startswith("flat_"))
            return _ok(flat == expected[model])
        return f"{status} {json.dumps(answer.get('status'), sort_keys=True)}"

    return attempt


def _post(url: str, path: str, body: dict) -> tuple[int, dict]:
    host, port = url.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request("POST", path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
    finally:
        connection.close()
    try:
        return response.status, json.loads(data)
    except ValueError:
        return response.status, {"error": f"not JSON: {data[:200]!r}"}


def _ok(right: bool) -> str:
    return "ok" if right else "wrong answer"


KINDS = {"triton-http": triton_http, "triton-grpc": triton_grpc, "tfs-rest": tfs_rest, "grps-rest": grps_rest}


def index_polls(grpc_url: str, stop: threading.Event) -> list:
    import tritonclient.grpc as client_module

    client = client_module.InferenceServerClient(grpc_url)
    client.get_model_repository_index()
    print("started", flush=True)
    polls = []
    while not stop.is_set():
        sent = time.monotonic()
        rows = client.get_model_repository_index(as_json=True).get("models", [])
        polls.append([sent, time.monotonic(), rows])
    return polls


def main() -> None:
    kind, http_url, grpc_url = sys.argv[1:4]
    if kind == "index-grpc":
        stop = threading.Event()
        threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
        print(json.dumps(index_polls(grpc_url, stop)))
        return
    attempt = KINDS[kind](http_url, grpc_url)
    outcomes: Counter[Outcome] = Counter()
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    outcomes[("identity_fp32", attempt("identity_fp32"))] += 1
    print("started", flush=True)
    while not stop.is_set():
        for model in ("simple", "identity_fp32"):
            try:
                outcomes[(model, attempt(model))] += 1
            except Exception as error:  # noqa: BLE001 - a transport failure is an outcome too
                outcomes[(model, f"raised {type(error).__name__}: {error}")] += 1
    print(json.dumps([[model, outcome, count] for (model, outcome), count in outcomes.items()]))


if __name__ == "__main__":
    main()
