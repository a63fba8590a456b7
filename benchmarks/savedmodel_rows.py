"""The SavedModel rows of `make bench`: a SavedModel MLP served, against bare TensorFlow in process.

`savedmodel_mlp` (scripts/build_savedmodel.py ``mlp``, the shape of the
TorchScript rows' module) is served by the tensorflow backend; the bare
ceiling is the same SavedModel loaded here with ``tf.saved_model.load``, its
``serving_default`` signature called with numpy in and numpy out, as the
backend does (framework_bench.py says how the rows are measured). Needs
TensorFlow.

    make bench BENCH_ARGS="--only savedmodel"
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from framework_bench import CLASSES, FEATURES, HIDDEN, BareCall, Framework

MODEL = "savedmodel_mlp"
CONFIG = f"""name: "{MODEL}"
platform: "tensorflow_savedmodel"
max_batch_size: 8
dynamic_batching {{ }}
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
"""


def _build(model_folder: Path) -> None:
    import build_savedmodel  # scripts/: needs TensorFlow, imported only for these rows

    build_savedmodel.mlp(model_folder / "1" / "model.savedmodel", FEATURES, HIDDEN, CLASSES)


def _bare(model_folder: Path) -> BareCall:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    loaded = tf.saved_model.load(str(model_folder / "1" / "model.savedmodel"))
    signature = loaded.signatures["serving_default"]

    def call(rows: np.ndarray) -> None:
        _ = loaded  # held while the signature runs: it owns the variables
        for value in signature(INPUT0=tf.convert_to_tensor(rows)).values():
            value.numpy()

    return call


SAVEDMODEL = Framework("savedmodel", "tensorflow", MODEL, CONFIG, _build, _bare, start_timeout=180)
