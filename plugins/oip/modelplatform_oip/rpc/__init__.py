"""oip-grpc: the Open Inference Protocol over gRPC (``inference.GRPCInferenceService``)."""
