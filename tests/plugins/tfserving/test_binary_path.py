"""Extension: the same model over the binary Open Inference Protocol path (large tensors)."""

from __future__ import annotations

import numpy as np
import tritonclient.http as httpclient

from .conftest import HALF
from .http import post


def test_same_model_over_binary_oip(tf_server) -> None:
    x = np.linspace(0, 1, 100_000, dtype=np.float32)
    client = httpclient.InferenceServerClient(tf_server.http_url)
    tensor = httpclient.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x, binary_data=True)
    result = client.infer(HALF, [tensor], outputs=[httpclient.InferRequestedOutput("y", binary_data=True)])
    rest = post(tf_server.http_url, f"/v1/models/{HALF}:predict", {"instances": x[:3].tolist()}).json()
    np.testing.assert_array_equal(result.as_numpy("y"), x * np.float32(0.5) + np.float32(3))
    # REST prints float32 in its shortest round-trip form; both paths agree bit for bit.
    np.testing.assert_array_equal(np.float32(rest["predictions"]), result.as_numpy("y")[:3])
