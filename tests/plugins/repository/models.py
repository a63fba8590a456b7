"""Small python-backend models written into temporary repositories."""

from __future__ import annotations

import json
from pathlib import Path

MODEL_PY = """
import time

import numpy as np


class Model:
    def load(self, config, version_dir):
        params = config.parameters
        time.sleep(float(params.get("load_delay", "0")))  # blocking on purpose: runs in a thread
        if params.get("fail"):
            raise RuntimeError(params["fail"])
        if params.get("log_path"):
            with open(params["log_path"], "a") as log:
                log.write("load\\n")
        self.factor = np.float32(params.get("factor", "1"))
        # Memory the model really holds (pages touched), so a leaked instance shows in RSS.
        self.ballast = np.ones(int(params.get("ballast_mb", "0")) * 262144, dtype=np.float32)

    def infer(self, inputs):
        return {"OUTPUT0": inputs["INPUT0"] * self.factor}
"""


def config_text(name: str, **params: str) -> str:
    lines = "".join(
        f'parameters {{ key: "{k}" value {{ string_value: "{v}" }} }}\n' for k, v in params.items()
    )
    return (
        f'name: "{name}"\nbackend: "python"\nmax_batch_size: 0\n'
        'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
        'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n' + lines
    )


def config_json(**params: str) -> str:
    """The same model as JSON (the load API's ``config``), without a backend: kept from disk."""
    return json.dumps(
        {
            "max_batch_size": 0,
            "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
            "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
            "parameters": {k: {"string_value": v} for k, v in params.items()},
        }
    )


def write_model(root: Path, name: str, version: int = 1, **params: str) -> Path:
    folder = root / name
    (folder / str(version)).mkdir(parents=True, exist_ok=True)
    (folder / "config.pbtxt").write_text(config_text(name, **params))
    (folder / str(version) / "model.py").write_text(MODEL_PY)
    return folder
