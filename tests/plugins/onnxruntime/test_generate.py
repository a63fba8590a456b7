"""The committed simple_onnx graph is what scripts/make_simple_onnx.py writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")

ROOT = Path(__file__).resolve().parents[3]


def test_committed_model_matches_generator(tmp_path):
    out = tmp_path / "model.onnx"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_simple_onnx.py"), str(out)], check=True)
    fresh = onnx.load(str(out))
    committed = onnx.load(str(ROOT / "model_repository" / "simple_onnx" / "1" / "model.onnx"))
    assert fresh.graph == committed.graph
    assert [o.version for o in fresh.opset_import] == [o.version for o in committed.opset_import]
