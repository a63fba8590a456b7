"""Beyond Triton: latency and batch-size histograms, and the per-protocol families.

The latency histograms carry the names of Triton's pending core change #474
(``nv_inference_*_duration_histogram_us``) and Triton's label set; what
Triton has no family for is named ``modelplatform_*``, so a dashboard written
for Triton never sees a label it does not expect. Request and queue
histograms observe each request; the compute ones each backend execution.
"""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform.statistics import ModelStats

from .exposition import Family

#: (family, help, ModelStats.histograms key).
_LATENCY = (
    ("nv_inference_request_duration_histogram_us", "Successful requests by duration, arrival to answer (us)", "request"),
    ("nv_inference_queue_duration_histogram_us", "Requests by time waited before their backend call (us)", "queue"),
    ("nv_inference_compute_input_duration_histogram_us", "Backend executions by input time (us)", "compute_input"),
    ("nv_inference_compute_infer_duration_histogram_us", "Backend executions by model time (us)", "compute_infer"),
    ("nv_inference_compute_output_duration_histogram_us", "Backend executions by output time (us)", "compute_output"),
)  # fmt: skip


def latency_histograms(stats: Sequence[ModelStats]) -> list[Family]:
    """The five ``nv_inference_*_duration_histogram_us`` families."""
    families = [Family(name, "histogram", text) for name, text, _ in _LATENCY]
    for entry in _versions(stats):
        labels = {"model": entry.name, "version": entry.version}
        for family, (_, _, phase) in zip(families, _LATENCY):
            histogram = entry.histograms[phase]
            family.add_histogram(labels, histogram.bounds, histogram.cumulative(), histogram.sum)
    return families


def batch_sizes(stats: Sequence[ModelStats]) -> Family:
    """``modelplatform_inference_batch_size``: rows per backend execution."""
    family = Family(
        "modelplatform_inference_batch_size", "histogram", "Backend executions by batch size (rows)"
    )
    for entry in _versions(stats):
        sizes = entry.batch_sizes
        labels = {"model": entry.name, "version": entry.version}
        family.add_histogram(labels, sizes.bounds, sizes.cumulative(), sizes.sum)
    return family


def protocol_families(stats: Sequence[ModelStats], with_durations: bool = True) -> list[Family]:
    """``modelplatform_requests`` (by outcome) and ``modelplatform_request_duration_seconds``
    (successful requests) for each protocol a version was called on."""
    requests = Family("modelplatform_requests", "counter", "Inference requests by protocol and outcome")
    durations = Family(
        "modelplatform_request_duration_seconds", "histogram",
        "Successful requests by duration, arrival to answer, by protocol (seconds)",
    )  # fmt: skip
    for entry in sorted(stats, key=lambda s: (s.name, s.version)):
        for protocol, counts in sorted(entry.protocols.items()):
            labels = {"model": entry.name, "version": entry.version, "protocol": protocol}
            requests.add({**labels, "outcome": "success"}, counts.success)
            requests.add({**labels, "outcome": "failure"}, counts.failure)
            if entry.version:  # refused before a version: no durations were taken
                histogram = counts.duration
                seconds = [bound / 1e6 for bound in histogram.bounds]
                durations.add_histogram(labels, seconds, histogram.cumulative(), histogram.sum / 1e6)
    return [requests, durations] if with_durations else [requests]


def _versions(stats: Sequence[ModelStats]) -> list[ModelStats]:
    """The versions' entries (not the models' own, version ""), in a stable order."""
    return sorted((s for s in stats if s.version), key=lambda s: (s.name, s.version))
