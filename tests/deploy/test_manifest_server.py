"""The server started with the exact arguments and environment the manifests give it.

Only the ports (to free ones: tests never use fixed ports) and the model repository path
(to a folder here) are replaced. Every probe of the container must answer 200 on the port
it names, the metrics annotation must lead to Prometheus text, gRPC must answer on the
gRPC port, and a SIGTERM must turn readiness false at once while liveness stays up, then
end the process well inside terminationGracePeriodSeconds.
"""

from __future__ import annotations

import http.client
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

from ..conftest import MODEL_REPOSITORY
from ..http_wire import get_status
from .manifests import container, find, flag, serve_args

PORT_FLAGS = ("--http-port", "--grpc-port", "--metrics-port")


def _fetch(port: int, path: str) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode(errors="replace")
    finally:
        connection.close()


class ManifestServer:
    """A ServerProcess whose arguments are a container's, with free ports and a local repository."""

    def __init__(self, spec: dict[str, Any], repository: Path) -> None:
        self.spec = spec
        self.process = ServerProcess(env={e["name"]: e["value"] for e in spec.get("env", [])})
        args = serve_args(spec)
        free = dict(
            zip(
                PORT_FLAGS,
                (self.process.http_port, self.process.grpc_port, self.process.metrics_port),
            )
        )
        #: manifest port -> the free port standing in for it
        self.ports = {int(flag(args, name)): port for name, port in free.items()}
        self.process.args = [self._local(a, free, repository) for a in args]

    @staticmethod
    def _local(arg: str, free: dict[str, int], repository: Path) -> str:
        name = arg.split("=", 1)[0]
        if name in free:
            return f"{name}={free[name]}"
        if name == "--model-repository":
            return f"{name}={repository}"
        return arg

    def port(self, port: int | str) -> int:
        """A probe's port (a number or a container port name) on this machine."""
        if isinstance(port, str):
            port = next(p["containerPort"] for p in self.spec["ports"] if p["name"] == port)
        return self.ports[port]

    def probe(self, kind: str) -> bool:
        """Whether the kubelet would count this probe a success (an HTTP status in 200-399)."""
        get = self.spec[kind]["httpGet"]
        return 200 <= get_status(self.port(get["port"]), get["path"]) < 400


def _grpc_ready(port: int) -> bool:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        return stub.ServerReady(pb.ServerReadyRequest(), timeout=10).ready


def _wait_ready(server: ManifestServer, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not server.probe("readinessProbe"):
        assert time.monotonic() < deadline, server.process.log()
        time.sleep(0.2)


@pytest.fixture
def onnx_repository(tmp_path) -> Path:
    shutil.copytree(MODEL_REPOSITORY / "simple_onnx", tmp_path / "simple_onnx")
    return tmp_path


def test_deployment_args_answer_probes_metrics_and_drain(onnx_repository):
    deployment = find("overlays/cpu", "Deployment")["spec"]["template"]
    spec = container(deployment["spec"])
    server = ManifestServer(spec, onnx_repository)
    with server.process:
        _wait_ready(server)
        assert server.probe("startupProbe") and server.probe("livenessProbe")
        annotations = deployment["metadata"]["annotations"]
        status, text = _fetch(
            server.port(int(annotations["prometheus.io/port"])), annotations["prometheus.io/path"]
        )
        assert status == 200 and "nv_inference_request_success" in text
        assert _grpc_ready(server.port("grpc"))

        grace = deployment["spec"]["terminationGracePeriodSeconds"]
        stopped_at = time.monotonic()
        server.process.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        # Drain: out of the Service at once, not restarted by the kubelet, still serving.
        assert not server.probe("readinessProbe")
        assert server.probe("livenessProbe")
        assert server.process.process.wait(timeout=grace) == 0
        elapsed = time.monotonic() - stopped_at
        assert float(flag(serve_args(spec), "--drain-delay-secs")) <= elapsed < grace


@pytest.mark.parametrize("name", ["modelplatform", "modelplatform-gpu"])
def test_kserve_runtime_args_answer_probes_and_the_metrics_annotation(name, onnx_repository):
    spec = find("kserve", "ClusterServingRuntime", name)["spec"]
    server = ManifestServer(container(spec), onnx_repository)
    with server.process:
        _wait_ready(server)
        assert server.probe("livenessProbe")
        port = server.port(int(spec["annotations"]["prometheus.kserve.io/port"]))
        status, text = _fetch(port, spec["annotations"]["prometheus.kserve.io/path"])
        assert status == 200 and "nv_inference_request_success" in text
        assert _grpc_ready(server.port(9000))  # the h2c port of the gRPC InferenceService
