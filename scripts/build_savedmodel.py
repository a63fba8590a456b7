"""Build SavedModels with TensorFlow: the bundled ``half_plus_two``, and MLPs for the bench.

    python scripts/build_savedmodel.py                      # model_repository/half_plus_two/00000123
    python scripts/build_savedmodel.py half_plus_two DIR    # the same model into DIR
    python scripts/build_savedmodel.py mlp DIR [FEATURES HIDDEN CLASSES]

``half_plus_two`` is TF Serving's classic test model (its testdata
``saved_model_half_plus_two``), a TF1 graph in TF Serving's layout (no
config.pbtxt: the tensorflow backend reads the signatures), y = 0.5 * x + 2
with three signatures:

- ``serving_default`` (predict): ``x`` -> ``y``, any shape;
- ``classify_x_to_y`` (classify) and ``regress_x_to_y`` (regress): serialized
  ``tf.Example`` messages with a float feature ``x``.

Its folder is zero-padded as in TF Serving's testdata: it is version 123.

``mlp`` is a TF2 module: ``INPUT0`` FP32 [batch, FEATURES] -> ``OUTPUT0`` FP32
[batch, CLASSES], class probabilities (dense FEATURES->HIDDEN, ReLU, dense
HIDDEN->CLASSES, softmax), weights from a fixed seed: the shape of
scripts/build_torchscript_model.py's module, so the bench compares the two.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TARGET = ROOT / "model_repository" / "half_plus_two" / "00000123"
SEED = 0


def _tensorflow() -> Any:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up chatter
    import tensorflow as tf  # only this script, the tests and the bench need it

    return tf


def half_plus_two(version_dir: Path) -> None:
    tf = _tensorflow()
    graph = tf.Graph()
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as session:
        signatures = _half_plus_two_signatures(tf)
        session.run(tf.compat.v1.global_variables_initializer())
        if version_dir.exists():
            shutil.rmtree(version_dir)  # the builder refuses an existing folder
        builder = tf.compat.v1.saved_model.Builder(str(version_dir))
        builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map=signatures)
        builder.save()


def _half_plus_two_signatures(tf: Any) -> dict[str, Any]:
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


def mlp(export_dir: Path, features: int = 16, hidden: int = 32, classes: int = 4) -> None:
    tf = _tensorflow()
    tf.random.set_seed(SEED)
    init = tf.keras.initializers.GlorotUniform(seed=SEED)

    class Mlp(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w1, self.b1 = tf.Variable(init((features, hidden))), tf.Variable(tf.zeros(hidden))
            self.w2, self.b2 = tf.Variable(init((hidden, classes))), tf.Variable(tf.zeros(classes))

        @tf.function(input_signature=[tf.TensorSpec([None, features], tf.float32, name="INPUT0")])
        def serve(self, INPUT0: Any) -> dict[str, Any]:
            hidden_layer = tf.nn.relu(tf.matmul(INPUT0, self.w1) + self.b1)
            return {"OUTPUT0": tf.nn.softmax(tf.matmul(hidden_layer, self.w2) + self.b2, axis=1)}

    module = Mlp()
    tf.saved_model.save(module, str(export_dir), signatures={"serving_default": module.serve})


def main(arguments: list[str]) -> None:
    if not arguments:
        half_plus_two(DEFAULT_TARGET)
    elif arguments[0] == "half_plus_two":
        half_plus_two(Path(arguments[1]))
    elif arguments[0] == "mlp":
        mlp(Path(arguments[1]), *(int(n) for n in arguments[2:5]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
