import itertools
import time

import numpy as np


class Model:
    def infer(self, inputs):
        path = inputs["PROGRESS_FILE"].reshape(-1)[0].decode()
        try:
            for index in itertools.count(1):
                with open(path, "a") as progress:
                    progress.write(f"{index}\n")
                yield {"INDEX": np.array([index], dtype=np.int32)}
                time.sleep(0.02)
        finally:
            with open(path, "a") as progress:
                progress.write("stopped\n")
