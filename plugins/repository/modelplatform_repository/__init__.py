"""Triton's Model Repository Extension (index, load, unload) for modelplatform."""
