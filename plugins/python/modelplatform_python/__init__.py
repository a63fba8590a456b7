"""modelplatform backend for Python/numpy models."""
