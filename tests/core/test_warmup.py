"""Warmup (issue 13, point 4): config ``model_warmup`` samples and the ``warmup_requests`` hook.

The full server runs in process with a test backend that records every
request it executes, with its instance's index, so each test sees exactly
what warmup sent where; a ``fail_on`` parameter makes a sample fail.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
import structlog.testing

from modelplatform import (
    Backend,
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    ModelConfig,
    ModelPlatformError,
    Settings,
    Tensor,
    hookimpl,
)
from modelplatform.models import repository
from modelplatform.testing import InProcessServer, free_port

#: (model, instance index, request) for every execute, in order.
SEEN: list[tuple[str, int, InferenceRequest]] = []
#: What the warmup_requests hook answers, by model name.
PLUGIN_REQUESTS: dict[str, Any] = {}


class RecordingBackend(Backend):
    kind: ClassVar[str] = "recording"

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        results: ExecuteResult = []
        for request in batch:
            SEEN.append((self.config.name, self.instance_index, request))
            if request.id and request.id == self.config.parameters.get("fail_on"):
                results.append(InvalidArgument("the model refused this sample"))
                continue
            results.append(InferenceResponse(request.model_name, "", [Tensor.from_array("Y", np.zeros(1))]))
        return results


class WarmupPlugin:
    @staticmethod
    @hookimpl
    def register_backends(settings: Settings) -> list[type[Backend]]:
        return [RecordingBackend]

    @staticmethod
    @hookimpl
    def warmup_requests(model_name: str, version: int, version_dir: Path, config: ModelConfig) -> Any:
        found = PLUGIN_REQUESTS.get(model_name)
        if isinstance(found, Exception):
            raise found
        return found(version_dir, config) if found else None


INPUTS = """
input [
  { name: "F" data_type: TYPE_FP32 dims: [ 2, 3 ] },
  { name: "I" data_type: TYPE_INT32 dims: [ 4 ] },
  { name: "S" data_type: TYPE_STRING dims: [ 2 ] }
]
output [ { name: "Y" data_type: TYPE_FP64 dims: [ 1 ] } ]
"""


def warmup_input(datatype: str, dims: str, source: str) -> str:
    return f"value {{ data_type: {datatype} dims: {dims} {source} }}"


def sample(name: str, batch_size: int, count: int, f: str, i: str, s: str) -> str:
    inputs = "".join(
        f' inputs {{ key: "{key}" {warmup_input(t, d, src)} }}'
        for key, t, d, src in (
            ("F", "TYPE_FP32", "[ 2, 3 ]", f),
            ("I", "TYPE_INT32", "[ 4 ]", i),
            ("S", "TYPE_STRING", "[ 2 ]", s),
        )
    )
    return f'model_warmup {{ name: "{name}" batch_size: {batch_size} count: {count}{inputs} }}\n'


def write_model(root: Path, name: str, body: str, files: dict[str, bytes] | None = None) -> Path:
    folder = root / name
    (folder / "1").mkdir(parents=True, exist_ok=True)
    (folder / "config.pbtxt").write_text(f'backend: "recording"\n{body}')
    for relative, data in (files or {}).items():
        (folder / "warmup" / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / "warmup" / relative).write_bytes(data)
    return folder


def settings(root: Path) -> Settings:
    return Settings(
        model_repository=root,
        host="127.0.0.1",
        http_port=free_port(),
        grpc_port=free_port(),
        plugins=("python",),
    )


def bytes_file(items: list[bytes]) -> bytes:
    return b"".join(struct.pack("<I", len(item)) + item for item in items)


def seen(model: str) -> list[tuple[int, InferenceRequest]]:
    return [(index, request) for name, index, request in SEEN if name == model]


def reason(server: InProcessServer, model: str) -> str:
    return " ".join(e.reason for e in server.running.models.index() if e.name == model)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    SEEN.clear()
    PLUGIN_REQUESTS.clear()
    return tmp_path


@pytest.mark.hook("warmup_requests")
async def test_every_source_reaches_every_instance_in_order(repo: Path) -> None:
    floats = np.arange(6, dtype="<f4")
    body = (
        "max_batch_size: 8\ninstance_group [ { count: 2 kind: KIND_CPU } ]\n"
        + INPUTS
        + sample("zeros", 3, 2, "zero_data: true", "zero_data: true", "zero_data: true")
        + sample(
            "files", 1, 1, 'input_data_file: "f.bin"', "random_data: true", 'input_data_file: "nested/s.bin"'
        )
    )
    files = {"f.bin": floats.tobytes(), "nested/s.bin": bytes_file([b"hello", b""])}
    write_model(repo, "m", body, files)
    PLUGIN_REQUESTS["m"] = lambda version_dir, config: [
        InferenceRequest(
            "ignored",
            [
                Tensor.from_array("F", np.ones((1, 2, 3), np.float32)),
                Tensor.from_array("I", np.ones((1, 4), np.int32)),
                Tensor("S", "BYTES", (1, 2), np.array([[b"a", b"b"]], dtype=object)),
            ],
            id="from-plugin",
        )
    ]
    async with InProcessServer(settings(repo), [WarmupPlugin]) as server:
        for instance in (0, 1):
            runs = [r for i, r in seen("m") if i == instance]
            assert [r.id for r in runs] == ["zeros", "zeros", "files", "from-plugin"]
            zeros, files_run, plugin_run = runs[0], runs[2], runs[3]
            f, i, s = (zeros.input(n) for n in ("F", "I", "S"))
            assert (f.datatype, f.shape, i.datatype, i.shape, s.datatype, s.shape) == (
                "FP32",
                (3, 2, 3),
                "INT32",
                (3, 4),
                "BYTES",
                (3, 2),
            )
            assert not f.data.any() and not i.data.any() and s.data.tolist() == [[b"", b""]] * 3
            assert files_run.input("F").data.tolist() == [floats.reshape(2, 3).tolist()]
            assert files_run.input("F").data.dtype == np.float32
            assert files_run.input("S").data.tolist() == [[b"hello", b""]]
            random = files_run.input("I").data
            assert random.shape == (1, 4) and random.dtype == np.int32 and (random >= 0).all()
            assert plugin_run.model_name == "m" and plugin_run.model_version == "1"
        stats = await server.context.dataplane.observation.statistics("m")
        [entry] = [s.to_json() for s in stats]
        assert entry["inference_count"] == 0 and entry["execution_count"] == 0  # not inferences
        assert entry["warmup_stats"]["count"] == 8 and entry["warmup_stats"]["ns"] > 0
        await server.context.dataplane.inference.infer(
            InferenceRequest(
                "m",
                [
                    Tensor.from_array("F", np.ones((1, 2, 3), np.float32)),
                    Tensor.from_array("I", np.ones((1, 4), np.int32)),
                    Tensor("S", "BYTES", (1, 2), np.array([[b"a", b"b"]], dtype=object)),
                ],
            )
        )
        assert len(seen("m")) == 9  # the real request came after every warmup run


def _non_batching(source: str, dims: str = "[ 2 ]", key: str = "X", extra: str = "") -> str:
    return (
        'input [ { name: "X" data_type: TYPE_FP32 dims: [ 2 ] } ]\n'
        'output [ { name: "Y" data_type: TYPE_FP64 dims: [ 1 ] } ]\n'
        f'model_warmup {{ name: "s1" {extra} inputs {{ key: "{key}" value {{ data_type: TYPE_FP32 dims: {dims} {source} }} }} }}\n'
    )


BAD_SPECS = {
    "missing file": (
        _non_batching('input_data_file: "nope.bin"'),
        "warmup sample 's1' input 'X': input_data_file 'nope.bin' is not a file",
    ),
    "wrong size": (
        _non_batching('input_data_file: "short.bin"'),
        "warmup sample 's1' input 'X': input_data_file 'short.bin' is 4 bytes, expected 8",
    ),
    "unknown input": (
        _non_batching("zero_data: true", key="Z"),
        "warmup sample 's1' input 'Z': the model has no such input",
    ),
    "outside the folder": (
        _non_batching('input_data_file: "../config.pbtxt"'),
        "warmup sample 's1' input 'X': input_data_file '../config.pbtxt' must be a path inside warmup/",
    ),
    "no data": (
        _non_batching(""),
        "warmup sample 's1' input 'X': needs zero_data, random_data or input_data_file",
    ),
    "free dims": (_non_batching("zero_data: true", dims="[ -1 ]"), "dims [-1] must all be fixed sizes"),
    "wrong shape": (_non_batching("zero_data: true", dims="[ 3 ]"), "warmup sample 's1': "),
    "batch of a non-batching model": (
        _non_batching("zero_data: true", extra="batch_size: 2"),
        "batch_size 2 is over 1",
    ),
    "too many elements": (_non_batching("zero_data: true", dims="[ 100000, 100000 ]"), "element count"),
}


@pytest.mark.parametrize("case", sorted(BAD_SPECS))
async def test_a_bad_warmup_spec_fails_the_load_naming_sample_and_input(repo: Path, case: str) -> None:
    body, expected = BAD_SPECS[case]
    write_model(repo, "bad", body, {"short.bin": b"\0" * 4})
    write_model(repo, "good", _non_batching("zero_data: true"))
    async with InProcessServer(settings(repo), [WarmupPlugin]) as server:
        assert expected in reason(server, "bad")
        assert not server.running.models.is_ready("bad")
        assert server.running.models.is_ready("good")  # other models are untouched
        assert not seen("bad")


async def test_a_failing_warmup_fails_the_load_and_a_reload_keeps_the_old_version(repo: Path) -> None:
    folder = write_model(repo, "m", _non_batching("zero_data: true"))
    async with InProcessServer(settings(repo), [WarmupPlugin]) as server:
        models = server.running.models
        assert models.is_ready("m")
        (folder / "config.pbtxt").write_text(
            'backend: "recording"\nparameters { key: "fail_on" value { string_value: "s1" } }\n'
            + _non_batching("zero_data: true")
        )
        with pytest.raises(
            ModelPlatformError, match="warmup sample 's1' failed on instance 0: the model refused"
        ):
            await models.load("m")
        assert models.is_ready("m")  # the version that warmed up before keeps serving
        assert "warmup sample 's1' failed" in reason(server, "m")
        await models.unload("m")
        with pytest.raises(ModelPlatformError):
            await models.load("m")
        [entry] = [e for e in models.index() if e.name == "m"]
        assert entry.state == "UNAVAILABLE" and "warmup sample 's1' failed on instance 0" in entry.reason


@pytest.mark.hook("warmup_requests")
async def test_plugin_requests_are_checked_and_a_plugin_error_fails_the_load(repo: Path) -> None:
    write_model(repo, "odd", _non_batching("zero_data: true"))
    write_model(repo, "broken", _non_batching("zero_data: true"))
    PLUGIN_REQUESTS["odd"] = lambda version_dir, config: [
        InferenceRequest("odd", [Tensor.from_array("X", np.ones(2, np.int64))], id="record 7")
    ]
    PLUGIN_REQUESTS["broken"] = InvalidArgument("assets.extra/warmup: record 3 is damaged")
    async with InProcessServer(settings(repo), [WarmupPlugin]) as server:
        assert "warmup sample 'record 7': " in reason(server, "odd")
        assert "datatype FP32" in reason(server, "odd")
        assert reason(server, "broken").endswith("assets.extra/warmup: record 3 is damaged")
        assert not seen("odd") and not seen("broken")  # refused before any instance ran it


def test_the_warmup_folder_is_a_known_entry_of_a_model_folder(repo: Path) -> None:
    folder = write_model(repo, "m", _non_batching("zero_data: true"), {"x.bin": b"\0" * 8})
    (folder / "typo").mkdir()
    with structlog.testing.capture_logs() as logs:
        entry = repository.read_model(folder)
    assert entry.versions == (1,)
    assert [e["entry"] for e in logs if e["event"] == "repository_entry_ignored"] == ["typo"]
