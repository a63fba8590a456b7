"""modelplatform's ``openapi`` plugin: OpenAPI 3.1 documents made from every dialect's route
declarations, per dialect, per path prefix and per model, and the ``/docs`` page."""
