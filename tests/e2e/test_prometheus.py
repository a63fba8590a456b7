"""A real Prometheus (Debian's, installed by `make test`) scrapes a real server every second
while traffic runs; then the PromQL of Triton's Kubernetes dashboard and autoscaler, a
histogram_quantile over our latency histogram, and every query of the committed Grafana
dashboard run through Prometheus's HTTP API and must return plausible data.

The dashboard's queries run as Triton wrote them, with their 30 s and 1 m ranges: rate() and
delta() need two samples in the range, not a full range, so a few 1 s scrapes suffice.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from modelplatform.testing import ServerProcess, free_port

from ..conftest import MODEL_REPOSITORY
from ..plugins.metrics.scraping import BAD_INPUT, OIP_BODY, call, dashboard_queries, oip_grpc_infer

pytestmark = pytest.mark.skipif(
    shutil.which("prometheus") is None, reason="the prometheus binary is missing (`make test` installs it)"
)

POD = "modelplatform-0"  # the label Kubernetes discovery would add; Triton's dashboard groups by it
#: Triton's deploy/k8s-onprem dashboard, query for query (GPU panels: only where a GPU answers).
TRITON_DASHBOARD = {
    "count(count(nv_inference_count) by (instance))": "one",
    "sum by (pod) (rate(nv_inference_count[1m])) / ignoring(pod) group_left sum (rate(nv_inference_count[1m]))": "one",
    "sum(nv_inference_request_success) by (pod)": "positive",
    "sum(nv_inference_request_failure) by (pod)": "positive",
    "sum(rate(nv_inference_compute_infer_duration_us[30s])) by (model) / 1000": "positive",
    "avg(rate(nv_inference_queue_duration_us[30s])/(1+rate(nv_inference_request_success[30s]))) by (pod)": "latency_us",
    "nv_cpu_memory_used_bytes": "positive",
    "nv_cpu_utilization * 100": "percent",
}
#: Triton's autoscaler (deploy/k8s-onprem/values.yaml, prometheus-adapter) and our p99.
AUTOSCALER = "avg(delta(nv_inference_queue_duration_us[30s])/(1+delta(nv_inference_request_success[30s])))"
P99 = "histogram_quantile(0.99, sum by (le) (rate(nv_inference_request_duration_histogram_us_bucket[30s])))"


class Prometheus:
    def __init__(self, base: str) -> None:
        self.base = base

    def get(self, path: str, **params: str) -> dict:
        url = f"{self.base}{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=30) as reply:
            return json.loads(reply.read())

    def query(self, promql: str) -> list[tuple[dict, float]]:
        answer = self.get("/api/v1/query", query=promql)
        assert answer["status"] == "success", (promql, answer)
        return [(series["metric"], float(series["value"][1])) for series in answer["data"]["result"]]


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with ServerProcess("--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple") as running:
        yield running


@pytest.fixture(scope="module")
def prometheus(server: ServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    folder = tmp_path_factory.mktemp("prometheus")
    config = folder / "prometheus.yml"
    config.write_text(_scrape_config(server.metrics_port))
    port = free_port()
    command = ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={folder / 'data'}",
               f"--web.listen-address=127.0.0.1:{port}"]  # fmt: skip
    log = (folder / "prometheus.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_ready(port, process, folder / "prometheus.log")
        yield Prometheus(f"http://127.0.0.1:{port}")
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _scrape_config(metrics_port: int) -> str:
    return f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: modelplatform
    static_configs:
      - targets: ["127.0.0.1:{metrics_port}"]
        labels:
          pod: {POD}
"""


def _wait_ready(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"prometheus exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"prometheus not ready in 60 s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def loaded(server: ServerProcess, prometheus: Prometheus) -> Iterator[Prometheus]:
    """Traffic (OIP HTTP and gRPC, a bad request in every ten) until Prometheus holds at least
    six scrapes with traffic in them; the traffic goes on while the tests query."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def drive() -> None:
        sent = 0
        while not stop.is_set():
            try:
                body = BAD_INPUT if sent % 10 == 9 else OIP_BODY
                call(server.http_port, "POST", "/v2/models/simple/infer", body)
                if sent % 5 == 0:
                    oip_grpc_infer(server, 1)
            except BaseException as error:  # noqa: BLE001 - reported by the test, not lost in a thread
                errors.append(error)
                return
            sent += 1
            time.sleep(0.01)

    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    try:
        _wait_for_scrapes(prometheus, 6)
        yield prometheus
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not errors, errors


def _wait_for_scrapes(prometheus: Prometheus, wanted: int) -> None:
    query = 'count_over_time(nv_inference_request_success{model="simple"}[1m]) and nv_inference_request_success > 0'
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = prometheus.query(query)
        if found and found[0][1] >= wanted:
            return
        time.sleep(0.5)
    targets = prometheus.get("/api/v1/targets")
    raise AssertionError(f"fewer than {wanted} scrapes with traffic in 120 s: {targets}")


def _check(kind: str, promql: str, result: list[tuple[dict, float]]) -> None:
    assert result, f"no data: {promql}"
    for labels, number in result:
        assert math.isfinite(number), (promql, labels, number)
        if kind == "one":
            assert number == pytest.approx(1.0), (promql, number)
        elif kind == "positive":
            assert number > 0, (promql, labels, number)
        elif kind == "percent":
            assert 0 <= number <= 100, (promql, number)
        elif kind == "latency_us":  # a queue wait per request on an idle CPU model: under a second
            assert 0 <= number < 1_000_000, (promql, number)


@pytest.mark.parametrize("promql", list(TRITON_DASHBOARD))
def test_tritons_dashboard_queries_return_data(loaded: Prometheus, promql: str):
    _check(TRITON_DASHBOARD[promql], promql, loaded.query(promql))


def test_the_dashboard_groups_by_pod_and_model(loaded: Prometheus):
    assert [labels for labels, _ in loaded.query("sum(nv_inference_request_success) by (pod)")] == [
        {"pod": POD}
    ]
    by_model = loaded.query("sum(rate(nv_inference_compute_infer_duration_us[30s])) by (model) / 1000")
    assert [labels for labels, _ in by_model] == [{"model": "simple"}]


def test_tritons_autoscaler_query(loaded: Prometheus):
    result = loaded.query(AUTOSCALER)
    _check("latency_us", AUTOSCALER, result)


def test_p99_from_the_request_histogram(loaded: Prometheus):
    [(_, p99)] = loaded.query(P99)
    # Between the smallest bucket's bound and 10 s: an idle toy model answers well inside.
    assert 0 < p99 <= 10_000_000, p99
    [(_, p50)] = loaded.query(P99.replace("0.99", "0.5"))
    assert p50 <= p99


def test_every_grafana_dashboard_query_runs(loaded: Prometheus):
    for template in dashboard_queries():
        promql = template.replace("$__rate_interval", "30s")
        result = loaded.query(promql)  # a query Prometheus rejects fails here
        if "nv_gpu_" in promql or "modelplatform_model_unloads" in promql:
            continue  # no GPU on this machine; nothing was unloaded: empty is right
        assert result, f"no data: {promql}"
