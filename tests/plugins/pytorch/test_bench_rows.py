"""The torchscript rows of `make bench` (benchmarks/torchscript_rows.py on framework_bench.py), without perf_analyzer."""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[3]


def _benchmark(name: str):
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))  # the rows import framework_bench as run.py does
    return importlib.import_module(name)


rows = _benchmark("torchscript_rows")
bench = _benchmark("framework_bench")


def test_rows_are_chosen_by_label_or_by_framework():
    assert [r.label for r in bench.chosen(rows.TORCHSCRIPT, "torchscript")] == [
        "torchscript_mlp http-binary c1",
        "torchscript_mlp http-binary c8",
        "torchscript_mlp grpc c1",
        "torchscript_mlp grpc c8",
    ]
    assert [r.label for r in bench.chosen(rows.TORCHSCRIPT, "grpc c8")] == ["torchscript_mlp grpc c8"]
    assert bench.chosen(rows.TORCHSCRIPT, "simple") == []


def test_bench_repository_holds_a_model_the_bare_rate_can_run(monkeypatch):
    monkeypatch.setattr(bench, "BARE_SECONDS", 0.05)
    repository = bench.build_repository(rows.TORCHSCRIPT)
    try:
        assert (repository / rows.MODEL / "config.pbtxt").read_text() == rows.CONFIG
        call = rows.TORCHSCRIPT.bare(repository / rows.MODEL)
        one, mixed = bench.bare_rate(call, {1: 10}), bench.bare_rate(call, {1: 2, 8: 6})
    finally:
        shutil.rmtree(repository)
    assert one > 0 and mixed > 0
    assert bench.bare_rate(call, {}) == 0.0
