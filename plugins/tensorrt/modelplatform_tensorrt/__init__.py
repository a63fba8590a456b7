"""modelplatform backend for TensorRT engines."""
