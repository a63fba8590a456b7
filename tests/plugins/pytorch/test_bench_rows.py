"""The torchscript rows of `make bench` (benchmarks/framework_rows.py), without perf_analyzer."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[3]


def _framework_rows():
    spec = importlib.util.spec_from_file_location(
        "bench_framework_rows", ROOT / "benchmarks" / "framework_rows.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


rows = _framework_rows()


def test_rows_are_chosen_by_label_or_by_framework():
    assert [r.label for r in rows.chosen("torchscript")] == [
        "torchscript_mlp http-binary c1",
        "torchscript_mlp http-binary c8",
        "torchscript_mlp grpc c1",
        "torchscript_mlp grpc c8",
    ]
    assert [r.label for r in rows.chosen("grpc c8")] == ["torchscript_mlp grpc c8"]
    assert rows.chosen("simple") == []


def test_bench_repository_holds_a_model_the_bare_rate_can_run(monkeypatch):
    monkeypatch.setattr(rows, "BARE_SECONDS", 0.05)
    repository = rows._repository()
    try:
        assert (repository / rows.MODEL / "config.pbtxt").read_text() == rows.CONFIG
        module = rows._bare_module(repository)
        one, mixed = rows._bare_rate(module, {1: 10}), rows._bare_rate(module, {1: 2, 8: 6})
    finally:
        shutil.rmtree(repository)
    assert one > 0 and mixed > 0
    assert rows._bare_rate(module, {}) == 0.0
