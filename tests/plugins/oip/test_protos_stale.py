"""The committed grpc_service code is what `make protos` generates from the .proto."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROTO = "protos/modelplatform_oip/protos/grpc_service.proto"
GENERATED = ROOT / "plugins/oip/modelplatform_oip/protos"
FILES = ("grpc_service_pb2.py", "grpc_service_pb2.pyi", "grpc_service_pb2_grpc.py")


def test_generated_code_is_current(tmp_path):
    command = [
        sys.executable, "-m", "grpc_tools.protoc", "-Iprotos",
        f"--python_out={tmp_path}", f"--pyi_out={tmp_path}", f"--grpc_python_out={tmp_path}", PROTO,
    ]  # fmt: skip
    subprocess.run(command, cwd=ROOT, check=True)
    for name in FILES:
        fresh = (tmp_path / "modelplatform_oip/protos" / name).read_text()
        assert (GENERATED / name).read_text() == fresh, f"{name} is stale: run `make protos`"


def test_wire_names_match_triton():
    from modelplatform_oip.protos import grpc_service_pb2 as pb

    service = pb.DESCRIPTOR.services_by_name["GRPCInferenceService"]
    assert service.full_name == "inference.GRPCInferenceService"
    stream = service.methods_by_name["ModelStreamInfer"]
    assert stream.output_type.name == "ModelStreamInferResponse"
    fields = {f.name: f.number for f in pb.InferParameter.DESCRIPTOR.fields}
    assert fields == {
        "bool_param": 1, "int64_param": 2, "string_param": 3, "double_param": 4, "uint64_param": 5,
    }  # fmt: skip
    reply = {f.name: f.number for f in pb.ModelStreamInferResponse.DESCRIPTOR.fields}
    assert reply == {"error_message": 1, "infer_response": 2}
    assert pb.ModelConfigResponse.DESCRIPTOR.fields_by_name["config"].message_type.full_name == (
        "inference.ModelConfig"
    )
