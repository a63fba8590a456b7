"""modelplatform's ``reflection`` plugin: gRPC server reflection (v1, v1alpha) of every loaded service."""
