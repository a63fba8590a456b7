"""tfserving-rest: TF Serving's REST API under ``/v1``."""
