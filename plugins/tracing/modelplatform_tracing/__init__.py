"""OpenTelemetry spans per inference request (the ``tracing`` plugin)."""
