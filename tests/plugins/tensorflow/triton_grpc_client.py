"""tritonclient.grpc against a model, run as a child process (its protos and the server's
share names in protobuf's default pool: they cannot meet in one process).

Usage: python triton_grpc_client.py HOST:PORT MODEL INPUT SHAPE_JSON VALUES_JSON
Prints one JSON object: the model's metadata platform and every output as a list.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import tritonclient.grpc as grpcclient


def main(url: str, model: str, name: str, shape: str, values: str) -> None:
    client = grpcclient.InferenceServerClient(url)
    array = np.array(json.loads(values), dtype=np.float32).reshape(json.loads(shape))
    tensor = grpcclient.InferInput(name, list(array.shape), "FP32")
    tensor.set_data_from_numpy(array)
    result = client.infer(model, [tensor])
    outputs = {o.name: result.as_numpy(o.name).tolist() for o in result.get_response().outputs}
    platform = client.get_model_metadata(model).platform
    print(
        json.dumps({"platform": platform, "version": result.get_response().model_version, "outputs": outputs})
    )


if __name__ == "__main__":
    main(*sys.argv[1:6])
