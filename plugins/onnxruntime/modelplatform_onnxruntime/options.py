"""Session settings read from the model configuration's ``parameters``.

Names follow Triton's onnxruntime backend where it has one, so an existing
config.pbtxt keeps its meaning::

    parameters { key: "intra_op_thread_count" value: { string_value: "2" } }
    parameters { key: "inter_op_thread_count" value: { string_value: "1" } }
    parameters { key: "graph_optimization_level" value: { string_value: "basic" } }
    parameters { key: "execution_mode" value: { string_value: "parallel" } }

Thread counts of 0 let ONNX Runtime choose. Parsing is pure so it is tested
without a session; :func:`session_options` applies the result to ``ort``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplatform import InvalidArgument

#: Our names -> onnxruntime.GraphOptimizationLevel members.
GRAPH_LEVELS = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}
EXECUTION_MODES = {"sequential": "ORT_SEQUENTIAL", "parallel": "ORT_PARALLEL"}


@dataclass(frozen=True, slots=True)
class SessionSettings:
    intra_op_threads: int = 0
    inter_op_threads: int = 0
    graph_level: str = "all"
    execution_mode: str = "sequential"


def parse(model: str, parameters: Mapping[str, str]) -> SessionSettings:
    """Read and check the session parameters; unknown keys are left to others."""
    return SessionSettings(
        intra_op_threads=_count(model, parameters, "intra_op_thread_count"),
        inter_op_threads=_count(model, parameters, "inter_op_thread_count"),
        graph_level=_choice(model, parameters, "graph_optimization_level", GRAPH_LEVELS, "all"),
        execution_mode=_choice(model, parameters, "execution_mode", EXECUTION_MODES, "sequential"),
    )


def session_options(ort: Any, settings: SessionSettings) -> Any:
    """An ``ort.SessionOptions`` carrying ``settings``."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = settings.intra_op_threads
    options.inter_op_num_threads = settings.inter_op_threads
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, GRAPH_LEVELS[settings.graph_level])
    options.execution_mode = getattr(ort.ExecutionMode, EXECUTION_MODES[settings.execution_mode])
    return options


def _count(model: str, parameters: Mapping[str, str], key: str) -> int:
    raw = parameters.get(key, "0").strip() or "0"
    if not raw.isdigit():
        raise InvalidArgument(f"model '{model}': parameter '{key}' must be a whole number >= 0, got '{raw}'")
    return int(raw)


def _choice(
    model: str, parameters: Mapping[str, str], key: str, allowed: Mapping[str, str], default: str
) -> str:
    value = parameters.get(key, default).strip().lower() or default
    if value not in allowed:
        raise InvalidArgument(
            f"model '{model}': parameter '{key}' must be one of {sorted(allowed)}, got '{value}'"
        )
    return value
