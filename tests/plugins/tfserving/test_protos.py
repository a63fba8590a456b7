"""The committed generated code matches protos/modelplatform_tfserving (make protos)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROTOS = ROOT / "protos"
PACKAGE = "modelplatform_tfserving/protos"
GENERATED = ROOT / "plugins" / "tfserving" / PACKAGE


def _protoc(out: Path, *args: str) -> None:
    command = [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTOS}", *args]
    subprocess.run(command, check=True, cwd=ROOT, capture_output=True)


def test_generated_code_is_current(tmp_path: Path) -> None:
    sources = sorted(str(p) for p in (PROTOS / PACKAGE).glob("*.proto"))
    _protoc(tmp_path, f"--python_out={tmp_path}", f"--pyi_out={tmp_path}", *sources)
    _protoc(tmp_path, f"--grpc_python_out={tmp_path}", str(PROTOS / PACKAGE / "services.proto"))
    private_pool = [sys.executable, str(ROOT / "scripts" / "private_proto_pool.py")]
    subprocess.run([*private_pool, str(tmp_path / PACKAGE), "modelplatform_tfserving.protos"], check=True)
    fresh = {p.name: p.read_text() for p in (tmp_path / PACKAGE).iterdir()}
    committed = {
        p.name: p.read_text()
        for p in GENERATED.iterdir()
        if p.name != "__init__.py" and p.is_file() and p.suffix in (".py", ".pyi")
    }
    assert fresh.keys() == committed.keys()
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"run `make protos`: {stale} are stale"
