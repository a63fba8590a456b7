"""Real SavedModels exported by TensorFlow, for the tensorflow backend's tests and the bench.

Each function writes one export into ``path`` (a version folder, or its
``model.savedmodel/``). Run this module as a script in a subprocess to build
them without importing TensorFlow into the test process:
``python -m tests.plugins.tensorflow.savedmodels <kind> <path>``.
"""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up chatter

import tensorflow as tf

ROOT = Path(__file__).resolve().parents[3]
#: The MLP of the tests: 64 features -> 256 hidden (relu) -> 16 classes, batch dimension first.
MLP_IN, MLP_HIDDEN, MLP_OUT = 64, 256, 16


def keras_model(path: Path) -> None:
    """A Keras functional model (``features`` [None, 4] -> ``score`` [None, 2]), exported by Keras."""
    inputs = tf.keras.Input(shape=(4,), name="features")
    dense = tf.keras.layers.Dense(2, name="score", kernel_initializer="ones", bias_initializer="zeros")
    model = tf.keras.Model(inputs, dense(inputs))
    model.export(str(path), format="tf_saved_model", verbose=False)


class _Shapes(tf.Module):
    """Several signatures: double (default), affine (two inputs) and tf.Example parsing."""

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
    def double(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"y": x * 2.0}

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, 3], tf.float32, name="x"),
            tf.TensorSpec([None, 1], tf.float32, name="bias"),
        ]
    )
    def affine(self, x: tf.Tensor, bias: tf.Tensor) -> dict[str, tf.Tensor]:
        return {
            "sum": tf.reduce_sum(x, axis=1, keepdims=True) + bias,
            "count": tf.ones_like(bias, tf.int64) * 3,
        }

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def parse(self, examples: tf.Tensor) -> dict[str, tf.Tensor]:
        parsed = tf.io.parse_example(examples, {"x": tf.io.FixedLenFeature([1], tf.float32)})
        return {"x_times_ten": parsed["x"] * 10.0}


def multi_signature_module(path: Path) -> None:
    module = _Shapes()
    signatures = {"serving_default": module.double, "affine": module.affine, "parse_examples": module.parse}
    tf.saved_model.save(module, str(path), signatures=signatures)


class _Regressor(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
    def regress(self, inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        parsed = tf.io.parse_example(inputs, {"x": tf.io.FixedLenFeature([1], tf.float32)})
        return {"outputs": parsed["x"] * 3.0 + 1.0}


def regression_module(path: Path) -> None:
    """A TF2 module whose one signature is a regression (method name set as TF Serving reads it)."""
    module = _Regressor()
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.regress})
    updater = tf.compat.v1.saved_model.signature_def_utils.MethodNameUpdater(str(path))
    updater.replace_method_name("serving_default", "tensorflow/serving/regress", tags="serve")
    updater.save()


def _v1_export(path: Path, build: Callable[[], dict[str, Any]]) -> None:
    graph = tf.Graph()
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as session:
        signatures = build()
        session.run(tf.compat.v1.global_variables_initializer())
        builder = tf.compat.v1.saved_model.Builder(str(path))
        builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map=signatures)
        builder.save()


def half_plus_two(path: Path) -> None:
    """TF Serving's classic test model, as the bundled one is built (scripts/build_savedmodel.py)."""
    _script()["half_plus_two"](path)


def _script() -> dict[str, Any]:
    return runpy.run_path(str(ROOT / "scripts" / "build_savedmodel.py"))


def classifier(path: Path) -> None:
    """A classification signature with classes and scores: [x, 1 - x] as ("pos", "neg")."""

    def build() -> dict[str, Any]:
        serialized = tf.compat.v1.placeholder(tf.string, [None], name="tf_example")
        parsed = tf.io.parse_example(serialized, {"x": tf.io.FixedLenFeature([1], tf.float32)})
        scores = tf.concat([parsed["x"], 1.0 - parsed["x"]], axis=1, name="scores")
        classes = tf.tile(tf.constant([["pos", "neg"]]), [tf.shape(scores)[0], 1], name="classes")
        saved_model = tf.compat.v1.saved_model
        return {"serving_default": saved_model.classification_signature_def(serialized, classes, scores)}

    _v1_export(path, build)


def two_graphs(path: Path) -> None:
    """One SavedModel, two meta graphs: ``serve`` doubles ``x``, ``triple`` triples it."""

    def graph(factor: float) -> dict[str, Any]:
        x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
        y = tf.multiply(x, tf.constant(factor), name="y")  # no variable: the graphs share one checkpoint
        return {"serving_default": tf.compat.v1.saved_model.predict_signature_def({"x": x}, {"y": y})}

    builder = tf.compat.v1.saved_model.Builder(str(path))
    for tags, factor in ((["serve"], 2.0), (["triple"], 3.0)):
        with tf.Graph().as_default() as g, tf.compat.v1.Session(graph=g) as session:
            signatures = graph(factor)
            if tags == ["serve"]:
                builder.add_meta_graph_and_variables(session, tags, signature_def_map=signatures)
            else:
                builder.add_meta_graph(tags, signature_def_map=signatures)
    builder.save()


def mlp(path: Path) -> None:
    """The bench's kind of MLP (scripts/build_savedmodel.py), small: 64 features -> 16 classes."""
    _script()["mlp"](path, MLP_IN, MLP_HIDDEN, MLP_OUT)


BUILDERS: dict[str, Callable[[Path], None]] = {
    "keras": keras_model,
    "multi": multi_signature_module,
    "regression": regression_module,
    "half_plus_two": half_plus_two,
    "classifier": classifier,
    "mlp": mlp,
    "two_graphs": two_graphs,
}


def build_all(targets: list[tuple[str, Path]]) -> None:
    for kind, path in targets:
        BUILDERS[kind](path)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    build_all([(arguments[i], Path(arguments[i + 1])) for i in range(0, len(arguments), 2)])
