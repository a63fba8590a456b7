"""The committed model_config code is what `make protos` generates from the .proto."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

PROTO = "protos/modelplatform/protos/model_config.proto"
GENERATED = ROOT / "core/modelplatform/protos"
FILES = ("model_config_pb2.py", "model_config_pb2.pyi")


def test_generated_code_is_current(tmp_path):
    command = [sys.executable, "-m", "grpc_tools.protoc", "-Iprotos",
               f"--python_out={tmp_path}", f"--pyi_out={tmp_path}", PROTO]  # fmt: skip
    subprocess.run(command, cwd=ROOT, check=True)
    for name in FILES:
        fresh = (tmp_path / "modelplatform/protos" / name).read_text()
        assert (GENERATED / name).read_text() == fresh, f"{name} is stale: run `make protos`"
