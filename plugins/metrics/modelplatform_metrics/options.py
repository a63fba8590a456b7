"""The metrics plugin's options (Triton's flags and ``--metrics-config``), declared and read.

Declared once in :data:`OPTIONS` (``register_options``): each keeps its
top-level name (``--metrics-port``, ``MODELPLATFORM_METRICS_PORT``,
``metrics_port = 8002``) from before options moved into plugins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplatform import InvalidArgument, Option, Settings, tls_options
from modelplatform.statistics import DEFAULT_LATENCY_BUCKETS_US, checked_buckets

PLUGIN = "metrics"

#: ``--metrics-config`` keys understood, with what they switch.
KNOWN_KEYS = {
    "counter_latencies": "the cumulative *_duration_us counters (default true, as Triton)",
    "histogram_latencies": "the latency histograms (Triton's key; default true here, false in Triton)",
    "histogram_buckets_us": "the latency histograms' bucket bounds, microseconds, comma-separated",
}
#: The longest ``histogram_buckets_us`` value read (a bound on what an operator may type).
MAX_BUCKETS_TEXT = 1024


def _check_port(port: int) -> None:
    if not 0 <= port <= 65535:
        raise InvalidArgument("metrics_port must be between 0 and 65535")


def _check_interval(interval_ms: int) -> None:
    if not 1 <= interval_ms <= 3_600_000:
        raise InvalidArgument("metrics_interval_ms must be between 1 and 3600000")


def _check_pairs(pairs: tuple[str, ...]) -> None:
    """Every entry is ``key=value`` with a known key and a good value: refused at resolution."""
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not (sep and key.strip() and value.strip()):
            raise InvalidArgument(f"metrics_config entry {pair!r} is not 'key=value'")
    config = _parse(pairs)
    _buckets(config.get("histogram_buckets_us"))
    for flag in ("counter_latencies", "histogram_latencies"):
        _flag(config, flag, True)


OPTIONS = (
    Option("allow_metrics", bool, True, top_level=True,
           help="Serve Prometheus metrics on the metrics port and at /metrics (default on)."),
    Option("metrics_port", int, 8002, "Metrics port (default 8002).", _check_port, top_level=True),
    Option("metrics_address", str, "", "Address of the metrics port (default: the HTTP address).",
           top_level=True),
    Option("metrics_interval_ms", int, 2000, "How often CPU, memory and GPU gauges are sampled "
           "(default 2000).", _check_interval, top_level=True),
    Option("metrics_config", tuple, (), "Metrics option, e.g. counter_latencies=false (repeatable).",
           _check_pairs, top_level=True, metavar="<key=value>"),
    *tls_options(PLUGIN),
)  # fmt: skip


def option_values(settings: Settings) -> Mapping[str, Any]:
    """The declared options' values: defaults under what the settings give."""
    return settings.options_for(PLUGIN, OPTIONS)


@dataclass(frozen=True, slots=True)
class MetricsOptions:
    allowed: bool
    address: str
    port: int
    interval_s: float
    counter_latencies: bool = True
    histogram_latencies: bool = True
    latency_buckets_us: tuple[int, ...] = DEFAULT_LATENCY_BUCKETS_US
    #: Several workers bind the same metrics port (SO_REUSEPORT), as they do the HTTP port.
    shared_port: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> MetricsOptions:
        values = option_values(settings)
        config = _parse(values["metrics_config"])
        return cls(
            allowed=values["allow_metrics"],
            address=values["metrics_address"] or settings.host,
            port=values["metrics_port"],
            interval_s=values["metrics_interval_ms"] / 1000,
            counter_latencies=_flag(config, "counter_latencies", True),
            histogram_latencies=_flag(config, "histogram_latencies", True),
            latency_buckets_us=_buckets(config.get("histogram_buckets_us")),
            shared_port=settings.workers > 1,
        )


def _parse(pairs: tuple[str, ...]) -> dict[str, str]:
    config = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        key = key.strip()
        if key not in KNOWN_KEYS:
            known = ", ".join(sorted(KNOWN_KEYS))
            raise InvalidArgument(f"metrics_config: unknown key {key!r} (known: {known})")
        config[key] = value.strip()
    return config


def _buckets(text: str | None) -> tuple[int, ...]:
    if text is None:
        return DEFAULT_LATENCY_BUCKETS_US
    problem = f"metrics_config: histogram_buckets_us must be increasing whole microseconds, not {text[:80]!r}"
    parts = text.split(",") if len(text) <= MAX_BUCKETS_TEXT else []
    if not parts or not all(p.strip().isdigit() for p in parts):
        raise InvalidArgument(problem)
    try:
        return checked_buckets(int(p) for p in parts)
    except ValueError as error:
        raise InvalidArgument(f"{problem}: {error}") from None


def _flag(config: dict[str, str], key: str, default: bool) -> bool:
    if key not in config:
        return default
    value = config[key].lower()
    if value not in ("true", "false", "1", "0"):
        raise InvalidArgument(f"metrics_config: {key} must be true or false, not {config[key]!r}")
    return value in ("true", "1")
