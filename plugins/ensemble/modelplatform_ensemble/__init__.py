"""Triton ensembles for modelplatform (the ``ensemble`` backend)."""
