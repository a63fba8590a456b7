"""Prometheus text exposition (format 0.0.4), written here rather than by prometheus-client.

prometheus-client's ``generate_latest`` renames every counter family to
``<name>_total`` in its HELP and TYPE lines, and its Counter adds ``_total``
and ``_created`` samples; Triton prints ``nv_inference_count`` as it is, and
the dashboards written for Triton query those names. So the families are
plain data here and this module prints them the way Triton does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

#: The content type Prometheus expects for the text format.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(slots=True)
class Family:
    """One metric family: a name, a type (counter, gauge or histogram), a help line, and its
    samples as (suffix of the family's name, labels, value)."""

    name: str
    kind: str
    help: str
    samples: list[tuple[str, Mapping[str, str], float]] = field(default_factory=list)

    def add(self, labels: Mapping[str, str], value: float) -> None:
        self.samples.append(("", labels, value))

    def add_histogram(
        self,
        labels: Mapping[str, str],
        bounds: Sequence[float],
        cumulative: Sequence[int],
        total: float,
    ) -> None:
        """One histogram: a ``_bucket`` per bound and +Inf (``cumulative`` has one more
        value than ``bounds``), then ``_sum`` and ``_count``."""
        for bound, count in zip(bounds, cumulative):
            self.samples.append(("_bucket", {**labels, "le": _number(bound)}, count))
        self.samples.append(("_bucket", {**labels, "le": "+Inf"}, cumulative[-1]))
        self.samples.append(("_sum", labels, total))
        self.samples.append(("_count", labels, cumulative[-1]))


def render(families: Iterable[Family]) -> bytes:
    """The exposition text; families without samples are left out (as Triton does)."""
    lines: list[str] = []
    for family in families:
        if not family.samples:
            continue
        lines.append(f"# HELP {family.name} {_escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        lines.extend(
            f"{family.name}{suffix}{_labels(labels)} {_number(value)}"
            for suffix, labels, value in family.samples
        )
    return ("\n".join(lines) + "\n").encode() if lines else b""


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    pairs = ",".join(f'{name}="{_escape_value(value)}"' for name, value in labels.items())
    return "{" + pairs + "}"


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))
