"""modelplatform backend for TorchScript models on PyTorch."""
