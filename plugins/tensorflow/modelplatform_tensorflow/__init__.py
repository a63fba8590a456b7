"""modelplatform backend for TensorFlow SavedModels."""
