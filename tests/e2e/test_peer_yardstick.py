"""The peer rows' yardsticks that run the model (benchmarks/model_only.py, ``canned.py grpc-model``;
benchmarks/required_only.py, ``canned.py grpc-required``) answer what the peer models compute, so
their rates in `make bench --only peer` are those of real work; the second also refuses what does
not fit the model, as the checks it stands for must."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest

from modelplatform.testing import free_port
from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

from ..conftest import ROOT


@pytest.fixture(scope="module", params=["grpc-model", "grpc-required"])
def stub(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[pb_grpc.GRPCInferenceServiceStub]:
    yield from _serving(request.param, tmp_path_factory)


@pytest.fixture(scope="module")
def required(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pb_grpc.GRPCInferenceServiceStub]:
    yield from _serving("grpc-required", tmp_path_factory)


def _serving(
    kind: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[pb_grpc.GRPCInferenceServiceStub]:
    port = free_port()
    with _canned(kind, port, tmp_path_factory):
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield pb_grpc.GRPCInferenceServiceStub(channel)


@contextlib.contextmanager
def _canned(kind: str, port: int, tmp_path_factory: pytest.TempPathFactory, *loops: str) -> Iterator[None]:
    """canned.py serving ``kind`` on ``port`` (``loops``: its optional LOOPS argument)."""
    folder: Path = tmp_path_factory.mktemp("yardstick")
    (folder / "captured.json").write_text("{}")  # only ModelInfer is called here
    (folder / "outputs.json").write_text("{}")
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "canned.py"), kind, str(port), str(folder), *loops],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "canned_started"
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


def _infer(stub: pb_grpc.GRPCInferenceServiceStub, model: str, **arrays: np.ndarray) -> dict[str, np.ndarray]:
    request = pb.ModelInferRequest(model_name=model, id="call-1")
    for name, array in arrays.items():
        datatype = {np.dtype("int32"): "INT32", np.dtype("float32"): "FP32"}[array.dtype]
        request.inputs.add(name=name, datatype=datatype, shape=array.shape)
        request.raw_input_contents.append(array.tobytes())
    reply = stub.ModelInfer(request, timeout=10)
    assert (reply.model_name, reply.model_version, reply.id) == (model, "1", "call-1")
    kinds = {"INT32": np.int32, "FP32": np.float32}
    return {
        output.name: np.frombuffer(raw, kinds[output.datatype]).reshape(tuple(output.shape))
        for output, raw in zip(reply.outputs, reply.raw_output_contents)
    }


def test_simple_answers_the_sum_and_the_difference(stub) -> None:
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)
    outputs = _infer(stub, "simple", INPUT0=a, INPUT1=b)
    assert np.array_equal(outputs["OUTPUT0"], a + b) and np.array_equal(outputs["OUTPUT1"], a - b)


def test_identity_answers_its_input(stub) -> None:
    values = np.linspace(-1, 1, 1000, dtype=np.float32)
    assert np.array_equal(_infer(stub, "identity_fp32", INPUT0=values)["OUTPUT0"], values)


@pytest.mark.parametrize(
    ("datatype", "shape"),
    [("FP32", (1, 16)), ("INT32", (1, 15)), ("INT32", (16,))],
    ids=["type", "dims", "rank"],
)
def test_required_refuses_an_input_that_does_not_fit(required, datatype: str, shape: tuple[int, ...]) -> None:
    request = pb.ModelInferRequest(model_name="simple")
    for name in ("INPUT0", "INPUT1"):
        request.inputs.add(name=name, datatype=datatype, shape=shape)
        request.raw_input_contents.append(bytes(4 * int(np.prod(shape))))
    with pytest.raises(grpc.RpcError) as refused:
        required.ModelInfer(request, timeout=10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "INPUT0" in refused.value.details()


def test_several_loops_and_processes_share_one_port(tmp_path_factory: pytest.TempPathFactory) -> None:
    """benchmarks/grpc_loops.py's shapes: two processes of two loops each on one port answer
    every fresh connection (each may reach any loop) with the model's own answer."""
    port = free_port()
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 5, dtype=np.int32)
    with (
        _canned("grpc-required", port, tmp_path_factory, "2"),
        _canned("grpc-required", port, tmp_path_factory, "2"),
    ):
        for _ in range(8):
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                outputs = _infer(pb_grpc.GRPCInferenceServiceStub(channel), "simple", INPUT0=a, INPUT1=b)
            assert np.array_equal(outputs["OUTPUT0"], a + b) and np.array_equal(outputs["OUTPUT1"], a - b)
