"""The OpenAI-compatible API: /models, /chat/completions, /completions and /embeddings."""
