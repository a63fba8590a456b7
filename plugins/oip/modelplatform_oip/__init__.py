"""Open Inference Protocol plugins for modelplatform."""
