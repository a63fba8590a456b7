"""``/embeddings``: every input text in one request to the model, one vector row per text.

The texts go to the model's declared text input (laid out in its shape: a
batching model's batch dimension takes them all), the vectors come back
from its declared output as rows. ``encoding_format: base64`` answers each
vector as the base64 of its little-endian float32 bytes (what the OpenAI
SDK asks for by default and decodes).
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from modelplatform import DataPlane, InferenceRequest, Internal, RequestedOutput

from .bodies import EmbeddingRequest
from .convention import INPUT_TOKENS, EmbeddingModel
from .errors import FieldError
from .tensors import count, input_tensor


def build_request(model: EmbeddingModel, asked: EmbeddingRequest) -> InferenceRequest:
    tensor = input_tensor(model.text_input, model.config.max_batch_size, asked.inputs)
    outputs = [RequestedOutput(model.vector_output.name)]
    if model.config.output_spec(INPUT_TOKENS) is not None:
        outputs.append(RequestedOutput(INPUT_TOKENS))
    return InferenceRequest(model.name, [tensor], outputs=outputs)


async def embed(dataplane: DataPlane, model: EmbeddingModel, asked: EmbeddingRequest) -> dict[str, Any]:
    response = await dataplane.inference.infer(build_request(model, asked))
    vectors = _rows(model, response.output(model.vector_output.name), len(asked.inputs))
    if asked.dimensions is not None and asked.dimensions != vectors.shape[1]:
        raise FieldError(f"Invalid 'dimensions': model '{model.name}' answers {vectors.shape[1]} dimensions "
                         f"and cannot shorten them.", "dimensions", "unsupported_value")  # fmt: skip
    tokens = count(response, INPUT_TOKENS) or 0
    data = [_item(index, row, asked.base64) for index, row in enumerate(vectors)]
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return {"object": "list", "data": data, "model": model.name, "usage": usage}


def _rows(model: EmbeddingModel, tensor: Any, texts: int) -> np.ndarray:
    if tensor is None or tensor.data.size == 0 or tensor.data.size % texts:
        raise Internal(f"model '{model.name}': output '{model.vector_output.name}' does not hold one vector "
                       f"per input ({texts} inputs)")  # fmt: skip
    return np.asarray(tensor.data, dtype=np.float32).reshape(texts, -1)


def _item(index: int, row: np.ndarray, as_base64: bool) -> dict[str, Any]:
    vector: Any = base64.b64encode(row.astype("<f4").tobytes()).decode() if as_base64 else row
    return {"object": "embedding", "index": index, "embedding": vector}
