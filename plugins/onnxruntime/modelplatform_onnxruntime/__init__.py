"""modelplatform backend for ONNX models on ONNX Runtime."""
