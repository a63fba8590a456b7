"""Triton's inference families, name for name, from the statistics counters (stats.py).

Every family is labelled ``model`` and ``version`` (the failure family also
``reason``). Requests refused before any version took them (unknown model
or version) are in the model's own counters (version "") and appear in
``nv_inference_request_failure`` only, once there is one; names the server
does not know are counted under model "".
"""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform.statistics import ModelStats

from .exposition import Family

#: (family, help, ModelStats.durations key) of the cumulative latency counters.
_DURATIONS = (
    ("nv_inference_request_duration_us", "Time of successful requests, arrival to answer (us)", "success"),
    ("nv_inference_queue_duration_us", "Time requests waited before their backend call (us)", "queue"),
    ("nv_inference_compute_input_duration_us", "Time backends spent preparing inputs (us)", "compute_input"),
    ("nv_inference_compute_infer_duration_us", "Time backends spent running models (us)", "compute_infer"),
    (
        "nv_inference_compute_output_duration_us",
        "Time backends spent producing outputs (us)",
        "compute_output",
    ),
)


def inference_families(stats: Sequence[ModelStats], counter_latencies: bool = True) -> list[Family]:
    """The ``nv_inference_*`` and ``nv_model_*`` families of these counters."""
    success = Family("nv_inference_request_success", "counter", "Successful inference requests")
    failure = Family("nv_inference_request_failure", "counter", "Failed inference requests, by reason")
    count = Family("nv_inference_count", "counter", "Inferences performed (a batch of n counts n)")
    executions = Family("nv_inference_exec_count", "counter", "Backend executions (a batch counts once)")
    pending = Family("nv_inference_pending_request_count", "gauge", "Requests queued or executing")
    load = Family("nv_model_load_duration_secs", "gauge", "Time the version took to load, warmup included")
    durations = [Family(name, "counter", text) for name, text, _ in _DURATIONS]
    for entry in sorted(stats, key=lambda s: (s.name, s.version)):
        labels = {"model": entry.name, "version": entry.version}
        if not entry.version:  # the model's own counters: refused requests, if any
            _add_failures(failure, labels, entry, only_if_any=True)
            continue
        _add_failures(failure, labels, entry)
        success.add(labels, entry.durations["success"].count)
        count.add(labels, entry.inference_count)
        executions.add(labels, entry.execution_count)
        pending.add(labels, entry.pending)
        load.add(labels, entry.load_ns / 1e9)
        for family, (_, _, key) in zip(durations, _DURATIONS):
            family.add(labels, entry.durations[key].ns // 1000)
    latencies = durations if counter_latencies else []
    return [success, failure, count, executions, *latencies, pending, load]


def _add_failures(
    family: Family, labels: dict[str, str], entry: ModelStats, only_if_any: bool = False
) -> None:
    if only_if_any and not any(entry.failures.values()):
        return
    for reason, value in entry.failures.items():
        family.add({**labels, "reason": reason}, value)


#: Triton's per-model response cache families: (family, help, ModelStats.durations key, count or us).
_CACHE = (
    ("nv_cache_num_hits_per_model", "Number of cache hits per model", "cache_hit", False),
    (
        "nv_cache_hit_duration_per_model",
        "Total cache hit duration per model, in microseconds",
        "cache_hit",
        True,
    ),
    ("nv_cache_num_misses_per_model", "Number of cache misses per model", "cache_miss", False),
    (
        "nv_cache_miss_duration_per_model",
        "Total cache miss (insert+lookup) duration per model, in microseconds",
        "cache_miss",
        True,
    ),
)


def cache_families(stats: Sequence[ModelStats]) -> list[Family]:
    """Triton's ``nv_cache_*_per_model`` counters, for the versions that use the response
    cache (``--cache-config`` and ``response_cache { enable: true }``); none when none do."""
    cached = sorted((s for s in stats if s.version and s.response_cache), key=lambda s: (s.name, s.version))
    if not cached:
        return []
    families = []
    for name, text, key, duration in _CACHE:
        family = Family(name, "counter", text)
        for entry in cached:
            counted = entry.durations[key]
            family.add(
                {"model": entry.name, "version": entry.version},
                counted.ns // 1000 if duration else counted.count,
            )
        families.append(family)
    return families
