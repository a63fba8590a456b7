"""Inputs left in device memory reach only backends that read it; every other gets a host copy.

No GPU here: the DeviceArray below lives in host memory and copies with
numpy, standing in for the CUDA copies the shared-memory plugin supplies
(tests/gpu/ runs the real thing). What is under test is the dataplane's
routing: who sees ``Tensor.device``, who sees the values in ``data``.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from modelplatform import (
    DeviceArray,
    InferenceRequest,
    InferenceResponse,
    RequestedOutput,
    Settings,
    Tensor,
    hookimpl,
)
from modelplatform.testing import FunctionBackend, InProcessServer, free_port, function_model

CONFIG = """
name: "{name}"
backend: "{backend}"
input [ {{ name: "A" data_type: TYPE_FP32 dims: [ 4 ] }} ]
output [ {{ name: "B" data_type: TYPE_FP32 dims: [ 4 ] }} ]
{extra}
"""


class DeviceReader(FunctionBackend):
    """Reads inputs where they are: records what it was handed, doubles the values."""

    kind: ClassVar[str] = "device-reader"
    accepts_device_memory: ClassVar[bool] = True
    seen: ClassVar[list[tuple[bool, bool]]] = []

    async def load(self) -> None:
        pass

    async def execute(self, batch):
        answers = []
        for request in batch:
            tensor = request.inputs[0]
            destination = request.outputs[0].device_destination if request.outputs else None
            DeviceReader.seen.append((tensor.device is not None, destination is not None))
            values = tensor.device.to_host() if tensor.device is not None else tensor.data
            answers.append(InferenceResponse(request.model_name, "", [Tensor.from_array("B", values * 2)]))
        return answers


class Plugin:
    @staticmethod
    @hookimpl
    def register_backends(settings):
        return [FunctionBackend, DeviceReader]


def _host_device_array(values: np.ndarray, copies: list[str]) -> DeviceArray:
    memory = values.copy()

    def to_host(array: DeviceArray) -> np.ndarray:
        copies.append("to_host")
        return memory.copy()

    def refuse(*_: object) -> None:
        raise AssertionError("nothing writes into this array")

    return DeviceArray(
        memory.ctypes.data, memory.shape, memory.dtype, 0, to_host, refuse, refuse, owner=memory
    )


def _request(model: str, device: DeviceArray) -> InferenceRequest:
    stand_in = device.stand_in()
    tensor = Tensor("A", "FP32", device.shape, stand_in, device=device)
    output = RequestedOutput("B", device_destination=device)
    return InferenceRequest(model, [tensor], outputs=[output])


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    for name, backend, extra in (
        ("host_model", "function", ""),
        ("device_model", "device-reader", ""),
        ("cached_device_model", "device-reader", "response_cache { enable: true }"),
    ):
        (tmp_path / name / "1").mkdir(parents=True)
        (tmp_path / name / "config.pbtxt").write_text(CONFIG.format(name=name, backend=backend, extra=extra))
    function_model("host_model", lambda inputs: {"B": inputs["A"] * 2})
    DeviceReader.seen.clear()
    return tmp_path


def _settings(repository: Path) -> Settings:
    return Settings(
        model_repository=repository,
        host="127.0.0.1",
        http_port=free_port(),
        grpc_port=free_port(),
        plugins=("python",),
        cache_config=("local,size=1048576",),
    )


def test_the_stand_in_has_the_shape_and_type_and_no_values_to_write():
    array = _host_device_array(np.arange(6, dtype=np.float32).reshape(2, 3), [])
    stand_in = array.stand_in()
    assert stand_in.shape == (2, 3) and stand_in.dtype == np.float32 and stand_in.size == 6
    assert not stand_in.flags.writeable and stand_in.strides == (0, 0)  # no memory behind it
    assert array.nbytes == 24
    interface = array.__cuda_array_interface__
    assert interface["shape"] == (2, 3) and interface["typestr"] == "<f4" and interface["version"] == 3


async def test_a_host_backend_gets_a_host_copy_and_no_device_destination(repository):
    values = np.array([1, 2, 3, 4], dtype=np.float32)
    copies: list[str] = []
    async with InProcessServer(_settings(repository), [Plugin]) as server:
        request = _request("host_model", _host_device_array(values, copies))
        response = await server.context.dataplane.inference.infer(request)
    np.testing.assert_array_equal(response.outputs[0].data, values * 2)  # not the stand-in's zeros
    assert copies == ["to_host"]
    assert request.inputs[0].device is None and request.outputs[0].device_destination is None


async def test_a_device_backend_gets_the_device_array_itself(repository):
    values = np.array([5, 6, 7, 8], dtype=np.float32)
    copies: list[str] = []
    async with InProcessServer(_settings(repository), [Plugin]) as server:
        response = await server.context.dataplane.inference.infer(
            _request("device_model", _host_device_array(values, copies))
        )
    assert DeviceReader.seen == [(True, True)]
    assert copies == ["to_host"]  # the backend's own read, not the dataplane's
    np.testing.assert_array_equal(response.outputs[0].data, values * 2)


async def test_a_cached_model_gets_host_inputs_so_the_key_hashes_the_values(repository):
    copies: list[str] = []
    async with InProcessServer(_settings(repository), [Plugin]) as server:
        infer = server.context.dataplane.inference.infer
        first = await infer(
            _request("cached_device_model", _host_device_array(np.ones(4, np.float32), copies))
        )
        second = await infer(
            _request("cached_device_model", _host_device_array(np.full(4, 3, np.float32), copies))
        )
    np.testing.assert_array_equal(first.outputs[0].data, np.full(4, 2))
    np.testing.assert_array_equal(second.outputs[0].data, np.full(4, 6))  # not the first's cached answer
    assert DeviceReader.seen == [(False, False), (False, False)]
