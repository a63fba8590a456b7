"""Triton's generate extension: JSON in, flattened JSON or Server-Sent Events out."""
