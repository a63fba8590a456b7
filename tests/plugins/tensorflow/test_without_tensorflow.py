"""Without TensorFlow: the plugin imports, ``platform plugins`` says why, and TF Serving's
dialect loads with every other plugin (its messages never needed TensorFlow's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: Run first in the child: the path finder, except that it finds no ``tensorflow``, as if
#: it were not installed (find_spec answers None, import raises ModuleNotFoundError).
HIDE_TENSORFLOW = """
import importlib.abc, sys
from importlib.machinery import PathFinder
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "tensorflow":
            return None
        return PathFinder.find_spec(name, path, target)
    def find_distributions(self, *args, **kwargs):  # entry points: the plugins' metadata
        return PathFinder.find_distributions(*args, **kwargs)
    def invalidate_caches(self):
        PathFinder.invalidate_caches()
sys.meta_path[:] = [Hide() if finder is PathFinder else finder for finder in sys.meta_path]
"""
ROOT = Path(__file__).resolve().parents[3]


def _child(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", HIDE_TENSORFLOW + code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_plugins_says_why_the_backend_is_unavailable():
    code = """
from modelplatform.composition.cli import main
sys.argv = ["platform", "plugins"]
main()
"""
    out = _child(code)
    line = next(line for line in out.splitlines() if line.startswith("tensorflow "))
    assert "unavailable" in line
    assert "tensorflow is not installed (pip install tensorflow)" in line
    assert "loaded" in next(line for line in out.splitlines() if line.startswith("tfserving-grpc "))


def test_the_plugins_import_without_tensorflow():
    code = """
try:
    import tensorflow
except ModuleNotFoundError:
    pass
else:
    raise SystemExit("tensorflow was not hidden")
import modelplatform_tensorflow.plugin, modelplatform_tfserving.grpc.plugin, modelplatform_tfserving.rest.plugin
from modelplatform_tfserving.protos import serving_apis_pb2
print(serving_apis_pb2.PredictRequest.DESCRIPTOR.full_name, "tensorflow" in sys.modules)
"""
    assert _child(code).split() == ["tensorflow.serving.PredictRequest", "False"]
