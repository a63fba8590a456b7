"""Issue 13, points 1 and 2, against a real server with real clients.

1. While ``simple`` is unloaded and loaded again under load (tritonclient.http,
   tritonclient.grpc, TF Serving REST, grps REST), every refusal is exactly
   the dialect's "not found" answer, and ``identity_fp32`` never fails.
2. While a model is unloaded and loaded hundreds of times, every poll of the
   repository index (HTTP and gRPC) lists each version once, and in a state
   its lifecycle allows at that moment.

The clients run in subprocesses (unload_clients.py): tritonclient.grpc cannot
share protobuf's pool with the server's protos in one process.
"""

from __future__ import annotations

import bisect
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from modelplatform.testing import ServerProcess

from ..conftest import MODEL_REPOSITORY
from ..plugins.repository.helpers import grpc_client, post
from ..plugins.repository.models import config_json, write_model

CLIENTS = Path(__file__).with_name("unload_clients.py")
GONE = "Request for unknown model: 'simple' has no available versions"
#: Each dialect's answer for a model that is not there, as unload_clients.py prints it.
REFUSAL = {
    "triton-http": f"404 {GONE}",
    "triton-grpc": f"StatusCode.NOT_FOUND {GONE}",
    "tfs-rest": "404 Servable not found for request: Latest(simple)",
    "grps-rest": "404 " + json.dumps({"code": 404, "msg": GONE, "status": "FAILURE"}, sort_keys=True),
}
CYCLES = 4


@pytest.fixture(scope="module")
def explicit():
    with ServerProcess(
        "--model-repository",
        str(MODEL_REPOSITORY),
        "--model-control-mode",
        "explicit",
        "--load-model",
        "simple",
        "--load-model",
        "identity_fp32",
    ) as process:
        yield process


class Clients:
    """Client subprocesses, started together, each answering ``started`` before the test goes on."""

    def __init__(self, server: ServerProcess, kinds: list[str]) -> None:
        self.kinds = kinds
        self.processes = [
            subprocess.Popen(
                [sys.executable, str(CLIENTS), kind, server.http_url, server.grpc_url],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for kind in kinds
        ]

    def __enter__(self) -> Clients:
        for kind, process in zip(self.kinds, self.processes):
            line = process.stdout.readline()  # type: ignore[union-attr]  # started with stdout=PIPE, so it is set
            error = "" if line.strip() == "started" else process.stderr.read()  # type: ignore[union-attr]  # started with stderr=PIPE, so it is set
            assert line.strip() == "started", f"{kind}: {line!r} {error}"
        return self

    def results(self) -> list:
        """Tell every client to stop; what each printed, in the order of ``kinds``."""
        found = []
        for kind, process in zip(self.kinds, self.processes):
            out, err = process.communicate(timeout=60)
            assert process.returncode == 0, f"{kind}: {err}"
            found.append(json.loads(out.strip().splitlines()[-1]))
        return found

    def __exit__(self, *exc: object) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def test_unloaded_model_answers_not_found_in_every_dialect_and_others_serve(explicit):
    kinds = list(REFUSAL)
    with Clients(explicit, kinds) as clients:
        for _ in range(CYCLES):
            time.sleep(0.4)
            assert post(explicit.http_url, "/v2/repository/models/simple/unload", b"{}")[0] == 200
            time.sleep(0.4)
            assert post(explicit.http_url, "/v2/repository/models/simple/load", b"{}")[0] == 200
        time.sleep(0.2)
        results = clients.results()
    for kind, outcomes in zip(kinds, results):
        seen = Counter({(model, outcome): count for model, outcome, count in outcomes})
        other = {outcome for model, outcome in seen if model == "identity_fp32"}
        assert other == {"ok"}, (kind, seen)  # the other model is untouched
        simple = {outcome for model, outcome in seen if model == "simple"}
        assert simple == {"ok", REFUSAL[kind]}, (kind, seen)  # served, or refused cleanly: nothing else
        print(kind, dict(seen))


def test_not_loaded_and_unknown_answer_alike_on_every_endpoint(explicit):
    """``identity_bytes`` is on disk but never loaded; ``simple`` is unloaded; ``nope`` is unknown."""
    assert post(explicit.http_url, "/v2/repository/models/simple/unload", b"{}")[0] == 200
    try:
        suffixes = (
            "",
            "/config",
            "/stats",
            "/versions/1",
            "/versions/1/config",
            "/ready",
            "/versions/1/ready",
        )
        for suffix in suffixes:
            answers = {
                name: post(explicit.http_url, f"/v2/models/{name}{suffix}", None, method="GET")
                for name in ("simple", "identity_bytes", "nope")
            }
            statuses = {name: status for name, (status, _) in answers.items()}
            expected = 400 if suffix.endswith("ready") else 404
            assert set(statuses.values()) == {expected}, (suffix, answers)
            if not suffix.endswith("ready"):
                assert answers["simple"][1]["error"].startswith("Request for unknown model: 'simple' ")
        result = grpc_client(
            explicit.grpc_url,
            """
            result = {}
            for name in ("simple", "identity_bytes", "nope"):
                answers = [client.is_model_ready(name), client.is_model_ready(name, "1")]
                for call in (client.get_model_metadata, client.get_model_config,
                             client.get_inference_statistics):
                    try:
                        call(name)
                        answers.append("answered")
                    except InferenceServerException as e:
                        answers.append([e.status(), e.message()])
                result[name] = answers
        """,
        )
        assert result["simple"][:2] == result["nope"][:2] == [False, False]
        for name, answers in result.items():
            assert {a[0] for a in answers[2:]} == {"StatusCode.NOT_FOUND"}, (name, answers)
        assert result["simple"][2][1] == GONE
        assert result["nope"][2][1] == "Request for unknown model: 'nope' is not found"
    finally:
        assert post(explicit.http_url, "/v2/repository/models/simple/load", b"{}")[0] == 200


# ---- point 2: the index during churn ----

TOGGLES = 300
#: The states a version may show while each toggling phase runs, in lifecycle order.
PHASE_STATES = {
    "loaded": ["READY"],
    "unloading": ["READY", "UNLOADING", "UNAVAILABLE"],
    "unloaded": ["UNAVAILABLE"],
    "loading": ["UNAVAILABLE", "LOADING", "READY"],
    "reloading": ["READY"],  # a serving version being reloaded keeps showing READY
}


@pytest.fixture(scope="module")
def churn_repo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("churn")
    write_model(root, "toggled", load_delay="0.005")
    write_model(root, "steady")
    return root


def test_the_index_lists_each_version_once_through_hundreds_of_toggles(churn_repo):
    with ServerProcess(
        "--model-repository",
        str(churn_repo),
        "--model-control-mode",
        "explicit",
        "--load-model",
        "toggled",
        "--load-model",
        "steady",
    ) as server:
        http_polls: list = []
        stop = threading.Event()
        poller = threading.Thread(target=_poll_http, args=(server.http_url, stop, http_polls))
        with Clients(server, ["index-grpc"]) as grpc_poller:
            poller.start()
            phases = _toggle(server.http_url)
            stop.set()
            poller.join(timeout=60)
            [grpc_polls] = grpc_poller.results()
    checked = 0
    for transport, polls in (("http", http_polls), ("grpc", grpc_polls)):
        for _, _, rows in polls:
            keys = [(r["name"], r.get("version", "")) for r in rows]
            assert len(keys) == len(set(keys)), (transport, rows)  # one row per version, always
            assert {r["name"] for r in rows} == {"steady", "toggled"}
        checked += _check_states(transport, polls, phases)
    print(
        f"{len(http_polls)} HTTP and {len(grpc_polls)} gRPC polls over {TOGGLES} toggles; "
        f"{checked} fell inside one phase and were checked"
    )
    assert len(http_polls) > 50 and len(grpc_polls) > 50 and checked > 100


def _poll_http(url: str, stop: threading.Event, polls: list) -> None:
    while not stop.is_set():
        sent = time.monotonic()
        status, rows = post(url, "/v2/repository/index")
        assert status == 200, rows
        polls.append([sent, time.monotonic(), rows])


def _toggle(url: str) -> list[tuple[str, float, float]]:
    """Unload and load ``toggled`` (every 10th time a reload while READY); every phase's span."""
    phases: list[tuple[str, float, float]] = []
    mark = time.monotonic()

    def phase(name: str, path: str, body: bytes) -> None:
        nonlocal mark
        started = time.monotonic()
        phases.append((_between(name), mark, started))
        status, answer = post(url, path, body)
        assert status == 200, answer
        mark = time.monotonic()
        phases.append((name, started, mark))

    for cycle in range(TOGGLES):
        if cycle % 10 == 5:
            config = json.dumps({"config": config_json(factor=str(cycle))})
            phase("reloading", "/v2/repository/models/toggled/load", f'{{"parameters": {config}}}'.encode())
        phase("unloading", "/v2/repository/models/toggled/unload", b"{}")
        phase("loading", "/v2/repository/models/toggled/load", b"{}")
    return phases


def _between(next_phase: str) -> str:
    """What holds between two operations: the state the one before left."""
    return "unloaded" if next_phase == "loading" else "loaded"


def _check_states(transport: str, polls: list, phases: list[tuple[str, float, float]]) -> int:
    """Each poll that fell inside one phase shows a state of that phase, never going back."""
    starts = [start for _, start, _ in phases]
    rank_in: dict[int, int] = {}
    checked = 0
    for sent, received, rows in polls:
        at = bisect.bisect_right(starts, sent) - 1
        if at < 0 or received > phases[at][2]:
            continue  # before the first phase, or across a boundary
        name = phases[at][0]
        [row] = [r for r in rows if r["name"] == "toggled"]
        allowed = PHASE_STATES[name]
        assert row["state"] in allowed, (transport, name, row)
        if row["state"] == "UNAVAILABLE":
            assert row.get("reason") == "unloaded", (transport, row)
        rank = allowed.index(row["state"])
        assert rank >= rank_in.get(at, 0), (transport, name, row)  # forward only
        rank_in[at] = rank
        checked += 1
    return checked
