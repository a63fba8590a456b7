"""Triton's response cache with the real clients: ``--cache-config local,size=N`` and
``response_cache { enable: true }``, seen through answers, statistics and metrics.

The ``counted`` model answers ``CALLS``: how many times it ran. An answer from
the cache repeats the count of the run it was kept from. tritonclient.grpc runs
in a subprocess (``grpc_client``): its protos clash with ours in one process.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from modelplatform.testing import ServerProcess
from tests.plugins.repository.helpers import grpc_client

#: The cache's size: a flood of 16 KiB answers overflows it many times.
CACHE_BYTES = 256 * 1024

COUNTED = """
name: "{name}"
backend: "python"
max_batch_size: 8
input [ {{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }} ]
output [
  {{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }},
  {{ name: "CALLS" data_type: TYPE_INT64 dims: [ 1 ] }}
]
{extra}
"""

MODEL = """
import numpy as np


class Model:
    calls = 0

    def infer(self, inputs):
        Model.calls += 1
        x = inputs["INPUT0"]
        return {"OUTPUT0": x * 2, "CALLS": np.full((x.shape[0], 1), Model.calls, dtype=np.int64)}
"""

MODELS = {
    "counted": "response_cache { enable: true }",
    "counted_batched": "response_cache { enable: true }\ndynamic_batching { }",
    "uncached": "",
    "decoupled_cached": "response_cache { enable: true }\nmodel_transaction_policy { decoupled: true }",
}


#: An ensemble with the cache, whose one step (``uncached``) runs whenever the ensemble does.
PIPELINE = """
name: "cached_pipeline"
platform: "ensemble"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] },
  { name: "CALLS" data_type: TYPE_INT64 dims: [ 1 ] }
]
response_cache { enable: true }
ensemble_scheduling {
  step [
    {
      model_name: "uncached"
      model_version: -1
      input_map { key: "INPUT0" value: "INPUT0" }
      output_map { key: "OUTPUT0" value: "OUTPUT0" }
      output_map { key: "CALLS" value: "CALLS" }
    }
  ]
}
"""


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("repository")
    for name, extra in MODELS.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(COUNTED.format(name=name, extra=extra))
        (root / name / "1" / "model.py").write_text(MODEL)
    (root / "cached_pipeline" / "1").mkdir(parents=True)
    (root / "cached_pipeline" / "config.pbtxt").write_text(PIPELINE)
    return root


@pytest.fixture(scope="module")
def server(repository):
    with ServerProcess(
        "--model-repository", str(repository),
        "--model-control-mode", "explicit",
        "--load-model", "counted", "--load-model", "counted_batched", "--load-model", "uncached",
        "--load-model", "cached_pipeline",
        "--cache-config", f"local,size={CACHE_BYTES}",
    ) as process:  # fmt: skip
        yield process


def _http_infer(server, model: str, values: np.ndarray) -> tuple[np.ndarray, int]:
    with httpclient.InferenceServerClient(server.http_url) as client:
        tensor = httpclient.InferInput("INPUT0", list(values.shape), "FP32")
        tensor.set_data_from_numpy(values)
        result = client.infer(model, [tensor])
    return result.as_numpy("OUTPUT0"), int(result.as_numpy("CALLS")[0, 0])


def _grpc_infer(server, model: str, values: np.ndarray) -> tuple[np.ndarray, int]:
    found = grpc_client(
        server.grpc_url,
        f"""
        import numpy as np
        tensor = grpcclient.InferInput("INPUT0", {list(values.shape)!r}, "FP32")
        tensor.set_data_from_numpy(np.array({values.tolist()!r}, dtype=np.float32))
        answer = client.infer({model!r}, [tensor])
        result = [answer.as_numpy("OUTPUT0").tolist(), int(answer.as_numpy("CALLS")[0, 0])]
        """,
    )
    return np.array(found[0], dtype=np.float32), found[1]


def _inference_stats(server, model: str) -> dict:
    with httpclient.InferenceServerClient(server.http_url) as client:
        return client.get_inference_statistics(model)["model_stats"][0]


def _metric(server, line_start: str) -> float:
    text = (
        urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=10).read().decode()
    )
    found = [line for line in text.splitlines() if line.startswith(line_start)]
    assert found, f"no metric {line_start}"
    return float(found[0].rsplit(" ", 1)[1])


@pytest.mark.parametrize("model", ["counted", "counted_batched"])
def test_identical_request_is_answered_from_the_cache_over_http_and_grpc(server, model):
    values = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)
    before = _inference_stats(server, model)
    first, first_calls = _http_infer(server, model, values)
    again, again_calls = _grpc_infer(server, model, values)  # the same request over the other protocol
    assert again_calls == first_calls  # the model did not run again
    np.testing.assert_array_equal(again, first)
    np.testing.assert_array_equal(first, values * 2)
    _, other_calls = _http_infer(server, model, values + 1)  # other input bytes: a miss
    assert other_calls == first_calls + 1
    after = _inference_stats(server, model)
    hits = after["inference_stats"]["cache_hit"]["count"] - before["inference_stats"]["cache_hit"]["count"]
    misses = (
        after["inference_stats"]["cache_miss"]["count"] - before["inference_stats"]["cache_miss"]["count"]
    )
    assert (hits, misses) == (1, 2)
    assert after["inference_stats"]["success"]["count"] - before["inference_stats"]["success"]["count"] == 3
    assert after["inference_count"] - before["inference_count"] == 2  # hits infer nothing (Triton's count)
    assert after["inference_stats"]["cache_hit"]["ns"] > 0


def test_cache_counts_are_triton_metrics(server):
    values = np.array([[7.0]], dtype=np.float32)
    _http_infer(server, "counted", values)
    _http_infer(server, "counted", values)
    stats = _inference_stats(server, "counted")["inference_stats"]
    labels = '{model="counted",version="1"}'
    assert _metric(server, f"nv_cache_num_hits_per_model{labels}") == stats["cache_hit"]["count"]
    assert _metric(server, f"nv_cache_num_misses_per_model{labels}") == stats["cache_miss"]["count"]
    assert _metric(server, f"nv_cache_hit_duration_per_model{labels}") == stats["cache_hit"]["ns"] // 1000
    assert _metric(server, f"nv_cache_miss_duration_per_model{labels}") == stats["cache_miss"]["ns"] // 1000
    with pytest.raises(AssertionError, match="no metric"):  # a model without the cache has none
        _metric(server, 'nv_cache_num_hits_per_model{model="uncached"')


def test_model_without_response_cache_always_runs(server):
    values = np.array([[5.0]], dtype=np.float32)
    _, first = _http_infer(server, "uncached", values)
    _, second = _http_infer(server, "uncached", values)
    assert second == first + 1
    assert _inference_stats(server, "uncached")["inference_stats"]["cache_hit"]["count"] == 0


def test_an_ensemble_with_the_cache_answers_without_running_its_steps(server):
    values = np.array([[11.0, 12.0]], dtype=np.float32)
    _, first = _http_infer(server, "cached_pipeline", values)
    _, again = _http_infer(server, "cached_pipeline", values)
    assert again == first  # the step (which never caches) did not run
    _, direct = _http_infer(server, "uncached", values)
    assert direct == first + 1


def test_a_flood_of_distinct_requests_evicts_the_least_recently_used(server):
    """16 KiB answers into a 256 KiB cache: about 14 stay, the oldest go first."""
    rows = [np.full((1, 4096), float(i), dtype=np.float32) for i in range(200)]
    calls = [_http_infer(server, "counted", row)[1] for row in rows]
    assert calls == list(range(calls[0], calls[0] + 200))  # every one a miss: the model ran
    _, last_again = _http_infer(server, "counted", rows[-1])
    assert last_again == calls[-1]  # the most recent is still cached
    _, first_again = _http_infer(server, "counted", rows[0])
    assert first_again > calls[-1]  # the first was evicted long ago: the model ran again
    recent = [_http_infer(server, "counted", row)[1] for row in rows[-12:-1]]
    assert recent == calls[-12:-1]  # the recent ones stayed (about 14 fit in 256 KiB)


def test_decoupled_model_with_a_cache_is_refused_with_the_reason(server):
    with httpclient.InferenceServerClient(server.http_url) as client:
        with pytest.raises(
            InferenceServerException, match="Response Cache does not currently support"
        ) as caught:
            client.load_model("decoupled_cached")
    assert "'decoupled' transaction policy" in str(caught.value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("redis,host=localhost", "only the 'local' cache"),
        ("local,size=0", "size must be a positive number"),
        ("local,bytes=100", "no key 'bytes'"),
        ("local", "expected <cache>,<key>=<value>"),
    ],
)
def test_bad_cache_config_stops_start_up(value, message, tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "modelplatform",
            "serve",
            "--model-repository",
            str(tmp_path),
            "--cache-config",
            value,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert message in done.stderr + done.stdout
