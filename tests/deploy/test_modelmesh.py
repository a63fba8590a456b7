"""ModelMesh's Triton adapter drives the server started with the ServingRuntime's arguments.

The RPCs are the ones the adapter sends (modelmesh_adapter.py says where that was read),
on model folders written the way it writes them, and each answer is Triton's: a ready
runtime, READY models listed by RepositoryIndex(ready=true) under their ids, metadata and
inference by id, a failed load that leaves the runtime ready (ModelMesh runs Triton with
--strict-readiness=false, the ServingRuntime runs this server with --no-strict-readiness),
and unloads that empty the index.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest

from modelplatform.testing import ServerProcess
from modelplatform_oip.protos import grpc_service_pb2 as pb

from ..conftest import MODEL_REPOSITORY
from .manifests import container, find, flag, serve_args
from .modelmesh_adapter import TRITON_MODELS, Adapter, lay_out_file, lay_out_native

SIMPLE_ONNX = MODEL_REPOSITORY / "simple_onnx"
#: simple_onnx's config.pbtxt as the adapter writes it back: without `name`, in Go's
#: prototext (`input: {`, one `dims:` line per value, and the extra space Go adds at random).
CONFIG_WITHOUT_NAME = """platform:  "onnxruntime_onnx"
max_batch_size: 8
input: {
  name: "INPUT0"
  data_type: TYPE_FP32
  dims: 16
}
input: {
  name: "INPUT1"
  data_type: TYPE_FP32
  dims: 16
}
output: {
  name: "OUTPUT0"
  data_type: TYPE_FP32
  dims: 16
}
output: {
  name: "OUTPUT1"
  data_type: TYPE_FP32
  dims: 16
}
"""
FILE_ID = "simple-onnx__isvc-6b2eb0b8bf"
NATIVE_ID = "simple-native__isvc-0c1d2e3f4a"
BROKEN_ID = "broken__isvc-deadbeef00"


def _runtime_args(models: Path, grpc_port: int, http_port: int, metrics_port: int) -> list[str]:
    args = serve_args(container(find("modelmesh", "ServingRuntime")["spec"]))
    local = {
        "--model-repository": models / TRITON_MODELS,
        "--grpc-port": grpc_port,
        "--http-port": http_port,
        "--metrics-port": metrics_port,
    }
    return [f"{a.split('=')[0]}={local[a.split('=')[0]]}" if a.split("=")[0] in local else a for a in args]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    """/models of a ModelMesh pod: the puller's downloads by id, and the adapter's folder."""
    root = tmp_path_factory.mktemp("models")
    (root / TRITON_MODELS).mkdir()  # the runtime's `mkdir -p` in the ServingRuntime
    (root / FILE_ID).mkdir()
    shutil.copy(SIMPLE_ONNX / "1" / "model.onnx", root / FILE_ID / "model.onnx")
    shutil.copytree(SIMPLE_ONNX, root / NATIVE_ID)
    (root / BROKEN_ID).mkdir()
    (root / BROKEN_ID / "model.onnx").write_bytes(b"not an onnx graph")
    return root


@pytest.fixture(scope="module")
def adapter(models) -> Iterator[Adapter]:
    process = ServerProcess()
    process.args = _runtime_args(models, process.grpc_port, process.http_port, process.metrics_port)
    assert flag(process.args, "--model-control-mode") == "explicit"
    with process:
        client = Adapter(process.grpc_port, models)
        yield client
        client.close()


def _infer(adapter: Adapter, model_id: str) -> tuple[np.ndarray, np.ndarray]:
    a = np.arange(16, dtype=np.float32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.float32)
    request = pb.ModelInferRequest(model_name=model_id)
    for name, array in (("INPUT0", a), ("INPUT1", b)):
        request.inputs.add(name=name, datatype="FP32", shape=list(array.shape))
        request.raw_input_contents.append(array.tobytes())
    response = adapter.runtime.ModelInfer(request, timeout=30)
    assert response.model_name == model_id
    outputs = [np.frombuffer(raw, dtype=np.float32) for raw in response.raw_output_contents]
    by_name = dict(zip((o.name for o in response.outputs), outputs))
    return by_name["OUTPUT0"], (a + b).ravel()


def test_runtime_status_is_ready_with_a_version_and_no_models(adapter):
    assert adapter.runtime_status().startswith("READY ")
    assert adapter.runtime_status() != "READY "  # the version comes from ServerMetadata
    assert adapter.ready_models() == []


def test_single_file_layout_loads_lists_describes_and_infers(adapter, models):
    lay_out_file(models, FILE_ID, "onnx", models / FILE_ID / "model.onnx")
    adapter.load(FILE_ID)
    listed = {(m.name, m.version, m.state) for m in adapter.ready_models()}
    assert (FILE_ID, "1", "READY") in listed
    metadata = adapter.runtime.ModelMetadata(pb.ModelMetadataRequest(name=FILE_ID), timeout=10)
    assert metadata.name == FILE_ID and list(metadata.versions) == ["1"]
    assert [(t.name, t.datatype, list(t.shape)) for t in metadata.inputs] == [
        ("INPUT0", "FP32", [-1, 16]),
        ("INPUT1", "FP32", [-1, 16]),
    ]  # completed from the graph
    got, expected = _infer(adapter, FILE_ID)
    np.testing.assert_array_equal(got, expected)


def test_native_layout_without_name_loads_under_the_id(adapter, models):
    lay_out_native(models, NATIVE_ID, models / NATIVE_ID, CONFIG_WITHOUT_NAME)
    assert (models / TRITON_MODELS / NATIVE_ID / "1").is_symlink()
    adapter.load(NATIVE_ID)
    metadata = adapter.runtime.ModelMetadata(pb.ModelMetadataRequest(name=NATIVE_ID), timeout=10)
    assert metadata.name == NATIVE_ID and metadata.platform == "onnxruntime_onnx"
    got, expected = _infer(adapter, NATIVE_ID)
    np.testing.assert_array_equal(got, expected)


def test_failed_load_is_an_error_and_the_runtime_stays_ready(adapter, models):
    lay_out_file(models, BROKEN_ID, "onnx", models / BROKEN_ID / "model.onnx")
    with pytest.raises(grpc.RpcError) as failed:
        adapter.load(BROKEN_ID)
    assert failed.value.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.INTERNAL)
    assert BROKEN_ID in failed.value.details()
    assert adapter.runtime.ServerReady(pb.ServerReadyRequest(), timeout=10).ready
    assert BROKEN_ID not in {m.name for m in adapter.ready_models()}
    everything = adapter.runtime.RepositoryIndex(pb.RepositoryIndexRequest(ready=False), timeout=10)
    broken = next(m for m in everything.models if m.name == BROKEN_ID)
    assert broken.state == "UNAVAILABLE" and broken.reason
    adapter.unload(BROKEN_ID)


def test_unload_removes_the_model_and_a_second_unload_is_harmless(adapter):
    adapter.unload(FILE_ID)
    assert FILE_ID not in {m.name for m in adapter.ready_models()}
    with pytest.raises(grpc.RpcError) as gone:
        _infer(adapter, FILE_ID)
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND
    adapter.unload(FILE_ID)  # ModelMesh may repeat an unload: OK or NOT_FOUND, never another error


def test_runtime_status_purges_every_loaded_model(adapter, models):
    assert NATIVE_ID in {m.name for m in adapter.ready_models()}
    assert adapter.runtime_status().startswith("READY")
    assert adapter.ready_models() == []
    assert list((models / TRITON_MODELS).iterdir()) == []
