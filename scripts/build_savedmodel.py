"""Build the bundled SavedModel: TF Serving's classic ``half_plus_two``, in TF Serving's layout.

    python scripts/build_savedmodel.py [VERSION_DIR]

writes ``model_repository/half_plus_two/00000123/`` (``saved_model.pb`` and
``variables/``; no config.pbtxt: the tensorflow backend reads the
signatures), or the given version folder. The model is the one TF Serving
tests itself with (its testdata ``saved_model_half_plus_two``), a TF1 graph:
``y = 0.5 * x + 2`` with three signatures:

- ``serving_default`` (predict): ``x`` -> ``y``, any shape;
- ``classify_x_to_y`` (classify) and ``regress_x_to_y`` (regress): serialized
  ``tf.Example`` messages with a float feature ``x``.

The folder name is zero-padded as in TF Serving's testdata: it is version 123.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TARGET = ROOT / "model_repository" / "half_plus_two" / "00000123"


def build(version_dir: Path) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up chatter
    import tensorflow as tf  # only this script and the tests need it

    graph = tf.Graph()
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as session:
        signatures = _signatures(tf)
        session.run(tf.compat.v1.global_variables_initializer())
        if version_dir.exists():
            shutil.rmtree(version_dir)  # the builder refuses an existing folder
        builder = tf.compat.v1.saved_model.Builder(str(version_dir))
        builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map=signatures)
        builder.save()


def _signatures(tf: Any) -> dict[str, Any]:
    a, b = tf.Variable(0.5, name="a"), tf.Variable(2.0, name="b")
    serialized = tf.compat.v1.placeholder(tf.string, name="tf_example")
    parsed = tf.io.parse_example(serialized, {"x": tf.io.FixedLenFeature([1], tf.float32)})
    x = tf.identity(parsed["x"], name="x")
    y = tf.add(tf.multiply(a, x), b, name="y")
    saved_model = tf.compat.v1.saved_model
    return {
        "serving_default": saved_model.predict_signature_def({"x": x}, {"y": y}),
        "classify_x_to_y": saved_model.classification_signature_def(serialized, None, y),
        "regress_x_to_y": saved_model.regression_signature_def(serialized, y),
    }


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_TARGET)
