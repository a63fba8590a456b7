"""The pytorch backend driven directly: binding rules, datatypes, batches, errors, parameters."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from modelplatform import (  # noqa: E402 - after importorskip: skipped cleanly without torch
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    ModelExecutionError,
    RequestedOutput,
    Tensor,
    Unavailable,
)
from modelplatform.testing import read_model_config  # noqa: E402 - as above
from modelplatform_pytorch import availability  # noqa: E402 - as above
from modelplatform_pytorch.backend import PyTorchBackend  # noqa: E402 - as above

from . import models  # noqa: E402 - imports torch


async def _loaded(folder: Path, instance_index: int = 0) -> PyTorchBackend:
    backend = PyTorchBackend(read_model_config(folder), folder / "1", instance_index)
    await backend.load()
    return backend


def _request(model: str, *tensors: Tensor, outputs: list[str] | None = None) -> InferenceRequest:
    wanted = None if outputs is None else [RequestedOutput(n) for n in outputs]
    return InferenceRequest(model, list(tensors), outputs=wanted)


def _rows(batch: int, seed: int = 0, width: int = 16) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random((batch, width), dtype=np.float32), rng.random((batch, width), dtype=np.float32)


def _ok(result: object) -> InferenceResponse:
    assert isinstance(result, InferenceResponse), result
    return result


@pytest.mark.parametrize("how", ["script", "trace"])
async def test_add_sub_bound_by_argument_names(tmp_path, how):
    backend = await _loaded(models.write_add_sub(tmp_path, how=how))
    a, b = _rows(3)
    (result,) = await backend.execute(
        [_request("add_sub", Tensor.from_array("b", b), Tensor.from_array("a", a))]
    )
    np.testing.assert_allclose(_ok(result).output("OUTPUT__0").data, a + b, rtol=1e-6)
    np.testing.assert_allclose(_ok(result).output("OUTPUT__1").data, a - b, rtol=1e-6)
    assert result.output("OUTPUT__0").datatype == "FP32"
    await backend.unload()


async def test_index_convention_binds_inputs_and_outputs_by_their_number(tmp_path):
    backend = await _loaded(models.write_indexed(tmp_path))
    a, b = _rows(2)
    request = _request("indexed", Tensor.from_array("INPUT__0", a), Tensor.from_array("INPUT__1", b))
    (result,) = await backend.execute([request])
    np.testing.assert_allclose(_ok(result).output("OUTPUT__0").data, a + b, rtol=1e-6)
    np.testing.assert_allclose(_ok(result).output("OUTPUT__1").data, a - b, rtol=1e-6)
    assert backend._model.binding.rule == "name__index"


async def test_configuration_order_binds_names_that_follow_no_rule(tmp_path):
    config = models.ADD_SUB_CONFIG.replace('"a"', '"first"').replace('"b"', '"second"')
    folder = models.save(models.scripted(models.AddSub()), tmp_path, "ordered", config)
    backend = await _loaded(folder)
    a, b = _rows(1)
    (result,) = await backend.execute(
        [_request("ordered", Tensor.from_array("second", b), Tensor.from_array("first", a))]
    )
    np.testing.assert_allclose(_ok(result).output("OUTPUT__1").data, a - b, rtol=1e-6)
    assert backend._model.binding.rule == "configuration order"


async def test_multi_input_model_with_three_datatypes(tmp_path):
    backend = await _loaded(models.write_mixed(tmp_path))
    x = np.array([[1.5, -2.0], [3.0, 4.0]], np.float64)
    scale = np.array([[2.0], [0.5]], np.float64)
    counts = np.array([[1, 2, 3], [10, 20, 30]], np.int64)
    tensors = [
        Tensor.from_array("counts", counts),
        Tensor.from_array("x", x),
        Tensor.from_array("scale", scale),
    ]
    (result,) = await backend.execute([_request("mixed", *tensors)])
    np.testing.assert_array_equal(_ok(result).output("scaled").data, x * scale)
    assert result.output("scaled").datatype == "FP64"
    np.testing.assert_array_equal(result.output("total").data, [[6], [60]])
    assert result.output("total").datatype == "INT64"


async def test_dict_input_gets_every_input_by_name(tmp_path):
    backend = await _loaded(models.write_dict(tmp_path))
    x, y = _rows(2, width=4)
    (result,) = await backend.execute(
        [_request("dict_input", Tensor.from_array("y", y), Tensor.from_array("x", x))]
    )
    np.testing.assert_allclose(_ok(result).output("z").data, x * 2 + y, rtol=1e-6)
    assert backend._model.binding.dict_input


async def test_batch_runs_as_one_forward_and_is_split_in_order(tmp_path):
    backend = await _loaded(models.write_add_sub(tmp_path))
    calls = []
    forward = backend._model.module
    backend._model.module = lambda *args: calls.append(args[0].shape[0]) or forward(*args)
    pairs = [_rows(n, seed) for seed, n in enumerate((1, 3, 2))]
    batch = [_request("add_sub", Tensor.from_array("a", a), Tensor.from_array("b", b)) for a, b in pairs]
    results = await backend.execute(batch)
    assert calls == [6]
    for (a, b), result in zip(pairs, results):
        np.testing.assert_allclose(_ok(result).output("OUTPUT__0").data, a + b, rtol=1e-6)
        assert result.output("OUTPUT__0").shape == a.shape


async def test_requests_asking_for_different_outputs_share_a_batch(tmp_path):
    backend = await _loaded(models.write_add_sub(tmp_path))
    a, b = _rows(2)
    tensors = (Tensor.from_array("a", a), Tensor.from_array("b", b))
    first, second = await backend.execute(
        [_request("add_sub", *tensors, outputs=["OUTPUT__1"]), _request("add_sub", *tensors)]
    )
    assert [t.name for t in _ok(first).outputs] == ["OUTPUT__1"]
    assert [t.name for t in _ok(second).outputs] == ["OUTPUT__0", "OUTPUT__1"]


async def test_a_model_that_raises_fails_only_its_request(tmp_path):
    backend = await _loaded(models.write_raiser(tmp_path))
    good = np.ones((1, 4), np.float32)
    batch = [
        _request("raiser", Tensor.from_array("INPUT__0", good)),
        _request("raiser", Tensor.from_array("INPUT__0", -good)),
        _request("raiser", Tensor.from_array("INPUT__0", good * 2)),
    ]
    first, bad, third = await backend.execute(batch)
    np.testing.assert_allclose(_ok(first).output("OUTPUT__0").data, good * 3)
    assert isinstance(bad, ModelExecutionError)
    assert bad.message == "model 'raiser' failed: TorchScriptError: builtins.ValueError: negative input"
    np.testing.assert_allclose(_ok(third).output("OUTPUT__0").data, good * 6)
    (again,) = await backend.execute([batch[0]])
    np.testing.assert_allclose(_ok(again).output("OUTPUT__0").data, good * 3)


async def test_output_datatype_other_than_configured_fails_the_request(tmp_path):
    config = models.RAISER_CONFIG.replace(
        '"OUTPUT__0" data_type: TYPE_FP32', '"OUTPUT__0" data_type: TYPE_FP16'
    )
    backend = await _loaded(models.save(models.scripted(models.Raiser()), tmp_path, "wrong_type", config))
    (result,) = await backend.execute(
        [_request("wrong_type", Tensor.from_array("INPUT__0", np.ones((1, 4), np.float32)))]
    )
    assert isinstance(result, ModelExecutionError)
    assert "output 'OUTPUT__0' is FP32, the configuration says FP16" in result.message


async def test_strings_travel_as_list_of_str(tmp_path):
    backend = await _loaded(models.write_strings(tmp_path))
    words = np.array([b"hello", "w\u00f6rld".encode()], dtype=object)
    (result,) = await backend.execute([_request("strings", Tensor("INPUT__0", "BYTES", (2,), words))])
    assert list(_ok(result).output("OUTPUT__0").data) == [
        b"HELLO",
        "W\u00f6RLD".encode(),
    ]  # TorchScript upper() is ASCII-only
    assert result.output("OUTPUT__0").datatype == "BYTES"


async def test_bf16_is_reinterpreted_not_converted(tmp_path):
    backend = await _loaded(models.write_bf16(tmp_path))
    values = torch.tensor([[1.5, -2.0, 0.25, 3.0]], dtype=torch.bfloat16)
    bits = values.view(torch.int16).numpy().view(np.uint16)
    (result,) = await backend.execute([_request("bf16", Tensor("INPUT__0", "BF16", (1, 4), bits))])
    out = _ok(result).output("OUTPUT__0")
    assert out.datatype == "BF16" and out.data.dtype == np.uint16
    doubled = torch.from_numpy(out.data.view(np.int16)).view(torch.bfloat16)
    assert doubled.float().tolist() == [[3.0, -4.0, 0.5, 6.0]]


async def test_cpu_outputs_share_memory_with_torch(tmp_path):
    config = models.ADD_SUB_CONFIG + "instance_group [ { kind: KIND_CPU } ]\n"  # also where a GPU is
    backend = await _loaded(models.save(models.scripted(models.AddSub()), tmp_path, "add_sub", config))
    a, b = _rows(2)
    seen = []
    forward = backend._model.module

    def spy(x, y):
        seen.append(x.data_ptr() == a.ctypes.data)
        return forward(x, y)

    backend._model.module = spy
    (result,) = await backend.execute(
        [_request("add_sub", Tensor.from_array("a", a), Tensor.from_array("b", b))]
    )
    assert seen == [True]  # the input reached forward without a copy
    assert _ok(result).output("OUTPUT__0").data.base is not None  # a view of torch's tensor


async def test_default_model_filename_is_honoured(tmp_path):
    folder = models.save(
        models.scripted(models.Raiser()),
        tmp_path,
        "renamed",
        models.RAISER_CONFIG + 'default_model_filename: "weights.torchscript"\n',
        file="weights.torchscript",
    )
    backend = await _loaded(folder)
    (result,) = await backend.execute(
        [_request("renamed", Tensor.from_array("INPUT__0", np.ones((1, 4), np.float32)))]
    )
    np.testing.assert_allclose(_ok(result).output("OUTPUT__0").data, 3.0)


async def test_missing_and_unreadable_files_fail_the_load_with_the_reason(tmp_path):
    folder = models.write_raiser(tmp_path)
    (folder / "1" / "model.pt").unlink()
    with pytest.raises(InvalidArgument, match="model.pt does not exist"):
        await _loaded(folder)
    torch.save(models.Raiser(), folder / "1" / "model.pt")  # a pickled module, not TorchScript
    with pytest.raises(InvalidArgument, match="is not a TorchScript file torch.jit.load can read"):
        await _loaded(folder)


async def test_configuration_that_disagrees_with_forward_fails_the_load(tmp_path):
    config = models.ADD_SUB_CONFIG.replace(', { name: "b" data_type: TYPE_FP32 dims: [ 16 ] }', "")
    folder = models.save(models.scripted(models.AddSub()), tmp_path, "one_input", config)
    with pytest.raises(InvalidArgument, match=r"declares 1 inputs, forward takes 2 \(a, b\)"):
        await _loaded(folder)
    folder = models.save(models.scripted(models.AddSub()), tmp_path, "no_outputs", 'backend: "pytorch"\n')
    with pytest.raises(InvalidArgument, match="needs every input and output declared"):
        await _loaded(folder)


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("INFERENCE_MODE", "maybe", "must be true or false, got 'maybe'"),
        ("INTRA_OP_THREAD_COUNT", "-1", "must be a whole number >= 0, got '-1'"),
        ("INTER_OP_THREAD_COUNT", "two", "must be a whole number >= 0, got 'two'"),
        ("DISABLE_CUDNN", "true", "'DISABLE_CUDNN' = 'true' is not supported by the pytorch backend"),
        ("TORCH_COMPILE_OPTIONAL_PARAMETERS", "{}", "is not supported by the pytorch backend"),
    ],
)
async def test_bad_parameters_fail_the_load_naming_them(tmp_path, key, value, reason):
    config = models.RAISER_CONFIG + f'parameters {{ key: "{key}" value: {{ string_value: "{value}" }} }}\n'
    folder = models.save(models.scripted(models.Raiser()), tmp_path, "params", config)
    with pytest.raises(InvalidArgument, match=reason):
        await _loaded(folder)


@pytest.mark.parametrize("inference_mode", ["true", "false"])
async def test_no_autograd_state_whatever_the_mode(tmp_path, inference_mode):
    config = (
        models.RAISER_CONFIG
        + f'parameters {{ key: "INFERENCE_MODE" value: {{ string_value: "{inference_mode}" }} }}\n'
        + 'parameters { key: "DISABLE_OPTIMIZED_EXECUTION" value: { string_value: "true" } }\n'
        + 'parameters { key: "ENABLE_CACHE_CLEANING" value: { string_value: "true" } }\n'
    )

    class Probe(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            made_here = x * 1.0  # an inference tensor exactly when inference mode is on
            flags = [float(torch.is_grad_enabled()), float(made_here.is_inference()), 0.0, 0.0]
            return torch.tensor([flags]).expand(x.shape[0], 4).contiguous()

    backend = await _loaded(models.save(models.scripted(Probe()), tmp_path, "probe", config))
    assert backend._model.settings.optimized_execution is False
    (result,) = await backend.execute(
        [_request("probe", Tensor.from_array("INPUT__0", np.ones((2, 4), np.float32)))]
    )
    grad, inference = _ok(result).output("OUTPUT__0").data[0, :2]
    assert grad == 0.0
    assert inference == (1.0 if inference_mode == "true" else 0.0)
    assert torch.is_grad_enabled()  # the caller's thread is untouched


def test_thread_counts_are_set_for_the_process(tmp_path):
    """In a fresh interpreter (torch's pools are per process and fixed once used)."""
    import subprocess

    config = (
        models.RAISER_CONFIG
        + 'parameters { key: "INTRA_OP_THREAD_COUNT" value: { string_value: "1" } }\n'
        + 'parameters { key: "INTER_OP_THREAD_COUNT" value: { string_value: "3" } }\n'
    )
    folder = models.save(models.scripted(models.Raiser()), tmp_path, "threads", config)
    script = (
        "import asyncio, sys, torch\n"
        "from pathlib import Path\n"
        "from modelplatform.testing import read_model_config\n"
        "from modelplatform_pytorch.backend import PyTorchBackend\n"
        "folder = Path(sys.argv[1])\n"
        "backend = PyTorchBackend(read_model_config(folder), folder / '1')\n"
        "asyncio.run(backend.load())\n"
        "print(torch.get_num_threads(), torch.get_num_interop_threads())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(folder)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].split() == ["1", "3"]


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="this machine has CUDA: tests/plugins/pytorch/test_gpu.py"
)
async def test_kind_gpu_without_cuda_is_refused_clearly(tmp_path):
    folder = models.save(
        models.scripted(models.Raiser()),
        tmp_path,
        "on_gpu",
        models.RAISER_CONFIG + "instance_group [ { count: 1 kind: KIND_GPU } ]\n",
    )
    with pytest.raises(Unavailable, match=r"instance 0 is KIND_GPU, but torch .* has no CUDA GPU to use"):
        await _loaded(folder)


async def test_without_torch_the_backend_says_why(tmp_path, monkeypatch):
    folder = models.write_raiser(tmp_path)
    monkeypatch.setitem(sys.modules, "torch", None)  # find_spec answers None: as if not installed
    availability.unavailable_reason.cache_clear()
    try:
        assert PyTorchBackend.unavailable_reason() == "torch is not installed (pip install torch==2.13.0)"
        with pytest.raises(Unavailable, match="pytorch backend unavailable: torch is not installed"):
            await _loaded(folder)
    finally:
        availability.unavailable_reason.cache_clear()


def test_dlpack_input_data_goes_in_without_a_copy():
    from modelplatform_pytorch.tensors import as_torch

    class DeviceBuffer:
        """Not a numpy array: only the DLPack protocol (as a CUDA shared-memory window offers)."""

        def __init__(self, tensor):
            self.tensor = tensor

        def __dlpack__(self, **kwargs):
            return self.tensor.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.tensor.__dlpack_device__()

    source = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    value = as_torch(DeviceBuffer(source), "FP32", torch.device("cpu"))
    assert value.data_ptr() == source.data_ptr()
    assert torch.equal(value, source)
    with pytest.raises(TypeError, match="neither a numpy array nor DLPack"):
        as_torch([1.0, 2.0], "FP32", torch.device("cpu"))
