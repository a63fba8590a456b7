"""``pb_utils.MetricFamily`` on /metrics and ``pb_utils.Tensor`` DLPack (issue 29 point 5), end to end.

Triton python models written against the documented API: one keeps a
counter, a gauge and a histogram and moves its tensors through torch by
DLPack; a ``Model`` in a process instance keeps a counter in its child. A
real server, tritonclient HTTP, and the Prometheus text of the real
metrics port, parsed.
"""

from __future__ import annotations

import textwrap
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from prometheus_client.parser import text_string_to_metric_families

from modelplatform.testing import ServerProcess

TRITON_MODEL = """
import numpy as np
import torch
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        requests = pb_utils.MetricFamily(
            name="custom_requests", description="Requests seen by execute", kind=pb_utils.MetricFamily.COUNTER)
        self.requests = requests.Metric(labels={"model": args["model_name"], "version": "1"})
        level = pb_utils.MetricFamily(
            name="custom_last_sum", description="Sum of the last input", kind=pb_utils.MetricFamily.GAUGE)
        self.level = level.Metric(labels={"model": args["model_name"]})
        sizes = pb_utils.MetricFamily(
            name="custom_input_size", description="Elements per input", kind=pb_utils.MetricFamily.HISTOGRAM)
        self.sizes = sizes.Metric(labels={"model": args["model_name"]}, buckets=[2.0, 4.0, 8.0])
        self.families = (requests, level, sizes)

    def execute(self, requests):
        responses = []
        for request in requests:
            tensor = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            assert tensor.is_cpu()
            doubled = torch.from_dlpack(tensor.to_dlpack()) * 2     # Triton's documented way in
            also = torch.from_dlpack(tensor)                          # and the __dlpack__ protocol
            self.requests.increment(1)
            self.level.set(float(also.sum()))
            self.sizes.observe(float(also.numel()))
            out = pb_utils.Tensor.from_dlpack("OUTPUT0", doubled)     # and back out, no numpy call
            count = pb_utils.Tensor("COUNT", np.array([self.requests.value()], dtype=np.float64))
            responses.append(pb_utils.InferenceResponse([out, count]))
        return responses
"""

TRITON_CONFIG = """
backend: "python"
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] },
  { name: "COUNT" data_type: TYPE_FP64 dims: [ 1 ] }
]
"""

PROCESS_MODEL = """
import triton_python_backend_utils as pb_utils


class Model:
    def load(self):
        family = pb_utils.MetricFamily("custom_child_calls", "Calls a child answered", pb_utils.MetricFamily.COUNTER)
        self.calls = family.Metric(labels={"where": "child"})

    def infer(self, inputs):
        self.calls.increment(3)
        return {"y": inputs["x"]}
"""

PROCESS_CONFIG = """
backend: "python"
input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]
parameters { key: "python.instance_kind" value: { string_value: "process" } }
"""


def _write(root: Path, name: str, model: str, config: str) -> None:
    (root / name / "1").mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(config)
    (root / name / "1" / "model.py").write_text(textwrap.dedent(model))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("custom_metrics")
    _write(root, "dlpack_metrics", TRITON_MODEL, TRITON_CONFIG)
    _write(root, "child_metrics", PROCESS_MODEL, PROCESS_CONFIG)
    with ServerProcess("--model-repository", str(root), timeout=120) as process:
        yield process


def _scrape(server: ServerProcess) -> dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    """family -> (sample name, labels) -> value, from the metrics port's text (the parser
    names a counter's sample ``<family>_total``)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=30) as reply:
        text = reply.read().decode()
    return {
        family.name: {(s.name, tuple(sorted(s.labels.items()))): s.value for s in family.samples}
        for family in text_string_to_metric_families(text)
    }


def _infer(client: httpclient.InferenceServerClient, values: list[float]) -> httpclient.InferResult:
    tensor = httpclient.InferInput("INPUT0", [len(values)], "FP32")
    tensor.set_data_from_numpy(np.array(values, dtype=np.float32))
    return client.infer("dlpack_metrics", [tensor])


def test_tensors_move_through_dlpack_and_metrics_reach_the_metrics_port(server: ServerProcess) -> None:
    with httpclient.InferenceServerClient(server.http_url) as client:
        first = _infer(client, [1.0, 2.0, 3.0])
        second = _infer(client, [0.5] * 6)
    np.testing.assert_allclose(first.as_numpy("OUTPUT0"), [2.0, 4.0, 6.0])
    np.testing.assert_allclose(second.as_numpy("OUTPUT0"), [1.0] * 6)
    assert second.as_numpy("COUNT").tolist() == [2.0]  # Metric.value() as the model reads it
    families = _scrape(server)
    model = ("model", "dlpack_metrics")
    assert families["custom_requests"][("custom_requests_total", (model, ("version", "1")))] == 2.0
    assert families["custom_last_sum"][("custom_last_sum", (model,))] == 3.0
    sizes = families["custom_input_size"]
    buckets = {
        float(dict(labels)["le"]): value
        for (name, labels), value in sizes.items()
        if name.endswith("_bucket")
    }
    assert buckets == {2.0: 0.0, 4.0: 1.0, 8.0: 2.0, float("inf"): 2.0}  # cumulative, as Prometheus reads
    assert sizes[("custom_input_size_count", (model,))] == 2.0
    assert sizes[("custom_input_size_sum", (model,))] == 9.0
    assert "nv_inference_count" in families  # beside the server's own families


def test_a_process_instances_metrics_reach_the_server(server: ServerProcess) -> None:
    with httpclient.InferenceServerClient(server.http_url) as client:
        for _ in range(2):
            tensor = httpclient.InferInput("x", [1], "FP32")
            tensor.set_data_from_numpy(np.array([1.0], dtype=np.float32))
            client.infer("child_metrics", [tensor])
    families = _scrape(server)
    assert families["custom_child_calls"][("custom_child_calls_total", (("where", "child"),))] == 6.0


def test_an_unloaded_models_metrics_leave_the_page(server: ServerProcess) -> None:
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/repository/models/child_metrics/unload", b"", method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert reply.status == 200
    assert "custom_child_calls" not in _scrape(server)
    assert "custom_requests" in _scrape(server)
