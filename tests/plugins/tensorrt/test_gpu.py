"""TensorRT on a real GPU (``make test-gpu``): build, serve, compare, load/unload.

An engine is built from the bundled ONNX example with the TensorRT builder
(profile: batch 1..8), served next to the ONNX original, and both must agree.
Skipped with the reason when tensorrt, pycuda or a CUDA GPU is missing.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import urllib.request
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from modelplatform import InferenceRequest, InferenceResponse, InvalidArgument, ModelConfig, Tensor
from modelplatform.testing import ServerProcess
from modelplatform_tensorrt.availability import unavailable_reason
from modelplatform_tensorrt.backend import TensorRTBackend

REASON = unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=f"needs a CUDA GPU: {REASON}")]

ROOT = Path(__file__).resolve().parents[3]
ONNX = ROOT / "model_repository" / "simple_onnx"
INSTALLED = {ep.name for ep in metadata.entry_points(group="modelplatform")}
PLUGINS = ",".join(p for p in ("oip-rest", "onnxruntime", "tensorrt") if p in INSTALLED)
TRT_CONFIG = """
name: "simple_trt"
platform: "tensorrt_plan"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 16 ] }
]
instance_group [ { count: 2 kind: KIND_GPU } ]
"""


def build_plan(onnx_path: Path) -> bytes:
    import tensorrt as trt

    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse(onnx_path.read_bytes()):
        raise AssertionError([parser.get_error(i).desc() for i in range(parser.num_errors)])
    config = builder.create_builder_config()
    profile = builder.create_optimization_profile()
    for name in ("INPUT0", "INPUT1"):
        profile.set_shape(name, (1, 16), (4, 16), (8, 16))
    config.add_optimization_profile(profile)
    plan = builder.build_serialized_network(network, config)
    assert plan is not None, "TensorRT could not build the engine"
    return bytes(plan)


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gpu_repo")
    shutil.copytree(ONNX, root / "simple_onnx")
    (root / "simple_trt" / "1").mkdir(parents=True)
    (root / "simple_trt" / "config.pbtxt").write_text(TRT_CONFIG)
    (root / "simple_trt" / "1" / "model.plan").write_bytes(build_plan(ONNX / "1" / "model.onnx"))
    return root


def _infer(url: str, model: str, a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    body = {
        "inputs": [
            {"name": n, "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}
            for n, x in (("INPUT0", a), ("INPUT1", b))
        ]
    }
    request = urllib.request.Request(f"http://{url}/v2/models/{model}/infer", json.dumps(body).encode())
    with urllib.request.urlopen(request, timeout=60) as response:
        outputs = json.loads(response.read())["outputs"]
    return {o["name"]: np.array(o["data"], np.float32).reshape(o["shape"]) for o in outputs}


def test_served_engine_matches_onnxruntime(repository):
    rng = np.random.default_rng(7)
    with ServerProcess("--model-repository", str(repository), "--plugins", PLUGINS) as server:
        for batch in (1, 3, 8):
            a, b = rng.standard_normal((2, batch, 16), dtype=np.float32)
            trt_out = _infer(server.http_url, "simple_trt", a, b)
            onnx_out = _infer(server.http_url, "simple_onnx", a, b)
            for name in ("OUTPUT0", "OUTPUT1"):
                np.testing.assert_allclose(trt_out[name], onnx_out[name], rtol=1e-5, atol=1e-5)


async def test_two_instances_run_in_parallel_and_bad_request_fails_alone(repository):
    config = ModelConfig.from_json({"name": "simple_trt", "max_batch_size": 8})
    backends = [TensorRTBackend(config, repository / "simple_trt" / "1", i) for i in range(2)]
    try:
        for backend in backends:
            await backend.load()
        a = np.ones((2, 16), np.float32)
        good = InferenceRequest(
            "simple_trt", [Tensor.from_array("INPUT0", a), Tensor.from_array("INPUT1", a)]
        )
        big = np.ones((9, 16), np.float32)
        bad = InferenceRequest(
            "simple_trt", [Tensor.from_array("INPUT0", big), Tensor.from_array("INPUT1", big)]
        )
        first, second = await asyncio.gather(
            backends[0].execute([good, bad, good]), backends[1].execute([good])
        )
        assert isinstance(first[0], InferenceResponse) and isinstance(first[2], InferenceResponse)
        assert isinstance(first[1], InvalidArgument) and "outside the engine's range" in first[1].message
        np.testing.assert_allclose(second[0].output("OUTPUT0").data, 2 * a)
    finally:
        for backend in backends:
            await backend.unload()


async def test_config_beyond_the_profile_fails_load_and_frees(repository):
    config = ModelConfig.from_json({"name": "simple_trt", "max_batch_size": 16})
    backend = TensorRTBackend(config, repository / "simple_trt" / "1")
    with pytest.raises(InvalidArgument, match="max_batch_size 16 is larger than the largest batch"):
        await backend.load()
    assert backend._engine is None  # the engine opened for the check was closed again
    await backend.unload()  # what core does after a failed load: must not raise


async def test_load_unload_loop_keeps_device_memory_flat(repository):
    import pycuda.driver as cuda

    cuda.init()
    context = cuda.Device(0).retain_primary_context()

    def free_bytes() -> int:
        context.push()
        try:
            return cuda.mem_get_info()[0]
        finally:
            cuda.Context.pop()

    config = ModelConfig.from_json({"name": "simple_trt", "max_batch_size": 8})
    a = np.ones((8, 16), np.float32)
    request = InferenceRequest("simple_trt", [Tensor.from_array("INPUT0", a), Tensor.from_array("INPUT1", a)])
    readings = []
    for _ in range(15):
        backend = TensorRTBackend(config, repository / "simple_trt" / "1")
        await backend.load()
        (result,) = await backend.execute([request])
        assert isinstance(result, InferenceResponse)
        await backend.unload()
        readings.append(free_bytes())
    context.detach()
    drift = readings[2] - readings[-1]
    assert drift < 8 * 1024 * 1024, f"device memory fell by {drift} bytes over the loop: {readings}"
