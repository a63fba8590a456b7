"""y = 0.5 * x + 3 (TF Serving's half_plus_three)."""

import numpy as np


class Model:
    def infer(self, inputs):
        x = inputs["x"]
        return {"y": (x * np.float32(0.5) + np.float32(3.0)).astype(np.float32)}
