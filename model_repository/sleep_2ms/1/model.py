"""Identity that sleeps 2 ms per call; BATCH_ROWS reports how many rows the call held."""

import time

import numpy as np


class Model:
    def infer(self, inputs):
        x = inputs["INPUT0"]
        time.sleep(0.002)
        return {"OUTPUT0": x, "BATCH_ROWS": np.full(x.shape, x.shape[0], dtype=np.int32)}
