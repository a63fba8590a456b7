"""modelplatform-shared-memory: Triton's system and CUDA shared-memory extensions."""
