"""SavedModels exported by TensorFlow for these tests, and one server serving them all.

The exports run in a child process (``savedmodels.py``), so the test process
imports TensorFlow only where a test needs its client. The repository mixes
both layouts and TF Serving's version folder names:

- TF Serving's layout, no config.pbtxt: ``keras/1``, ``multi/00000042``
  (several signatures), ``regress/1700000000`` (a TF2 regression signature),
  ``half_plus_two/1`` (TF Serving's classic TF1 model), ``classifier/1``;
- Triton's layout: ``mlp/1/model.savedmodel`` (``max_batch_size: 64``, dynamic
  batching), ``affine_only/1/model.savedmodel`` (``multi`` with
  ``TF_SIGNATURE_DEF: "affine"``), and one export with two meta graphs served
  twice: ``doubled`` (the ``serve`` graph) and ``tripled`` (``TF_GRAPH_TAG:
  "triple"``).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from modelplatform.testing import ServerProcess

ROOT = Path(__file__).resolve().parents[3]
NO_TENSORFLOW = importlib.util.find_spec("tensorflow") is None

MLP_CONFIG = """platform: "tensorflow_savedmodel"
max_batch_size: 64
dynamic_batching { max_queue_delay_microseconds: 2000 }
"""
TRIPLED_CONFIG = """platform: "tensorflow_savedmodel"
parameters { key: "TF_GRAPH_TAG" value { string_value: "triple" } }
"""
AFFINE_CONFIG = """platform: "tensorflow_savedmodel"
parameters { key: "TF_SIGNATURE_DEF" value { string_value: "affine" } }
"""
EXPORTS = {
    "keras": "keras/1",
    "multi": "multi/00000042",
    "regression": "regress/1700000000",
    "half_plus_two": "half_plus_two/1",
    "classifier": "classifier/1",
    "mlp": "mlp/1/model.savedmodel",
    "two_graphs": "tripled/1/model.savedmodel",
}


def export(root: Path, exports: dict[str, str]) -> None:
    """Each kind of savedmodels.py exported to its path under ``root``, in one child process."""
    arguments = [part for kind, path in exports.items() for part in (kind, str(root / path))]
    command = [sys.executable, "-m", "tests.plugins.tensorflow.savedmodels", *arguments]
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, timeout=300)


@pytest.fixture(scope="session")
def tf_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if NO_TENSORFLOW:
        pytest.skip("tensorflow is not installed (requirements/dev.txt installs it)")
    root = tmp_path_factory.mktemp("tf_repository")
    export(root, EXPORTS)
    (root / "mlp" / "config.pbtxt").write_text(MLP_CONFIG)
    (root / "tripled" / "config.pbtxt").write_text(TRIPLED_CONFIG)
    shutil.copytree(root / "tripled" / "1", root / "doubled" / "1")  # the same export, the serve graph
    shutil.copytree(root / "multi" / "00000042", root / "affine_only" / "1" / "model.savedmodel")
    (root / "affine_only" / "config.pbtxt").write_text(AFFINE_CONFIG)
    return root


@pytest.fixture(scope="module")
def tf_server(tf_repository: Path) -> Iterator[ServerProcess]:
    with ServerProcess("--model-repository", str(tf_repository), timeout=180) as process:
        yield process
