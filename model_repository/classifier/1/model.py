"""Five classes from four features: logits [x0, x1, x2, x3, -mean(x)], SCORES = softmax(logits)."""

import numpy as np


class Model:
    def infer(self, inputs):
        features = inputs["FEATURES"].astype(np.float32)
        logits = np.concatenate([features, -features.mean(axis=1, keepdims=True)], axis=1)
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        return {"SCORES": (exp / exp.sum(axis=1, keepdims=True)).astype(np.float32), "LOGITS": logits}
