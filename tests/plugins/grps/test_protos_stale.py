"""The committed grps_pb2* files are what `make protos` generates from grps.proto."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .conftest import ROOT

PROTO = "protos/modelplatform_grps/protos/grps.proto"
GENERATED = ("grps_pb2.py", "grps_pb2.pyi", "grps_pb2_grpc.py")


def test_generated_code_is_current(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-Iprotos",
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            f"--grpc_python_out={tmp_path}",
            PROTO,
        ],
        cwd=ROOT,
        check=True,
    )
    committed = ROOT / "plugins/grps/modelplatform_grps/protos"
    for name in GENERATED:
        fresh = (tmp_path / "modelplatform_grps/protos" / name).read_text()
        assert fresh == (committed / name).read_text(), f"{name} is stale: run make protos"


def test_wire_names_and_numbers_match_grps() -> None:
    from modelplatform_grps.protos import grps_pb2

    descriptor = grps_pb2.DESCRIPTOR
    assert descriptor.package == "grps.protos.v1"
    service = descriptor.services_by_name["GrpsService"]
    assert [m.name for m in service.methods] == [
        "Predict",
        "PredictStreaming",
        "Online",
        "Offline",
        "CheckLiveness",
        "CheckReadiness",
        "ServerMetadata",
        "ModelMetadata",
    ]
    assert service.methods_by_name["PredictStreaming"].server_streaming
    message = grps_pb2.GrpsMessage.DESCRIPTOR
    assert {f.name: f.number for f in message.fields} == {
        "status": 1,
        "model": 2,
        "bin_data": 3,
        "str_data": 4,
        "gtensors": 5,
        "ndarray": 6,
        "gmap": 7,
    }
    tensor = grps_pb2.GenericTensor.DESCRIPTOR
    assert [(f.name, f.number) for f in tensor.fields][-2:] == [("flat_float64", 11), ("flat_string", 12)]
    assert grps_pb2.DataType.Value("DT_STRING") == 9 and grps_pb2.Status.FAILURE == 2
