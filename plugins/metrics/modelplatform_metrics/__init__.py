"""Prometheus metrics under Triton's names (the ``metrics`` plugin)."""
