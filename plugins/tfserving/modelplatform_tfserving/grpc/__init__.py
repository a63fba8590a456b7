"""tfserving-grpc: ``tensorflow.serving.PredictionService`` and ``ModelService``."""
