"""dataplane.observation.statistics and the counters behind it, on a function-based test backend."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from modelplatform import (
    InferenceRequest,
    InvalidArgument,
    ModelExecutionError,
    ModelNotFound,
    PhaseClock,
    Settings,
    Tensor,
)
from modelplatform.base.observing import RequestScope, current_scope
from modelplatform.models.stats import ModelStats, checked_buckets
from modelplatform.testing import FunctionBackendPlugin, InProcessServer, free_port, function_model

CONFIG = """
name: "{name}"
backend: "function"
max_batch_size: 4
input [ {{ name: "A" data_type: TYPE_FP32 dims: [ 2 ] }} ]
output [ {{ name: "B" data_type: TYPE_FP32 dims: [ 2 ] }} ]
"""


def _fail(inputs):
    raise RuntimeError("boom")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    for name, versions in (("twice", (1, 2)), ("failing", (1,))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.pbtxt").write_text(CONFIG.format(name=name))
        for version in versions:
            (tmp_path / name / str(version)).mkdir()
    (tmp_path / "twice" / "config.pbtxt").write_text(
        CONFIG.format(name="twice") + "version_policy: { all: {} }\n"
    )
    function_model("twice", lambda inputs: {"B": inputs["A"] * 2})
    function_model("failing", _fail)
    return tmp_path


def _request(model: str, rows: int = 1, version: str = "") -> InferenceRequest:
    array = np.ones((rows, 2), dtype=np.float32)
    return InferenceRequest(model, [Tensor("A", "FP32", array.shape, array)], model_version=version)


async def test_statistics_count_requests_and_executions(repo):
    settings = Settings(model_repository=repo, host="127.0.0.1", http_port=free_port(),
                        grpc_port=free_port(), plugins=("python",))  # fmt: skip
    async with InProcessServer(settings, [FunctionBackendPlugin]) as server:
        dataplane = server.context.dataplane
        await dataplane.inference.infer(_request("twice", rows=3, version="2"))
        await dataplane.inference.infer(_request("twice", version="2"))
        with pytest.raises(ModelExecutionError):
            await dataplane.inference.infer(_request("failing"))

        (v2,) = await dataplane.observation.statistics("twice", "2")
        data = v2.to_json()
        assert (data["name"], data["version"]) == ("twice", "2")
        # inference_count counts batch rows, as Triton's does: 3 + 1
        assert data["inference_count"] == 4 and data["execution_count"] == 2
        stats = data["inference_stats"]
        assert stats["success"]["count"] == 2 and stats["success"]["ns"] > 0
        assert stats["queue"]["count"] == 2
        assert stats["compute_infer"]["count"] == 2 and stats["compute_infer"]["ns"] > 0
        assert stats["compute_input"]["count"] == stats["compute_output"]["count"] == 2
        assert [b["batch_size"] for b in data["batch_stats"]] == [1]  # one request per execution

        assert [s.version for s in await dataplane.observation.statistics("twice")] == ["1", "2"]
        names = {s.name for s in await dataplane.observation.statistics()}
        assert names == {"twice", "failing"}
        (failing,) = await dataplane.observation.statistics("failing")
        assert failing.to_json()["inference_stats"]["fail"]["count"] == 1
        with pytest.raises(ModelNotFound):
            await dataplane.observation.statistics("nope")
        with pytest.raises(ModelNotFound):
            await dataplane.observation.statistics("twice", "7")


def test_to_json_has_every_key_perf_analyzer_reads():
    data = ModelStats("m", "1").to_json()
    assert set(data) >= {"name", "version", "last_inference", "inference_count", "execution_count",
                         "inference_stats", "batch_stats", "memory_usage", "response_stats"}  # fmt: skip
    for key in ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output",
                "cache_hit", "cache_miss"):  # fmt: skip
        assert data["inference_stats"][key] == {"count": 0, "ns": 0}


def test_plus_sums_two_workers_counters_without_changing_either():
    one, two = ModelStats("m", "1"), ModelStats("m", "1")
    one.record_success(100)
    one.record_execution(1, 50, instance=0)
    two.record_success(300, queue_ns=7)
    two.record_execution(2, 70, instance=1)
    two.record_failure(9)
    total = one.plus(two).to_json()
    assert total["inference_count"] == 2 and total["execution_count"] == 2
    assert total["inference_stats"]["success"] == {"count": 2, "ns": 400}
    assert total["inference_stats"]["queue"] == {"count": 1, "ns": 7}
    assert total["inference_stats"]["fail"] == {"count": 1, "ns": 9}
    assert total["inference_stats"]["compute_infer"] == {"count": 3, "ns": 120}
    assert [b["batch_size"] for b in total["batch_stats"]] == [1, 2]
    assert total["instance_stats"] == [
        {"instance": 0, "execution_count": 1},
        {"instance": 1, "execution_count": 1},
    ]
    assert one.inference_count == 1 and two.inference_count == 1


async def test_failures_carry_triton_reasons_and_refusals_are_kept_apart(repo):
    settings = Settings(model_repository=repo, host="127.0.0.1", http_port=free_port(),
                        grpc_port=free_port(), plugins=("python",))  # fmt: skip
    async with InProcessServer(settings, [FunctionBackendPlugin]) as server:
        dataplane = server.context.dataplane
        with pytest.raises(ModelExecutionError):
            await dataplane.inference.infer(_request("failing"))
        bad = InferenceRequest("twice", [Tensor.from_array("A", np.ones((1, 3), np.float32))], "2")
        with pytest.raises(InvalidArgument):
            await dataplane.inference.infer(bad)
        for name, version in (("twice", "7"), ("nope", ""), ("nope2", "")):
            with pytest.raises(ModelNotFound):
                await dataplane.inference.infer(_request(name, version=version))

        (failing,) = await dataplane.observation.statistics("failing")
        assert failing.failures == {"REJECTED": 0, "CANCELED": 0, "BACKEND": 1, "OTHER": 0}
        (v2,) = await dataplane.observation.statistics("twice", "2")
        assert v2.failures["OTHER"] == 1 and v2.to_json()["inference_stats"]["fail"]["count"] == 1
        # The statistics extension shows versions only; the metrics also the refusals.
        assert all(s.version for s in await dataplane.observation.statistics())
        # Each model's own entry (version "") also holds its loads: only refusals are compared.
        models_own = [s for s in await dataplane.observation.all_statistics() if not s.version]
        refused = {s.name: s.failures["OTHER"] for s in models_own if s.failures["OTHER"]}
        assert refused == {"twice": 1, "": 2}  # unknown names share one entry


async def test_compute_phases_follow_the_backend_marks(repo):
    settings = Settings(model_repository=repo, host="127.0.0.1", http_port=free_port(),
                        grpc_port=free_port(), plugins=("python",))  # fmt: skip
    async with InProcessServer(settings, [FunctionBackendPlugin]) as server:
        dataplane = server.context.dataplane
        await dataplane.inference.infer(_request("twice", version="1"))
        (v1,) = await dataplane.observation.statistics("twice", "1")
        stats = v1.to_json()["inference_stats"]
        for key in ("success", "queue", "compute_input", "compute_infer", "compute_output"):
            assert stats[key]["count"] == 1 and stats[key]["ns"] > 0, key
        phases = sum(stats[k]["ns"] for k in ("compute_input", "compute_infer", "compute_output"))
        assert stats["queue"]["ns"] + phases <= stats["success"]["ns"]
        (batch,) = v1.to_json()["batch_stats"]
        assert batch["compute_output"] == stats["compute_output"]


def test_phase_clock_without_marks_puts_the_whole_call_in_infer():
    clock = PhaseClock()
    assert clock.split(100, 400) == (0, 300, 0)
    clock.inputs_ready_ns, clock.outputs_started_ns = 150, 390
    assert clock.split(100, 400) == (50, 240, 10)
    clock.inputs_ready_ns = 50  # a mark left from before this call is ignored
    assert clock.split(100, 400) == (0, 300, 0)


def test_histograms_and_protocol_counts_add_up_over_workers_and_loads_do_not():
    one, two = ModelStats("m", "1"), ModelStats("m", "1")
    with scoped("oip_http"):
        one.record_success(120_000)  # 120 us: the 250 us bucket
    with scoped("grps_grpc"):
        two.record_success(7_000_000_000)  # 7 s: the 10 s bucket
        two.record_failure(5, "OTHER")
    one.record_execution(4, 30_000)
    for part in (one, two):
        part.record_load(True)
    total = one.plus(two)
    request = total.histograms["request"]
    assert request.count == 2 and request.sum == 120 + 7_000_000
    cumulative = request.cumulative()
    assert cumulative == sorted(cumulative) and cumulative[-1] == 2
    assert cumulative[request.bounds.index(250)] == 1 and cumulative[request.bounds.index(10_000_000)] == 2
    assert {p: (c.success, c.failure) for p, c in total.protocols.items()} == {
        "oip_http": (1, 0),
        "grps_grpc": (1, 1),
    }
    assert total.batch_sizes.counts[total.batch_sizes.bounds.index(4)] == 1
    assert total.loads == {"success": 1, "failure": 0}  # every worker loads: one operation


@pytest.mark.parametrize("bounds", [[], [0, 5], [5, 5], [10, 2], list(range(1, 100))])
def test_bucket_bounds_are_checked(bounds):
    with pytest.raises(ValueError):
        checked_buckets(bounds)


@contextmanager
def scoped(protocol: str, observed: bool = False) -> Iterator[RequestScope]:
    """Counts made inside run as if a transport edge of ``protocol`` had opened the call."""
    scope = RequestScope(protocol, {}, observed)
    token = current_scope.set(scope)
    try:
        yield scope
    finally:
        current_scope.reset(token)


def test_the_scope_names_the_protocol_and_learns_the_outcome():
    stats = ModelStats("m", "2")
    stats.record_success(1_000)  # no edge opened a scope: a plugin's own call
    with scoped("tfserving_rest", observed=True) as scope:
        stats.record_success(2_000, rows=3)
    assert (scope.model, scope.version, scope.batch_size, scope.ok, scope.failure) == ("m", "2", 3, True, "")
    with scoped("tfserving_rest", observed=True) as failed:
        stats.record_failure(500, "REJECTED")
    assert (failed.ok, failed.failure, failed.counted) == (False, "REJECTED", True)
    with scoped("tfserving_grpc") as quiet:  # shared by every unobserved call: never written
        stats.record_success(3_000)
    assert (quiet.model, quiet.counted) == ("", False)
    counts = {p: (c.success, c.failure) for p, c in stats.protocols.items()}
    assert counts == {"other": (1, 0), "tfserving_rest": (1, 1), "tfserving_grpc": (1, 0)}
