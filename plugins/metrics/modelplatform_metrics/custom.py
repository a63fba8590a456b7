"""The families model code defines at run time (Triton's custom metrics), as exposition families.

They come from the process's registry (``modelplatform.statistics.custom_metrics``)
and are printed after the server's own ``nv_*`` families, as Triton prints them
beside its own: a counter or gauge one sample per label set, a histogram its
``_bucket`` series (``le``), ``_sum`` and ``_count``.
"""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform.statistics import HISTOGRAM, FamilySnapshot, custom_metrics

from .exposition import Family


def custom_families(snapshots: Sequence[FamilySnapshot] | None = None) -> list[Family]:
    """``snapshots`` (the process registry's when None) as families to render."""
    taken = custom_metrics().snapshot() if snapshots is None else snapshots
    return [_family(snapshot) for snapshot in taken]


def _family(snapshot: FamilySnapshot) -> Family:
    family = Family(snapshot.name, snapshot.kind, snapshot.description)
    for sample in snapshot.samples:
        if snapshot.kind == HISTOGRAM:
            family.add_histogram(sample.labels, sample.bounds, sample.cumulative, sample.value)
        else:
            family.add(sample.labels, sample.value)
    return family
