"""Models' lifecycle: the state of every version, loads and unloads by outcome.

States are this worker's view of the index (every worker applies every load
and unload, so they agree once an operation has finished); load and unload
counts come from the models' own counters (version ""), where the
counts of several workers are not added up: each worker applies every
operation, so the highest count is the number of operations.
"""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform import IndexEntry
from modelplatform.statistics import ModelStats

from .exposition import Family

#: Triton's version states, each a series of the state gauge.
STATES = ("READY", "LOADING", "UNLOADING", "UNAVAILABLE")


def state_gauge(index: Sequence[IndexEntry]) -> Family:
    """``modelplatform_model_state``: 1 for the state a version is in, 0 for the others."""
    family = Family("modelplatform_model_state", "gauge", "Version state: 1 for the current state, else 0")
    for entry in index:
        if not entry.version:  # never loaded, or the whole model failed: no version to show
            continue
        for state in STATES:
            labels = {"model": entry.name, "version": entry.version, "state": state}
            family.add(labels, 1 if entry.state == state else 0)
    return family


def operation_counters(stats: Sequence[ModelStats]) -> list[Family]:
    """``modelplatform_model_loads`` and ``modelplatform_model_unloads`` by outcome."""
    loads = Family("modelplatform_model_loads", "counter", "Model loads by outcome (success, failure)")
    unloads = Family("modelplatform_model_unloads", "counter", "Model unloads by outcome (success, failure)")
    for entry in sorted(stats, key=lambda s: s.name):
        if entry.version or not (any(entry.loads.values()) or any(entry.unloads.values())):
            continue
        for family, counts in ((loads, entry.loads), (unloads, entry.unloads)):
            for outcome, count in counts.items():
                family.add({"model": entry.name, "outcome": outcome}, count)
    return [loads, unloads]
