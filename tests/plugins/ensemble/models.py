"""Test repositories for ensembles and BLS: the bundled models plus small python models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ...conftest import MODEL_REPOSITORY

#: FP32 in, FP32 out: OUTPUT0 = INPUT0 * factor, after sleeping ``sleep`` seconds (on its thread).
SCALE_PY = """
import pathlib
import time


class Model:
    def load(self, config, version_dir):
        self.factor = float(config.parameters.get("factor", "1"))
        self.sleep = float(config.parameters.get("sleep", "0"))
        self.started = pathlib.Path(version_dir) / "started"

    def infer(self, inputs):
        if self.sleep:
            self.started.touch()  # a test waits for this rather than for a guessed time
        time.sleep(self.sleep)
        return {"OUTPUT0": inputs["INPUT0"] * self.factor}
"""

#: OUTPUT0 = A + B, for any dtype and shape the config declares.
ADD_PY = """
class Model:
    def infer(self, inputs):
        return {"OUTPUT0": inputs["A"] + inputs["B"]}
"""

#: Our own python model API: calls `simple` through ``models`` (given to load), sync and async.
CALLER_PY = """
import numpy as np


class Model:
    def load(self, config, version_dir, models):
        self.models = models

    def infer(self, inputs):
        answer = self.models.infer("simple", {"INPUT0": inputs["INPUT0"], "INPUT1": inputs["INPUT1"]})
        return {"OUTPUT0": answer["OUTPUT0"] + 1, "OUTPUT1": answer["OUTPUT1"] + 1}
"""

#: Calls `simple` only when INPUT1 starts with 99: by then it runs inline on the loop.
SOMETIMES_CALLER_PY = """
class Model:
    def load(self, config, version_dir, models):
        self.models = models
        self.calls = 0

    def infer(self, inputs):
        self.calls += 1
        if inputs["INPUT1"].reshape(-1)[0] != 99:
            return {"OUTPUT0": inputs["INPUT0"], "OUTPUT1": inputs["INPUT1"]}
        answer = self.models.infer("simple", inputs)
        return {"OUTPUT0": answer["OUTPUT0"], "OUTPUT1": answer["OUTPUT1"] * 0 + self.calls}
"""

ASYNC_CALLER_PY = """
class Model:
    def load(self, config, version_dir, models):
        self.models = models

    async def infer(self, inputs):
        answer = await self.models.infer_async("simple", inputs, outputs=["OUTPUT0"])
        return {"OUTPUT0": answer["OUTPUT0"] + 2, "OUTPUT1": inputs["INPUT1"]}
"""

#: Triton BLS: async_exec to `simple`, decoupled exec to `stream_counter`, and an error path.
TRITON_BLS_PY = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def execute(self, requests):
        responses = []
        for request in requests:
            count = pb_utils.get_input_tensor_by_name(request, "COUNT").as_numpy()
            target = request.parameters()
            streamed = pb_utils.InferenceRequest(
                model_name="stream_counter", requested_output_names=["INDEX"],
                inputs=[pb_utils.Tensor("COUNT", count)])
            indexes = []
            async for response in await streamed.async_exec(decoupled=True):
                if response.has_error():
                    raise pb_utils.TritonModelException(response.error().message())
                if response.output_tensors():
                    indexes.append(int(pb_utils.get_output_tensor_by_name(response, "INDEX").as_numpy().reshape(-1)[0]))
            missing = pb_utils.InferenceRequest(model_name="no_such_model", requested_output_names=["X"],
                                                inputs=[pb_utils.Tensor("COUNT", count)])
            failed = await missing.async_exec()
            message = failed.error().message() if failed.has_error() else ""
            out = [pb_utils.Tensor("INDEXES", np.array(indexes, dtype=np.int32)),
                   pb_utils.Tensor("ERROR", np.array([message.encode()], dtype=np.object_))]
            responses.append(pb_utils.InferenceResponse(output_tensors=out))
        return responses
"""

SYNC_DECOUPLED_PY = (
    TRITON_BLS_PY.replace("async def execute", "def execute")
    .replace(
        "async for response in await streamed.async_exec(decoupled=True)",
        "for response in streamed.exec(decoupled=True)",
    )
    .replace("await missing.async_exec()", "missing.exec()")
)


#: Triton BLS reading a Triton decoupled model (response sender) with exec(decoupled=True).
WORDS_BLS_PY = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "TEXT")
            call = pb_utils.InferenceRequest(
                model_name="word_stream", requested_output_names=["text_output"],
                inputs=[pb_utils.Tensor("text_input", text.as_numpy())])
            words = []
            for response in call.exec(decoupled=True):
                if response.has_error():
                    raise pb_utils.TritonModelException(response.error().message())
                out = pb_utils.get_output_tensor_by_name(response, "text_output")
                if out is not None:
                    words.append(out.as_numpy().reshape(-1)[0])
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("WORDS", np.array(words, dtype=np.object_))]))
        return responses
"""


def python_model(root: Path, name: str, source: str, config: str) -> Path:
    folder = root / name
    (folder / "1").mkdir(parents=True)
    (folder / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n{config}')
    (folder / "1" / "model.py").write_text(source)
    return folder


def scale_model(root: Path, name: str, factor: float, sleep: float = 0.0) -> Path:
    config = (
        "max_batch_size: 0\n"
        'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
        'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
        f'parameters {{ key: "factor" value {{ string_value: "{factor}" }} }}\n'
        f'parameters {{ key: "sleep" value {{ string_value: "{sleep}" }} }}\n'
    )
    return python_model(root, name, SCALE_PY, config)


def step(model: str, inputs: dict[str, str], outputs: dict[str, str]) -> dict[str, Any]:
    return {"model_name": model, "model_version": -1, "input_map": inputs, "output_map": outputs}


def fp32(name: str) -> dict[str, Any]:
    return {"name": name, "data_type": "TYPE_FP32", "dims": [-1]}


def ensemble_json(inputs: list[str], outputs: list[str], steps: list[dict[str, Any]], **extra: Any) -> dict:
    """Triton's JSON form of an FP32 ensemble (what the load API's ``config`` carries)."""
    return {
        "platform": "ensemble",
        "max_batch_size": 0,
        "input": [fp32(n) for n in inputs],
        "output": [fp32(n) for n in outputs],
        "ensemble_scheduling": {"step": steps, **extra},
    }


def ensemble_model(root: Path, name: str, config: dict[str, Any]) -> Path:
    """An ensemble folder; its config.pbtxt is written as Triton's JSON turned into text format."""
    from google.protobuf import json_format, text_format

    from modelplatform.protos import model_config_pb2

    folder = root / name
    (folder / "1").mkdir(parents=True)
    proto = json_format.ParseDict({"name": name, **config}, model_config_pb2.ModelConfig())
    (folder / "config.pbtxt").write_text(text_format.MessageToString(proto))
    return folder


def make_repository(root: Path) -> Path:
    for name in ("simple", "simple_ensemble", "bls_simple", "stream_counter", "identity_fp32", "word_stream"):
        shutil.copytree(MODEL_REPOSITORY / name, root / name)
    scale_model(root, "double_slow", 2.0, sleep=0.6)
    scale_model(root, "triple_slow", 3.0, sleep=0.6)
    scale_model(root, "tenfold", 10.0)
    scale_model(root, "double_slower", 2.0, sleep=1.5)
    ensemble_model(
        root,
        "fan_out",
        ensemble_json(
            ["IN"],
            ["TWICE", "THRICE"],
            [
                step("double_slow", {"INPUT0": "IN"}, {"OUTPUT0": "TWICE"}),
                step("triple_slow", {"INPUT0": "IN"}, {"OUTPUT0": "THRICE"}),
            ],
        ),
    )
    ensemble_model(
        root,
        "slow_chain",
        ensemble_json(
            ["IN"],
            ["OUT"],
            [
                step("double_slower", {"INPUT0": "IN"}, {"OUTPUT0": "MID"}),
                step("tenfold", {"INPUT0": "MID"}, {"OUTPUT0": "OUT"}),
            ],
        ),
    )
    ensemble_model(
        root,
        "bad_ensemble",
        ensemble_json(["IN"], ["OUT"], [step("tenfold", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})]),
    )
    int32_pair = (
        "max_batch_size: 8\n"
        'input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },'
        ' { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]\n'
        'output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },'
        ' { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]\n'
    )
    python_model(root, "caller", CALLER_PY, int32_pair)
    python_model(root, "async_caller", ASYNC_CALLER_PY, int32_pair)
    python_model(root, "sometimes_caller", SOMETIMES_CALLER_PY, int32_pair)
    process_kind = 'parameters { key: "python.instance_kind" value { string_value: "process" } }\n'
    python_model(root, "process_caller", CALLER_PY, int32_pair + process_kind)
    counter_bls = (
        "max_batch_size: 0\n"
        'input [ { name: "COUNT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
        'output [ { name: "INDEXES" data_type: TYPE_INT32 dims: [ -1 ] },'
        ' { name: "ERROR" data_type: TYPE_STRING dims: [ 1 ] } ]\n'
    )
    python_model(root, "bls_stream_async", TRITON_BLS_PY, counter_bls)
    python_model(root, "bls_stream_sync", SYNC_DECOUPLED_PY, counter_bls)
    python_model(
        root,
        "bls_words",
        WORDS_BLS_PY,
        (
            "max_batch_size: 0\n"
            'input [ { name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] } ]\n'
            'output [ { name: "WORDS" data_type: TYPE_STRING dims: [ -1 ] } ]\n'
        ),
    )
    return root


def config_text(config: dict[str, Any]) -> str:
    return json.dumps(config)
