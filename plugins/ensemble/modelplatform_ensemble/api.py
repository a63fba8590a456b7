"""The ensemble plugin's extension API: the pipeline engine for other plugins (grps DAG).

A plugin that declares a pipeline in its own terms builds a ModelConfig
with ``platform: "ensemble"`` and ``ensemble_scheduling`` steps, checks it
with :func:`wiring` (and :func:`check_step_model` per step), and runs
requests through :class:`Pipeline`: the same engine and errors as a Triton
ensemble, each step a DataPlane request.
"""

from __future__ import annotations

from .engine import Pipeline
from .graph import Wiring, check_step_model, step_name, wiring

__all__ = ["Pipeline", "Wiring", "check_step_model", "step_name", "wiring"]
